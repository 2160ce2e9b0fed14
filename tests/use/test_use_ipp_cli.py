"""`archline ipp`: the timing model (S3 eq.24-33), the GPU and kernel files, and the commands as a user runs
them, including one-line errors for malformed files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.hongkim import ipp
from archline.fit.analyses.hongkim.files import load_gpu, load_kernels
from archline.fit.analyses.hongkim.report import kernel_power, timing
from archline.fit.analyses.hongkim.timing import TimingInputs, cwp, exec_cycles
from archline.fit.errors import ArchlineFitError

GPU = load_gpu("gtx280")


def _t(**kw: float) -> TimingInputs:
    base = dict(comp_cycles=400.0, mem_cycles=4300.0, mem_insts=10.0, n_warps=16.0, mem_latency_cycles=430.0,
                mwp_without_bw_full=43.0, mwp_peak_bw_all_sms=10.0, num_sms=30, repw_all_sms=2.0)
    base.update(kw)
    return TimingInputs(**base)  # type: ignore[arg-type]


def test_timing_model_three_cases() -> None:
    """eq.24-26 by hand. CWP = min((Mem + Comp)/Comp, N); MWP = min(MWP_Without_BW, MWP_peak_BW(n), N)."""
    assert cwp(4300.0, 400.0, 16.0) == (pytest.approx(11.75), pytest.approx(11.75))
    # Case 2 (CWP 11.75 >= MWP 10): (Mem*N/MWP + Comp/#Mem*(MWP - 1))*Repw
    r = exec_cycles(_t())
    assert (r.case, r.mwp, r.cwp) == (2, 10.0, 11.75)
    assert r.exec_cycles == pytest.approx((4300 * 16 / 10 + 400 / 10 * 9) * 2)
    # Case 3 (MWP 10 > CWP 3): (Mem_L + Comp*N)*Repw
    r = exec_cycles(_t(mem_cycles=800.0))
    assert r.case == 3 and r.exec_cycles == pytest.approx((430 + 400 * 16) * 2)
    # Comp_cycles > Mem_cycles is Case 2 as S3 prints its condition, even with MWP > CWP
    assert exec_cycles(_t(mem_cycles=200.0)).case == 2
    # Case 1 (MWP == CWP == N = 4): (Mem + Comp + Comp/#Mem*(MWP - 1))*Repw
    r = exec_cycles(_t(n_warps=4.0))
    assert r.case == 1 and r.exec_cycles == pytest.approx((4300 + 400 + 40 * 3) * 2)
    # fewer SMs: MWP_peak_BW and #Repw scale as 30/n (eq.30; fixed work, S3 §6.4)
    r = exec_cycles(_t(), 15)
    assert r.mwp_peak_bw == pytest.approx(20.0) and r.repw == pytest.approx(4.0) and r.mwp == 16.0


def test_example_kernel_by_hand() -> None:
    """The shipped example: 464 instructions per warp (192 global memory), Comp = 4 x 464, Mem = 430 x 192,
    CWP = min(45.5, 32) = 32 >= MWP = 10.802: Case 2."""
    from archline.fit.analyses.hongkim.files import SHIPPED_KERNELS

    (k,) = load_kernels(SHIPPED_KERNELS["table4"].with_name("ipp-example-kernels.toml"), GPU)
    r = timing(k, GPU)
    comp, mem = 4 * 464, 430 * 192
    assert r["case"] == 2 and r["CWP"] == 32 and r["MWP"] == pytest.approx(10.802)
    assert r["exec_cycles"] == pytest.approx((mem * 32 / 10.802 + comp / 192 * 9.802) * 2)
    p = kernel_power(k, GPU)
    wps = 256 / 32 * 240 / 30
    rate_mem = 192 * wps / (r["exec_cycles"] / 4)
    assert p.rates["global_mem"] == pytest.approx(rate_mem)
    assert p.power.component_w["global_mem"] == pytest.approx(52 * (0.1365 * math.log(rate_mem) + 1.001375))


def test_shipped_gpu_file_matches_tables_1_to_3() -> None:
    """fit/analyses/data/ipp-gtx280.toml carries S3 Tables 2-3 exactly as the CSV transcriptions do."""
    csv = ipp.load_gtx280()
    assert GPU.units == csv.units
    assert GPU.instruction_units == csv.instruction_units
    for f in ("mu", "lambda_", "rho", "rc_rise_s", "rc_decay_s", "num_sms", "idle_power_w", "beta",
              "sigma_w_per_degc", "mem_latency_cycles"):
        assert getattr(GPU, f) == pytest.approx(getattr(csv, f)), f


def _gpu_file(tmp_path: Path, edit: Callable[[str], str]) -> Path:
    from archline.fit.analyses.hongkim.files import SHIPPED_GPUS

    p = tmp_path / "mygpu.toml"
    p.write_text(edit(SHIPPED_GPUS["gtx280"].read_text()))
    return p


def test_user_gpu_file_accepted(tmp_path: Path) -> None:
    """A user's GPU: 16 SMs, 40 W idle, 1 W per-SM constant power: no access draws 16 W + 40 W."""
    p = _gpu_file(tmp_path, lambda s: s.replace("num_sms = 30", "num_sms = 16").replace(
        "idle_power_w = 83.0", "idle_power_w = 40.0").replace("max_power_w = 0.813", "max_power_w = 1.0"))
    g = load_gpu(p)
    assert g.num_sms == 16 and g.alpha == pytest.approx(8.9 / 16)
    assert ipp.power_from_rates({}, g).gpu_power_w == pytest.approx(56.0)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s.replace("rho = 21.505", "rhoo = 21.505"), "unknown key 'rhoo'"),
    (lambda s: s.replace("num_sms = 30", 'num_sms = "thirty"'), "num_sms: expected a number"),
    (lambda s: s.replace("num_sms = 30", "num_sms = 30.5"), "num_sms must be a whole number"),
    (lambda s: s.replace("beta = 1.1", "beta = 12.0"), "beta must be below 10"),
    (lambda s: s.replace("[units.const_sm]", "[units.const_smx]"), "missing units.const_sm"),
    (lambda s: s.replace("spec_linear = false\n[units.int]", "spec_linear = 1\n[units.int]"),
     "spec_linear must be true or false"),
    (lambda s: s + "\n[instructions]\nfma_fp = [\"fpu\"]\n", "unknown unit 'fpu'"),
    (lambda s: s.replace("[units.fp]", "[units.fp\n"), "not valid TOML"),
])
def test_malformed_gpu_file_one_line(tmp_path: Path, edit: Callable[[str], str], message: str,
                                     run_cli: Callable[..., object]) -> None:
    p = _gpu_file(tmp_path, edit)
    with pytest.raises(ArchlineFitError, match=message):
        load_gpu(p)
    r = run_cli("ipp", "power", "--gpu", str(p))
    assert r.exit_code == 2 and r.stdout == ""                                     # type: ignore[attr-defined]
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("archline: error: ")  # type: ignore[attr-defined]
    assert str(p) in r.stderr                                                      # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "message"), [
    ('[[kernel]]\nname = "k"\nmwpp = 3\n', "kernel 'k': unknown key 'mwpp'"),
    ('[[kernel]]\nname = "k"\nmwp = "x"\n', "kernel 'k': mwp: expected a number"),
    ('[[kernel]]\nname = "k"\nn_warps = 0\n', "n_warps: must be positive"),
    ('[[kernel]]\nname = "k"\n[kernel.instructions]\nfrob_fp = 3\n', "instructions.frob_fp: unknown instruction"),
    ('[[kernel]]\nname = "k"\n[kernel.rates]\nconst_sm = 0.5\n', "rates.const_sm: not a unit"),
    ('[[kernel]]\nname = "k"\n[[kernel]]\nname = "k"\n', "kernel 'k' defined twice"),
    ('schema = "other/1"\n[[kernel]]\nname = "k"\n', "schema must be"),
    ('x = 1\n', "unknown key 'x'"),
    ('[[kernel]]\nmwp = 1\n', "kernel #1 has no name"),
])
def test_malformed_kernel_file_one_line(tmp_path: Path, body: str, message: str,
                                        run_cli: Callable[..., object]) -> None:
    p = tmp_path / "k.toml"
    p.write_text(body)
    with pytest.raises(ArchlineFitError, match=message):
        load_kernels(p, GPU)
    r = run_cli("ipp", "optimal", str(p))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and message.split(":")[0] in r.stderr  # type: ignore


def test_cli_power_no_access_107_39(run_cli: Callable[..., object]) -> None:
    """Acceptance: GTX 280 with no access: 30 x 0.813 W (RP_Const_SM, eq.9) + 83 W idle (S3 §5.1) = 107.39 W."""
    r = run_cli("ipp", "power", "--format", "json")
    (k,) = json.loads(r.stdout)["kernels"]                                        # type: ignore[attr-defined]
    assert k["gpu_power_w"] == pytest.approx(107.39) and k["runtime_power_w"] == pytest.approx(24.39)
    assert sum(k["breakdown_w"].values()) == pytest.approx(107.39)
    r = run_cli("ipp", "power")
    assert "107.39" in r.stdout                                                    # type: ignore[attr-defined]


def test_cli_optimal_json_and_readings(run_cli: Callable[..., object]) -> None:
    r = run_cli("ipp", "optimal", "table4", "--format", "json")
    rows = {x["kernel"]: x for x in json.loads(r.stdout)["kernels"]}              # type: ignore[attr-defined]
    assert [rows[n]["optimal_sms"] for n in ("Nmat", "Dotp", "Cmem", "SVM")] == [20, 20, 30, 30]
    r = run_cli("ipp", "optimal", "table4", "-k", "Dotp", "--cond1", "or", "--format", "json")
    assert json.loads(r.stdout)["kernels"][0]["optimal_sms"] == 30                # type: ignore[attr-defined]
    r = run_cli("ipp", "optimal", "table4", "-k", "Nope")
    assert r.exit_code == 2 and "no kernel 'Nope'" in r.stderr                    # type: ignore[attr-defined]


def test_cli_figures_and_example(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Every ipp figure is written (atomically); the example file runs through power, timing, sweep, temperature."""
    ex = tmp_path / "mine.toml"
    r = run_cli("ipp", "example")
    ex.write_text(r.stdout)                                                        # type: ignore[attr-defined]
    for args, fig in ((("ipp", "power", str(ex)), "p.png"), (("ipp", "sweep", "table4", "-k", "Dotp", "-k", "Cmem"),
                      "s.png"), (("ipp", "temperature", str(ex)), "t.png"), (("ipp", "sweep", str(ex)), "e.png")):
        r = run_cli(*args, "--plot", str(tmp_path / fig))
        assert r.exit_code == 0, r.stderr                                          # type: ignore[attr-defined]
        assert (tmp_path / fig).read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*tmp*"))
    r = run_cli("ipp", "timing", str(ex), "--format", "json")
    assert json.loads(r.stdout)["kernels"][0]["case"] == 2                         # type: ignore[attr-defined]
    r = run_cli("ipp", "power", "table4")
    assert r.exit_code == 2 and "S3 Table 4 prints neither" in r.stderr           # type: ignore[attr-defined]


def test_cli_ptx_counts(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    ptx = tmp_path / "k.ptx"
    ptx.write_text("    ld.global.f32 %f1, [%rd2];\n    fma.rn.f32 %f2, %f1, %f1, %f1;\n    ret;\n")
    r = run_cli("ipp", "ptx", str(ptx), "--trips", "10", "--format", "json")
    assert json.loads(r.stdout)["instructions"] == {"fma_fp": 10, "ld_global": 10}  # type: ignore[attr-defined]
    r = run_cli("ipp", "ptx", str(tmp_path / "missing.ptx"))
    assert r.exit_code == 2 and "PTX file" in r.stderr and "does not exist" in r.stderr  # type: ignore[attr-defined]
