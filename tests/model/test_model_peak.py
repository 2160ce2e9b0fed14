"""`archline model peak`: the instruction-mix-aware peak (S1 §3.4.4; model.md §9), FMM_U on the GTX 580."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.choi.mix_peak import IssueRules, load_mix, mix_peak
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ArchlineFitError

RULES = load_platform("gtx580")
MIX = load_mix("fmmu")


def _peak() -> object:
    from archline.fit.analyses.choi.mix_peak import issue_rules
    return mix_peak(issue_rules(RULES), MIX)


def test_q036_fmmu_mix_11_flops_in_8_instructions() -> None:
    """Q036: 1 rsqrt (1 flop) + 3 FMA (2 flops) + 4 add/sub = 11 flops in 8 instructions."""
    assert (MIX.flops, MIX.instructions) == (11, 8)


def test_q037_q038_q039_q042_issue_rules_in_profile() -> None:
    """Q037-Q039, Q042: 512 CUDA cores in 16 SMs at 1.54 GHz, 4 SFUs per SM (S1 §3.4.4), as the profile holds."""
    from archline.fit.analyses.choi.mix_peak import issue_rules
    r = issue_rules(RULES)
    assert (r.sms * r.cores_per_sm, r.sms, r.clock_hz, r.sfus_per_sm) == (512, 16, 1.54e9, 4)


def test_q040_q041_instruction_throughput_and_fma_peak() -> None:
    """Q040: 512 x 1.54 GHz = 788 G instructions/s; Q041: as FMAs, 2 x 788 = 1.58 TFLOP/s (S1 Table 3: 1581.06,
    at 1.544 GHz)."""
    from archline.fit.analyses.choi.mix_peak import issue_rules
    r = issue_rules(RULES)
    assert r.instruction_rate_per_s / 1e9 == pytest.approx(788.48)
    assert 2 * r.instruction_rate_per_s / 1e12 == pytest.approx(1.58, abs=0.005)
    assert RULES.value("peak_flop_per_s_sp") / 1e12 == pytest.approx(1.58, abs=0.005)  # type: ignore[operator]


def test_q043_to_q047_refined_peak_788() -> None:
    """Q043: 32/4 = 8 cycles per warp rsqrt; Q044: 3 + 4 + 8 = 15 cycles; Q045: (7*32 + 8*20)/15 = 25.6
    instructions/cycle; Q046: (3*64 + 4*32 + 8*20)/15 = 32 flops/cycle; Q047: 32 x 16 x 1.54 GHz = 788 GFLOP/s."""
    p = _peak()
    classes = {c["class"]: c for c in p.per_class}                      # type: ignore[attr-defined]
    assert classes["rsqrt"]["cycles"] == 8 and classes["rsqrt"]["instructions_per_cycle"] == 20
    assert p.cycles_per_mix == 15                                        # type: ignore[attr-defined]
    assert p.instructions_per_cycle == pytest.approx((7 * 32 + 8 * 20) / 15)  # type: ignore[attr-defined]
    assert p.instructions_per_cycle == pytest.approx(25.6)               # type: ignore[attr-defined]
    assert p.flops_per_cycle == pytest.approx(32.0)                      # type: ignore[attr-defined]
    assert p.peak_flop_per_s / 1e9 == pytest.approx(788.48)              # type: ignore[attr-defined]


def test_fma_only_mix_gives_vendor_peak() -> None:
    """A mix of FMAs only issues 32 x 2 flops per cycle per SM: the FMA peak, 1577 GFLOP/s at 1.54 GHz."""
    from archline.fit.analyses.choi.mix_peak import InstructionClass, Mix
    r = IssueRules(sms=16, clock_hz=1.54e9, cores_per_sm=32, sfus_per_sm=4)
    assert mix_peak(r, Mix("fma", (InstructionClass("fma", 5, "core", 2),))).peak_flop_per_s == pytest.approx(
        2 * 512 * 1.54e9)


def test_cli_model_peak(run_cli: Callable[..., object]) -> None:
    r = run_cli("model", "peak", "gtx580", "--mix", "fmmu", "--format", "json")
    d = json.loads(r.stdout)                                             # type: ignore[attr-defined]
    assert d["peak_flop_per_s"] / 1e9 == pytest.approx(788.48)
    assert d["fma_peak_flop_per_s"] == pytest.approx(1581.06e9)
    r = run_cli("model", "peak", "gtx580", "--mix", "fmmu")
    assert "788.5 GFLOP/s" in r.stdout and "1581" in r.stdout            # type: ignore[attr-defined]
    r = run_cli("model", "peak", "gtx680", "--mix", "fmmu")
    assert r.exit_code == 2 and "has no [issue] table" in r.stderr       # type: ignore[attr-defined]


def test_user_profile_and_mix(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """A user's GPU with 4 schedulers, 1 of which issues transcendentals, 2 SMs x 64 cores, 16 SFUs at 1 GHz; a mix
    of 2 FMAs and 1 sin: cycles 2*0.5 + 1*2 = 3; flops/cycle (2*0.5*128 + 2*(16 + 48*1))/3 = 85.33."""
    prof = tmp_path / "mygpu.toml"
    prof.write_text('schema = "archline.platform/1"\nname = "mygpu"\n[issue]\nsms = 2\nclock_hz = 1e9\n'
                    'cores_per_sm = 64\nsfus_per_sm = 16\nschedulers_per_sm = 4\nsfu_schedulers = 1\n')
    mix = tmp_path / "m.toml"
    mix.write_text('[instructions.fma]\ncount = 2\nunit = "core"\nflops = 2\n'
                   '[instructions.sin]\ncount = 1\nunit = "sfu"\nflops = 1\n')
    r = run_cli("model", "peak", str(prof), "--mix", str(mix), "--format", "json")
    d = json.loads(r.stdout)                                             # type: ignore[attr-defined]
    assert d["cycles_per_mix"] == pytest.approx(3.0)
    assert d["flops_per_cycle_per_sm"] == pytest.approx((2 * 0.5 * 128 + 2 * (16 + 48)) / 3)
    assert d["fraction_of_fma_peak"] is None


@pytest.mark.parametrize(("body", "message"), [
    ('[instructions.fma]\ncount = 2\nunit = "gpu"\nflops = 2\n', "unit: must be one of core, sfu"),
    ('[instructions.fma]\ncount = 2\nunit = "core"\n', "instructions.fma: missing flops"),
    ('[instructions.fma]\ncount = "x"\nunit = "core"\nflops = 2\n', "count: expected a number"),
    ('[instructions.fma]\ncount = 2\nunit = "core"\nflops = 2\nlatency = 4\n', "latency: unknown key"),
    ('name = "x"\n', "needs \\[instructions"),
    ('[instructions\n', "not valid TOML"),
])
def test_malformed_mix_one_line(tmp_path: Path, body: str, message: str, run_cli: Callable[..., object]) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(body)
    with pytest.raises(ArchlineFitError, match=message):
        load_mix(p)
    r = run_cli("model", "peak", "gtx580", "--mix", str(p))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and str(p) in r.stderr  # type: ignore[attr-defined]


def test_malformed_issue_table(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    prof = tmp_path / "g.toml"
    prof.write_text('schema = "archline.platform/1"\nname = "g"\n[issue]\nsms = 2.5\nclock_hz = 1e9\n'
                    'cores_per_sm = 64\nsfus_per_sm = 16\n')
    r = run_cli("model", "peak", str(prof), "--mix", "fmmu")
    assert r.exit_code == 2 and "issue.sms: must be a whole number" in r.stderr  # type: ignore[attr-defined]
