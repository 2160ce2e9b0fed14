"""`archline ipp`: the timing model (S3 eq.24-33), the GPU and kernel files, and the commands as a user runs
them, including one-line errors for malformed files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archline.fit.analyses.hongkim import ipp
from archline.fit.analyses.hongkim.files import load_gpu, load_kernels
from archline.fit.analyses.hongkim.report import kernel_power, timing
from archline.fit.analyses.hongkim.timing import TimingInputs, cwp, exec_cycles
from archline.model.errors import ArchlineFitError

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


# --- folded from test_breaker27_ipp.py (a review round's regression tests) ---------------------------------------
# Breaker 27 items 6-10 and 16: `archline ipp fit / validate / microbench` and IPP GPU files.
#
# Rows files are strict CSV (a column named twice, a ragged row: one line naming the file and the line, exit 2);
# a power above 1 MW (``archline.formats.costs_units.implausible``) is refused in rows and GPU files; the footer, the
# --help and docs/analyses.md quote what S3 (Hong & Kim, ISCA 2010) prints: §6.1 2.5% (Fig. 7) and 9.18% (Fig. 9),
# §6.3 (Fig. 12) 2.7% and 8.94%.


DOCS = Path(__file__).resolve().parents[2] / "docs" / "analyses.md"


def _rows(run_cli: Callable[..., Any], tmp_path: Path, *args: str) -> Path:
    r = run_cli("ipp", "microbench", *args)
    assert r.exit_code == 0, r.stderr
    p = tmp_path / "rows.csv"
    p.write_text(r.stdout)
    return p


def _refused(run_cli: Callable[..., Any], *args: str) -> str:
    r = run_cli(*args)
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    return str(r.stderr)


def test_item6_docs_quote_the_validate_result(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Item 6: the docs' number for `ipp validate` on `microbench --noise 0.03 --seed 2` is what it prints."""
    rows = _rows(run_cli, tmp_path, "--noise", "0.03", "--seed", "2")
    r = run_cli("ipp", "validate", str(rows))
    assert r.exit_code == 0, r.stderr
    got = re.search(r"geometric-mean error (\d+\.\d+)%", r.stdout)
    assert got is not None
    doc = DOCS.read_text()
    m = re.search(r"on `microbench --noise 0\.03 --seed 2` it is (\d+\.\d+)%", doc)
    assert m is not None and m.group(1) == got.group(1) == "1.74"


def test_item7_paper_numbers_in_footer_help_and_docs(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Item 7: S3 §6.1 prints 2.5% (microbenchmarks, Fig. 7) and 9.18% (GPGPU kernels, Fig. 9); §6.3 with IPP's
    predicted times (Fig. 12) 2.7% and 8.94%. Footer, --help and docs say the same, with the figure."""
    rows = _rows(run_cli, tmp_path)
    out = run_cli("ipp", "validate", str(rows)).stdout
    helptext = " ".join(run_cli("ipp", "validate", "--help").stdout.split())
    doc = DOCS.read_text()
    for text in (out, helptext, doc):
        for s in ("§6.1", "2.5%", "Fig. 7", "9.18%", "Fig. 9", "§6.3", "Fig. 12", "2.7%", "8.94%"):
            assert s in text, (s, text[:200])
    assert "Fig. 12 / §6.3: 2.7% and 8.94% (kernels)" not in doc


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item8_column_named_twice(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines(keepends=True)
    dup = tmp_path / "dup.csv"
    dup.write_text(lines[0].replace("rate_reg", "rate_fp") + "".join(lines[1:]))
    err = _refused(run_cli, "ipp", sub, str(dup))
    assert "dup.csv, line 1" in err and "rate_fp" in err and "twice" in err


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item9_ragged_rows(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines()
    more = tmp_path / "r.csv"
    more.write_text("\n".join([lines[0], lines[1] + ",extra", *lines[2:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(more))
    assert "r.csv, line 2" in err and "more" in err
    fewer = tmp_path / "s.csv"
    fewer.write_text("\n".join([*lines[:2], lines[2].rsplit(",", 1)[0], *lines[3:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(fewer))
    assert "s.csv, line 3" in err and "fewer" in err


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_item10_power_above_1mw_refused(run_cli: Callable[..., Any], tmp_path: Path, sub: str) -> None:
    rows = _rows(run_cli, tmp_path)
    lines = rows.read_text().splitlines()
    f = lines[1].split(",")
    f[1] = "1e308"
    big = tmp_path / "big.csv"
    big.write_text("\n".join([lines[0], ",".join(f), *lines[2:]]) + "\n")
    err = _refused(run_cli, "ipp", sub, str(big))
    assert "big.csv, line 2" in err and "gpu_power_w" in err and "real machine" in err
    f[1] = "999999"   # at most 1 MW: accepted
    big.write_text("\n".join([lines[0], ",".join(f), *lines[2:]]) + "\n")
    assert run_cli("ipp", sub, str(big)).exit_code == 0


@pytest.mark.parametrize(("old", "new", "key"), [
    ("idle_power_w = 83.0", "idle_power_w = 1e308", "idle_power_w"),
    ("max_power_w = 52.0", "max_power_w = 52e9", "max_power_w"),
])
def test_item16_gpu_file_power_above_1mw_refused(run_cli: Callable[..., Any], tmp_path: Path, old: str, new: str,
                                                 key: str) -> None:
    text = run_cli("ipp", "gpu", "gtx280").stdout
    assert old in text
    g = tmp_path / "g.toml"
    g.write_text(text.replace(old, new, 1))
    err = _refused(run_cli, "ipp", "microbench", "--gpu", str(g))
    assert "g.toml" in err and key in err and "real machine" in err
    g.write_text(text)
    assert run_cli("ipp", "microbench", "--gpu", str(g)).exit_code == 0
