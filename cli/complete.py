"""Value completion for click's shell completion (``eval "$(_ARCHLINE_COMPLETE=bash_source archline)"``): platform
names, a profile's meters, meter specs and kernels. Each runs on every Tab press, so it reads only names (no
profile is validated) and never fails: a completion that cannot be computed offers nothing."""

from __future__ import annotations

import contextlib
import glob
import logging
from collections.abc import Iterator

import click
from click.shell_completion import BashComplete, CompletionItem, FishComplete, ZshComplete, add_completion_class


def record_words() -> dict[str, str]:
    """What ``meter record --meter`` takes before its argument, from the meter-kind registry (each kind's
    ``record_words``, plugins' too; a test checks that each is accepted by powermon.meter_words.meter_from_spec):
    word -> help shown by shells that show it."""
    from archline.powermon import kinds

    return {w: h for k in kinds.kinds() for w, h in k.record_words}


def plugin_record_help() -> str:
    """``meter record --meter``'s help for the plugins' kinds ("a plugin's: toy (a toy meter), ..."); '' when
    none is installed (the help is then archline's own)."""
    from archline.powermon import kinds

    words = [f"{w} ({h})" if h else w for k in kinds.kinds() if k.origin != "archline" for w, h in k.record_words]
    return f"a plugin's: {', '.join(words)}" if words else ""


def pty_kind_names() -> list[str]:
    """The meter kinds ``meter emulate --kind`` serves on a pty, from the meter-kind registry (the first: its
    default)."""
    from archline.powermon.kinds import pty_kinds

    return [k.name for k in pty_kinds()]


def __getattr__(name: str) -> object:
    if name == "RECORD_SPECS":      # the table this module held before the registry
        return record_words()
    raise AttributeError(f"module 'archline.cli.complete' has no attribute '{name}'")


def platform_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Every profile name found (shipped and the user's), and localhost (this machine, detected)."""
    try:
        from archline.formats.platforms.profiles import iter_profiles

        names = {p.stem for p in iter_profiles()} | {"localhost"}
    except Exception:  # completion must not print a traceback into the user's command line
        names = {"localhost"}
    return [CompletionItem(n) for n in sorted(names) if n.startswith(incomplete)]


def profile_meters(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The [[meters]] names of the profile named by --platform so far (default localhost)."""
    try:
        from archline.bench.config.profile import load_bench_profile

        prof = load_bench_profile(str(ctx.params.get("platform") or "localhost"))
        items = [(m.name, m.kind) for m in prof.meters]
    except Exception:  # a profile that does not load: nothing to offer (the command itself will say why)
        items = []
    return [CompletionItem(n, help=str(k)) for n, k in items if n.startswith(incomplete)]


def record_specs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Meter kinds for ``meter record --meter``, then this machine's serial ports after a serial kind."""
    try:
        from archline.powermon import kinds

        words = record_words()
        serial = [w for k in kinds.kinds() if k.serial for w, _ in k.record_words if w.endswith(":")]
    except Exception:  # a registry that cannot be read offers nothing (completion never fails)
        return []
    for kind in serial:
        if incomplete.startswith(kind):
            ports = sorted(glob.glob("/dev/ttyUSB*") + glob.glob("/dev/ttyACM*"))
            return [CompletionItem(f"{kind}{p}") for p in ports if f"{kind}{p}".startswith(incomplete)]
    return [CompletionItem(k, help=h) for k, h in words.items() if k.startswith(incomplete)]


def kernel_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The kernels bench run knows (ceilings: OpenCL/CUDA only); after ``--backend NAME``, those NAME declares."""
    from archline.bench.kernels import KERNELS

    offered: tuple[str, ...] = (*KERNELS, "ceilings")
    name = ctx.params.get("backend")
    if name:
        try:
            with _quiet():
                from archline.bench.registry import backends

                info = backends().get(str(name))
            if info is not None:
                offered = tuple(k for k in offered if k in info.kernels)
        except Exception:  # a registry that cannot be read: every kernel (completion never fails)
            pass
    return [CompletionItem(k) for k in offered if k.startswith(incomplete)]


def backend_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Every registered back end (built-in folders and ``archline.backends`` plugins), with its help line."""
    try:
        with _quiet():
            from archline.bench.registry import backends

            items = [(n, i.help) for n, i in backends().items()]
    except Exception:  # a registry that cannot be read offers nothing (completion never fails)
        items = []
    return [CompletionItem(n, help=h) for n, h in items if n.startswith(incomplete)]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The back-end registry's warnings (a broken plugin) are not printed into the user's command line on every
    Tab press: the commands themselves say them."""
    log = logging.getLogger("archline.bench")
    was, log.disabled = log.disabled, True
    try:
        yield
    finally:
        log.disabled = was



class _SafeComplete:
    """Mixin for click's shell classes: a completion request whose environment is missing or malformed
    (``COMP_CWORD=abc``, ``COMP_WORDS`` unset, an unbalanced quote) or whose completion fails offers nothing and
    exits 0, rather than printing a traceback into the user's command line."""

    def complete(self) -> str:
        from archline.powermon import kinds

        kinds.hush()            # a meter plugin's warnings are its commands' to say, not the Tab press's
        try:
            return super().complete()  # type: ignore[misc, no-any-return]
        except Exception:  # completion runs on every Tab press: it must never fail
            return ""


class SafeBashComplete(_SafeComplete, BashComplete):
    pass


class SafeZshComplete(_SafeComplete, ZshComplete):
    pass


class SafeFishComplete(_SafeComplete, FishComplete):
    pass


def register() -> None:
    """Make click use the safe classes for bash, zsh and fish (done when archline.cli is imported)."""
    for cls in (SafeBashComplete, SafeZshComplete, SafeFishComplete):
        add_completion_class(cls)
