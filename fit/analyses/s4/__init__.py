"""S4: the power and energy-efficiency roofline model for GPUs (GTX 970, Tesla K80)."""
