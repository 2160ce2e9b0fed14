"""Docs run as tests: every ``archline`` line of README.md, docs/*.md and every command's ``--help`` runs here
(in-process, in a sandbox holding every file the examples name) and exits 0, and every number its comment states
appears in what it printed. A new example is picked up without touching this file; one that cannot run here goes
in SKIP with its reason, one that runs too long for the default run goes in SLOW (it still runs with -m slow),
one that would wait for Ctrl-C gets a --duration in ADAPT, and one that names hardware this machine lacks runs
against an emulator in SUBSTITUTE.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from support.badinputs import REPO, Fixtures, run_inproc
from support.doc_examples import Example, _stated, all_examples, run_example, steps
from support.labs import write_lab

#: examples that cannot run on this machine (regex on the command -> why); filled below where a tool is missing
SKIP: dict[str, str] = {
    r"--platform mynode\.toml": "mynode.toml stands for the reader's own profile of real meters (the real-hardware "
                                "path runs in tests/powermon/test_probe_real_wiring.py against an emulated node)",
    r"meter (probe|calibrate) \S+ --platform gtx580 .*--backend cuda": "a real GTX 580 with its meters: cupy and an "
                                                                       "NVIDIA GPU, neither here",
    r"--meter redfish:https://USER:PASSWORD@bmc\.example": "a real BMC at the reader's address (the Redfish meter runs "
                                                           "against sushy-static's DMTF mockups and archline's "
                                                           "emulated service in tests/powermon/test_bmc_redfish.py)",
}


def _perf_unavailable() -> str:
    from archline.bench.measure_counters import available

    ok, why = available("perf")
    return "" if ok else why


if why := _perf_unavailable():     # where perf can count (a host with a PMU), the example runs
    SKIP[r"measure --counters perf"] = f"needs perf with a hardware PMU: {why}"

#: examples that run, but for longer than the default run allows: they run with -m slow
SLOW: dict[str, str] = {
    r"bench run --kernel intensity --precision sp --store none": "a full CPU intensity sweep, minutes",
    r"bench run --platform localhost --backend cpu_asm --kernel intensity --precision dp --out": "a full CPU "
                                                                                               "sweep, minutes",
    r"bench run --platform localhost --quick": "this CPU's whole roofline, quick: 18 points, about 20 s",
    r"bench run --platform gtx580 --emulate( |$)": "the full emulated GTX 580 sweep: about 30 s",
    r"bench run --backend opencl --kernel ceilings": "the OpenCL ceiling kernels on this CPU: about 35 s",
    r"bench run --kernel chase --quick": "the pointer chase over every working set: about 13 s",
    r"meter probe bmc --emulate --redfish .*--step 4 --out b\.json": "20 steps of 4 s on the emulated Redfish BMC: "
                                                                     "about 19 s (docs/meters.md's 6-step one runs)",
    r"bench run --kernel cache --quick": "the cache sweep over every level: 6-12 s",
    r"bench run --platform localhost --emulate": "this CPU's real kernels under an emulated power schedule: 20 s "
                                                 "for the chase sweep, minutes for --quick",
    # issue 37 (a default run of 5 minutes): the examples of 1 s or more in a --durations=0 default run of
    # 6 December 2026 on the 2-vCPU Zen 3, under load; each command's other examples of under 1 s stay
    r"meter probe bmc --emulate --(redfish --)?period 1": "the emulated BMC's 6 probe steps of 4 s: about 7 s",
    r"meter record --meter \S+ (--channels \S+ )?--duration ([2-9]|10)": "a recording of 2-10 s (1 s substituted "
                                                                         "for a serial meter): 1.3-5.5 s",
    r"meter (probe|calibrate) \S+ --emulate": "a probe or calibration against an emulated sensor: about 2 s",
    r"^archline meter emulate": "the emulator for 1 s (ADAPT): 1.1-1.4 s",
    r"bench sweep nightly\.toml|measure --repeat 3 --baseline-s 2": "a sweep, or three runs after a 2 s baseline: "
                                                                    "about 3 s",
    r"codesign (rooflines|energy-multiroofline)|design-space fft --plot|fit results/\*\.csv --figure|"
    r"ipp sweep table4 -k Dotp -k Madd|ipp (temperature|validate) .*--plot|throttle gtx580 .*--plot|"
    r"tradeoff fermi-sample --plot": "a figure of many panels or curves: 1.1-5.7 s",
    r"model plot gtx580 (--out|gtx680)|plot gtx580 (gtx680 i7-950|--kind ceilings|--out gtx580\.png)|plot R/\*\.csv|"
    r"plot results/run1/results\.csv costs\.json --kind all": "a roofline figure of platforms or rows: 1.3-3.2 s",
}

#: examples that wait for Ctrl-C: run with these words added (what the added words do -> why)
ADAPT: dict[str, tuple[list[str], str]] = {
    r"^archline meter emulate": (["--duration", "1"], "runs until Ctrl-C; here it stops after 1 s"),
}

#: examples that name hardware this machine lacks: run with a stand-in (regex -> (old, new) replacements, why)
SUBSTITUTE: dict[str, tuple[list[tuple[str, str]], str]] = {
    r"--meter powermon2:/dev/ttyUSB0": (
        [("/dev/ttyUSB0", "powermon://default"), ("--duration 10", "--duration 1")],
        "a PowerMon 2 on a serial port: here the in-process emulator's URL, for 1 s"),
    r"--meter powersensor3:/dev/ttyACM0": (
        [("/dev/ttyACM0", "powersensor3://default"), ("--duration 10", "--duration 1")],
        "a PowerSensor3 on a serial port: here the in-process emulator's URL, for 1 s"),
}

#: files only some examples may see (regex -> paths under the sandbox's extra/): a DVFS measurement in results/
#: would break the examples that fit results/*.csv
EXTRA: dict[str, list[str]] = {r"--measured results/dvfs\.csv": ["results/dvfs.csv"]}

#: the two parts of the sandbox that take long to make (a real quick run of this CPU: 18 points, about 20 s; a lab
#: of two emulated nodes: about 8 s), made only for the examples that name them, which see the whole sandbox (the
#: base one plus both parts) and run with -m slow, so the default run makes neither (regex -> what it needs)
NEEDS_FULL: dict[str, str] = {
    r"localhost|results/quick|quick-costs": "this CPU's quick run (results/quick/, the platform 'localhost')",
    r"lab\.toml|fleet/|lab-dataset/|\blab/|before/": "the lab's run (lab.toml's results, fleet/, lab-dataset/ ...)",
}


def _match(table: Mapping[str, object], ex: Example) -> str | None:
    return next((rx for rx in table if re.search(rx, ex.command)), None)


EXAMPLES = all_examples()


def _distinct(examples: list[Example]) -> list[Example]:
    """One test per distinct command line (README and --help often show the same one), checking every number
    any of its places states."""
    by_cmd: dict[str, Example] = {}
    for e in examples:
        if e.command in by_cmd:
            d = by_cmd[e.command]
            d.where += f" = {e.where}"
            d.stated += [n for n in e.stated if n not in d.stated]
        else:
            by_cmd[e.command] = Example(e.where, e.command, e.comment, list(e.stated))
    return list(by_cmd.values())


def _param(ex: Example) -> object:
    marks = []
    if (rx := _match(SKIP, ex)) is not None:
        marks.append(pytest.mark.skip(reason=SKIP[rx]))
    elif _match(SLOW, ex) is not None or _match(NEEDS_FULL, ex) is not None:
        marks.append(pytest.mark.slow)
    return pytest.param(ex, id=f"{ex.where.split(' = ')[0]} {ex.command}"[:120], marks=marks)


def _cli(sandbox: Path, *args: str) -> str:
    res = run_inproc(list(args), sandbox, None, timeout_s=120)
    assert res.code == 0 and not res.exception, (args, res.stderr[-500:], res.exception[-500:])
    return res.stdout


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every file an example names, made with archline itself where it can (a run, a fit, a lab) and otherwise
    from the bad-input matrix's valid fixtures."""
    from archline.fit.regress.synthetic import synthetic_dvfs, write_results_csv

    root = tmp_path_factory.mktemp("docs")
    fx = Fixtures(root / ".fixtures")
    f = fx.files
    sb = root / "sandbox"
    sb.mkdir()

    def put(src: Path, name: str) -> None:
        (sb / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, sb / name)

    # results: a shipped emulated GTX 580 run (energy-bearing rows), as results/*.csv and a run directory
    sample = next(iter(sorted((REPO / "results" / "sample").glob("*.csv"))))
    for name in ("results/emu/gtx580.csv", "results/gtx580.csv", "results/run1/results.csv"):
        put(sample, name)
    put(f["measured"], "../extra/results/dvfs.csv")     # only where an example names it: results/*.csv are fits
    # cost tables: a fit of that run; DVFS tables from the matrix's fixture
    _cli(sb, "fit", "results/emu/gtx580.csv", "--format", "json", "--out", "gtx580-costs.json")
    for name in ("costs.json", "my-costs.json"):
        put(sb / "gtx580-costs.json", name)
    tk1 = synthetic_dvfs(n_settings=4, seed=1)
    tk1["split"] = ["V" if i % 4 == 0 else "T" for i in range(len(tk1))]
    (sb / "tk1").mkdir()
    write_results_csv(tk1, sb / "tk1" / "tk1.csv")
    costs = json.loads((sb / "gtx580-costs.json").read_text())
    capped = {**costs, "coefficients": {**costs["coefficients"], "delta_pi": {"value": 150.0}}}
    (sb / "my-capped-costs.json").write_text(json.dumps(capped))
    # a small board's table: the Jetson TK1 profile's rates with costs a tenth of the GTX 580's and pi0 3 W
    small = {**costs, "platform": "jetson-tk1",
             "coefficients": {k: {**v, "value": v["value"] * 0.1} for k, v in costs["coefficients"].items()}}
    small["coefficients"]["pi0"]["value"] = 3.0
    (sb / "jetson-costs.json").write_text(json.dumps(small))
    # a CPU's table for perf counts needs an L3 cost, which no quick emulated fit gives: the GTX 580 fit plus one
    cpu = {**costs, "coefficients": {**costs["coefficients"], "eps_l3": {"value": 1.0e-10}}}
    (sb / "my-cpu.costs.json").write_text(json.dumps(cpu))
    put(REPO / "tests" / "data" / "counters" / "perf_intel.csv", "perf.csv")
    _cli(sb, "fit", "tk1/tk1.csv", "--model", "dvfs", "--format", "json", "--out", "tk1-dvfs.json")
    put(sb / "tk1-dvfs.json", "jetson-dvfs.json")
    # R/: ceiling rows come from the (slow) OpenCL run; here the shipped run stands in as result points
    put(sample, "R/gtx580.csv")
    # IPP and the rest
    (sb / "mine.toml").write_text(_cli(sb, "ipp", "example"))
    (sb / "mygpu.toml").write_text(_cli(sb, "ipp", "gpu", "gtx280"))
    (sb / "fitted.toml").write_text(_cli(sb, "ipp", "gpu", "gtx280"))
    (sb / "my-rows.csv").write_text(_cli(sb, "ipp", "microbench"))
    put(f["ptx"], "kernel.ptx")
    put(f["counts"], "fmm_counts.csv")
    # a program's own counts (measure --counts-file): the whole command ('run') and its phase 'matmul'
    (sb / "my_counts.csv").write_text("name,flops_dp,bytes_mem\nrun,2e9,2.4e7\nmatmul,2e9,2.4e7\n")
    # hardware counters as CSV columns (the thesis's recipe), with the measured time and the DVFS setting
    (sb / "nvprof-events.csv").write_text("name,time_s,core_mhz,mem_mhz,fb_subp0_read_sectors,flop_count_sp_fma\n"
                                          "fmm_u,0.002,852,924,600,100000\n")
    put(f["script"], "power.json")
    put(f["sweep"], "nightly.toml")
    put(f["raw"], "capture.raw.bin")
    put(f["raw"], "capture.bin")
    put(root / ".fixtures" / "capture.raw.bin.json", "capture.raw.bin.json")
    put(root / ".fixtures" / "capture.raw.bin.json", "capture.bin.json")
    put(f["samples"], "samples.csv")
    (sb / "mychip.toml").write_text('name = "mychip"\n')      # the keys it lacks take Nehalem-EX's values
    # the user's own GTX 580 profile, with the on-board sensor as a meter (meter calibrate --profile)
    (sb / "gtx580.toml").write_text((REPO / "formats" / "platforms" / "gtx580.toml").read_text()
                                    + '\n[[meters]]\nname = "nvml0"\nkind = "nvml"\nindex = 0\n')
    _cli(sb, "meter", "probe", "nvml0", "--emulate", "--out", "nvml0.sensor.json")
    for name in ("ncu.csv", "daxpy-ncu.csv"):
        put(REPO / "tests" / "data" / "counters" / "ncu_raw.csv", name)
    for name in ("my_program", "my_gpu_program"):       # the program a user measures: a short one
        (sb / name).write_text("#!/bin/sh\nsleep 0.1\n")
        (sb / name).chmod(0o755)
    put(REPO / "fit" / "analyses" / "data" / "mix-fmmu.toml", "mymix.toml")
    # an ERT user's roofline.json (a real ERT 1.1.0 file), which model and plot take as a platform
    put(REPO / "tests" / "data" / "real" / "ert" / "roofline.edison.nersc.gov.01.json",
        "Results.mymachine/roofline.json")
    (sb / "my-ceilings.toml").write_text('[[ceiling]]\nlabel = "FMA+ILP"\nkind = "compute"\nrate_per_s = 3.4e12\n'
                                         'peak_power_w = 148.0\n[[ceiling]]\nlabel = "strided"\nkind = "memory"\n'
                                         'rate_per_s = 4.0e10\n')
    yield sb


@pytest.fixture(scope="session")
def full_sandbox(sandbox: Path) -> Path:
    """The sandbox plus its two long parts (NEEDS_FULL), for the examples that name them (all -m slow)."""
    sb = sandbox.parent / "full"
    shutil.copytree(sandbox, sb, symlinks=True)
    # the lab: two emulated GTX 580 nodes, collected as fleet/ and lab-dataset/. Its scheduler is the local one
    # (no Slurm here), so `lab submit lab.toml --wait` runs it here; tests/lab/test_lab_slurm.py drives Slurm
    write_lab(sb / "lab.toml", [{"name": n, "platform": "gtx580", "precisions": ["sp"], "seed": s}
                                for n, s in (("node03", 1), ("node04", 2))])
    _cli(sb, "lab", "submit", "lab.toml", "--scheduler", "local")
    _cli(sb, "lab", "collect", "lab.toml", "--out", "fleet/")
    shutil.copytree(sb / "fleet", sb / "lab-dataset")
    shutil.copytree(sb / "fleet", sb / "lab")
    # two data sets of different runs, for compare --by run
    for keep, name in (("node03", "before"), ("node04", "after")):
        shutil.copytree(sb / "fleet", sb / name)
        for d in (sb / name).glob("platform=*/host=*"):
            if d.name != f"host={keep}":
                shutil.rmtree(d)
    # the README's walk-through from the main job: a real quick run of this machine (time only without a meter),
    # its roofline kept as the platform 'localhost' under the sandbox's own state directory (each test's
    # XDG_STATE_HOME is set to its copy of it)
    state = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(sb / ".state")
    try:
        _cli(sb, "bench", "run", "--platform", "localhost", "--quick", "--out", "results/quick")
        _cli(sb, "fit", *(str(p.relative_to(sb)) for p in (sb / "results" / "quick").glob("*.csv")), "--format",
             "json", "--out", "quick-costs.json")
    finally:
        if state is None:
            os.environ.pop("XDG_STATE_HOME")
        else:
            os.environ["XDG_STATE_HOME"] = state
    return sb


def _link_or_copy(src: str, dst: str) -> None:
    if Path(src).name in ("sweep.log", ".sweep.lock", "submit.lock"):
        shutil.copy2(src, dst)
    else:
        os.link(src, dst)


def _state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
            if p.is_file()}


#: each sandbox's files as made, before any example ran in a copy of it (session-wide, like the sandboxes)
_STATES: dict[Path, dict[str, tuple[int, int]]] = {}


@pytest.mark.parametrize("ex", [_param(e) for e in _distinct(EXAMPLES)])
def test_doc_example_runs(ex: Example, request: pytest.FixtureRequest, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox: Path = request.getfixturevalue("full_sandbox" if _match(NEEDS_FULL, ex) is not None else "sandbox")
    sandbox_state = _STATES.setdefault(sandbox, _state(sandbox))
    work = tmp_path / "sb"
    monkeypatch.setenv("XDG_STATE_HOME", str(work / ".state"))    # 'localhost': the sandbox's quick run
    # hard links: quick, and safe, since archline replaces a file it writes (atomic rename) and never an input;
    # a lab's log and locks (a sweep's, lab submit's) it writes in place, so those are copies
    shutil.copytree(sandbox, work, symlinks=True, copy_function=_link_or_copy)
    command = ex.command
    if (rx := _match(ADAPT, ex)) is not None:
        command += " " + " ".join(ADAPT[rx][0])
    if (rx := _match(SUBSTITUTE, ex)) is not None:
        for old, new in SUBSTITUTE[rx][0]:
            assert old in command, f"SUBSTITUTE {rx!r}: {old!r} is not in `{command}` any more"
            command = command.replace(old, new)
    for rx, names in EXTRA.items():
        if re.search(rx, command):
            for name in names:
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(sandbox.parent / "extra" / name, work / name)
    r = run_example(command, work, timeout_s=900 if _match(SLOW, ex) else 120)
    assert r.code == 0 and not r.crash, f"{ex.where}: `{command}` exited {r.code}: {r.stderr[-600:]}{r.crash[-600:]}"
    # the copy shares the sandbox's files (hard links): a command that wrote into an input in place shows here
    assert _state(sandbox) == sandbox_state, f"`{command}` changed a file of the shared sandbox in place"
    missing = [n for n in ex.stated if n not in r.stdout]
    assert not missing, f"{ex.where}: `{command}` states {missing}, which its output lacks:\n{r.stdout[-1500:]}"


@pytest.mark.parametrize("table", [SKIP, SLOW, ADAPT, SUBSTITUTE, EXTRA, NEEDS_FULL],
                         ids=["SKIP", "SLOW", "ADAPT", "SUBSTITUTE", "EXTRA", "NEEDS_FULL"])
def test_no_stale_entries(table: Mapping[str, object]) -> None:
    stale = [rx for rx in table if not any(re.search(rx, e.command) for e in EXAMPLES)]
    assert not stale, f"entries that match no example any more: {stale}"


def test_examples_found() -> None:
    """The harness finds the examples at all (a parser that broke would make every test above vanish)."""
    where = {e.where.split(":")[0] for e in EXAMPLES}
    assert {"README.md", "docs/analyses.md", "docs/lab.md"} <= where
    assert sum(e.where.startswith("--help") for e in EXAMPLES) >= 80


def test_stated_numbers_and_steps_parse() -> None:
    """What a comment states (a range states both ends; a section number or a bare count states nothing), and
    the little shell the runner understands."""
    assert _stated("GTX 580: 187 pJ overhead per flop; 306.8-442.8 pJ/B against 513") == ["187", "306.8", "442.8"]
    assert _stated("788 GFLOP/s for FMM_U, 0.31x, 20 SMs; see §3.2 and Table 4") == ["788", "0.31", "20"]
    assert steps("archline ipp example > mine.toml && archline ipp power mine.toml") == [
        (["archline", "ipp", "example"], "mine.toml"), (["archline", "ipp", "power", "mine.toml"], None)]
