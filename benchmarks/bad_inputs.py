"""Count how archline answers bad input (issue 15): every command from the click tree with bad files, files that
parse but hold the wrong thing, unwritable paths and bad values (the matrix of tests/support/badinputs.py, including
the values a command may accept), plus the cases issue 15 lists, each run in-process in a fresh directory.

    python benchmarks/bad_inputs.py            # counts; every problem listed
    python benchmarks/bad_inputs.py --json     # the counts as JSON
    python benchmarks/bad_inputs.py -v fit     # every case whose name holds 'fit', with its stderr

Prints the number of cases, tracebacks, wrong exit-0 results (a case that must fail but exited 0), hangs, clean
one-line errors and accepted valid values. A clean run has 0 tracebacks, 0 wrong exit-0 and 0 problems.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import badinputs as bi


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="run only cases whose name holds one of these words")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case, not only the problems")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a case may run (a hang past it counts)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="archline-bad-inputs-"))
    try:
        fx = bi.Fixtures(root / "fx")
        groups = {"issue 15's list": bi.issue_cases(fx), "valid baselines": bi.baseline_cases(fx),
                  "generic matrix": bi.cases(fx, include_may_pass=True), "bad contents": bi.content_cases(fx)}
        results = []
        per_group: dict[str, dict[str, int]] = {}
        t0 = time.perf_counter()
        k = 0
        for group, cases in groups.items():
            mine = []
            for path, case in cases:
                if args.only and not any(w in case.name for w in args.only):
                    continue
                k += 1
                out = bi.run_case(case, root / f"w{k}", fx, watch_tmp=False, timeout_s=args.timeout)
                problems = bi.judge(case, out)
                mine.append((path, case, out, problems))
                if problems or args.verbose:
                    err = out.exception.strip().splitlines()[-1] if out.exception else \
                        out.stderr.strip().replace("\n", " | ")[:240]
                    print(f"{'PROBLEM ' if problems else ''}{case.name}: exit {out.code} {problems} :: {err}",
                          flush=True)
                bi.clean(root / f"w{k}")
            s = bi.summarize(mine)
            s.pop("failed")
            per_group[group] = s
            results += mine
        total = bi.summarize(results)
        failed = total.pop("failed")
        total["seconds"] = round(time.perf_counter() - t0, 1)
        total["commands"] = len(bi.commands())
        if args.json:
            print(json.dumps({"total": total, "groups": per_group}, indent=1))
        else:
            for group, s in per_group.items():
                print(f"{group:>16}: {s}")
            print(f"{'total':>16}: {total}")
        return 1 if failed else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
