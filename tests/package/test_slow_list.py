"""The slow list names tests that exist: a renamed test would otherwise drop back into the default run unseen."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support.slow_tests import SLOW_NODE_IDS

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_node_id_names_a_test_function_in_its_file() -> None:
    missing = []
    for node in sorted(SLOW_NODE_IDS):
        path, _, name = node.partition("::")
        func = re.sub(r"\[.*\]$", "", name)
        src = ROOT / path
        if not src.is_file() or not re.search(rf"^\s*(async\s+)?def {re.escape(func)}\(", src.read_text(), re.M):
            missing.append(node)
    assert not missing, f"slow list names tests that do not exist: {missing}"


def test_a_listed_test_is_deselected_by_default_and_runs_with_m_slow() -> None:
    node = "tests/lab/test_lab_local.py::test_lab_local_scheduler_submit_status_collect"
    assert node in SLOW_NODE_IDS
    default = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", node],
                             cwd=ROOT, capture_output=True, text=True, check=False)
    assert "1 deselected" in default.stdout, default.stdout
    slow = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m",
                           "slow", node], cwd=ROOT, capture_output=True, text=True, check=False)
    assert node in slow.stdout, slow.stdout
