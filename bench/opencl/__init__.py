"""The opencl back end (a driver of the GPU core, :mod:`archline.bench.gpu`); its registry entry is here."""

from archline.bench.kernels import KERNELS
from archline.bench.registry import BackendInfo

BACKEND = BackendInfo(
    name="opencl", opener="archline.bench.opencl.backend:OpenCLBackend",
    help="an OpenCL device (a GPU, or a CPU through PoCL); --device picks it",
    device_kind="gpu", kernels=(*KERNELS, "ceilings", "ceil_flop", "ceil_mem"), precisions=("sp", "dp", "int32"),
    control_vendors=("nvml", "amdsmi"))
