"""The hosts behind each platform's rows (issue 34): ``archline fit`` fits a platform's rows as one machine, so rows
of several hosts under one platform name (two machines' ``localhost`` runs) are said in one warning line that names
the hosts and how to fit one (``--where host=NAME``), never merged silently."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from archline.common.arrow import column_codes

if TYPE_CHECKING:
    import pyarrow as pa


def note_hosts(hosts: dict[str, dict[str, None]], tab: pa.Table) -> None:
    """Add to ``hosts`` (platform -> its hosts, in order seen) the distinct (platform, host) pairs of ``tab``; an
    empty host cell, or a file without the column, names none."""
    if "host" not in tab.column_names or "platform" not in tab.column_names:
        return
    (pc, pv), (hc, hv) = column_codes(tab.column("platform")), column_codes(tab.column("host"))
    n = tab.num_rows
    p_idx = np.broadcast_to(pc, (n,)) if pc.size == 1 else pc
    h_idx = np.broadcast_to(hc, (n,)) if hc.size == 1 else hc
    for a, b in dict.fromkeys(zip(p_idx.tolist(), h_idx.tolist(), strict=True)):
        host = (hv[b] or "").strip()
        if host:
            hosts.setdefault((pv[a] or "").strip(), {})[host] = None


def mixed_hosts(platform: str, hosts: dict[str, dict[str, None]]) -> str | None:
    """The warning for a platform whose rows name several hosts (None for one or none)."""
    names = list(hosts.get(platform, {}))
    if len(names) < 2:
        return None
    return (f"rows of {len(names)} hosts ({', '.join(names)}) fitted as one platform '{platform}', one machine: fit "
            "each host apart with `--where host=NAME` (e.g. --where host=" + names[0] + ")")
