"""Lab files for the tests: emulated machines with small, time-compressed sweeps (a machine's sweep takes a few
seconds), and profiles that differ from a shipped one in one constant."""

from __future__ import annotations

import re
from pathlib import Path

#: small emulated sweeps: the intensity kernel, quick (>= 1 device-second of meter samples per point), 100x
SWEEP = {"emulate": True, "kernels": ["intensity"], "quick": True, "time_compression": 100.0}


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def write_lab(path: Path, machines: list[dict[str, object]], *, results: str = "results", scheduler: str = "local",
              name: str = "testlab", extra: str = "") -> Path:
    out = [f'[lab]\nresults = "{results}"\nscheduler = "{scheduler}"\nname = "{name}"\n{extra}']
    for m in machines:
        body = {**SWEEP, **m}
        slurm = body.pop("slurm", None)
        lines = [f"{k} = {toml_value(v)}" for k, v in body.items()]
        if slurm:
            lines.append("slurm = { " + ", ".join(f"{k} = {toml_value(v)}" for k, v in dict(slurm).items()) + " }")
        out.append("[[machine]]\n" + "\n".join(lines) + "\n")
    path.write_text("\n".join(out))
    return path


def scaled_profile(src: Path, dst: Path, key: str, factor: float, noise_rel: float = 0.0) -> Path:
    """A copy of profile ``src`` with constant ``key`` multiplied by ``factor`` (same name, so the rows keep the
    platform) and, with ``noise_rel``, the emulated meter's relative power noise."""
    text = src.read_text()
    m = re.search(rf"^{key} = \{{ value = ([^,]+),", text, flags=re.M)
    assert m, f"{key} not in {src}"
    text = text.replace(m.group(0), f"{key} = {{ value = {float(m.group(1)) * factor!r},")
    if noise_rel:
        text = re.sub(r"^\[emulate\]$", f"[emulate]\nnoise_rel = {noise_rel!r}", text, count=1, flags=re.M)
    dst.write_text(text)
    return dst
