"""The made-up platform profile the end-to-end fits run on (PowerMon 2 in tests/runner, PMD-USB in tests/powermon):
one set of constants, the emulator's idle power and noise, and the caller's ``[[meters]]`` block."""

from __future__ import annotations

#: the coefficients the profile puts in, which a fit of what the emulator measured must recover
VALUES = {"eps_flop_sp": 40e-12, "eps_flop_dp": 150e-12, "eps_mem": 300e-12, "pi0": 35.0}

_HEAD = """
schema = "archline.platform/1"
name = "{name}"
title = "{title}"
device_kind = "gpu"

[constants]
peak_flop_per_s_sp = {{ value = 400e9, source = "made up" }}
peak_flop_per_s_dp = {{ value = 100e9, source = "made up" }}
peak_byte_per_s = {{ value = 50e9, source = "made up" }}
eps_flop_sp = {{ value = {eps_flop_sp:g}, source = "made up" }}
eps_flop_dp = {{ value = {eps_flop_dp:g}, source = "made up" }}
eps_mem = {{ value = {eps_mem:g}, source = "made up" }}
pi0 = {{ value = {pi0:g}, source = "made up" }}

[emulate]
idle_w = 12.0
noise_rel = 0.003

"""


def made_up_profile(name: str, title: str, meters: str) -> str:
    """The profile's TOML text: ``meters`` is its ``[[meters]]`` block, verbatim."""
    return _HEAD.format(name=name, title=title, **VALUES) + meters.strip() + "\n"
