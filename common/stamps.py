"""UTC time stamps, one spelling each: ISO-8601 to the second with ``Z`` (``started_at``, logs, locks) and the
compact form used inside run ids and file names."""

from __future__ import annotations

import datetime as _dt


def utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def utc_iso(when: _dt.datetime | None = None) -> str:
    """``2026-01-31T12:00:00Z``"""
    return (when or utc_now()).isoformat(timespec="seconds").replace("+00:00", "Z")


def utc_compact(when: _dt.datetime | None = None) -> str:
    """``20260131T120000Z``"""
    return (when or utc_now()).strftime("%Y%m%dT%H%M%SZ")
