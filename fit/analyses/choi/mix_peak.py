"""The instruction-mix-aware peak of a GPU (S1 §3.4.4; model.md §9): the flop rate an SM can sustain on a given
mix of instruction classes, from its issue rules and unit counts.

Issue rules, per SM (a platform profile's ``[issue]`` table):
* a warp instruction on the CUDA cores takes warp_size/cores_per_sm cycles; on the SFUs warp_size/sfus_per_sm
  (32/4 = 8 on Fermi);
* while core instructions issue, the SM issues cores_per_sm scalar instructions a cycle; while a
  transcendental issues, only ``sfu_schedulers`` of the ``schedulers_per_sm`` warp schedulers are busy with it,
  and the others keep their share of the cores busy: sfus_per_sm + cores_per_sm*(1 - sfu_schedulers/schedulers)
  scalar instructions a cycle (4 + 16 = 20 on Fermi);
* a class's flop rate while it issues is that rate times its flops per instruction (FMA = 2); the instructions
  issued beside a transcendental count ``coissue_flops`` each (1, as S1 counts 8 x 20).

    cycles of the mix C = sum_c n_c * cycles_c
    issue rate          = sum_c n_c * cycles_c * instr_per_cycle_c / C          (scalar instructions/cycle/SM)
    flop rate           = sum_c n_c * cycles_c * flops_per_cycle_c / C          (flops/cycle/SM)
    peak                = flop rate * SMs * clock

For FMM_U on the GTX 580 (1 rsqrt, 3 FMA, 4 add/sub): C = 8 + 3 + 4 = 15, issue rate (7*32 + 8*20)/15 = 25.6,
flop rate (3*64 + 4*32 + 8*20)/15 = 32, peak 32 * 16 * 1.54 GHz = 788 GFLOP/s against the FMA-only 1581.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.common.files import read_toml
from archline.formats.platforms.profiles import Platform
from archline.model.errors import ArchlineFitError

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

MIX_SCHEMA = "archline.mix/1"
SHIPPED_MIXES = {"fmmu": Path(__file__).parent.parent / "data" / "mix-fmmu.toml"}
ISSUE_KEYS = {"sms", "clock_hz", "cores_per_sm", "sfus_per_sm", "warp_size", "schedulers_per_sm", "sfu_schedulers",
              "source"}
UNITS = ("core", "sfu")


class MixError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class IssueRules:
    sms: int
    clock_hz: float
    cores_per_sm: int
    sfus_per_sm: int
    warp_size: int = 32
    schedulers_per_sm: int = 2
    sfu_schedulers: int = 1
    source: str = ""

    def cycles_per_warp_instruction(self, unit: str) -> float:
        return self.warp_size / (self.cores_per_sm if unit == "core" else self.sfus_per_sm)

    def instructions_per_cycle(self, unit: str) -> float:
        if unit == "core":
            return float(self.cores_per_sm)
        return self.sfus_per_sm + self.cores_per_sm * (1 - self.sfu_schedulers / self.schedulers_per_sm)

    @property
    def instruction_rate_per_s(self) -> float:
        """Scalar instructions per second with every core busy (S1 §3.4.4: 512 x 1.54 GHz = 788 G/s)."""
        return self.sms * self.cores_per_sm * self.clock_hz


@dataclass(frozen=True)
class InstructionClass:
    name: str
    count: float
    unit: str
    flops: float


@dataclass(frozen=True)
class Mix:
    name: str
    classes: tuple[InstructionClass, ...]
    coissue_flops: float = 1.0
    source: str = ""

    @property
    def flops(self) -> float:
        return sum(c.count * c.flops for c in self.classes)

    @property
    def instructions(self) -> float:
        return sum(c.count for c in self.classes)


def _num(x: Any, where: str, *, whole: bool = False, positive: bool = True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise MixError(f"{where}: expected a number, got {x!r}")
    if (positive and x <= 0) or x < 0:
        raise MixError(f"{where}: must be {'positive' if positive else 'non-negative'}, got {x!r}")
    if whole and float(x) != int(x):
        raise MixError(f"{where}: must be a whole number, got {x!r}")
    return float(x)


def issue_rules(platform: Platform) -> IssueRules:
    """The profile's ``[issue]`` table; the error says which key is missing or wrong."""
    raw = platform.raw.get("issue")
    if raw is None:
        raise MixError(f"platform '{platform.name}' has no [issue] table (sms, clock_hz, cores_per_sm, sfus_per_sm; "
                       "see the gtx580 profile), so its instruction-mix peak cannot be computed")
    where = f"{platform.origin}: issue"
    if not isinstance(raw, dict):
        raise MixError(f"{where}: must be a table")
    bad = sorted(set(raw) - ISSUE_KEYS)
    if bad:
        raise MixError(f"{where}.{bad[0]}: unknown key (known: {', '.join(sorted(ISSUE_KEYS))})")
    for k in ("sms", "clock_hz", "cores_per_sm", "sfus_per_sm"):
        if k not in raw:
            raise MixError(f"{where}: missing {k}")
    ints = {k: int(_num(raw[k], f"{where}.{k}", whole=True)) for k in
            ("sms", "cores_per_sm", "sfus_per_sm", "warp_size", "schedulers_per_sm", "sfu_schedulers") if k in raw}
    rules = IssueRules(clock_hz=_num(raw["clock_hz"], f"{where}.clock_hz"), source=str(raw.get("source", "")),
                       **ints)
    if rules.sfu_schedulers > rules.schedulers_per_sm:
        raise MixError(f"{where}.sfu_schedulers: cannot exceed schedulers_per_sm ({rules.schedulers_per_sm})")
    return rules


def load_mix(name_or_path: str | Path) -> Mix:
    key = str(name_or_path)
    path = SHIPPED_MIXES.get(key, Path(key))
    if key not in SHIPPED_MIXES and path.suffix != ".toml":
        raise MixError(f"unknown mix '{key}' (shipped: {', '.join(SHIPPED_MIXES)}; or give a .toml file)")
    data = read_toml(path, error=MixError, what="mix file")
    bad = sorted(set(data) - {"schema", "name", "source", "coissue_flops", "instructions"})
    if bad:
        raise MixError(f"{path}: unknown key '{bad[0]}' (known: schema, name, source, coissue_flops, instructions)")
    if data.get("schema", MIX_SCHEMA) != MIX_SCHEMA:
        raise MixError(f"{path}: schema must be '{MIX_SCHEMA}', got {data.get('schema')!r}")
    raw = data.get("instructions")
    if not isinstance(raw, dict) or not raw:
        raise MixError(f"{path}: needs [instructions.<class>] tables with count, unit and flops")
    classes = []
    for cname, c in raw.items():
        where = f"{path}: instructions.{cname}"
        if not isinstance(c, dict):
            raise MixError(f"{where}: must be a table with count, unit, flops")
        bad = sorted(set(c) - {"count", "unit", "flops"})
        if bad:
            raise MixError(f"{where}.{bad[0]}: unknown key (known: count, unit, flops)")
        for k in ("count", "unit", "flops"):
            if k not in c:
                raise MixError(f"{where}: missing {k}")
        if c["unit"] not in UNITS:
            raise MixError(f"{where}.unit: must be one of {', '.join(UNITS)}, got {c['unit']!r}")
        classes.append(InstructionClass(cname, _num(c["count"], f"{where}.count"), str(c["unit"]),
                                        _num(c["flops"], f"{where}.flops", positive=False)))
    return Mix(str(data.get("name", path.stem)), tuple(classes),
               _num(data.get("coissue_flops", 1.0), f"{path}: coissue_flops", positive=False),
               str(data.get("source", "")))


@dataclass(frozen=True)
class MixPeak:
    cycles_per_mix: float                   # per SM, one warp-wide pass of the mix
    instructions_per_cycle: float           # scalar instructions per cycle per SM
    flops_per_cycle: float                  # per SM
    peak_flop_per_s: float
    instruction_rate_per_s: float           # all cores busy
    per_class: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"cycles_per_mix": self.cycles_per_mix, "instructions_per_cycle_per_sm": self.instructions_per_cycle,
                "flops_per_cycle_per_sm": self.flops_per_cycle, "peak_flop_per_s": self.peak_flop_per_s,
                "instruction_rate_per_s": self.instruction_rate_per_s, "classes": self.per_class}


def mix_peak(rules: IssueRules, mix: Mix) -> MixPeak:
    rows = []
    total = ipc_sum = fpc_sum = 0.0
    for c in mix.classes:
        cyc = c.count * rules.cycles_per_warp_instruction(c.unit)
        ipc = rules.instructions_per_cycle(c.unit)
        if c.unit == "core":
            fpc = ipc * c.flops
        else:
            fpc = rules.sfus_per_sm * c.flops + (ipc - rules.sfus_per_sm) * mix.coissue_flops
        rows.append({"class": c.name, "count": c.count, "unit": c.unit, "flops_per_instruction": c.flops,
                     "cycles": cyc, "instructions_per_cycle": ipc, "flops_per_cycle": fpc})
        total += cyc
        ipc_sum += cyc * ipc
        fpc_sum += cyc * fpc
    fpc_avg = fpc_sum / total
    return MixPeak(total, ipc_sum / total, fpc_avg, fpc_avg * rules.sms * rules.clock_hz,
                   rules.instruction_rate_per_s, rows)
