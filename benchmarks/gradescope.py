"""Seconds and peak memory of the Gradescope autograder on the emulator, against the targets.

    sudo python benchmarks/gradescope.py [--autograders DIR] [--track cloud] [--repeat 3] [--rerun]

Builds both zips with ``mlsys-grader autograder`` (unless ``--autograders`` names a folder
holding them), builds their images in the Gradescope emulator (``../shared/gradescope-emulator``,
root only; cached by zip content) and runs each lab's reference export on it: in the default
mode (the notebook is not executed) at full CPU (``--cpu 2``, this machine's two cores) and at
Gradescope's 0.5 CPU / 768 MB.  Targets: 8 s and 15 s.  ``seconds`` is ``run_autograder``'s wall
time as the emulator measures it; ``record`` is when the runner had written the score of record
(its own log).  With ``--rerun``, the same upload with the notebook re-run on, and the notebook
alone (outputs cleared, no bundle: the bundle is regenerated), at 0.5 CPU, for comparison.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import emulator  # noqa: E402 — the test suite's driver for the emulator
from _timing import repeated  # noqa: E402 — beside this script

TARGETS = {2.0: 8.0, 0.5: 15.0}


def _upload(folder: Path, lab: str, track: str, *, with_bundle: bool = True) -> Path:
    notebook = ROOT / "solutions" / lab / f"reference-{track}.ipynb"
    folder.mkdir(parents=True)
    data = json.loads(notebook.read_text())
    if not with_bundle:
        for cell in data["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"], cell["execution_count"] = [], None
    (folder / f"{lab}.ipynb").write_text(json.dumps(data))
    if with_bundle:
        (folder / f"{lab}-submission.json").write_bytes(notebook.with_name(f"reference-{track}-submission.json").read_bytes())
    return folder


def _run(image: Path, scratch: Path, lab: str, track: str, index: int, *, mode: str, cpu: float,
         with_bundle: bool) -> emulator.Run:
    """One timed run of ``lab``'s reference upload on ``image`` (``index`` keeps the runs' folders apart)."""
    upload = _upload(scratch / f"{lab}-{mode}-{cpu}-{with_bundle}-{index}", lab, track, with_bundle=with_bundle)
    return emulator.run(image, upload, cpu=cpu, mem="768M", name=f"bench-{lab}-{mode}-{cpu:g}-{int(with_bundle)}-{index}")


def _record_seconds(run: emulator.Run) -> float | None:
    match = re.search(r"^\[\s*([\d.]+) s\] score of record .* results\.json written$", run.stdout, re.M)
    return float(match.group(1)) if match else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autograders", type=Path, help="folder holding lab07-autograder.zip and lab11-autograder.zip")
    parser.add_argument("--track", default="cloud", choices=("tinyml", "mobile", "edge", "cloud"))
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting; the median is printed (default 1)")
    parser.add_argument("--rerun", action="store_true", help="also time the notebook re-run and a notebook without its bundle")
    args = parser.parse_args(argv)
    if not emulator.EMULATOR.is_file():
        raise SystemExit(f"cannot run the emulator: {emulator.EMULATOR} is missing (a copy of shared/ beside the repository)")
    if os.geteuid() != 0:
        raise SystemExit("cannot run the emulator: it needs root (namespaces, overlayfs, chroot)")
    with tempfile.TemporaryDirectory(prefix="gradescope-bench-") as scratch_name:
        scratch = Path(scratch_name)
        zips = ({lab: args.autograders / f"{lab}-autograder.zip" for lab in ("lab07", "lab11")} if args.autograders
                else emulator.autograder_zips().zips)
        print(f"{'lab':<6} {'mode':<10} {'cpu':>4} {'mem':>5} {'seconds':>8} {'record':>7} {'peak MB':>8} {'score':>6} "
              f"{'target':>7}  result")
        misses = 0
        for lab, path in zips.items():
            adapted, _ = emulator.for_emulator(path, scratch / f"{lab}-emu.zip")
            images = {"default": emulator.build(adapted)}
            if args.rerun:
                rerun_zip = emulator.zip_with_config(adapted, scratch / f"{lab}-rerun.zip", rerun_notebook=True)
                images["rerun"] = emulator.build(rerun_zip)
            settings = [("default", 2.0, True), ("default", 0.5, True)]
            if args.rerun:
                settings += [("rerun", 0.5, True), ("default", 0.5, False)]
            for mode, cpu, with_bundle in settings:
                once = functools.partial(_run, images[mode], scratch, lab, args.track, mode=mode, cpu=cpu,
                                         with_bundle=with_bundle)
                # the emulator times run_autograder itself: its seconds, not the wall time around the call
                runs = [timed.value for timed in repeated(once, args.repeat)]
                for run in runs:
                    emulator.remove_run(run)
                seconds = statistics.median(r.seconds for r in runs)
                record = [s for s in map(_record_seconds, runs) if s is not None]
                peak = max((r.peak_mb or 0) for r in runs)
                label = mode if with_bundle else "no bundle"
                target = TARGETS.get(cpu) if mode == "default" and with_bundle else None
                verdict = "" if target is None else ("meets" if seconds <= target else "MISSES")
                misses += verdict == "MISSES"
                print(f"{lab:<6} {label:<10} {cpu:>4g} {'768M':>5} {seconds:>8.2f} "
                      f"{(statistics.median(record) if record else float('nan')):>7.2f} {peak:>8} "
                      f"{runs[-1].score if runs[-1].score is not None else 'none':>6} "
                      f"{(f'{target:g} s' if target else '-'):>7}  {verdict}")
        print("seconds: run_autograder's wall time in the emulator (median); record: when results.json first held "
              "the score of record; peak MB: the container's peak memory")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
