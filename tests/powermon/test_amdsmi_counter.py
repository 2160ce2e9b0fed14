"""The AMD SMI device layer and energy meter against a fake amdsmi: ticks x resolution, 32- and 64-bit wraps, both
key names of the accumulator, readings, and each failure named."""

from __future__ import annotations

import types
from typing import Any

import pytest

from archline.powermon.counters.amdsmi import AmdSmiGpu, AmdSmiMeter, load_amdsmi, unwrap
from archline.powermon.errors import DeviceError


class FakeAmdSmi:
    AmdSmiClkType = types.SimpleNamespace(GFX=0, MEM=1)
    AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0)
    AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)

    def __init__(self, ticks: list[int], resolution_uj: float = 15.3, key: str = "energy_accumulator",
                 n: int = 1, fail_init: bool = False) -> None:
        self.ticks, self.res, self.key, self.n, self.fail_init = list(ticks), resolution_uj, key, n, fail_init

    def amdsmi_init(self) -> None:
        if self.fail_init:
            raise RuntimeError("AMDSMI_STATUS_INIT_ERROR")

    def amdsmi_get_processor_handles(self) -> list[str]:
        return [f"h{i}" for i in range(self.n)]

    def amdsmi_get_energy_count(self, h: str) -> dict[str, Any]:
        t = self.ticks.pop(0) if len(self.ticks) > 1 else self.ticks[0]
        return {self.key: t, "counter_resolution": self.res, "timestamp": 0}

    def amdsmi_get_clock_info(self, h: str, kind: int) -> dict[str, int]:
        return {"clk": 1700 if kind == 0 else 1600}

    def amdsmi_get_temp_metric(self, h: str, kind: int, metric: int) -> int:
        return 55

    def amdsmi_get_power_info(self, h: str) -> dict[str, Any]:
        return {"average_socket_power": "N/A", "current_socket_power": 412}


def test_unwrap_32_and_64_bit() -> None:
    assert unwrap(10, 25, 100) == 115
    assert unwrap(2**32 - 5, 3, 0) == 8                       # a 32-bit accumulator wrapped
    assert unwrap(2**40, 7, 0) == 2**64 - 2**40 + 7           # a 64-bit one


@pytest.mark.parametrize("key", ["energy_accumulator", "power"])   # ROCm >= 6.2 and 6.0-6.1 names
def test_meter_counts_ticks_through_a_wrap(key: str) -> None:
    lib = FakeAmdSmi([2**32 - 1000, 2**32 - 1000, 2**32 - 400, 600, 2600], key=key)
    m = AmdSmiMeter(0, lib=lib)
    assert m.resolution_j == pytest.approx(15.3e-6)
    got = [m._read()[0] for _ in range(4)]
    assert got == pytest.approx([0.0, 600 * 15.3e-6, 1600 * 15.3e-6, 3600 * 15.3e-6])
    assert m.wraps == 1 and m.info()["energy_source"] == "amdsmi_get_energy_count"
    assert m.info()["power_scope"] == "socket"


def test_readings_and_failures() -> None:
    g = AmdSmiGpu.open(0, FakeAmdSmi([0]))
    assert g.readings() == {"core_mhz": 1700.0, "mem_mhz": 1600.0, "temp_c": 55.0}
    assert g.power_w() == 412.0
    with pytest.raises(DeviceError, match="no AMD GPU 3"):
        AmdSmiGpu.open(3, FakeAmdSmi([0]))
    with pytest.raises(DeviceError, match="AMD SMI unavailable: AMDSMI_STATUS_INIT_ERROR"):
        load_amdsmi(FakeAmdSmi([0], fail_init=True))
    with pytest.raises(DeviceError, match="has no accumulator"):
        AmdSmiGpu.open(0, FakeAmdSmi([0], key="other")).energy()
    with pytest.raises(DeviceError, match="amdsmi_get_gpu_asic_info failed"):
        g.name()
