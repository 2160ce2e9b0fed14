"""The cuda back end (a driver of the GPU core, :mod:`archline.bench.gpu`); its registry entry is here."""

from archline.bench.kernels import KERNELS
from archline.bench.registry import BackendInfo

BACKEND = BackendInfo(
    name="cuda", opener="archline.bench.cuda.backend:CudaBackend",
    help="an NVIDIA GPU: the GPU catalogue built by nvcc, launched through cupy",
    device_kind="gpu", kernels=(*KERNELS, "ceilings", "ceil_flop", "ceil_mem"), precisions=("sp", "dp", "int32"),
    control_vendors=("archline.bench.cuda.vendor:VENDOR",))
