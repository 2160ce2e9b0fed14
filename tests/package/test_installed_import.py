"""archline is a regular package (pkg/archline/__init__.py): Python started next to a checkout named 'archline'
(what `git clone` makes) imports the installed package, not the source tree's folders as a namespace package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_from_a_directory_holding_a_checkout(tmp_path: Path) -> None:
    (tmp_path / "archline").symlink_to(ROOT, target_is_directory=True)
    code = ("import archline, archline.cli.main, archline.bench.cpu_asm._kernels as k; "
            "print(archline.__version__, archline.__file__, k.__file__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False,
                       timeout=60)
    assert r.returncode == 0, r.stderr      # the compiled kernels found: not a source-tree namespace package
    version, init, _ = r.stdout.split()
    assert version.count(".") >= 2
    assert Path(init).name == "__init__.py" and (Path(init).parent / "_version.py").exists()
