"""The lab's user mistakes: one line naming the thing, a documented exit status, nothing half-done."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.labs import write_lab

GPU = {"name": "gpu01", "platform": "gtx580", "precisions": ["sp"]}


def _err(r: object) -> str:
    err: str = r.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("archline: error: "), err
    return lines[0]


def test_lab_submit_without_slurm_says_so(tmp_path: Path, run_cli: Callable[..., object],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    lab = write_lab(tmp_path / "lab.toml", [GPU], scheduler="slurm")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))         # no sbatch, no srun
    r = run_cli("lab", "submit", str(lab))
    assert r.exit_code == 2  # type: ignore[attr-defined]
    line = _err(r)
    assert "Slurm is not available here" in line and "--scheduler local" in line
    assert not (tmp_path / "results").exists()                 # nothing written, nothing submitted


@pytest.mark.parametrize(("machine", "lab_extra", "needle"), [
    ({**GPU, "slurm": {"partiton": "gpu"}}, "", "machine[0].slurm: unknown key 'partiton' (did you mean 'partition'?)"),
    ({**GPU, "precisons": ["sp"]}, "", "machine[0]: unknown key 'precisons' (did you mean 'precisions'?)"),
    ({**GPU, "slurm": {"time": "two hours"}}, "", "machine[0].slurm.time: must be a Slurm time limit"),
    ({**GPU, "precisions": ["qp"]}, "", "machine[0].precisions[0] must be one of"),
    ({**GPU, "out": "elsewhere"}, "", "machine[0].out: the lab sets each machine's out"),
    ({**GPU, "name": "bad name"}, "", "machine[0].name"),
    (GPU, "schedular = \"slurm\"\n", "lab: unknown key 'schedular' (did you mean 'scheduler'?)"),
    (GPU, "parallel = -1\n", "lab.parallel"),
])
def test_lab_file_mistake_names_the_key(tmp_path: Path, run_cli: Callable[..., object], machine: dict[str, object],
                                        lab_extra: str, needle: str) -> None:
    lab = write_lab(tmp_path / "lab.toml", [machine], extra=lab_extra)
    for cmd in (("submit", str(lab)), ("status", str(lab)), ("collect", str(lab), "--out", str(tmp_path / "d"))):
        r = run_cli("lab", *cmd)
        assert r.exit_code == 2  # type: ignore[attr-defined]
        line = _err(r)
        assert str(lab) in line and needle in line, line


def test_lab_file_structure_mistakes(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    cases = {
        "no_results.toml": ('[lab]\nscheduler = "local"\n[[machine]]\nname = "a"\nplatform = "gtx580"\n',
                            "lab: missing 'results'"),
        "no_machine.toml": ('[lab]\nresults = "r"\n', "no_machine.toml: missing 'machine'"),
        "twice.toml": ('[lab]\nresults = "r"\n[[machine]]\nname = "a"\nplatform = "gtx580"\n'
                       '[[machine]]\nname = "a"\nplatform = "i7-950"\n', "machine[1].name: 'a' is used by another"),
        "bad.toml": ("[lab\n", "not valid TOML"),
    }
    for name, (text, needle) in cases.items():
        (tmp_path / name).write_text(text)
        line = _err(run_cli("lab", "status", str(tmp_path / name)))
        assert needle in line, (name, line)
    line = _err(run_cli("lab", "status", str(tmp_path / "nosuch.toml")))
    assert "lab file" in line and "does not exist" in line


def test_lab_unknown_platform_is_refused_before_anything_runs(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    lab = write_lab(tmp_path / "lab.toml", [{**GPU, "platform": "gtx5800"}])
    line = _err(run_cli("lab", "submit", str(lab)))
    assert "machine 'gpu01'" in line and "gtx5800" in line
    assert not list((tmp_path / "results").rglob("task.json"))


def test_lab_unreachable_results_is_an_error_not_an_empty_dataset(tmp_path: Path,
                                                                 run_cli: Callable[..., object]) -> None:
    (tmp_path / "afile").write_text("not a directory")
    lab = write_lab(tmp_path / "lab.toml", [GPU], results=str(tmp_path / "afile" / "results"))
    out = tmp_path / "dataset"
    line = _err(run_cli("lab", "collect", str(lab), "--out", str(out)))
    assert "is not reachable" in line and "nothing collected" in line
    assert not out.exists()
    line = _err(run_cli("lab", "submit", str(lab)))
    assert "is not reachable" in line
    # reachable, but no machine has run yet: still not an empty data set
    lab = write_lab(tmp_path / "lab2.toml", [GPU], results=str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    line = _err(run_cli("lab", "collect", str(lab), "--out", str(out)))
    assert "no rows to collect" in line and not out.exists()
    r = run_cli("lab", "status", str(lab))
    assert r.exit_code == 3 and "never submitted" in r.stdout  # type: ignore[attr-defined]
