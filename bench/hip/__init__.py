"""HIP driver: the catalogue's kernels built by hipcc for AMD GPUs, launched through cupy on ROCm; the hip back
end's registry entry is here."""

from archline.bench.kernels import KERNELS
from archline.bench.registry import BackendInfo

BACKEND = BackendInfo(
    name="hip", opener="archline.bench.hip.backend:HipBackend",
    help="an AMD GPU: the GPU catalogue built by hipcc, launched through cupy on ROCm",
    device_kind="gpu", kernels=(*KERNELS, "ceilings", "ceil_flop", "ceil_mem"), precisions=("sp", "dp", "int32"),
    control_vendors=("archline.bench.hip.vendor:VENDOR",))
