"""IPP input files: a GPU parameter file and a kernel file (TOML), read and checked with one-line errors.

GPU file (schema ``archline.ipp-gpu/1``): the constants of S3 §3-§5 and the MaxPower of each unit (S3 Table 2);
the instruction-to-unit map defaults to S3 Table 1. The GTX 280 is shipped (``data/ipp-gtx280.toml``).

Kernel file (schema ``archline.ipp-kernels/1``): one ``[[kernel]]`` table per kernel with any of
  * the numbers S3 Table 4 prints: ``mwp``, ``cwp``, ``ai``, ``bandwidth_gb_per_s``, ``bandwidth_limited``;
  * the timing-model inputs (S3 §4.1): ``n_warps``, ``comp_cycles`` (or ``[kernel.instructions]``),
    ``mem_cycles`` (or ``mem_insts`` x Mem_L), ``mem_insts``, ``departure_delay_cycles`` or ``mwp_without_bw``,
    ``mwp_peak_bw`` (at all SMs) or ``load_bytes_per_warp``, ``repw``;
  * for power (S3 §3): ``[kernel.instructions]`` (dynamic instructions per warp by S3 Table 1 class, e.g.
    ``fma_fp``, ``ld_global``) with ``threads_per_block`` and ``blocks`` (or ``warps_per_sm``) and
    ``exec_cycles`` (measured; else predicted), or ``[kernel.rates]`` (access rates 0..1 per unit).
The S3 Table 4 kernels are shipped (``data/ipp-table4-kernels.toml``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.files import parse_toml, read_text, read_toml
from archline.common.outputs import show
from archline.fit.analyses.hongkim.ipp import DATA_DIR, GpuParams, IppInputError, Unit, load_gtx280
from archline.fit.analyses.hongkim.timing import TimingInputs
from archline.formats.costs_units import PLAUSIBLE_MAX_SI, implausible

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

GPU_SCHEMA = "archline.ipp-gpu/1"
KERNELS_SCHEMA = "archline.ipp-kernels/1"
SHIPPED_GPUS = {"gtx280": DATA_DIR / "ipp-gtx280.toml"}
SHIPPED_KERNELS = {"table4": DATA_DIR / "ipp-table4-kernels.toml"}

#: GPU file scalar keys -> GpuParams field (all numbers).
_GPU_NUMBERS = {"num_sms": "num_sms", "idle_power_w": "idle_power_w", "beta": "beta", "mu": "mu",
                "lambda": "lambda_", "rho": "rho", "rc_rise_s": "rc_rise_s", "rc_decay_s": "rc_decay_s",
                "sigma_w_per_degc": "sigma_w_per_degc", "idle_temp_degc": "idle_temp_degc",
                "mem_latency_cycles": "mem_latency_cycles", "issue_cycles": "issue_cycles", "freq_hz": "freq_hz",
                "mem_bandwidth_b_per_s": "mem_bandwidth_b_per_s"}
_GPU_KEYS = {"schema", "name", "title", "source", "units", "instructions", *_GPU_NUMBERS}
_UNIT_KEYS = {"max_power_w", "on_chip", "spec_linear", "source"}
_KERNEL_NUMBERS = ("mwp", "cwp", "ai", "bandwidth_gb_per_s", "n_warps", "comp_cycles", "mem_cycles", "mem_insts",
                   "departure_delay_cycles", "mwp_without_bw", "mwp_peak_bw", "load_bytes_per_warp", "repw",
                   "threads_per_block", "blocks", "warps_per_sm", "exec_cycles", "mem_access_intensity")
_KERNEL_KEYS = {"name", "source", "description", "bandwidth_limited", "instructions", "rates", *_KERNEL_NUMBERS}


def _read(path: Path, what: str) -> dict[str, Any]:
    return read_toml(path, error=IppInputError, what=what)


def _num(x: Any, where: str, *, positive: bool = False, unit: str | None = None) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise IppInputError(f"{where}: expected a number, got {x!r}")
    if float(x) < 0 or (positive and float(x) == 0):
        raise IppInputError(f"{where}: must be {'positive' if positive else 'non-negative'}, got {x!r}")
    if unit is not None and implausible(float(x), unit):
        raise IppInputError(f"{where}: {float(x):g} {unit} is not a real machine's (at most "
                            f"{PLAUSIBLE_MAX_SI[unit]:g} {unit}; give {unit})")
    return float(x)


def _unknown(keys: Any, known: set[str], where: str) -> None:
    bad = sorted(set(keys) - known)
    if bad:
        raise IppInputError(f"{where}: unknown key '{bad[0]}' (known: {', '.join(sorted(known))})")


# --- GPU file ----------------------------------------------------------------------------------------------

def load_gpu(name_or_path: str | Path) -> GpuParams:
    """A shipped GPU by name (``gtx280``) or a GPU parameter file."""
    return load_gpu_text(name_or_path)[0]


def load_gpu_text(name_or_path: str | Path) -> tuple[GpuParams, str]:
    """A shipped GPU by name or a GPU parameter file, and the file's text (read once: a pipe works)."""
    key = str(name_or_path)
    path = SHIPPED_GPUS.get(key, Path(key))
    if key not in SHIPPED_GPUS and path.suffix != ".toml" and not path.exists():  # a pipe has no suffix
        raise IppInputError(f"unknown IPP GPU '{key}' (shipped: {', '.join(SHIPPED_GPUS)}; or give a .toml file)")
    text = read_text(path, error=IppInputError, what="IPP GPU file")
    return _gpu_of(parse_toml(text, path, error=IppInputError), show(path), path.stem), text


def _gpu_of(data: dict[str, Any], where: str, stem: str) -> GpuParams:
    _unknown(data, _GPU_KEYS, where)
    if data.get("schema", GPU_SCHEMA) != GPU_SCHEMA:
        raise IppInputError(f"{where}: schema must be '{GPU_SCHEMA}', got {data.get('schema')!r}")
    base = load_gtx280()
    kw: dict[str, Any] = {}
    for k, attr in _GPU_NUMBERS.items():
        if k in data:
            kw[attr] = _num(data[k], f"{where}: {k}", positive=k not in ("lambda", "rho", "mu"),
                            unit="W" if k == "idle_power_w" else None)
    if "num_sms" in kw:
        if kw["num_sms"] != int(kw["num_sms"]):
            raise IppInputError(f"{where}: num_sms must be a whole number, got {data['num_sms']!r}")
        kw["num_sms"] = int(kw["num_sms"])
    if "beta" in kw and not kw["beta"] < 10:
        raise IppInputError(f"{where}: beta must be below 10 (alpha = (10 - beta)/Num_SMs, eq.14)")
    units_raw = data.get("units")
    if not isinstance(units_raw, dict) or not units_raw:
        raise IppInputError(f"{where}: missing [units.<name>] tables (MaxPower per unit, S3 Table 2)")
    units: dict[str, Unit] = {}
    for uname, u in units_raw.items():
        uw = f"{where}: units.{uname}"
        if not isinstance(u, dict):
            raise IppInputError(f"{uw}: must be a table with max_power_w, on_chip, spec_linear")
        _unknown(u, _UNIT_KEYS, uw)
        if "max_power_w" not in u:
            raise IppInputError(f"{uw}: missing max_power_w")
        for flag in ("on_chip", "spec_linear"):
            if not isinstance(u.get(flag, False), bool):
                raise IppInputError(f"{uw}: {flag} must be true or false, got {u[flag]!r}")
        units[uname] = Unit(uname, _num(u["max_power_w"], f"{uw}.max_power_w", unit="W"), bool(u.get("on_chip", True)),
                            bool(u.get("spec_linear", False)))
    if "const_sm" not in units:
        raise IppInputError(f"{where}: missing units.const_sm (RP_Const_SM, drawn by every active SM, eq.9)")
    inst = dict(base.instruction_units)
    if "instructions" in data:
        raw = data["instructions"]
        if not isinstance(raw, dict):
            raise IppInputError(f"{where}: [instructions] must map an instruction class to a list of units")
        inst = {}
        for cls, us in raw.items():
            if not isinstance(us, list) or not all(isinstance(x, str) for x in us):
                raise IppInputError(f"{where}: instructions.{cls} must be a list of unit names")
            missing = [x for x in us if x not in units]
            if missing:
                raise IppInputError(f"{where}: instructions.{cls}: unknown unit '{missing[0]}' "
                                    f"(units: {', '.join(units)})")
            inst[cls.replace(".", "_").lower()] = tuple(us)
    else:
        missing = sorted({u for us in inst.values() for u in us} - set(units))
        if missing:
            raise IppInputError(f"{where}: units.{missing[0]} missing (S3 Table 1 sends instructions to it; "
                                "or give your own [instructions] map)")
    if "fds" not in units:
        raise IppInputError(f"{where}: missing units.fds (every instruction accesses FDS, S3 §3.2)")
    return GpuParams(units=units, instruction_units=inst, name=str(data.get("name", stem)),
                     title=str(data.get("title", data.get("name", stem))),
                     source=str(data.get("source", where)), **kw)


# --- kernel file -------------------------------------------------------------------------------------------

@dataclass
class Kernel:
    name: str
    values: dict[str, float]
    source: str = ""
    bandwidth_limited: bool | None = None
    instructions: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    origin: str = ""

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    def where(self, key: str = "") -> str:
        return f"{self.origin}: kernel '{self.name}'" + (f": {key}" if key else "")

    def mem_insts(self, gpu: GpuParams) -> float | None:
        if "mem_insts" in self.values:
            return self.values["mem_insts"]
        if self.instructions:
            return sum(n for k, n in self.instructions.items()
                       if {"global_mem", "local_mem"} & set(gpu.instruction_units.get(k, ())))
        return None

    def comp_cycles(self, gpu: GpuParams) -> float | None:
        """Comp_cycles: given, or Issue_cycles x instructions per warp."""
        if "comp_cycles" in self.values:
            return self.values["comp_cycles"]
        if self.instructions:
            return gpu.issue_cycles * sum(self.instructions.values())
        return None

    def mem_cycles(self, gpu: GpuParams) -> float | None:
        """Mem_cycles: given, or Mem_L x #Mem_insts."""
        if "mem_cycles" in self.values:
            return self.values["mem_cycles"]
        mi = self.mem_insts(gpu)
        return None if mi is None else gpu.mem_latency_cycles * mi

    def mwp_peak_bw(self, gpu: GpuParams) -> float | None:
        """MWP_peak_BW with all SMs active: given, or eq.30-31 from load_bytes_per_warp and the GPU."""
        if "mwp_peak_bw" in self.values:
            return self.values["mwp_peak_bw"]
        lb = self.values.get("load_bytes_per_warp")
        if lb is None:
            return None
        if gpu.freq_hz is None or gpu.mem_bandwidth_b_per_s is None:
            raise IppInputError(f"{self.where('load_bytes_per_warp')}: eq.30-31 need the GPU file's freq_hz and "
                                "mem_bandwidth_b_per_s (or give mwp_peak_bw)")
        bw_per_warp = gpu.freq_hz * lb / gpu.mem_latency_cycles
        return gpu.mem_bandwidth_b_per_s / (bw_per_warp * gpu.num_sms)

    def timing_inputs(self, gpu: GpuParams) -> TimingInputs:
        """Everything eq.24-26 need; the error names the first missing key."""
        comp, mem, peak = self.comp_cycles(gpu), self.mem_cycles(gpu), self.mwp_peak_bw(gpu)
        n = self.values.get("n_warps")
        for key, v in (("n_warps", n), ("comp_cycles (or [instructions])", comp),
                       ("mem_cycles (or mem_insts)", mem), ("mwp_peak_bw (or load_bytes_per_warp)", peak)):
            if v is None:
                raise IppInputError(f"{self.where()}: the timing model (S3 eq.24-26) needs {key}")
        dd = self.values.get("departure_delay_cycles")
        without = self.values.get("mwp_without_bw",
                                  gpu.mem_latency_cycles / dd if dd else float(n))  # type: ignore[arg-type]
        return TimingInputs(comp_cycles=comp, mem_cycles=mem, mem_insts=self.mem_insts(gpu) or 0.0,  # type: ignore[arg-type]
                            n_warps=n, mem_latency_cycles=gpu.mem_latency_cycles,  # type: ignore[arg-type]
                            mwp_without_bw_full=without, mwp_peak_bw_all_sms=peak,  # type: ignore[arg-type]
                            num_sms=gpu.num_sms, repw_all_sms=self.values.get("repw", 1.0))

    def has_timing(self) -> bool:
        return "n_warps" in self.values and ("comp_cycles" in self.values or bool(self.instructions)) and (
            "mem_cycles" in self.values or "mem_insts" in self.values or bool(self.instructions)) and (
            "mwp_peak_bw" in self.values or "load_bytes_per_warp" in self.values)


def load_kernels(name_or_path: str | Path, gpu: GpuParams) -> list[Kernel]:
    """The shipped S3 Table 4 kernels (``table4``) or a kernel file."""
    key = str(name_or_path)
    path = SHIPPED_KERNELS.get(key, Path(key))
    if key not in SHIPPED_KERNELS and path.suffix != ".toml" and not path.exists():
        raise IppInputError(f"unknown kernel set '{key}' (shipped: {', '.join(SHIPPED_KERNELS)}; "
                            "or give a .toml file)")
    data = _read(path, "IPP kernel file")
    where = str(path)
    _unknown(data, {"schema", "source", "kernel"}, where)
    if data.get("schema", KERNELS_SCHEMA) != KERNELS_SCHEMA:
        raise IppInputError(f"{where}: schema must be '{KERNELS_SCHEMA}', got {data.get('schema')!r}")
    raw = data.get("kernel")
    if not isinstance(raw, list) or not raw:
        raise IppInputError(f"{where}: no [[kernel]] tables")
    out: list[Kernel] = []
    for k, kd in enumerate(raw, start=1):
        if not isinstance(kd, dict) or "name" not in kd:
            raise IppInputError(f"{where}: kernel #{k} has no name")
        kw = f"{where}: kernel '{kd['name']}'"
        _unknown(kd, _KERNEL_KEYS, kw)
        vals = {key_: _num(kd[key_], f"{kw}: {key_}", positive=key_ in ("n_warps", "comp_cycles", "repw",
                                                                       "exec_cycles", "warps_per_sm"))
                for key_ in _KERNEL_NUMBERS if key_ in kd}
        bl = kd.get("bandwidth_limited")
        if bl is not None and not isinstance(bl, bool):
            raise IppInputError(f"{kw}: bandwidth_limited must be true or false, got {bl!r}")
        inst = _counts(kd.get("instructions", {}), f"{kw}: instructions")
        for cls in inst:
            if cls not in gpu.instruction_units:
                raise IppInputError(f"{kw}: instructions.{cls}: unknown instruction class (the GPU file knows: "
                                    f"{', '.join(sorted(gpu.instruction_units))})")
        rates = _counts(kd.get("rates", {}), f"{kw}: rates")
        for u in rates:
            if u not in gpu.units or u == "const_sm":
                raise IppInputError(f"{kw}: rates.{u}: not a unit with an access rate "
                                    f"(units: {', '.join(x for x in gpu.units if x != 'const_sm')})")
        out.append(Kernel(str(kd["name"]), vals, str(kd.get("source", data.get("source", ""))), bl, inst, rates,
                          where))
    names = [k.name for k in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise IppInputError(f"{where}: kernel '{dup[0]}' defined twice")
    return out


def _counts(raw: Any, where: str) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise IppInputError(f"{where}: must be a table of name = number")
    return {str(k).replace(".", "_").lower(): _num(v, f"{where}.{k}") for k, v in raw.items()}


def example_kernel_file() -> str:
    return (DATA_DIR / "ipp-example-kernels.toml").read_text()
