"""A memory limit (``ulimit -v``, ``ulimit -d``, as batch systems set) is a clean error, never a spin.

Under an address-space limit a failed ``mmap`` is where native libraries misbehave: OpenBLAS retries the 32 MiB
buffer a BLAS call needs in a loop that never ends (``archline fit`` spun at 100% CPU, 11 CPU-minutes, deaf to
SIGTERM, under ``ulimit -v 600000``), and every extra thread costs its stack and a 64 MiB malloc arena of the
limit. So, once, before any heavy import (:func:`prepare`):

* the thread pools that reserve address space per thread (OpenBLAS, OpenMP, MKL, Arrow) get one thread, and
  Arrow the system allocator (its own pools reserve large arenas), unless the user chose otherwise
  (``OPENBLAS_NUM_THREADS=4`` is kept: then the choice and its cost are theirs), and glibc's malloc one arena
  (:func:`lean_malloc`: a thread's own arena reserves 128 MiB, and where that failed pyarrow's CSV reader threw
  an uncaught ``std::bad_alloc``, exit 134);
* a limit below archline's own footprint (:data:`FLOOR_B`) is refused in one line before anything starts;
* numpy's BLAS makes its one buffer now, while there is room (:func:`_warm_blas`): a BLAS call later reuses it
  and never maps again, so it cannot spin however little room the command leaves.

What then runs out is an ordinary failure (``MemoryError``, a library that cannot be mapped, ``ENOMEM``), which
:func:`limit_line` turns into one line naming the limit (exit 2). Without a limit nothing here does anything.
"""

from __future__ import annotations

import errno
import os
import resource
import sys
from collections.abc import Mapping, MutableMapping

from archline.common.exits import EXIT_INPUT

#: (resource, the ``ulimit`` flag that sets it, in KiB)
_LIMITS = ((resource.RLIMIT_AS, "-v"), (resource.RLIMIT_DATA, "-d"))
#: variables of the libraries that reserve address space per thread (or, Arrow's jemalloc/mimalloc pools, in
#: large arenas), and the value that reserves least
LEAN_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ARROW_IO_THREADS": "1",
            "ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "1",
            "JE_ARROW_MALLOC_CONF": "background_thread:false,narenas:1"}
#: glibc's ``mallopt`` parameter for the most malloc arenas (``M_ARENA_MAX``, malloc.h)
_M_ARENA_MAX = -8
#: what :func:`prepare` added to this process's environment (taken out again for the user's own programs)
ADDED: dict[str, str] = {}
#: address space numpy's import and its BLAS buffer take (measured: 81 MiB + 32 MiB with one thread)
NUMPY_B = 128 * 2**20
#: the least address-space limit archline starts under (refused below it, one line, before anything starts):
#: numpy + pyarrow + scipy, the libraries of fit, compare and lab, map 359 MiB (VmSize measured after their
#: imports, one thread each, one malloc arena), plus numpy's BLAS buffer and room to work. Below it a thread's
#: stack or TLS, or Arrow's allocator, can fail where no exception reaches archline (glibc "cannot allocate
#: memory for thread-local data: ABORT", exit 127). benchmarks/limits_and_sigterm.py measures each command.
FLOOR_B = 400 * 2**20
#: what a dynamic loader, an allocator or a thread pool says when the limit stopped it
_MAP_WORDS = ("failed to map segment", "cannot allocate memory", "cannot map", "memory allocation",
              "out of memory", "std::bad_alloc", "failed to launch worker thread", "can't start new thread",
              "resource temporarily unavailable", "thread-local", "error return without exception set")


def memory_limit() -> tuple[int, str] | None:
    """The tightest finite soft limit on this process's memory: (bytes, its ``ulimit`` flag), or None."""
    best: tuple[int, str] | None = None
    for res, flag in _LIMITS:
        soft, _ = resource.getrlimit(res)
        if soft != resource.RLIM_INFINITY and soft > 0 and (best is None or soft < best[0]):
            best = (soft, flag)
    return best


def describe(limit: tuple[int, str]) -> str:
    """``the address-space limit of 586 MiB (ulimit -v 600000)``"""
    size_b, flag = limit
    what = "address-space" if flag == "-v" else "data-segment"
    return f"the {what} limit of {size_b / 2**20:.0f} MiB (ulimit {flag} {size_b // 1024})"


def prepare(env: MutableMapping[str, str] | None = None) -> bool:
    """Under a memory limit: one thread per pool and numpy's BLAS buffer made now (module docstring). Returns
    whether a limit is in force. Call before numpy, pyarrow or scipy is imported (their pools read the
    variables when they load)."""
    if memory_limit() is None:
        return False
    lean_malloc()
    target: MutableMapping[str, str] = os.environ if env is None else env
    for var, value in LEAN_ENV.items():
        if var not in target:
            target[var] = value
            if env is None:
                ADDED[var] = value
    size_b, _ = memory_limit() or (0, "")
    if size_b < FLOOR_B:     # before anything starts: below it a library's thread or TLS could abort natively
        raise MemoryError(f"archline and its libraries (numpy, pyarrow, scipy) need {FLOOR_B // 2**20} MiB "
                          f"of address space")
    if "numpy" not in sys.modules:
        _room_for(NUMPY_B)
    _warm_blas()
    return True


def lean_malloc() -> bool:
    """Under a memory limit: glibc's malloc keeps one arena for all threads. Each thread that allocates otherwise
    gets an arena of its own, made by reserving 128 MiB of address space; under ``ulimit -v`` that reservation is
    what fails, and a C++ library's ``new`` in that thread (pyarrow's CSV reader in the fit's reader thread) then
    throws ``std::bad_alloc`` that nothing catches: the process aborts (exit 134) with no line of ours. Must run
    before a second thread allocates (glibc fixes the arena count then): :func:`archline.cli.main.main` calls it
    first. ``MALLOC_ARENA_MAX`` (:data:`LEAN_ENV`) does the same for the processes archline starts. Returns
    whether it was set."""
    if memory_limit() is None or ("MALLOC_ARENA_MAX" in os.environ and "MALLOC_ARENA_MAX" not in ADDED):
        return False
    import ctypes

    try:        # the process's own symbols: libc's, without a search (find_library starts programs)
        return bool(ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1))
    except (OSError, AttributeError):       # not glibc: nothing to set
        return False


def user_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a program the user runs under archline (``measure -- CMD``): without the variables
    :func:`prepare` added for archline's own libraries (a measured program keeps its own thread counts)."""
    base = dict(os.environ if env is None else env)
    for var, value in ADDED.items():
        if base.get(var) == value:
            del base[var]
    return base


def _room_for(size_b: int) -> None:
    """Raise MemoryError unless ``size_b`` of address space can be had now. OpenBLAS, started without room for its
    buffer, prints "Memory allocation still failed" and ends the process with 1: no line of ours could follow."""
    import mmap

    try:
        # never touched: it costs address space only, which is what the limit counts
        mmap.mmap(-1, size_b, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ).close()
    except OSError:
        raise MemoryError(f"cannot map {size_b // 2**20} MiB for numpy and its BLAS buffer") from None


def _warm_blas() -> None:
    """One small matrix product: OpenBLAS makes its buffer (one per thread) at the first call and keeps it."""
    try:
        import numpy as np

        a = np.ones((64, 64))
        a @ a
    except (ImportError, MemoryError, OSError):   # too little room even for that: the command will say so
        pass


def _is_map_failure(e: BaseException) -> bool:
    """Whether ``e`` is what running out of room looks like (any type: Arrow raises its own)."""
    if isinstance(e, MemoryError):
        return True
    if isinstance(e, OSError) and e.errno in (errno.ENOMEM, errno.EAGAIN):
        return True
    if isinstance(e, Exception) and not isinstance(e, (KeyboardInterrupt, SystemExit)):
        text = str(e).lower()
        return any(w in text for w in _MAP_WORDS)
    return False


def limit_line(e: BaseException) -> tuple[str, int] | None:
    """(one line, exit code) for a failure the memory limit caused; None without a limit or for another error.
    Looks through the exception's causes (an ImportError raised while handling a failed map)."""
    limit = memory_limit()
    if limit is None:
        return None
    seen: BaseException | None = e
    for _ in range(5):
        if seen is None:
            break
        if _is_map_failure(seen):
            return (f"out of memory under {describe(limit)} ({_first_line(seen)}); "
                    f"raise the limit (ulimit {limit[1]} 1000000 or more, or unlimited)", EXIT_INPUT)
        seen = seen.__cause__ or seen.__context__
    return None


def _first_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return type(e).__name__ + (f": {text[:100]}" + ("..." if len(text) > 100 else "") if text else "")
