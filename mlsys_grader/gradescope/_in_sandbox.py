"""The program the sandbox runs, as the unprivileged notebook user: Otter executes the notebook and its tests.

``python -I -m mlsys_grader.gradescope._in_sandbox --lab lab07 --notebook lab07.ipynb
--cell-timeout 60 --report .mlsys-kernel-report.json`` in the sandbox folder.  Otter's
``grade_notebook`` runs the notebook in a fresh kernel (a child of this process, same
user) and then its test files; the kernel's results come back through Otter's pickle,
read with the safe loaders (:mod:`._hardening`).  What this process writes — the report,
as JSON — is only a second opinion for staff: the grader reads it as untrusted data,
because the notebook's code runs as the same user and can rewrite it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from glob import glob
from typing import Any

from . import _hardening as hardening
from ._otter_tests import from_grading_results


def cell_errors(notebook: Any) -> list[str]:
    """``cell N: Name: value`` for every error output of the executed notebook."""
    found = []
    for index, cell in enumerate(getattr(notebook, "cells", []) or []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if output.get("output_type") == "error":
                found.append(f"cell {index}: {output.get('ename')}: {str(output.get('evalue'))[:200]}")
    return found[:20]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mlsys_grader.gradescope._in_sandbox")
    parser.add_argument("--lab", required=True)
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--cell-timeout", type=float, required=True)
    parser.add_argument("--report", required=True)
    args = parser.parse_args(argv)

    hardening.limit_cell_time(args.cell_timeout, interrupt=True)
    hardening.install_safe_unpickling()
    from otter.execute import grade_notebook  # Otter is heavy: loaded when the program runs, not when imported

    report: dict[str, Any] = {"lab": args.lab, "finished": False, "error": None, "cases": [], "cell_errors": []}
    try:
        results = grade_notebook(args.notebook, tests_glob=sorted(glob("./tests/*.py")), cwd=os.getcwd(),
                                 test_dir="./tests", ignore_errors=True, force_python3_kernel=True)
        run = from_grading_results(results)
        report.update(run.to_json())  # ``error`` is set when Otter could not read the kernel's results
        report["finished"] = True  # every cell ran (or was interrupted at its time limit)
        report["cell_errors"] = cell_errors(results.notebook)
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"[:500]
    with open(args.report + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    os.replace(args.report + ".tmp", args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
