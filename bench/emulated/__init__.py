"""The emulated platform: a back end whose kernels run on fit's capped model, and the power it draws (emulated)."""
