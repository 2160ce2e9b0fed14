"""The ``archline`` command: a click group whose subcommands are imported only when used.

cli/ wires and holds no logic: each command parses, calls the library, prints.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

#: command name -> "module:attribute" of its click command or group (imported lazily: keeps --help fast).
SUBCOMMANDS: dict[str, str] = {
    "platforms": "archline.cli.platforms:platforms",
    "meter": "archline.cli.meter:meter",
    "model": "archline.cli.model:model",
    "plot": "archline.cli.plot:plot",
    "bench": "archline.cli.bench:bench",
    "fit": "archline.cli.fit:fit",
    "bound": "archline.cli.bound:bound",
    "predict": "archline.cli.predict:predict",
    "tune": "archline.cli.tune:tune",
    "design-space": "archline.cli.design_space:design_space",
    "ipp": "archline.cli.ipp:ipp",
    "iso-power": "archline.cli.iso_power:iso_power",
    "lab": "archline.cli.lab:lab",
    "compare": "archline.cli.compare:compare",
}

#: Modules whose ``USER_ERRORS`` tuple lists exception types that mean "the user asked for something wrong".
_ERROR_MODULES = ("archline.fit.errors", "archline.powermon.errors", "archline.bench.errors")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command)
        return cmd


def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = []
    for name in _ERROR_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        errors.extend(getattr(mod, "USER_ERRORS", ()))
    return tuple(errors)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="archline")
@click.option("-v", "--verbose", is_flag=True, help="Also print debug messages (meter set-up, every region).")
def cli(verbose: bool) -> None:
    """archline: what a flop, a byte and a random access cost on your machine, in joules and seconds.

    \b
    It measures time, energy and power per operation with hand-tuned kernels and power meters, fits the
    energy-roofline model (Choi et al., IPDPS 2013, and the thesis that extends it) and answers questions
    with the fitted cost table.

    \b
    Start here, no meter needed:
      archline platforms list                 the papers' platforms and your own profiles
      archline model show gtx580              constants, balance points, peak powers
      archline model predict gtx580 --intensity 0.5,4,32
      archline model plot gtx580 --out gtx580.png

    Every command has --help with examples; the model's equations, with the
    papers' equation and table numbers, are in docs/model.md.
    """
    from archline.common.logs import configure

    configure(verbose)


def main(argv: list[str] | None = None) -> int:
    errors = _user_errors()
    try:
        result: Any = cli.main(args=argv, prog_name="archline", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except click.exceptions.Abort:
        click.echo("archline: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except errors as e:  # a user mistake: one line, no traceback
        click.echo(f"archline: error: {e}", err=True)
        sys.exit(getattr(e, "exit_code", 2))
    except KeyboardInterrupt:
        click.echo("archline: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
