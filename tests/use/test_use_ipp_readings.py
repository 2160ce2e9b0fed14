"""Hong & Kim IPP (S3) against its own Table 4 and §6.4: the optimal SM count of eq.34 for all 11 kernels, and
every reading of the places where the paper contradicts itself, with the one archline takes.

S3 §6.4.1: "IPP returns 20 for all the evaluated memory bandwidth limited benchmarks [Nmat, Dotp, Madd, Dmadd,
Mmul] and 30 for Cmem"; §6.4: the five Merge kernels cannot reach peak bandwidth (all SMs).
"""

from __future__ import annotations

import math

import pytest

from archline.fit.analyses.hongkim import report as rep
from archline.fit.analyses.hongkim.files import load_gpu, load_kernels
from archline.fit.analyses.hongkim.timing import optimal_active_sms

GPU = load_gpu("gtx280")
KERNELS = {k.name: k for k in load_kernels("table4", GPU)}
BW_LIMITED = ("Nmat", "Dotp", "Madd", "Dmadd", "Mmul")
PAPER_SMS = {**{n: 20 for n in BW_LIMITED}, **{n: 30 for n in ("SVM", "Bino", "Sepia", "Conv", "Bs", "Cmem")}}


@pytest.mark.parametrize("name", list(PAPER_SMS), ids=[f"Q141-Q142-{n}" for n in PAPER_SMS])
def test_q141_q142_optimal_sms_all_table4_kernels(name: str) -> None:
    """Q141 (20 SMs for the bandwidth-limited kernels), Q142 (30 for Cmem) and 30 for the Merge kernels, from
    Table 4's MWP, CWP, N = 16 and MWP_peak_BW = MWP for a bandwidth-limited kernel (eq.29)."""
    o = rep.optimal(KERNELS[name], GPU)
    assert o.active_sms == PAPER_SMS[name]
    # Table 4's "bandwidth limited" column is exactly the kernels that reach eq.34's bandwidth formula
    assert (o.condition == "bandwidth") == KERNELS[name].bandwidth_limited == (name in BW_LIMITED)


def test_table4_bandwidth_formula_values() -> None:
    """eq.34 else-branch: Mem_Bandwidth/(BW_per_warp*N) = MWP_peak_BW(30)*30/N: 10.802*30/16 = 20.25 and
    10.764*30/16 = 20.18, both rounded down to 20."""
    assert rep.optimal(KERNELS["Dotp"], GPU).exact == pytest.approx(10.802 * 30 / 16)
    assert rep.optimal(KERNELS["Nmat"], GPU).exact == pytest.approx(10.764 * 30 / 16)


def test_nmat_every_reading() -> None:
    """Nmat (Table 4: MWP 10.764, CWP 32) is where the paper's numbers disagree. Each reading:

    * archline: Nmat is bandwidth-limited (Table 4), so its MWP *is* its MWP_peak_BW (eq.29) and, with N = 16
      like the four other matrix kernels, eq.34 gives floor(10.764*30/16) = 20, the paper's number. The cost:
      CWP = 32 > N = 16, which Hong & Kim 2009's CWP = min(CWP_full, N) does not allow.
    * MWP 10.764 against the GPU-wide "MWP_peak_BW (10.8)" of §6.4 (10.802 in Table 4): condition (3)
      MWP < MWP_peak_BW holds and Nmat gets all 30 SMs, against §6.4.1's 20.
    * CWP capped by N, so N >= 32 (the GTX 280 runs at most 32 warps per SM): floor(10.764*30/32) = 10.
    """
    archline = optimal_active_sms(10.764, 32, 16, 10.764, 30)
    gpu_wide_peak = optimal_active_sms(10.764, 32, 16, 10.802, 30)
    cwp_capped = optimal_active_sms(10.764, 32, 32, 10.764, 30)
    assert (archline.active_sms, archline.condition) == (20, "bandwidth")
    assert (gpu_wide_peak.active_sms, gpu_wide_peak.condition) == (30, "(3)")
    assert (cwp_capped.active_sms, cwp_capped.condition) == (10, "bandwidth")
    assert rep.optimal(KERNELS["Nmat"], GPU).active_sms == archline.active_sms   # the shipped file's reading


def test_eq34_condition1_and_versus_or() -> None:
    """eq.34 prints "(MWP == N) or (CWP == N)". Read with OR, the four kernels with CWP = N = 16 meet (1) and get
    all 30 SMs, against §6.4.1's 20; read as Case 1 of the timing model (eq.24: MWP == N *and* CWP == N, "not
    enough running warps", S3 §4.2), they reach the bandwidth formula: 20. archline uses AND."""
    for name in ("Dotp", "Madd", "Dmadd", "Mmul"):
        assert rep.optimal(KERNELS[name], GPU, cond1="or").active_sms == 30
        assert rep.optimal(KERNELS[name], GPU, cond1="and").active_sms == 20
    assert rep.optimal(KERNELS["Nmat"], GPU, cond1="or").active_sms == 20     # CWP 32 != N 16 either way


def test_eq34_condition2_strict_versus_not() -> None:
    """eq.34 prints "MWP > CWP"; §6.4 says Sepia (MWP = CWP = 12) cannot reach peak bandwidth because its CWP
    is "equal to or less than" its MWP. With ">" Sepia's (2) fails and (3) needs its MWP_peak_BW, which the
    paper does not give. archline reads (2) as MWP >= CWP."""
    assert rep.optimal(KERNELS["Sepia"], GPU, cond2=">=").condition == "(2)"
    with pytest.raises(Exception, match="MWP_peak_BW"):
        rep.optimal(KERNELS["Sepia"], GPU, cond2=">")


def test_q138_q139_mwp_against_peak() -> None:
    """Q138, Q139: SVM's MWP (5.878 in §6.4, 5.875 in Table 4; archline ships the table's) and Bs's MWP (3) are
    below MWP_peak_BW (10.8), so condition (3) gives all SMs either way."""
    for svm_mwp in (5.878, 5.875):
        assert optimal_active_sms(svm_mwp, 11.226, None, 10.802, 30).condition == "(3)"
    assert KERNELS["SVM"].get("mwp") == 5.875
    assert KERNELS["Bs"].get("mwp") == 3.0
    assert rep.optimal(KERNELS["Bs"], GPU).condition == "(3)"


def test_q140_bandwidth_saturation_point() -> None:
    """Q140 (Fig. 14: bandwidth saturates "around 19" active SMs): MWP_peak_BW(n) = 10.802*30/n reaches N = 16 at
    n = 20.25; the model's performance is 98.7% of its maximum at 20 SMs and grows linearly below."""
    sw = rep.sweep(KERNELS["Dotp"], GPU)
    assert 10.802 * 30 / 16 == pytest.approx(20.25, abs=0.01)
    perf = [p / sw.perf[-1] for p in sw.perf]
    assert perf[20 - 1] == pytest.approx(16 / (10.802 * 30 / 20), rel=1e-9)   # 0.9874
    assert perf[21 - 1] == pytest.approx(1.0)
    assert perf[10 - 1] == pytest.approx(perf[20 - 1] / 2)                     # linear below saturation


def test_fig13_cmem_linear() -> None:
    """Fig. 13: only Cmem (MWP 10.802 > CWP 9.356: Case 3, compute-bound) improves linearly with active SMs."""
    sw = rep.sweep(KERNELS["Cmem"], GPU)
    assert [p / sw.perf[-1] for p in sw.perf] == pytest.approx([n / 30 for n in sw.active_sms])
    assert sw.best("runtime") == 30


@pytest.mark.parametrize("name", ["Dotp", "Nmat"])
def test_q143_to_q145_savings_as_the_model_predicts(name: str) -> None:
    """§6.4.1-6.4.2 savings of running on 20 SMs instead of 30, as far as Table 4 determines them.

    The paper's 10.99% average and 22.09% maximum runtime savings (Q143, Q144) and 25.85% with power gating
    (Q145) use *measured* times and powers that it does not print, so they are not reproducible. The model's
    own prediction: time ~ #Repw*N/MWP(n), so T(20)/T(30) = (30/20)*(16/16)/(16/MWP_peak_BW(30)) (1.0127 for
    Dotp), the runtime saving 1 - log10(8.9*20/30 + 1.1)*T(20)/T(30) (eq.16; 14.2% for Dotp) and the power-gating
    saving 1 - (20/30)*T(20)/T(30) (32.5% for Dotp)."""
    sw = rep.sweep(KERNELS[name], GPU)
    peak = KERNELS[name].get("mwp_peak_bw")
    assert peak is not None
    t_ratio = (30 / 20) * (16 / 16) / (16 / peak)
    f20 = math.log10(8.9 * 20 / 30 + 1.1)
    s = rep.savings(sw, 20)
    assert s["time_ratio"] == pytest.approx(t_ratio)
    assert s["runtime"] == pytest.approx(1 - f20 * t_ratio)
    assert s["power_gating"] == pytest.approx(1 - (20 / 30) * t_ratio)
    assert s["runtime+idle"] is None
    # Runtime+Idle needs the kernel's runtime power: e.g. 100 W, with the 83 W idle power (S3 §5.1)
    s2 = rep.savings(sw, 20, runtime_power_w=100.0, idle_power_w=83.0)
    assert s2["runtime+idle"] == pytest.approx(1 - (83 + 100 * f20) * t_ratio / 183)


def test_q146_power_gating_per_sm() -> None:
    """Q146 (S3 §6.4.2): 30 SMs drawing 120 W in all is 4 W per SM with per-core power gating: `archline ipp
    savings`' power-gating saving (``report.savings``) of one SM gated at an unchanged time is 1/30 of 120 W."""
    n = list(range(1, 31))
    sw = rep.Sweep("flat", True, n, [1.0] * 30, [1.0] * 30, [120.0] * 30)
    assert rep.savings(sw, 29)["power_gating"] * 120.0 == pytest.approx(4.0)


def test_sweep_all_table4_kernels() -> None:
    """All SMs' worth of kernels: below the bandwidth limit (SVM, Bs: MWP < MWP_peak_BW) or compute-bound (Bino,
    Conv, Cmem: MWP > CWP) performance is linear in the SM count whatever N is; Sepia (MWP = CWP, no MWP_peak_BW
    in the paper) cannot be swept and is skipped with the reason."""
    sws, opt, skipped = rep.sweep_many(list(KERNELS.values()), GPU)
    assert [s.split(" ")[0] for s in skipped] == ["Sepia"] and "mwp_peak_bw" in skipped[0]
    for s in sws:
        if s.kernel in ("SVM", "Bs", "Bino", "Conv", "Cmem"):
            assert [p / s.perf[-1] for p in s.perf] == pytest.approx([n / 30 for n in s.active_sms])
    assert opt == PAPER_SMS          # eq.34 still decides Sepia (condition 2)
