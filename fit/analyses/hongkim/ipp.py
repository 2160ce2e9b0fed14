"""Hong & Kim's integrated power and performance (IPP) model of a GPU (ISCA 2010 = S3; model.md §10).

Power from per-unit access rates and maximum powers (eq.5-13), the active-SM log model (eq.14-16), the
temperature and static-power terms (eq.17-23), MWP and the optimal number of active SMs (eq.29-34), and
performance per watt (eq.28). GTX 280 parameters (S3 Tables 1-3, §3-§6) are shipped in ``fit/data``.

Interpretations, stated where they are used:

* eq.19 gives a temperature *rise* above the idle temperature, not an absolute temperature (model.md §10.2).
* The timing model (eq.24-27) and the optimal SM count (eq.34), with the readings of eq.34 archline takes,
  are in ``ipp_timing``; GPU and kernel files in ``ipp_files``.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archline.model.errors import ArchlineFitError

DATA_DIR = Path(__file__).parent.parent / "data"


class IppInputError(ArchlineFitError):
    pass


#: S3 Table 2 unit names -> our unit keys
_UNIT_KEYS = {"FP": "fp", "REG": "reg", "ALU": "alu", "SFU": "sfu", "INT": "int", "FDS (Fetch/Dec/Sch)": "fds",
              "Shared memory": "shared", "Texture cache": "texture", "Constant cache": "const_cache",
              "Const_SM": "const_sm", "Global memory": "global_mem", "Local memory": "local_mem"}
#: S3 Table 1 variable names -> unit keys
_VAR_KEYS = {"RP_Int": "int", "RP_Fp": "fp", "RP_Sfu": "sfu", "RP_Alu": "alu", "RP_GlobalMem": "global_mem",
             "RP_LocalMem": "local_mem", "RP_Texture_Cache": "texture", "RP_Const_Cache": "const_cache",
             "RP_Shared": "shared", "RP_Reg": "reg", "RP_FDS": "fds"}
MEMORY_UNITS = ("global_mem", "local_mem")


@dataclass(frozen=True)
class Unit:
    key: str
    max_power_w: float
    on_chip: bool
    spec_linear: bool


@dataclass(frozen=True)
class GpuParams:
    """One GPU's IPP parameters. Defaults: GTX 280 (S3 Tables 2-3, §3.5, §5)."""

    units: dict[str, Unit]
    instruction_units: dict[str, tuple[str, ...]]  # PTX instruction class -> unit keys it accesses (besides FDS)
    num_sms: int = 30
    idle_power_w: float = 83.0                     # S3 §5: GPU idle power
    beta: float = 1.1                              # eq.14
    mu: float = 0.120                              # eq.19, S3 Table 3
    lambda_: float = 5.5
    rho: float = 21.505
    rc_rise_s: float = 35.0
    rc_decay_s: float = 60.0
    sigma_w_per_degc: float = 10.0 / 22.0          # eq.22, S3 §3.6
    idle_temp_degc: float = 57.0                   # S3 §3.6: cold start
    mem_latency_cycles: float = 430.0              # Mem_L, S3 §4.1
    issue_cycles: float = 4.0                      # one warp instruction every 4 cycles (S3 §3.2, eq.10)
    freq_hz: float | None = None                   # eq.31 Freq: not given in S3
    mem_bandwidth_b_per_s: float | None = None     # eq.30 Mem_Bandwidth: not given in S3
    name: str = "gtx280"
    title: str = "NVIDIA GeForce GTX 280 (S3)"
    source: str = "GTX 280: S3 Tables 1-3, Sec. 3.5-3.6, Sec. 5"

    @property
    def alpha(self) -> float:
        """alpha = (10 - beta)/Num_SMs (eq.14): log10(alpha*Num_SMs + beta) = 1."""
        return (10.0 - self.beta) / self.num_sms


def load_gtx280(data_dir: Path = DATA_DIR) -> GpuParams:
    units: dict[str, Unit] = {}
    with (data_dir / "hongkim_table2_power_params.csv").open() as f:
        for r in csv.DictReader(f):
            k = _UNIT_KEYS[r["unit"]]
            units[k] = Unit(k, float(r["max_power_w"]), r["on_chip"] == "Yes", r["spec_linear"] == "Yes")
    inst: dict[str, list[str]] = {}
    with (data_dir / "hongkim_table1_instruction_units.csv").open() as f:
        for r in csv.DictReader(f):
            unit = _VAR_KEYS[r["variable_name"]]
            if unit in ("fds", "reg"):
                continue   # FDS: every instruction; REG: handled from its own list below
            for name in r["ptx_instructions"].split():
                inst.setdefault(_norm(name), []).append(unit)
    with (data_dir / "hongkim_table1_instruction_units.csv").open() as f:
        reg_list = next(r for r in csv.DictReader(f) if r["variable_name"] == "RP_Reg")["ptx_instructions"]
    reg_ops = {_norm(n) for n in reg_list.split()}
    out: dict[str, tuple[str, ...]] = {}
    for name, us in inst.items():
        base = name.split("_")[0]
        out[name] = (*us, "reg") if (name in reg_ops or base in reg_ops) else tuple(us)
    params: dict[str, float] = {}
    with (data_dir / "hongkim_table3_gtx280_params.csv").open() as f:
        for r in csv.DictReader(f):
            params[r["parameter"]] = float(r["value"])
    return GpuParams(units=units, instruction_units=out, mu=params["mu"], lambda_=params["lambda"],
                     rho=params["rho"], rc_rise_s=params["RC_Rise"], rc_decay_s=params["RC_Decay"])


def _norm(name: str) -> str:
    return name.replace(".", "_").lower()


# --- power (eq.5-16) ------------------------------------------------------------------------------------------

def spec_linear_rate(access_rate: float) -> float:
    """0.1365*ln(AccessRate) + 1.001375 for the Spec.Linear units (S3 §3.4); 0 for no access."""
    return 0.0 if access_rate <= 0 else max(0.0, 0.1365 * math.log(access_rate) + 1.001375)


def warps_per_sm(threads_per_block: int, blocks: int, active_sms: int, threads_per_warp: int = 32) -> float:
    """eq.12."""
    return (threads_per_block / threads_per_warp) * (blocks / active_sms)


def access_rate(dac_per_thread: float, warps_per_sm_: float, exec_cycles: float) -> float:
    """eq.10: DAC_per_th * Warps_per_SM / (Exec_cycles/4); at most 1 for a realistic kernel."""
    if exec_cycles <= 0:
        raise IppInputError(f"execution cycles must be positive, got {exec_cycles:g}")
    return dac_per_thread * warps_per_sm_ / (exec_cycles / 4.0)


def unit_accesses(inst_per_warp: Mapping[str, float], gpu: GpuParams, strict: bool = True) -> dict[str, float]:
    """eq.11: dynamic instructions per warp (keyed by S3 Table 1 names, e.g. ``fma_fp``, ``ld_global``) summed
    per unit; every instruction also accesses FDS. Table 1 is followed literally: its REG list omits fma, lg2,
    ex2 and st_shared. ``strict=False`` charges an instruction Table 1 does not list to FDS only."""
    out: dict[str, float] = {}
    for name, n in inst_per_warp.items():
        key = _norm(name)
        units = gpu.instruction_units.get(key)
        if units is None and not strict:
            units = ()
        if units is None:
            raise IppInputError(f"unknown PTX instruction class '{name}' (S3 Table 1 knows: "
                                f"{', '.join(sorted(gpu.instruction_units))})")
        for u in units:
            out[u] = out.get(u, 0.0) + n
        out["fds"] = out.get("fds", 0.0) + n
    return out


@dataclass(frozen=True)
class IppPower:
    component_w: dict[str, float]    # per SM for on-chip units (incl. const_sm), whole GPU for memory units
    max_sm_w: float                  # eq.15
    rp_memory_w: float               # eq.13
    active_sms: int
    log_factor: float                # log10(alpha*Active_SMs + beta)
    runtime_power_w: float           # eq.16
    idle_power_w: float

    @property
    def gpu_power_w(self) -> float:
        """eq.5."""
        return self.runtime_power_w + self.idle_power_w


def power_from_rates(rates: Mapping[str, float], gpu: GpuParams, active_sms: int | None = None) -> IppPower:
    """eq.9, 13-16 from access rates per unit (0..1). Const_SM is drawn regardless of access (eq.9)."""
    n_active = gpu.num_sms if active_sms is None else active_sms
    if not 1 <= n_active <= gpu.num_sms:
        raise IppInputError(f"active SMs must be between 1 and {gpu.num_sms}, got {n_active}")
    unknown = set(rates) - set(gpu.units)
    if unknown:
        raise IppInputError(f"unknown unit(s) {', '.join(sorted(unknown))} (known: {', '.join(gpu.units)})")
    comp: dict[str, float] = {}
    for k, u in gpu.units.items():
        if k == "const_sm":
            comp[k] = u.max_power_w
            continue
        r = float(rates.get(k, 0.0))
        if r < 0:
            raise IppInputError(f"access rate of {k} must be >= 0, got {r:g}")
        comp[k] = u.max_power_w * (spec_linear_rate(r) if u.spec_linear else r)
    sm_sum = sum(v for k, v in comp.items() if k not in MEMORY_UNITS)
    max_sm = gpu.num_sms * sm_sum
    rp_mem = sum(comp[k] for k in MEMORY_UNITS if k in comp)
    factor = math.log10(gpu.alpha * n_active + gpu.beta)
    return IppPower(comp, max_sm, rp_mem, n_active, factor, (max_sm + rp_mem) * factor, gpu.idle_power_w)


def kernel_power(inst_per_warp: Mapping[str, float], warps_per_sm_: float, exec_cycles: float, gpu: GpuParams,
                 active_sms: int | None = None) -> IppPower:
    """GPU power of a kernel from its instruction mix per warp, warps per SM and execution cycles (eq.9-16)."""
    acc = unit_accesses(inst_per_warp, gpu)
    rates = {u: access_rate(n, warps_per_sm_, exec_cycles) for u, n in acc.items()}
    return power_from_rates(rates, gpu, active_sms)


# --- temperature (eq.17-23) -------------------------------------------------------------------------------------

def max_temp_rise_degc(runtime_power_w: float, mem_access_intensity: float, gpu: GpuParams) -> float:
    """eq.19, read as the rise above the idle temperature (model.md §10.2, §13 item 10)."""
    return gpu.mu * runtime_power_w + gpu.lambda_ + gpu.rho * mem_access_intensity


def mem_access_intensity(memory_insts: float, non_memory_insts: float) -> float:
    """eq.20 (global + local memory instructions over the others)."""
    if non_memory_insts <= 0:
        raise IppInputError("MemAccess_intensity needs a positive count of non-memory instructions")
    return memory_insts / non_memory_insts


def temperature_rise_degc(t_s: float, delta_degc: float, gpu: GpuParams) -> float:
    """eq.17 - Idle_temp: delta*(1 - exp(-t/RC_Rise))."""
    return delta_degc * (1.0 - math.exp(-t_s / gpu.rc_rise_s))


def temperature_decay_degc(t_s: float, decay_temp_degc: float, gpu: GpuParams) -> float:
    """eq.18: Idle_temp + gamma*exp(-t/RC_Decay), gamma = Decay_temp - Idle_temp."""
    return gpu.idle_temp_degc + (decay_temp_degc - gpu.idle_temp_degc) * math.exp(-t_s / gpu.rc_decay_s)


def static_power_increase_w(delta_temp_degc: float, gpu: GpuParams) -> float:
    """eq.22: sigma*Delta_temp, the static power a kernel ``delta_temp_degc`` above Idle_temp adds over a cold
    start (S3's GTX 280: 10 W over its 22 degC rise, sigma = 10/22 W/degC)."""
    return gpu.sigma_w_per_degc * delta_temp_degc


def runtime_power_at_w(t_s: float, runtime_power0_w: float, mem_intensity: float, gpu: GpuParams) -> float:
    """eq.21-23: Runtime_power(t) = Runtime_power_0 + sigma*Delta_temp(t), from a cold start."""
    delta = max_temp_rise_degc(runtime_power0_w, mem_intensity, gpu)
    return runtime_power0_w + gpu.sigma_w_per_degc * temperature_rise_degc(t_s, delta, gpu)


# --- MWP, optimal SMs, performance per watt (eq.28-34) ------------------------------------------------------

def bw_per_warp_b_per_s(freq_hz: float, load_bytes_per_warp: float, mem_latency_cycles: float) -> float:
    """eq.31."""
    return freq_hz * load_bytes_per_warp / mem_latency_cycles


def mwp_peak_bw(mem_bandwidth_b_per_s: float, bw_per_warp: float, active_sms: int) -> float:
    """eq.30."""
    return mem_bandwidth_b_per_s / (bw_per_warp * active_sms)


def mwp(mem_latency_cycles: float, departure_delay_cycles: float, mwp_peak: float, n_warps: float) -> float:
    """eq.29, 32, 33."""
    without_bw = min(mem_latency_cycles / departure_delay_cycles, n_warps)
    return min(without_bw, mwp_peak, n_warps)


def perf_per_watt(work: float, time_s: float, power_w: float) -> float:
    """eq.28: (work/time)/power, e.g. instructions per joule (S3 reports GIPS/W)."""
    return work / time_s / power_w


@dataclass
class SmSweep:
    active_sms: list[int]
    power_w: list[float]
    time_s: list[float]
    perf_per_watt: list[float]
    best: int = 0
    notes: list[str] = field(default_factory=list)


def sweep_active_sms(rates: Mapping[str, float], gpu: GpuParams, work: float,
                     time_of_sms: Callable[[int], float], *, include_idle: bool = True,
                     sms: Sequence[int] | None = None) -> SmSweep:
    """perf/W over the number of active SMs (eq.16, 28) with a caller's timing model (S3 §4.1 uses the
    Hong & Kim 2009 model, whose CWP formula S3 does not give)."""
    grid = list(sms or range(1, gpu.num_sms + 1))
    out = SmSweep(grid, [], [], [])
    for n in grid:
        p = power_from_rates(rates, gpu, n)
        pw = p.gpu_power_w if include_idle else p.runtime_power_w
        t = time_of_sms(n)
        out.power_w.append(pw)
        out.time_s.append(t)
        out.perf_per_watt.append(perf_per_watt(work, t, pw))
    out.best = grid[max(range(len(grid)), key=lambda i: out.perf_per_watt[i])]
    return out


# --- PTX inspection ----------------------------------------------------------------------------------------------

_PTX_LINE = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9]*)((?:\.[a-z0-9]+)*)\s")
_INT_TYPES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"}
_FP_TYPES = {"f16", "f32", "f64"}
_ALU_OPS = {"xor", "cnot", "shl", "shr", "mov", "cvt", "set", "setp", "selp", "slct", "and", "or", "not"}


def classify_ptx(ptx_text: str) -> dict[str, int]:
    """Static instruction counts of PTX text by S3 Table 1 class (``fma_fp``, ``add_int``, ``ld_global``...).

    Static, not dynamic: multiply by trip counts for eq.11. Control flow (bra, ret, bar) and directives are
    not counted; unknown opcodes are reported under ``other``."""
    out: dict[str, int] = {}
    for line in ptx_text.splitlines():
        m = _PTX_LINE.match(line)
        if m is None or line.lstrip().startswith((".", "//")):
            continue
        op, mods = m.group(1), [x for x in m.group(2).split(".") if x]
        if op in ("bra", "ret", "exit", "bar", "membar", "call"):
            continue
        if op in ("ld", "st"):
            space = next((x for x in mods if x in ("global", "shared", "local", "const", "param")), "global")
            if space == "param":
                continue
            key = f"{op}_{space}"
        elif op == "tex":
            key = "tex"
        elif op in _ALU_OPS:
            key = op
        else:
            fp = any(x in _FP_TYPES for x in mods)
            integer = any(x in _INT_TYPES for x in mods)
            key = f"{op}_fp" if fp else f"{op}_int" if integer else op
        out[key] = out.get(key, 0) + 1
    return out
