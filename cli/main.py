"""The ``archline`` command: a click group whose subcommands are imported only when used.

cli/ wires and holds no logic: each command parses, calls the library, prints.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import traceback
from typing import Any

import click

from archline.common.exits import EXIT_BUG, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, classify, epilog
from archline.common.limits import lean_malloc
from archline.common.sigwatch import STOP_SIGNALS, raising
from archline.common.sigwatch import install as install_sigwatch

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
    "throttle": "archline.cli.throttle:throttle",
    "power-bound": "archline.cli.power_bound:power_bound",
    "tradeoff": "archline.cli.tradeoff:tradeoff",
    "codesign": "archline.cli.codesign:codesign",
    "powers": "archline.cli.powers:powers",
    "measure": "archline.cli.measure:measure",
}

#: Modules whose ``USER_ERRORS`` tuple lists exception types that mean "the user asked for something wrong".
_ERROR_MODULES = ("archline.common.errors", "archline.model.errors", "archline.powermon.errors",
                  "archline.bench.errors")


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


_DEBUG = {"on": False}


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--version: the version, the git commit when run from a checkout, and each back end's line (the CPU kernel
    module's compiled ISAs)."""
    if not value or ctx.resilient_parsing:
        return
    import archline
    from archline.bench.registry import backends
    from archline.common.version import source_commit

    commit = source_commit()
    lines = [line for info in backends().values() if (line := info.version_text()) is not None]
    click.echo("\n".join([f"archline {archline.__version__}", f"commit {commit}", *lines]))
    ctx.exit(0)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=epilog())
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="The version, git commit and the kernel module's compiled ISAs.")
@click.option("-v", "--verbose", is_flag=True, help="Also print debug messages (meter set-up, every region).")
@click.option("--debug", is_flag=True, help="On an error, also print its Python traceback (for bug reports).")
def cli(verbose: bool, debug: bool) -> None:
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

    _DEBUG["on"] = debug
    configure(verbose or debug)
    if debug:
        import warnings

        warnings.simplefilter("default", RuntimeWarning)


def _usage_line(e: click.UsageError) -> str:
    """Click's usage error as one line: the command, what is wrong, where the help is."""
    path = e.ctx.command_path if e.ctx is not None else "archline"
    return f"{path}: {one_line(e.format_message())} (see '{path} --help')"


def one_line(message: str) -> str:
    """A message of several lines (click's "Choose from:\\n\\thost,\\n\\trun") as one: every error is one line."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def _say(line: str) -> None:
    """A line on stderr that cannot fail: a closed or full stderr must not turn the exit code into 1."""
    # a file name that is not UTF-8 arrives as surrogates: show its bytes as \xNN rather than fail to print
    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):
        pass


def _fail(message: str, code: int) -> None:
    _say(f"archline: error: {message}")
    _quiet_streams()
    sys.exit(code)


def _quiet_streams() -> None:
    """Flush stdout and stderr now; one that cannot take its data (closed, a full disk) is pointed at /dev/null,
    so that the interpreter's last flush cannot fail again and change the exit code."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                pass


class _TolerantStderr:
    """stderr that a closed or full file cannot fail: progress, warnings and notes are for a person, and losing
    them must not change the exit code or stop a run before its outputs are written (docs/errors.md). After the
    first failed write the rest go to /dev/null."""

    def __init__(self, real: Any) -> None:        # a wrapper: every attribute but write and flush is real's
        self.__dict__["_real"] = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_real"], name)

    def _lost(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.__dict__["_real"].fileno())
            os.close(devnull)
        self.__dict__["_real"] = open(os.devnull, "w")

    def write(self, text: str) -> int:
        try:
            return int(self.__dict__["_real"].write(text))
        except (OSError, ValueError):
            self._lost()
            return len(text)

    def flush(self) -> None:
        try:
            self.__dict__["_real"].flush()
        except (OSError, ValueError):
            self._lost()


def _late_sigterm(signum: int, frame: Any) -> None:
    """Ctrl-C or SIGTERM after the command has finished (its outputs written), while the process exits: 130 and
    the line an interrupt says, as documented (was killed by the signal itself: Python's finalisation puts the
    default handlers back, so :func:`main` ends the process itself, see :func:`_exit_process`)."""
    with contextlib.suppress(OSError, ValueError):
        os.write(2, b"archline: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _exit_process(code: Any) -> None:
    """End the console script with ``code`` keeping archline's signal handlers to the last instruction: the exit
    functions run and the streams are flushed here, then ``os._exit`` (the interpreter's own finalisation would
    put the default handlers back first, and a signal in that window killed the process by the signal)."""
    import atexit

    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:      # nohup's SIGHUP stays ignored
                signal.signal(sig, _late_sigterm)
    if code is None:
        code = EXIT_OK
    elif not isinstance(code, int):         # sys.exit("text"): the text on stderr, 1 (as the interpreter does)
        _say(str(code))
        code = 1
    for t in threading.enumerate():         # the interpreter waits for non-daemon threads: so do we
        if t is not threading.current_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    _quiet_streams()
    os._exit(code)


#: the stop signal the command got (0: none): an error it caused on its way out (a figure cut off mid-write) is
#: still an interruption, 130
_STOPPED = {"signum": 0}


@raising
def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM and SIGHUP (a closed terminal or ssh session) do what Ctrl-C does: the command stops, keeps what it
    finished, removes its temp files."""
    _STOPPED["signum"] = signum
    raise KeyboardInterrupt


@raising
def _on_sigint(signum: int, frame: Any) -> None:
    """Ctrl-C: Python's KeyboardInterrupt, noted (see :data:`_STOPPED`)."""
    _STOPPED["signum"] = signum
    raise KeyboardInterrupt


def _ignore_interrupts() -> None:
    """Once interrupted, the outputs are final: a second Ctrl-C or SIGTERM must not kill the exit on its way."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def _interrupted() -> None:
    """130 and ``archline: interrupted``; the stop signals ignored from here on (the outputs are final)."""
    _ignore_interrupts()
    _say("archline: interrupted")
    _quiet_streams()
    sys.exit(EXIT_INTERRUPTED)


def _stdout_closed() -> None:
    """The reader of stdout went away (``archline ... | head``): stop quietly, as Unix tools do. Point stdout at
    /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """The console script. Every user mistake and environment failure ends here as one line on stderr and a code
    of :data:`archline.common.exits.EXIT_CODES`; anything else is a bug and keeps its traceback. Called with
    ``argv`` (in-process) it returns or raises SystemExit; as the script it ends the process (:func:`_exit_process`)."""
    if argv is not None:
        return _main(argv)
    lean_malloc()           # under ulimit -v: one malloc arena, set before any other thread allocates
    install_sigwatch()      # SIGTERM answered within a second even while the main thread is stuck in C
    try:
        code: Any = _main(None)
    except SystemExit as e:
        code = e.code
    _exit_process(code)
    return EXIT_OK                          # not reached


def _main(argv: list[str] | None) -> int:
    import warnings

    from archline.common.limits import limit_line, prepare
    from archline.common.outputs import reset

    try:        # under ulimit -v/-d: one thread per native pool, BLAS's buffer made now (never a spin later)
        prepare()
    except MemoryError as e:
        _fail(*(limit_line(e) or ("out of memory", EXIT_INPUT)))

    for name in ("stdout", "stderr"):      # started with it closed (`archline ... >&-`): as if nobody reads it
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))
    real_stderr = sys.stderr
    if not isinstance(sys.stderr, _TolerantStderr):
        sys.stderr = _TolerantStderr(sys.stderr)
    _DEBUG["on"] = False
    reset()
    # numpy's floating-point RuntimeWarnings from an optimiser's trial steps are not the user's to act on (the
    # fits report their own quality); --debug shows them
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    errors = _user_errors()
    old_term: dict[int, Any] | None = None
    _STOPPED["signum"] = 0
    if threading.current_thread() is threading.main_thread():
        old_term = {}
        for sig in STOP_SIGNALS:        # one place for every stop signal; one started ignored stays ignored
            now = signal.getsignal(sig)
            if sig == signal.SIGTERM or now is not signal.SIG_IGN:
                old_term[sig] = signal.signal(sig, _on_sigint if sig == signal.SIGINT else _on_sigterm)
    try:
        result: Any = cli.main(args=argv, prog_name="archline", standalone_mode=False)
        sys.stdout.flush()
        return result if isinstance(result, int) else 0
    except click.exceptions.Abort:     # click's name for Ctrl-C inside a command
        _ignore_interrupts()
        old_term = None  # stay ignored to the end
        _say("archline: interrupted")
        _quiet_streams()
        sys.exit(EXIT_INTERRUPTED)
    except click.UsageError as e:
        _fail(_usage_line(e), e.exit_code)
    except click.ClickException as e:
        if _STOPPED["signum"]:     # an error the interrupt caused: the interrupt wins
            old_term = None
            _interrupted()
        _fail(one_line(e.format_message()), e.exit_code if e.exit_code != EXIT_BUG else EXIT_INPUT)
    except KeyboardInterrupt:
        _ignore_interrupts()
        old_term = None  # stay ignored to the end
        _say("archline: interrupted")
        _quiet_streams()
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        _stdout_closed()
        sys.exit(EXIT_OK)
    except SystemExit:
        if isinstance(sys.stdout, click.utils.PacifyFlushWrapper):  # click's own EPIPE handling exits 1
            _stdout_closed()
            sys.exit(EXIT_OK)
        raise
    except Exception as e:
        if _STOPPED["signum"]:     # an error the interrupt caused (a write cut off): the interrupt wins
            old_term = None
            _interrupted()
        known = limit_line(e) or classify(e, errors)   # a failure the memory limit caused names the limit
        if known is None or _DEBUG["on"]:
            traceback.print_exc()
        if known is None:  # a bug: the traceback above, and what it is
            _fail("internal error (a bug); please report it with the traceback above", EXIT_BUG)
        else:
            _fail(*known)
    finally:
        if argv is not None:                # called in-process (tests, scripts): the caller's stderr back
            sys.stderr = real_stderr
        if old_term is not None:
            for sig, h in old_term.items():     # the script: a stop from here on is the late one
                signal.signal(sig, _late_sigterm if argv is None else h)
    return EXIT_OK
