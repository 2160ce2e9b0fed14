"""The CPU back end: hand-written assembly kernels per ISA on this CPU's cores (its registry entry is here)."""

from archline.bench.registry import BackendInfo

BACKEND = BackendInfo(
    name="cpu_asm", opener="archline.bench.cpu_asm.backend:CpuAsmBackend",
    help="this CPU's cores: hand-written assembly kernels per ISA (--isa, --threads, --cpus, --store)",
    device_kind="cpu", options=frozenset({"isa", "threads", "cpus", "store"}), takes_device=False,
    control_vendors=(), describe_when_unusable=True, step_load="archline.bench.cpu_asm.step_load:steady_load",
    version_line="archline.bench.cpu_asm.isas:version_line")
