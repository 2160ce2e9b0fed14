"""The on-board energy counters' declarations in the meter-kind registry (powermon/kinds.py): RAPL, NVML, AMD SMI
and hwmon, each polled for a cumulative energy in joules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.kinds import MeterKind

RAPL, NVML, AMDSMI, HWMON = "rapl", "nvml", "amdsmi", "hwmon"
_WHAT = {RAPL: f"zones go in the meter argument ({RAPL}:package-0,dram)",
         NVML: f"the GPU goes in the meter argument ({NVML}:INDEX)"}


def refuse_counter_options(word: str, channels: Sequence[int] | None, rate_hz: float | None) -> None:
    """An energy counter has no channel numbers and no sample rate of ours: --channels and --rate were ignored."""
    what = _WHAT.get(word, f"a {word} meter takes neither")
    if channels is not None:
        raise MeterError(f"--meter {word}: --channels cannot apply to an energy counter; {what}")
    if rate_hz is not None:
        raise MeterError(f"--meter {word}: --rate cannot apply to an energy counter, which is read at its own "
                         "update period; leave --rate out")


def _record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
            raw_path: Path | None) -> Any:
    """``rapl[:ZONE,...]`` or ``nvml[:INDEX]``."""
    from archline.powermon.spec import channels_spec, open_meter

    refuse_counter_options(word, channels, rate_hz)
    if word == RAPL:
        return open_meter(channels_spec(word, word, [], zones=[z for z in arg.split(",") if z]))
    if arg and not arg.isdigit():
        raise MeterError(f"--meter {word}:INDEX needs a GPU index (0, 1, ...), got {arg!r}")
    return open_meter(channels_spec(word, word, [], index=int(arg or 0)))


def _open_rapl(spec: Any, *, powercap_root: str | Path | None = None, **kw: Any) -> Any:
    from archline.powermon.counters.rapl import RaplMeter, default_root

    kw.pop("raw_dir", None)
    kw.pop("nvml", None)
    return RaplMeter(list(spec.zones) or None, root=powercap_root or default_root(),
                     devices={"cpu": list(spec.zones)} if spec.zones else None, name=spec.name, **kw)


def _open_nvml(spec: Any, *, nvml: Any = None, **kw: Any) -> Any:
    from archline.powermon.counters.nvml import NvmlMeter

    kw.pop("raw_dir", None)
    kw.pop("powercap_root", None)
    return NvmlMeter(spec.index, nvml=nvml, name=spec.name, **kw)


def _list_rapl(*, powercap_root: str | Path | None = None, perf_root: str | Path | None = None,
               perf_reader: Any = None, **_: Any) -> list[dict[str, Any]]:
    return rapl_rows(powercap_root, perf_root, perf_reader)


def _in_vm() -> bool:
    """A hypervisor guest (x86's ``hypervisor`` CPU flag): RAPL is the host's, no command here gives it."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " hypervisor" in line for line in f)
    except OSError:
        return False


def rapl_rows(powercap_root: str | Path | None = None, perf_root: str | Path | None = None,
              perf_reader: Any = None) -> list[dict[str, Any]]:
    """The RAPL meter's two sources: each powercap zone (readable or the chmod that opens it), then perf's power
    events (readable or the sysctl/setcap that opens them), or why there is neither."""
    from archline.powermon.counters import rapl, rapl_perf

    rows: list[dict[str, Any]] = []
    root = rapl.default_root() if powercap_root is None else Path(powercap_root)
    zones = rapl.list_zones(root)
    chmod = f"sudo chmod o+r {root}/intel-rapl:*/energy_uj {root}/intel-rapl:*:*/energy_uj"
    for z in zones:
        try:
            z.read_uj()
            rows.append({"kind": RAPL, "name": z.name, "available": True,
                         "detail": f"powercap {z.path} range {z.max_energy_range_uj} uJ"})
        except MeterError as e:
            rows.append({"kind": RAPL, "name": z.name, "available": False, "fix": chmod,
                         "detail": f"{e}; the fix lasts until reboot, a udev rule keeps it: `{UDEV_FIX}`"})
    proot = rapl_perf.default_root() if perf_root is None else Path(perf_root)
    pmu = rapl_perf.read_pmu(proot)
    if pmu is not None and pmu.events:
        try:
            src = rapl_perf.PerfSource(None, proot, perf_reader)
            rows += [{"kind": RAPL, "name": f"perf:{z.name}", "available": True,
                      "detail": f"perf event power/{z.event.name}/ on CPU {z.cpu} (the RAPL meter's source where "
                                "powercap is not readable)"} for z in src.zones]
            src.close()
        except MeterError as e:
            denied = "not permitted" in str(e)
            rows.append({"kind": RAPL, "name": "perf:-", "available": False,
                         "fix": rapl_perf.PARANOID_FIX if denied else "",
                         "detail": f"{e}" if not denied else
                         f"perf's power events {', '.join(ev.name for ev in pmu.events)} are not permitted "
                         f"(kernel.perf_event_paranoid is {rapl_perf.paranoid_level()}; they need <= 0, or "
                         f"CAP_PERFMON: `{rapl_perf.CAPABILITY_FIX}`)"})
    if not zones and (pmu is None or not pmu.events):
        vm = _in_vm()
        rows.append({"kind": RAPL, "name": "-", "available": False,
                     "fix": "none here: a VM guest; measure on the host" if vm else "sudo modprobe intel_rapl_msr",
                     "detail": f"no RAPL zones under {root} and no perf power events under {proot} ("
                               + ("a VM guest: RAPL is the host's, measure there" if vm else
                                  "the RAPL driver not loaded, or not an Intel/AMD CPU") + ")"})
    return rows


#: powercap's energy_uj opened to every user at each boot (the chmod fix made permanent)
UDEV_FIX = ("echo 'ACTION==\"add\", SUBSYSTEM==\"powercap\", RUN+=\"/bin/chmod o+r /sys%p/energy_uj\"' | "
            "sudo tee /etc/udev/rules.d/99-archline-rapl.rules")


def _detect_rapl(*, powercap_root: str | Path | None = None, perf_root: str | Path | None = None,
                 **_: Any) -> tuple[dict[str, Any] | None, str]:
    """This CPU's readable RAPL zones (powercap's, else perf's power events), or why there are none."""
    from archline.powermon.counters.rapl import readable_zones

    zones, reason = readable_zones(powercap_root, perf_root)
    return ({"zones": tuple(zones)} if zones else None), reason


def list_nvml(*, nvml: Any = None, **_: Any) -> list[dict[str, Any]]:
    """NVML's GPUs, or why there are none."""
    from archline.powermon.counters import nvml as nvml_mod

    try:
        return [{"kind": NVML, "name": f"gpu{g['index']}", "available": True,
                 "detail": f"{g['name']}, total energy counter: {'yes' if g['total_energy'] else 'no'}, "
                           f"power scope {g['power_scope']}"} for g in nvml_mod.list_gpus(nvml)]
    except MeterError as e:
        return [{"kind": NVML, "name": "-", "detail": str(e), "available": False,
                 "fix": "pip install nvidia-ml-py" if "not installed" in str(e) else ""}]


KINDS = (
    MeterKind(name=RAPL, title="RAPL", opener=_open_rapl, record=_record, lister=_list_rapl,
              record_words=((RAPL, f"RAPL zones of this CPU ({RAPL}:ZONE,...)"),),
              absent="no RAPL on this CPU or kernel", device="cpu", counter=True, detect=_detect_rapl),
    MeterKind(name=NVML, title="NVML", opener=_open_nvml, record=_record, lister=list_nvml,
              record_words=((NVML, f"an NVIDIA GPU through NVML ({NVML}:INDEX)"),),
              absent="no NVIDIA GPU or driver", device="gpu", counter=True),
    MeterKind(name=AMDSMI, title="AMD SMI", module="archline.powermon.counters.amdsmi",
              absent="no AMD GPU or ROCm", whole_device="gpu", device="gpu", counter=True),
    MeterKind(name=HWMON, title="hwmon", module="archline.powermon.counters.hwmon",
              absent="no energy sensor in this kernel's hwmon", whole_device="cpu", device="cpu", counter=True),
)
