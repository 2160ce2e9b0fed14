"""archline bench list|run"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


@click.group()
def bench() -> None:
    """Run the kernels: intensity sweeps, cache bandwidth, pointer chase, integer ops.

    \b
    archline bench list                          what this machine can run, and why not the rest
    archline bench run --platform localhost --backend cpu_asm --kernel intensity --precision dp --out results/
    archline bench run --kernel cache --quick    L1/L2/L3/memory load, rmw and store bandwidth
    archline bench run --kernel chase --quick    pointer-chase latency per level (ns and cycles per access)
    """


@bench.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def list_cmd(fmt: str) -> None:
    """Back ends and kernel variants, each with whether it runs here and why (not)."""
    from archline.bench.errors import BenchError
    from archline.bench.registry import BACKENDS, get_backend

    out: list[dict[str, Any]] = []
    for name in BACKENDS:
        try:
            be = get_backend(name)
            ok, why = be.availability()
            variants = be.describe() if ok or name == "cpu_asm" else []
        except (BenchError, ImportError) as e:
            ok, why, variants = False, str(e), []
        out.append({"backend": name, "available": ok, "reason": why, "kernels": variants})
    if fmt == "json":
        click.echo(json.dumps(out, indent=2, default=str))
        return
    for b in out:
        click.echo(f"{b['backend']:8s} {'yes' if b['available'] else 'no ':3s}  {b['reason']}")
        for k in b["kernels"]:
            counts = ""
            if "flops_per_elem" in k or "bytes_per_elem" in k:
                counts = f"  [{k.get('flops_per_elem', '')} / {k.get('bytes_per_elem', '')} B per element]"
            mark = "yes" if k["available"] else "no "
            click.echo(f"  {k['name']:9s} {k.get('isa', ''):7s} {k['precision']:5s} {k['level']:12s} {mark} "
                       f"{k['reason']}{counts}")


def _parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}
    try:
        if t and t[-1] in mult:
            return int(float(t[:-1]) * mult[t[-1]])
        return int(t)
    except ValueError:
        raise click.BadParameter(f"not a size: {text!r}", param_hint="--working-set") from None


@bench.command("run")
@click.option("--platform", default="localhost", show_default=True, help="Platform profile name for the rows.")
@click.option("--backend", default="cpu_asm", show_default=True, help="cpu_asm, opencl or cuda.")
@click.option("--kernel", default="intensity", show_default=True, help="intensity, cache, chase or int.")
@click.option("--precision", default=None, help="sp or dp (int32 for int); default dp, int32 for int.")
@click.option("--quick", is_flag=True, help="Smaller working sets (memory level: 8x the last cache).")
@click.option("--reps", type=int, default=None, help="Repetitions per point (default: sized by --min-time).")
@click.option("--min-time", "min_time_s", type=float, default=0.2, show_default=True,
              help="Seconds each timed region lasts at least.")
@click.option("--isa", default=None, help="Force an ISA variant (avx512, avx2, sse2).")
@click.option("--working-set", "working_set", default=None,
              help="Override every point's working set, bytes with optional K/M/G suffix (e.g. 64M).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Directory for <run_id>.csv.")
def run_cmd(platform: str, backend: str, kernel: str, precision: str | None, quick: bool, reps: int | None,
            min_time_s: float, isa: str | None, working_set: str | None, out_dir: Path) -> None:
    """Run a kernel's default sweep and write archline.results/1 rows (time only until a meter is attached)."""
    from archline.bench.errors import BackendUnavailableError
    from archline.bench.registry import get_backend
    from archline.bench.results import new_run_id, write_rows
    from archline.bench.run import run_points

    if platform != "localhost":
        raise click.BadParameter("only 'localhost' is runnable until platform profiles land", param_hint="--platform")
    be: Any = get_backend(backend)
    if isa is not None:
        if backend != "cpu_asm":
            raise click.BadParameter("--isa applies to the cpu_asm back end", param_hint="--isa")
        be = type(be)(isa=isa)
    ok, why = be.availability()
    if not ok:
        raise BackendUnavailableError(f"backend '{backend}' is not usable here: {why}")
    prec = precision or ("int32" if kernel == "int" else "dp")
    specs = be.sweep(kernel, prec, quick=quick)
    if isa is not None or working_set is not None:
        from archline.bench.kernels import KernelSpec

        over: dict[str, Any] = {}
        if working_set is not None:
            over["working_set_bytes"] = _parse_bytes(working_set)
        specs = [KernelSpec(s.backend, s.kernel, s.precision, s.level,
                            {**s.params, **over, **({"isa": isa} if "isa" in s.params else {})}) for s in specs]
    run_id = new_run_id()

    def progress(i: int, n: int, spec: Any, res: Any) -> None:
        c = res.counts
        rate = ""
        if c.flops:
            rate = f"{c.flops / res.time_s / 1e9:8.2f} GFLOP/s"
        elif c.int_ops:
            rate = f"{c.int_ops / res.time_s / 1e9:8.2f} Gop/s"
        elif c.bytes_total:
            rate = f"{c.bytes_total / res.time_s / 1e9:8.2f} GB/s"
        elif c.rand_accesses:
            rate = f"{res.extra['ns_per_access']:8.2f} ns/access {res.extra['cycles_per_access']:6.1f} cyc"
        ok_s = "ok" if res.checksum_ok else "CHECKSUM MISMATCH"
        click.echo(f"[{i + 1}/{n}] {spec.label} reps={res.reps} {rate} {ok_s}", err=True)

    rows = run_points(be, specs, reps=reps, min_time_s=min_time_s, progress_cb=progress, platform=platform,
                      run_id=run_id)
    path = write_rows(out_dir / f"{run_id}.csv", rows)
    bad = sum(1 for r in rows if not r["checksum_ok"])
    click.echo(str(path))
    if bad:
        raise click.ClickException(f"{bad} point(s) failed their checksum; rows kept with checksum_ok=false")
