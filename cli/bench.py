"""archline bench list|run|sweep"""

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
    archline bench run --platform gtx580 --emulate   the GTX 580 profile on the emulated device + PowerMon 2
    archline bench sweep nightly.toml            cron: locked, resumable, logged (docs/cron.md)
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
@click.option("--kernel", default="intensity", show_default=True,
              help="intensity, cache, chase or int; opencl/cuda also 'ceilings' (S4's optimisation ceilings: "
                   "ceil_flop and ceil_mem; plot them with `archline plot R.csv --kind ceilings`).")
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
@click.option("--emulate", is_flag=True,
              help="Run the platform's profile on the emulated device and emulated PowerMon 2 (rows say emulated).")
@click.option("--time-compression", type=float, default=None,
              help="--emulate: device seconds per host second (default: the profile's, else 50).")
@click.option("--meter", "meter_name", default=None, help="Which of the profile's [[meters]] (default: the first).")
@click.option("--power-cap", "power_caps_w", type=float, multiple=True,
              help="Power cap in watts (repeat to sweep caps); NVML/RAPL on hardware, the model with --emulate.")
@click.option("--all-kernels", is_flag=True, help="Every kernel and precision the profile's [bench] lists.")
@click.option("--store", type=click.Choice(["nt", "none"]), default=None,
              help="cpu_asm intensity traffic. nt (default): each trip also streams one result vector per two "
                   "loaded past the caches, as STREAM/likwid's stream_mem do; bytes_mem counts reads and writes, "
                   "the sweep starts at the triad's 1/12 flop/B and reaches the machine's streaming bandwidth. "
                   "none: read-only, the papers' polynomial stream, from 0.25 flop/B (per core a read-only "
                   "stream stops short of peak bandwidth).")
@click.option("--device", default=None,
              help="OpenCL: 'P:D' indices or a name substring (default: the first device); CUDA: device index.")
def run_cmd(platform: str, backend: str, kernel: str, precision: str | None, quick: bool, reps: int | None,
            min_time_s: float, isa: str | None, working_set: str | None, out_dir: Path, emulate: bool,
            time_compression: float | None, meter_name: str | None, power_caps_w: tuple[float, ...],
            all_kernels: bool, store: str | None, device: str | None) -> None:
    """Run a kernel's default sweep and write archline.results/1 rows.

    \b
    With a platform profile's meters (or --emulate), every point runs in marked regions on the meter's clock
    (warm-up, >= 200 samples per point, early stop on a tight CI, idle power before and after) and rows carry
    energy_j; without a meter they are time only and say why.
    \b
      archline bench run --platform gtx580 --emulate --out results/emu     the whole GTX 580 sweep, emulated
      archline bench run --platform localhost --quick                       about a minute, time only w/o RAPL
    """
    from archline.bench.errors import BackendUnavailableError
    from archline.bench.registry import get_backend

    if emulate or platform != "localhost" or _localhost_has_meter():
        src = click.get_current_context().get_parameter_source("backend")
        explicit = src is not None and src.name not in ("DEFAULT", "DEFAULT_MAP")
        _metered_run(platform, out_dir, emulate=emulate, backend=backend if explicit and not emulate else None,
                     kernel=None if all_kernels else kernel, precision=None if all_kernels else precision,
                     quick=quick, time_compression=time_compression, meter=meter_name,
                     power_caps_w=power_caps_w or None)
        return
    be: Any = get_backend(backend)
    if isa is not None:
        if backend != "cpu_asm":
            raise click.BadParameter("--isa applies to the cpu_asm back end", param_hint="--isa")
        be = type(be)(isa=isa)
    ok, why = be.availability()
    if not ok:
        raise BackendUnavailableError(f"backend '{backend}' is not usable here: {why}")
    prec = precision or ("int32" if kernel == "int" else "dp")
    if store is not None and backend != "cpu_asm":
        raise click.BadParameter("--store applies to the cpu_asm back end", param_hint="--store")
    specs = be.sweep(kernel, prec, quick=quick, **({} if store is None else {"store": store}))
    if isa is not None or working_set is not None:
        from archline.bench.kernels import KernelSpec

        over: dict[str, Any] = {}
        if working_set is not None:
            over["working_set_bytes"] = _parse_bytes(working_set)
        specs = [KernelSpec(s.backend, s.kernel, s.precision, s.level,
                            {**s.params, **over, **({"isa": isa} if "isa" in s.params else {})}) for s in specs]
    from archline.bench.profile_sections import localhost_profile
    from archline.bench.run import run_time_only

    out = run_time_only(be, specs, out_dir, platform=platform, why_no_energy=localhost_profile().detected_note,
                        reps=reps, min_time_s=min_time_s, device=device, log=lambda m: click.echo(m, err=True))
    click.echo(str(out.results))
    if out.roofline_png is not None:
        click.echo(f"roofline plot: {out.roofline_png}", err=True)
    if out.n_bad_checksum:
        raise click.ClickException(f"{out.n_bad_checksum} point(s) failed their checksum; rows kept with "
                                   "checksum_ok=false and left out of the plot, peaks and fits")


def _localhost_has_meter() -> bool:
    from archline.bench.profile_sections import load_bench_profile

    return bool(load_bench_profile("localhost").meters)


def _metered_run(platform: str, out_dir: Path, *, emulate: bool, backend: str | None, kernel: str | None,
                 precision: str | None, quick: bool, time_compression: float | None, meter: str | None,
                 power_caps_w: tuple[float, ...] | None) -> None:
    """bench run through the metered runner (platform profiles, meters, --emulate)."""
    import sys

    from archline.bench.runner_session import run_once

    if precision is None and kernel not in (None, "intensity"):
        precision = "int32" if kernel == "int" else "sp"
    out = run_once(platform, out_dir, emulate=emulate, backend=backend,
                   kernels=None if kernel is None else (kernel,),
                   precisions=None if precision is None else (precision,), quick=quick,
                   time_compression=time_compression, meter=meter, power_caps_w=power_caps_w,
                   stream=sys.stderr)
    click.echo(str(out.results))
    click.echo(f"{out.rows} rows in {out.wall_s:.1f} s; {out.session_note}", err=True)
    if out.failed:
        raise click.ClickException(f"{out.failed} point(s) failed (see the messages above); the other rows are kept")


@bench.command("sweep")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def sweep_cmd(ctx: click.Context, config: Path) -> None:
    """The cron entry point: run or resume CONFIG.toml's sweep; locked, logged, atomic.

    \b
    Exit codes: 0 done, 2 bad config, 3 some points failed (rerun retries them), 4 meter missing,
    5 stopped at max_points (rerun resumes), 75 another sweep holds the lock, 130 interrupted.
    Example crontab and systemd timer: docs/cron.md.
    """
    import sys

    from archline.bench.sweep import run_sweep

    res = run_sweep(config, stream=sys.stderr)
    click.echo(res.message, err=True)
    ctx.exit(res.exit_code)
