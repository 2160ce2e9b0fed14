"""The clock verdict: which source confirms the dependency-chain clock, and no number where sources disagree."""

from __future__ import annotations

import pytest

from archline.bench.cpu_asm.clock import reconcile, verdict_for_run

GHZ = 1e9


def test_chains_disagreeing_give_no_clock() -> None:
    # the old add-immediate chain folded by the renamer: "21 GHz" against an imul chain's 3.9 GHz
    v = reconcile(21 * GHZ, 3.9 * GHZ, 2.6 * GHZ)
    assert v.core_hz is None and v.check.startswith("no clock") and "imul" in v.check


def test_perf_counter_confirms_or_refutes() -> None:
    ok = reconcile(3.0 * GHZ, 3.0 * GHZ, 2.6 * GHZ, perf={"perf_hz": 3.05 * GHZ, "cycles_per_add": 1.0})
    assert ok.core_hz == 3.0 * GHZ and "perf" in ok.method
    bad = reconcile(3.0 * GHZ, 3.0 * GHZ, 0.0, perf={"perf_hz": 1.5 * GHZ, "cycles_per_add": 0.5})
    assert bad.core_hz is None and "perf counts" in bad.check
    # perf unavailable: the reason is not a reading; the next source decides
    assert reconcile(3.0 * GHZ, 3.0 * GHZ, 3.1 * GHZ, perf={"error": "ENOENT"}).core_hz == 3.0 * GHZ


def test_cpufreq_range() -> None:
    assert reconcile(3.4 * GHZ, cpufreq_hz=(0.8 * GHZ, 3.5 * GHZ)).core_hz == 3.4 * GHZ
    v = reconcile(9.0 * GHZ, cpufreq_hz=(0.8 * GHZ, 3.5 * GHZ))
    assert v.core_hz is None and "outside cpufreq" in v.check


def test_tsc_within_20_percent_or_turbo_explained() -> None:
    near = reconcile(2.7 * GHZ, 2.7 * GHZ, 2.6 * GHZ)
    assert near.core_hz == 2.7 * GHZ and "of the TSC" in near.check
    # the Xeon VM: TSC 2600 MHz nominal, the core at 3.9 GHz turbo, add and imul chains agreeing
    turbo = reconcile(3.9 * GHZ, 3.95 * GHZ, 2.6 * GHZ)
    assert turbo.core_hz == 3.9 * GHZ and "1.50x" in turbo.check and "nominal" in turbo.check


def test_single_chain_is_unverified() -> None:
    v = reconcile(2.0 * GHZ)
    assert v.core_hz == 2.0 * GHZ and v.check.startswith("unverified")
    assert reconcile(0.0).core_hz is None


def test_this_machine_probe_agrees_with_itself(cpu_backend) -> None:
    from archline.bench.cpu_asm import _kernels

    out = dict(_kernels.clock_sample(0))
    v = verdict_for_run(out, 0)
    assert out["effective_clock_hz"] > 1e8
    if out["mul_chain_hz"] > 0:            # x86-64: the two chains are independent readings of one clock
        assert v.core_hz is not None or "disagree" in v.check
    if v.core_hz is not None:
        assert v.core_hz == pytest.approx(out["effective_clock_hz"])
