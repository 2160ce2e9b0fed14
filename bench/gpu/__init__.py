"""The one GPU core: kernel catalogue, arguments, warm-up, timing, verification; drivers only open devices,
compile, launch and time (:mod:`.core` says what a driver implements; :mod:`.catalogue` is the catalogue).

Every GPU kernel of archline is a :class:`GpuKernelDesc` (kernels as data, likwid-bench style); S4's ceiling
kernels (:mod:`.ceilings`) are descriptions of the same kind. One description renders OpenCL C, CUDA C and HIP
(``source(lang)``), declares its exact flop/byte counts (``counts``), and computes the expected output from the
input buffers (``reference``), so every back end means the same thing and the runner can compare cost tables.

Kernels (model.md §7):

* ``intensity`` (sp, dp) and ``int`` (int32): stream ``n_elems`` elements once. Every group of ``elems`` loaded
  elements feeds ``fma_num`` multiply-adds into an accumulator, so I = 2 * fma_num / (elems * bytes_per_elem)
  (loads fixed, FMA count varied).  FMA j of a group multiplies by x[j % elems] and adds x[fma_num + j] while
  unused elements remain, else the constant ``c``; every element is used (needs 2 * fma_num >= elems).
  The x values lie in [-0.95, 0.95], so the recurrence acc = acc * x + a is contractive and the reference in
  float64 matches the device to a few ulps whatever the FMA rounding. Limitation of that choice: the final state
  forgets the early rounds, so the sp/dp checksum proves the declared FMA sequence over each lane's last rounds,
  not that every early element was read. The int32 kernel is bit-exact but forgets too (even multipliers shift
  early bits out). The cache kernels (exact sums) and the chase do depend on all of their data, and the CUDA
  PTX/SASS checks show the loads and FMAs of every loop trip.
* ``cache`` at level ``l1``/``l2``/``mem``: every work-item re-reads a global working set of ``working_set_bytes``
  and adds each element into its accumulator (1 add = 1 flop or int op per element read, counted).
* ``cache`` at level ``shared``: each work-group copies ``local_elems`` elements into local/shared memory, then
  re-reads them ``rounds`` times and adds them up.
* ``chase``: ``chains`` work-items follow k = next[k] through one random cycle (Sattolo) of ``n_elems`` uint32
  indices; every step is one dependent random access.

Counts are per launch (one repetition) and derive only from the parameters. Default working sets
(:mod:`archline.bench.gpu.working_set`): the memory level follows the CPU path's rule (the reported last cache
believed up to 64 MiB per compute unit, then max(1 GiB, 8x it)), bounded by a quarter of the device's and of the
host's available memory and by the largest allocation; ``--working-set`` overrides it.
"""

from archline.bench.gpu.desc import GpuKernelDesc, fma_fraction, with_shape
from archline.bench.gpu.points import (
    CACHE_TARGET_BYTES,
    CHASE_DEFAULT_STEPS,
    INTENSITY_MAX_FLOP_PER_BYTE,
    INTENSITY_MIN_FLOP_PER_BYTE,
    Geometry,
    cache_points,
    describe_counts,
    fma_per_elem_points,
    intensity_points,
    parse_spec,
)
from archline.bench.gpu.reference import cache_strides, chase_starts
from archline.bench.gpu.shape import CONST_C, INT_C, INT_SEED, SEED, X_BOUND

__all__ = ["CACHE_TARGET_BYTES", "CHASE_DEFAULT_STEPS", "CONST_C", "INTENSITY_MAX_FLOP_PER_BYTE",
           "INTENSITY_MIN_FLOP_PER_BYTE", "INT_C", "INT_SEED", "SEED", "X_BOUND", "Geometry", "GpuKernelDesc",
           "cache_points", "cache_strides", "chase_starts", "describe_counts", "fma_fraction", "fma_per_elem_points",
           "intensity_points", "parse_spec", "with_shape"]
