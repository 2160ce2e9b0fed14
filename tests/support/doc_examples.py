"""The shell examples a user reads, as data: every ``archline`` line in README.md and docs/*.md fenced shell
blocks, and every ``archline`` line in a command's ``--help``; and a small runner for them.

An example keeps the numbers its text states (``788 GFLOP/s``, ``0.31x``, ``20 SMs``): the test checks each one
appears in what the command printed. The runner understands the little shell the examples use (``&&``, ``>``,
globs, ``\\`` continuations) and runs each ``archline`` step in this process (fast) in a sandbox directory.
"""

from __future__ import annotations

import glob
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

#: a stated result: a number and the unit (or word) that makes it a result, not a section or table number
_STATED = re.compile(r"(?<![\w.§])(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?\s?"
                     r"(GFLOP/s|GFLOP/J|flop/B|pJ/B|pJ|W|J|MB|KB|GB/s|SMs|cores|boards|"
                     r"GHz|x\b|%)")


@dataclass
class Example:
    where: str                      #: "README.md:42" or "--help of 'fit'"
    command: str                    #: the shell line as written (continuations joined)
    comment: str = ""               #: the text after it (what the docs say it does)
    stated: list[str] = field(default_factory=list)   #: numbers the comment states ("788", "0.31")

    @property
    def id(self) -> str:
        return f"{self.where} {self.command}"[:120]


def _stated(comment: str) -> list[str]:
    """Each stated number; a range (``253-389 pJ/B``) states both its ends."""
    return [n for m in _STATED.finditer(comment) for n in m.group(1, 2) if n]


def _join_continuations(lines: list[str]) -> Iterator[tuple[int, str]]:
    buf, start = "", 0
    for i, line in enumerate(lines):
        if not buf:
            start = i
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1].rstrip() + " "
            continue
        yield start, buf + line.strip() if buf else line.strip()
        buf = ""
    if buf:
        yield start, buf


def _split_comment(line: str, help_style: bool) -> tuple[str, str]:
    """The command and its trailing comment: ``# ...`` anywhere, or (in --help text) two or more spaces."""
    if " #" in line:
        cmd, _, comment = line.partition(" #")
        return cmd.strip(), comment.strip()
    if help_style:
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        return parts[0], parts[1] if len(parts) > 1 else ""
    return line.strip(), ""


def markdown_examples(path: Path) -> list[Example]:
    """``archline`` lines of fenced sh/bash/console/shell blocks, and of indented code blocks (four spaces after a
    blank line, outside any fence: the docs copy --help's example lists that way, with its two-space comments)."""
    out: list[Example] = []
    lines = path.read_text().splitlines()
    where = str(path.relative_to(ROOT))
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```\s*(\w*)", lines[i])
        if fence:
            j = i + 1
            block: list[str] = []
            while j < len(lines) and not lines[j].strip().startswith("```"):
                block.append(re.sub(r"^\s*\$ ", "", lines[j]))
                j += 1
            if fence.group(1) in ("sh", "bash", "console", "shell"):
                for k, text in _join_continuations(block):
                    cmd, comment = _split_comment(text, help_style=False)
                    if cmd.startswith("archline "):
                        out.append(Example(f"{where}:{i + 2 + k}", cmd, comment, _stated(comment)))
            i = j + 1
            continue
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            for k, text in _join_continuations([ln[4:] for ln in lines[i:j]]):
                cmd, comment = _split_comment(re.sub(r"^\$ ", "", text), help_style=True)
                if cmd.startswith("archline "):
                    out.append(Example(f"{where}:{i + 1 + k}", cmd, comment, _stated(comment)))
            i = j
            continue
        i += 1
    return out


def help_examples() -> list[Example]:
    import click

    from archline.cli.main import cli

    ctx = click.Context(cli)
    out: list[Example] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        text = "\n".join(t for t in (cmd.help, cmd.epilog) if t)
        lines = [ln for ln in text.splitlines() if ln.strip() and ln.strip() != "\b"]
        for _, joined in _join_continuations(lines):
            if joined.startswith("archline "):
                cmd_text, comment = _split_comment(joined, help_style=True)
                out.append(Example(f"--help of '{' '.join(path) or 'archline'}'", cmd_text, comment,
                                   _stated(comment)))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name])

    walk(cli, [])
    return out


def all_examples() -> list[Example]:
    return [e for p in DOCS for e in markdown_examples(p)] + help_examples()


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    crash: str = ""


def steps(command: str) -> list[tuple[list[str], str | None]]:
    """``a && b > f`` -> [(argv_a, None), (argv_b, "f")]; globs expanded later, in the sandbox."""
    out: list[tuple[list[str], str | None]] = []
    for part in command.split("&&"):
        words = shlex.split(part)
        redirect = None
        if ">" in words:
            k = words.index(">")
            redirect = words[k + 1]
            words = words[:k] + words[k + 2:]
        out.append((words, redirect))
    return out


def run_example(command: str, sandbox: Path, timeout_s: float = 60.0) -> Ran:
    """Each ``archline`` step in-process (the same runner as the bad-input matrix), in ``sandbox``."""
    from support.badinputs import run_inproc

    out, err = [], []
    for words, redirect in steps(command):
        if words[0] != "archline":
            return Ran(127, "", f"not an archline step: {words[0]}")
        argv: list[str] = []
        for w in words[1:]:
            hits = sorted(glob.glob(w, root_dir=sandbox)) if any(c in w for c in "*?[") else []
            argv.extend(hits or [w])
        res = run_inproc(argv, sandbox, None, timeout_s=timeout_s)
        if redirect is not None:
            (sandbox / redirect).unlink(missing_ok=True)     # a new file, as the shell's > gives (no write
            (sandbox / redirect).write_text(res.stdout)      # through a hard link into a shared sandbox)
        else:
            out.append(res.stdout)
        err.append(res.stderr)
        if res.code != 0 or res.exception:
            return Ran(res.code, "".join(out), "".join(err), res.exception)
    return Ran(0, "".join(out), "".join(err))
