"""Record the timelines of real top-to-bottom notebook runs (explicitly: never run by tests).

    python tests/make_notebook_runs.py [--runs 7] [--other-runs 2] [--labs lab08,lab02,lab07,lab11]

Each run is an independent session: the lab's student notebook (``assignments/<lab>.ipynb``) filled in first —
every answer as :func:`mlsys_grader.staff._generate.answers` gives it (the notebook's defaults), or, in every third
run, the settings and predictions of ``solve(lab, track, seed)`` — then executed top to bottom in a fresh python3
kernel (nbclient), as Jupyter's "Run All" does, in its own directory.  From the bundle the notebook saves, only what
the collusion report's ``clock`` test reads is kept: lab, track, each part's settings and predictions, and the
record's and run log's times.  ``--runs`` per track of Lab 08 and Lab 02, ``--other-runs`` per track of the others.

Writes ``tests/fixtures/top-to-bottom-notebook-runs.json``; ``tests/test_collusion.py`` reads it and asserts that no
two of these runs are paired (the machine set their pace, so their intervals prove nothing).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from mlsys_grader import __version__, solve
from mlsys_grader.staff._assign import student_path
from mlsys_grader.staff._generate import answers, execute, fill

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "top-to-bottom-notebook-runs.json"
TRACKS = ("tinyml", "mobile", "edge", "cloud")
MAIN_LABS = ("lab08", "lab02")
RECORD_TIMES = ("prediction_locked_at", "result_shown_at", "captured_at")
RUN_TIMES = ("prediction_locked_at", "first_shown_at", "first_run_at")


def filled_answers(lab_id: str, track: str, seed: int | None) -> dict[str, object]:
    """What the student types before running: the notebook's defaults, or seed ``seed``'s settings and predictions."""
    values = answers(lab_id, track)
    if seed is not None:
        chosen = solve(lab_id, track, seed)
        for part, controls in chosen.controls.items():
            values.update(controls)
            values[f"prediction_{part}"] = chosen.evidence[part].prediction
    return values


def timeline(bundle: dict) -> dict:
    """The part of a saved bundle the ``clock`` test reads: lab, track, settings, predictions and times."""
    return {
        "lab": bundle["lab"], "track": bundle["track"],
        "controls": bundle.get("controls") or {},
        "evidence": {part: {"prediction": record.get("prediction"), **{name: record.get(name) for name in RECORD_TIMES}}
                     for part, record in sorted((bundle.get("evidence") or {}).items())},
        "runs": {part: {"prediction": entry.get("prediction"), **{name: entry.get(name) for name in RUN_TIMES}}
                 for part, entry in sorted((bundle.get("runs") or {}).items())},
    }


def record(lab_id: str, track: str, seed: int | None) -> tuple[dict, float]:
    notebook = fill(nbformat.read(student_path(ROOT, lab_id), as_version=4), filled_answers(lab_id, track, seed))
    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-{track}-run-") as scratch:
        began = time.perf_counter()
        execute(notebook, lab_id, Path(scratch))
        seconds = time.perf_counter() - began
        saved = json.loads((Path(scratch) / f"{lab_id}-submission.json").read_text(encoding="utf-8"))
    return {**timeline(saved), "answers": "defaults" if seed is None else f"solve seed {seed}"}, seconds


def fixture_text(fixture: dict) -> str:
    """The fixture as JSON with one run a line, so a re-recording's diff shows which runs changed."""
    head = json.dumps({key: value for key, value in fixture.items() if key != "runs"}, indent=1, ensure_ascii=False)
    runs = ",\n".join(json.dumps(run, ensure_ascii=False) for run in fixture["runs"])
    return head[:-2] + ',\n "runs": [\n' + runs + "\n ]\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per track of Lab 08 and Lab 02")
    parser.add_argument("--other-runs", type=int, default=2, help="runs per track of every other lab")
    parser.add_argument("--labs", default="lab08,lab02,lab07,lab11")
    args = parser.parse_args()
    recorded, started = [], time.perf_counter()
    for lab_id in args.labs.split(","):
        count = args.runs if lab_id in MAIN_LABS else args.other_runs
        for n in range(count):
            for track in TRACKS:
                seed = n if n % 3 == 2 else None
                run, seconds = record(lab_id, track, seed)
                parts = len(run["evidence"])
                if not parts:
                    sys.exit(f"{lab_id} on {track}: the run saved no evidence; expected a captured record per part")
                recorded.append(run)
                print(f"{lab_id} {track} ({run['answers']}): {parts} parts captured, {seconds:.1f} s", flush=True)
    OUT.write_text(fixture_text({
        "about": "Timelines of independent top-to-bottom runs of the student notebooks (nbclient, a fresh python3 kernel "
                 "per run, every cell filled first): only lab, track, settings, predictions and times.",
        "recorded": {"by": "python tests/make_notebook_runs.py", "on": datetime.now(UTC).date().isoformat(),
                     "grader_version": __version__, "python": platform.python_version(),
                     "machine": f"{platform.system()} {platform.machine()}", "runs": len(recorded),
                     "seconds": round(time.perf_counter() - started, 1)},
        "runs": recorded,
    }), encoding="utf-8")
    print(f"{len(recorded)} runs written to {OUT.relative_to(ROOT)} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
