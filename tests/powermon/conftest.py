from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.powermon_helpers import SCRIPT

from archline.powermon.emulator import Faults, PtyServer, Script
from archline.powermon.powermon2.emulator import PowerMon2Core


@pytest.fixture
def pty_device() -> Iterator[tuple[PowerMon2Core, PtyServer]]:
    servers: list[PtyServer] = []

    def make(faults: Faults | None = None, speed: float = 1.0,
             script: Script = SCRIPT) -> tuple[PowerMon2Core, PtyServer]:
        core = PowerMon2Core(script, faults, speed=speed)
        srv = PtyServer(core).start()
        servers.append(srv)
        return core, srv

    yield make  # type: ignore[misc]
    for s in servers:
        s.stop()
