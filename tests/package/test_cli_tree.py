"""Every leaf command teaches by example: its own --help has an "Examples:" block whose lines run the command
itself (the docs-as-tests harness, tests/docs, executes them)."""

from __future__ import annotations

import click
import pytest

from archline.cli.main import cli


def _leaves() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                walk(sub, [*path, name])
        else:
            out.append((" ".join(path), cmd))

    walk(cli, [])
    return out


LEAVES = _leaves()


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[p for p, _ in LEAVES])
def test_leaf_help_has_an_example_of_itself(path: str, cmd: click.Command) -> None:
    text = "\n".join(t for t in (cmd.help, cmd.epilog) if t)
    assert "Examples:" in text or "Example:" in text, f"'archline {path} --help' has no Examples: block"
    runs_itself = [ln for ln in text.splitlines() if ln.strip().startswith(f"archline {path}")]
    assert runs_itself, f"'archline {path} --help' has no example line starting 'archline {path}'"


def test_the_main_jobs_platform_is_listed_and_shown(run_cli) -> None:  # type: ignore[no-untyped-def]
    listed = run_cli("platforms", "list", "--format", "json")
    assert listed.exit_code == 0 and "localhost" in {r["name"] for r in __import__("json").loads(listed.stdout)}
    shown = run_cli("platforms", "show", "localhost")
    assert shown.exit_code == 0 and "<detected>" in shown.stdout and "cpu_asm" in shown.stdout
