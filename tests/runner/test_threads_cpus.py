"""--threads and --cpus (likwid's conventions) on cpu_asm runs: parsed, checked against the CPUs this process may
use (naming the one that is not), carried into every point's parameters (and so the rows), and refused where
they do not apply."""

from __future__ import annotations

import os

import pytest

from archline.bench.config.options import RunOptions, parse_cpu_list


@pytest.mark.parametrize(("text", "cpus"), [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("0,2,4", (0, 2, 4)),
                                            ("0-1,6", (0, 1, 6)), ("1,0", (1, 0))])
def test_cpu_lists(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("bad", ["", "a", "3-1", "0-", "-1", "1;2"])
def test_bad_cpu_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(bad)


def test_points_carry_threads_and_cpus() -> None:
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.cpu_asm.backend import CpuAsmBackend
    from archline.bench.run.points import make_points

    be = CpuAsmBackend()
    prof = load_bench_profile("localhost")
    opts = RunOptions.from_cli(kernels=("cache",), quick=True, threads=(1, 2) if len(os.sched_getaffinity(0)) > 1
                               else (1,))
    points, _ = make_points(be, opts, prof, (None,), (None,))
    by_threads: dict[int, int] = {}
    for p in points:
        by_threads[p.spec.params["threads"]] = by_threads.get(p.spec.params["threads"], 0) + 1
    assert set(by_threads) == set(opts.threads or ()) and len(set(by_threads.values())) == 1
    cpu = sorted(os.sched_getaffinity(0))[-1]
    points, _ = make_points(be, RunOptions.from_cli(kernels=("chase",), quick=True, cpus=str(cpu)), prof, (None,),
                            (None,))
    assert points and all(p.spec.params["cpus"] == [cpu] for p in points)


def test_quick_roofline_points_cover_every_figure_three_times() -> None:
    """--quick with no kernel named: three points per figure (SP and DP peak on L1-resident data, L1, L2, L3
    where the plan has one, DRAM on the memory working set), not the intensity sweep; a kernel named keeps it."""
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.cpu_asm import topology as topo
    from archline.bench.cpu_asm.backend import CpuAsmBackend
    from archline.bench.run.points import make_points

    be = CpuAsmBackend()
    prof = load_bench_profile("localhost")
    points, _ = make_points(be, RunOptions.from_cli(quick=True), prof, (None,), (None,))
    figures: dict[tuple[str, str, str], int] = {}
    for p in points:
        key = (p.spec.kernel, p.spec.precision, p.spec.level)
        figures[key] = figures.get(key, 0) + 1
    levels = set(topo.level_working_sets(len(topo.one_cpu_per_core()), quick=True)) - {"mem"}
    assert figures == {("intensity", "sp", "l1"): 3, ("intensity", "dp", "l1"): 3, ("intensity", "dp", "mem"): 3,
                       **{("cache", "dp", lv): 3 for lv in levels}}
    mem = [p.spec.params for p in points if p.spec.level == "mem"]
    assert all(m["store"] == "nt" and topo.MEM_MIN_BYTES <= m["working_set_bytes"] <= topo.MEM_QUICK_MAX_BYTES
               for m in mem)
    for named in ({"kernels": ("intensity",)}, {"precisions": ("dp",)}, {"store": "nt"}):
        sweep, _ = make_points(be, RunOptions.from_cli(quick=True, **named), prof, (None,), (None,))
        assert len(sweep) >= 34 and {(p.spec.kernel, p.spec.level) for p in sweep} == {("intensity", "mem")}


def test_cpu_not_allowed_is_named(run_cli) -> None:  # type: ignore[no-untyped-def]
    bad = max(os.sched_getaffinity(0)) + 1
    r = run_cli("bench", "run", "--quick", "--cpus", str(bad))
    assert r.exit_code == 2 and f"CPU {bad}" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--platform", "gtx580", "--emulate", "--threads", "1"],
                                  ["--threads", "1", "--cpus", "0"], ["--threads", "0"], ["--threads", "x"]])
def test_threads_refused_where_they_do_not_apply(run_cli, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("bench", "run", "--quick", *args)
    assert r.exit_code == 2 and ("--threads" in r.stderr or "thread" in r.stderr)


@pytest.mark.parametrize("args, says", [
    (["--kernel", "chase", "--threads", "2"], "chase kernel walks one pointer chain on one thread"),
    (["--cpus", "0,0"], "names CPU 0 twice"),
    (["--cpus", "0-1,1"], "names CPU 1 twice"),
    (["--cpus", "S0:0-1"], "thread domains (S0:, N:, E:) are not taken"),
])
def test_breaker26_threads_and_cpus_refused_with_the_reason(run_cli, tmp_path, args, says) -> None:  # type: ignore[no-untyped-def]
    """Breaker 26 items 9-10: chase ignored --threads; duplicate CPUs were dropped silently; likwid's domain
    syntax was 'not a CPU list' though the help said likwid's lists."""
    r = run_cli("bench", "run", *args, "--quick", "--out", str(tmp_path / "R"))
    assert r.exit_code == 2 and says in r.stderr and not (tmp_path / "R").exists(), r.stderr
