"""The node BMC kinds' declarations in the meter-kind registry (powermon/kinds.py): Redfish and IPMI DCMI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.kinds import MeterKind

REDFISH, IPMI = "redfish", "ipmi"
_HINT = {REDFISH: f"{REDFISH}:https://bmc.example", IPMI: f"{IPMI}:ipmi://USER:PASSWORD@bmc.example"}


def _record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
            raw_path: Path | None) -> Any:
    """A BMC: ``redfish:http://HOST[:PORT]`` or ``ipmi:ipmi://USER:PASSWORD@HOST`` (credentials: a profile)."""
    from archline.powermon.bmc.meter import refuse_record_options
    from archline.powermon.spec import MeterSpec, open_meter

    if not arg:
        raise MeterError(f"--meter {word} needs the BMC's address: {_HINT[word]}")
    refuse_record_options(word, channels, rate_hz)
    return open_meter(MeterSpec(name=word, kind=word, url=arg))


_COMMON: dict[str, Any] = dict(module="archline.powermon.bmc.meter", record=_record, whole_device="node",
                               device="node", bmc=True, absent="a node's BMC, named in a profile")

KINDS = (
    MeterKind(name=REDFISH, title="Redfish BMC", record_words=((f"{REDFISH}:", "a BMC over Redfish "
                                                                 f"({REDFISH}:https://bmc)"),),
              own_keys=frozenset({"update_period_s", "power_source"}), **_COMMON),
    MeterKind(name=IPMI, title="IPMI DCMI BMC", record_words=((f"{IPMI}:", f"a BMC over IPMI ({IPMI}:HOST)"),),
              own_keys=frozenset({"update_period_s", "cipher_suite"}), **_COMMON),
)
