"""archline platforms list|show"""

from __future__ import annotations

from typing import Any

import click

from archline.cli.complete import platform_names
from archline.cli.output import echo_json, echo_table, format_option
from archline.formats.platforms.profiles import CONSTANT_UNITS, load_all_profiles, load_platform
from archline.model.units import display


@click.group()
def platforms() -> None:
    """Platform profiles: the papers' machines and your own.

    \b
    Shipped profiles hold every value the papers give, each citing its table;
    values the papers do not give are left empty and say why. Add your own as
    TOML in ~/.config/archline/platforms/ or a directory on $ARCHLINE_PLATFORM_PATH
    (copy one with `archline platforms show gtx580 --format toml-path`).
    A cost table from `archline fit` (.json) works wherever a profile name does.
    """


@platforms.command("list")
@format_option
def list_cmd(fmt: str) -> None:
    """List every profile found, with the precisions the model can be run at.

    \b
    Examples:
      archline platforms list
      archline platforms list --format json
    """
    found, problems = load_all_profiles()
    for line in problems:
        click.echo(f"archline: warning: {line}", err=True)
    rows = [{"name": p.name, "title": p.title, "device_kind": p.device_kind,
             "model_precisions": p.precisions_available(), "path": str(path)} for path, p in found]
    if not any(r["name"] == "localhost" for r in rows):      # the main job's platform: detected, not a file
        local = _localhost().platform
        rows.append({"name": "localhost", "title": local.title, "device_kind": local.device_kind,
                     "model_precisions": [], "path": local.origin})
    if fmt == "json":
        echo_json(rows)
        return
    echo_table(["name", "kind", "model", "title"],
               [[r["name"], r["device_kind"], ",".join(r["model_precisions"]) or "incomplete", r["title"]]
                for r in rows])


@platforms.command("show")
@click.argument("name", shell_complete=platform_names)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "toml-path"]), default="table",
              show_default=True, help="toml-path prints where the profile file is, to copy and edit")
def show_cmd(name: str, fmt: str) -> None:
    """Show every constant of NAME with its unit and source.

    \b
    Example:
      archline platforms show gtx580
    """
    if name == "localhost":
        from archline.model.errors import PlatformNotFoundError

        try:
            p = load_platform(name)
        except PlatformNotFoundError:
            p = _localhost().platform
    else:
        p = load_platform(name)
    if fmt == "toml-path":
        click.echo(p.origin)
        return
    if fmt == "json":
        echo_json({"name": p.name, "title": p.title, "origin": p.origin, "emulated": p.emulated,
                   "constants": {k: {"value": c.value, "unit": CONSTANT_UNITS.get(k, ""), "source": c.source}
                                 for k, c in p.constants.items()},
                   "dvfs": p.dvfs})
        return
    click.echo(f"{p.name}: {p.title}" + ("  [emulated]" if p.emulated else ""))
    click.echo(f"from {p.origin}")
    if p.notes:
        click.echo(p.notes)
    click.echo()
    rows = []
    for k, c in p.constants.items():
        v, unit = display(c.value, CONSTANT_UNITS.get(k, ""))
        rows.append([k, v, unit, c.source])
    echo_table(["constant", "value", "unit", "source"], rows)
    settings = p.dvfs.get("settings") if p.dvfs else None
    if settings:
        click.echo()
        click.echo(f"DVFS settings ({p.dvfs.get('source', '')}):")
        echo_table(["id", "core_mhz", "mem_mhz", "core_v", "mem_v"],
                   [[s.get("id", ""), s.get("core_mhz", ""), s.get("mem_mhz", ""), s.get("core_v", "—"),
                     s.get("mem_v", "—")] for s in settings])


def _localhost() -> Any:
    """This machine's generated profile (what `bench run --platform localhost` runs), unless a file shadows it."""
    from archline.bench.config.profile import localhost_profile

    return localhost_profile()
