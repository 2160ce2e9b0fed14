"""HIP driver: the catalogue's kernels built by hipcc for AMD GPUs, launched through cupy on ROCm."""
