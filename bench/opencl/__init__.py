"""The opencl back end (a driver of the GPU core, :mod:`archline.bench.gpu`); its registry entry is here."""

from archline.bench.kernels import KERNELS
from archline.bench.registry import BackendInfo

# its device may be any vendor's GPU: no control_vendors, so every vendor a back end declares (NVML, then AMD SMI)
BACKEND = BackendInfo(
    name="opencl", opener="archline.bench.opencl.backend:OpenCLBackend",
    help="an OpenCL device (a GPU, or a CPU through PoCL); --device picks it",
    device_kind="gpu", kernels=(*KERNELS, "ceilings", "ceil_flop", "ceil_mem"), precisions=("sp", "dp", "int32"))
