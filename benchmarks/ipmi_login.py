"""Cost of archline's IPMI login per cipher suite against the emulated BMC (``ipmi_serve``, 127.0.0.1): the
client's whole open (Get Channel Cipher Suites where no suite is forced, the RMCP+ login, Get Device ID, Get DCMI
Capabilities parameters 1 and 5), one DCMI Get Power Reading, and the Get Channel Cipher Suites exchange alone.
Each login is to a BMC process that offers 17 and 3; rounds interleave the cases; the median and the best are
kept. No goal: the numbers say what the suite choice costs next to a BMC's one-second update period.

    python benchmarks/ipmi_login.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from archline.powermon.bmc import rmcp
from archline.powermon.bmc.ipmi import BmcProcess, DcmiClient


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    a = p.parse_args()
    cases: dict[str, list[float]] = {"login auto (17)": [], "login 17": [], "login 3": [], "read": [],
                                     "cipher suite list": []}
    with BmcProcess(["--power-w", "412"]) as srv:
        url = f"ipmi://archline:emulated@127.0.0.1:{srv.port}"
        for _ in range(a.rounds):
            for name, suite in (("login auto (17)", None), ("login 17", 17), ("login 3", 3)):
                t0 = time.perf_counter()
                c = DcmiClient(url, None, None, suite)
                cases[name].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                c.read()
                cases["read"].append(time.perf_counter() - t0)
                c.close()
            t0 = time.perf_counter()
            assert rmcp.offered_suites("127.0.0.1", srv.port) == {17: (3, 4, 1), 3: (1, 1, 1)}
            cases["cipher suite list"].append(time.perf_counter() - t0)
    print(json.dumps({k: {"median_ms": round(1e3 * statistics.median(v), 2), "best_ms": round(1e3 * min(v), 2),
                          "n": len(v)} for k, v in cases.items()}, indent=1))


if __name__ == "__main__":
    main()
