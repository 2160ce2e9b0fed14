"""The emulated platform: a back end whose kernels run on fit's capped model, and the power it draws (emulated);
its registry entry is here."""

from archline.bench.registry import BackendInfo

BACKEND = BackendInfo(
    name="emulated", opener="archline.bench.emulated.backend:EmulatedBackend",
    help="the profile's model on an emulated device, no hardware (chosen by --emulate)",
    device_kind="model", takes_device=False, control_vendors=(), needs_emulate=True,
    steady_power="archline.bench.emulated.backend:steady_power_script")
