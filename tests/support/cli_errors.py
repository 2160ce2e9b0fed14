"""What every refusal must look like from the outside: the documented exit code, one line on stderr that starts
``archline: error:``, and no traceback (CONTRIBUTING's error policy)."""

from __future__ import annotations

from typing import Any


def one_line_error(res: Any, code: int = 2) -> str:
    """The one error line of a ``run_cli`` result that exited with ``code``."""
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("archline: error:"), res.stderr
    assert "Traceback" not in res.stderr
    return err[0]
