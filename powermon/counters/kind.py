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
    from archline.powermon.meter_list import rapl_rows

    return rapl_rows(powercap_root, perf_root, perf_reader)


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
              absent="no RAPL on this CPU or kernel", device="cpu", counter=True),
    MeterKind(name=NVML, title="NVML", opener=_open_nvml, record=_record, lister=list_nvml,
              record_words=((NVML, f"an NVIDIA GPU through NVML ({NVML}:INDEX)"),),
              absent="no NVIDIA GPU or driver", device="gpu", counter=True),
    MeterKind(name=AMDSMI, title="AMD SMI", module="archline.powermon.counters.amdsmi",
              absent="no AMD GPU or ROCm", whole_device="gpu", device="gpu", counter=True),
    MeterKind(name=HWMON, title="hwmon", module="archline.powermon.counters.hwmon",
              absent="no energy sensor in this kernel's hwmon", whole_device="cpu", device="cpu", counter=True),
)
