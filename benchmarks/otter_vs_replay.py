"""Wall time of ``otter run`` on one reference submission per lab, next to the replay-only grade.

    python benchmarks/otter_vs_replay.py [--autograders DIR] [--track cloud] [--repeat 20] [--rerun-notebook]

Without ``--autograders`` the zips are built first with ``mlsys-grader autograder``
(not timed).  ``otter run`` is timed as staff run it (a subprocess: interpreter start, the
plugin's score of record and Otter's tests on the graded bundle; with ``--rerun-notebook``
also the notebook's execution in a fresh kernel).  The replay-only time is
:func:`mlsys_grader.grade_bundle` on the same bundle bytes, in this process: the first call
(which loads the lab's mlsysim evaluators) and the median of ``--repeat`` calls.  For the
Gradescope path itself (the emulator, Gradescope's limits) see ``benchmarks/gradescope.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from _timing import median_seconds, repeated, timed  # beside this script

from mlsys_grader import grade_bundle

ROOT = Path(__file__).resolve().parents[1]
LABS = ("lab07", "lab11")


def build(out: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mlsys_grader", "autograder", "-o", str(out), "--no-run-tests"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"building the autograders failed:\n{done.stderr}")


def with_rerun(autograder: Path, target: Path) -> Path:
    """A copy of the zip with the plugin's ``rerun_notebook`` on."""
    with zipfile.ZipFile(autograder) as source, zipfile.ZipFile(target, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == "otter_config.json":
                config = json.loads(data)
                for plugin in config["plugins"]:
                    if isinstance(plugin, dict) and "mlsys_grader.gradescope.ScoreOfRecordPlugin" in plugin:
                        plugin["mlsys_grader.gradescope.ScoreOfRecordPlugin"]["rerun_notebook"] = True
                data = json.dumps(config).encode()
            out.writestr(name, data)
    return target


def time_otter(autograder: Path, notebook: Path, bundle: bytes, lab: str, scratch: Path) -> tuple[float, float]:
    submission = scratch / f"{lab}-submission.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        archive.write(notebook, arcname=f"{lab}.ipynb")
        archive.writestr(f"{lab}-submission.json", bundle)
    out = scratch / f"{lab}-out"
    out.mkdir()
    run = timed(lambda: subprocess.run([sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out),
                                        str(submission)], capture_output=True, text=True, cwd=scratch))
    if run.value.returncode != 0:
        raise SystemExit(f"otter run failed for {lab}:\n{run.value.stderr[-2000:]}")
    return run.seconds, json.loads((out / "results.json").read_text())["score"]


def time_replay(bundle: bytes, repeat: int) -> tuple[float, float, float]:
    first = timed(lambda: grade_bundle(bundle))
    runs = repeated(lambda _: grade_bundle(bundle), repeat)
    return first.seconds, median_seconds(runs), first.value.score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autograders", type=Path, help="folder holding lab07-autograder.zip and lab11-autograder.zip")
    parser.add_argument("--track", default="cloud", choices=("tinyml", "mobile", "edge", "cloud"))
    parser.add_argument("--repeat", type=int, default=20, help="replay-only repetitions for the median (default 20)")
    parser.add_argument("--rerun-notebook", action="store_true", help="let otter run execute the notebook too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="otter-vs-replay-") as scratch_name:
        scratch = Path(scratch_name)
        zips = args.autograders
        if zips is None:
            zips = scratch / "autograders"
            build(zips)
        print(f"{'lab':<6} {'track':<7} {'otter run (s)':>14} {'score':>6}   {'replay first (ms)':>17} {'replay median (ms)':>18} {'score':>6} {'ratio':>8}")
        for lab in LABS:
            notebook = ROOT / "solutions" / lab / f"reference-{args.track}.ipynb"
            bundle_path = ROOT / "examples" / "submissions" / f"{args.lab}-{args.track}.json"
            if not notebook.is_file() or not bundle_path.is_file():
                print(f"{lab:<6} {args.track:<7} skipped: {notebook.relative_to(ROOT)} or its bundle is missing")
                continue
            bundle = bundle_path.read_bytes()
            autograder = zips / f"{lab}-autograder.zip"
            if args.rerun_notebook:
                autograder = with_rerun(autograder, scratch / f"{lab}-rerun.zip")
            otter_s, otter_score = time_otter(autograder, notebook, bundle, lab, scratch)
            first, median, replay_score = time_replay(bundle, args.repeat)
            print(f"{lab:<6} {args.track:<7} {otter_s:>14.2f} {otter_score:>6g}   {first * 1e3:>17.1f} {median * 1e3:>18.2f} "
                  f"{replay_score:>6g} {otter_s / median:>7.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
