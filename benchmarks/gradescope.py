"""Seconds of the Gradescope autograder on the emulator: one zip against another, interleaved, with the breakdown.

    sudo python benchmarks/gradescope.py --before DIR [--after DIR] [--lab lab07] [--track cloud] [--repeat 3]
    sudo python benchmarks/gradescope.py [--autograders DIR] [--rerun]          # this tree's zips alone, as before

``--before`` is a folder holding ``<lab>-autograder.zip`` of the commit to compare against (build it with
``git worktree add /tmp/gs-before <commit> && cd /tmp/gs-before && PYTHONPATH=. python -m mlsys_grader autograder
-o /tmp/gs-before-zips --no-run-tests``); ``--after`` another such folder (default: this tree's, built now).  For each
lab, both images are built in the Gradescope emulator (``../shared/gradescope-emulator``, root only) from a copy of
each zip made unique, so the build really runs ``setup.sh`` (incrementally, on the emulator's cached base: setup.sh,
the wheels reinstalled, the requirements re-resolved; the emulator builds without a CPU limit).  Then the lab's
reference export is run ``--repeat`` times per zip at Gradescope's 0.5 CPU / 768 MB, the two zips alternating.

Printed per zip: ``run_autograder``'s wall time (the emulator's ``seconds``: median, min, max), its breakdown from
the runner's own time-stamped log — Python start-up and imports before grading starts, grading the score of record
(until the first results.json), Otter's tests on the graded bundle, writing the final results — and, from one more
run of a copy whose ``run_autograder`` adds ``-X importtime``, the import time of Otter, mlsysim and pint
(cumulative, that run only: importtime itself slows imports); the image build time and ``setup.sh``'s image check
(where the new image builds its replay tables), and the ratio of the medians.  Target (issue 19): 1.5× faster.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import emulator  # noqa: E402 — the test suite's driver for the emulator
from _timing import repeated  # noqa: E402 — beside this script

TARGETS = {2.0: 8.0, 0.5: 15.0}
TARGET_RATIO = 1.5
IMPORTS = ("otter", "mlsysim", "pint")


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
        (folder / f"{lab}-submission.json").write_bytes((ROOT / "examples" / "submissions" / f"{lab}-{track}.json").read_bytes())
    return folder


def _run(image: Path, scratch: Path, lab: str, track: str, index: int, *, mode: str, cpu: float,
         with_bundle: bool) -> emulator.Run:
    """One timed run of ``lab``'s reference upload on ``image`` (``index`` keeps the runs' folders apart)."""
    upload = _upload(scratch / f"{lab}-{mode}-{cpu}-{with_bundle}-{index}-{uuid.uuid4().hex[:6]}", lab, track,
                     with_bundle=with_bundle)
    return emulator.run(image, upload, cpu=cpu, mem="768M", name=f"bench-{lab}-{mode}-{cpu:g}-{int(with_bundle)}-{index}")


def _log_times(run: emulator.Run) -> dict[str, float]:
    """The runner's log: seconds (since grading started) of the record, Otter's tests and the final results."""
    marks = {"record": r"score of record .* results\.json written$", "tests": r"Otter's tests ran on the graded bundle",
             "final": r"final results\.json written"}
    found = {}
    for name, pattern in marks.items():
        match = re.search(r"^\[\s*([\d.]+) s\] " + pattern, run.stdout, re.M)
        if match:
            found[name] = float(match.group(1))
    return found


def _record_seconds(run: emulator.Run) -> float | None:
    return _log_times(run).get("record")


def _import_seconds(stdout: str) -> dict[str, float]:
    """Seconds importing each of :data:`IMPORTS` from ``-X importtime`` lines (absent: not imported): the cumulative
    time of the package's outermost modules (its package ``__init__`` may be skipped, as the runner skips Otter's),
    so what the package imports itself is included and the columns may overlap."""
    rows = [(len(m.group(2)), m.group(3), int(m.group(1)))
            for m in re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)\s*$", stdout, re.M)]
    found: dict[str, float] = {}
    stack: list[tuple[int, str]] = []
    for indent, name, cumulative in reversed(rows):  # importtime prints a module after what it imported
        while stack and stack[-1][0] >= indent:
            stack.pop()
        for package in IMPORTS:
            inside = name == package or name.startswith(package + ".")
            if inside and not any(n == package or n.startswith(package + ".") for _, n in stack):
                found[package] = found.get(package, 0.0) + cumulative / 1e6
        stack.append((indent, name))
    return found


def unique_copy(zip_path: Path, target: Path, *, importtime: bool = False) -> Path:
    """A copy of an autograder zip with a marker file (so the emulator builds it, not its cache), and with
    ``-X importtime`` in ``run_autograder`` if asked."""
    with zipfile.ZipFile(zip_path) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if importtime and info.filename == "run_autograder":
                data = data.replace(b"/bin/python -I -m", b"/bin/python -I -X importtime -m")
                if b"-X importtime" not in data:
                    raise SystemExit(f"{zip_path}: run_autograder does not exec python -I -m: {data!r}")
            out.writestr(info, data)
        out.writestr(".benchmark-build", uuid.uuid4().hex)
    return target


@dataclass
class Built:
    image: Path
    seconds: float
    check_seconds: float | None
    tables: list[str] = field(default_factory=list)


def build_timed(zip_path: Path) -> Built:
    """Build the image of ``zip_path`` (a unique copy: a real, incremental build) and time it."""
    started = time.perf_counter()
    image = emulator.build(zip_path)
    seconds = time.perf_counter() - started
    log = image / "build.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    tables = re.findall(r"^mlsys-grader image check: (lab\w+: replay: .*)$", text, re.M)
    check = [float(s) for s in re.findall(r"^mlsys-grader image check: lab\w+: .*\(([\d.]+) s\)$", text, re.M)]
    return Built(image, seconds, sum(check) if check else None, tables)


def compare(before_dir: Path, after_dir: Path, labs: list[str], track: str, repeat: int, scratch: Path) -> int:
    worse = 0
    for lab in labs:
        zips = {"before": before_dir / f"{lab}-autograder.zip", "after": after_dir / f"{lab}-autograder.zip"}
        images, probes = {}, {}
        for name, path in zips.items():
            adapted, _ = emulator.for_emulator(path, scratch / f"{lab}-{name}-emu.zip")
            images[name] = build_timed(unique_copy(adapted, scratch / f"{lab}-{name}-unique.zip"))
            probes[name] = emulator.build(unique_copy(adapted, scratch / f"{lab}-{name}-importtime.zip", importtime=True))
        runs: dict[str, list[emulator.Run]] = {name: [] for name in zips}
        for index in range(repeat):  # interleaved: before, after, before, after, ...
            for name in zips:
                run = _run(images[name].image, scratch, lab, track, index, mode=name, cpu=0.5, with_bundle=True)
                if run.rc != 0 or run.score is None:
                    raise SystemExit(f"{lab} {name}: the run failed: {run.line}\n{run.stdout[-2000:]}")
                runs[name].append(run)
        imports = {}
        for name in zips:
            probe = _run(probes[name], scratch, lab, track, 99, mode=f"{name}-importtime", cpu=0.5, with_bundle=True)
            imports[name] = _import_seconds(probe.stdout)
            emulator.remove_run(probe)
        scores = {name: {r.score for r in group} for name, group in runs.items()}
        results = {name: {json.dumps(r.results, sort_keys=True) for r in group} for name, group in runs.items()}
        print(f"\n{lab}, reference-{track}, 0.5 CPU / 768 MB, {repeat} run(s) per zip, interleaved")
        print(f"  {'zip':<7} {'median s':>8} {'min':>6} {'max':>6} | {'start+imports':>13} {'record':>7} {'otter tests':>11} "
              f"{'write':>6} | {'import otter':>12} {'mlsysim':>8} {'pint':>6} | {'zip KB':>7} {'build s':>8} {'check s':>8} "
              f"{'peak MB':>7} score")
        medians = {}
        for name, group in runs.items():
            seconds = [r.seconds for r in group]
            medians[name] = statistics.median(seconds)
            marks = [_log_times(r) for r in group]

            def part(key: str, start: str | None, marks: list[dict[str, float]] = marks) -> float:
                values = [m[key] - (m[start] if start else 0.0) for m in marks if key in m and (start is None or start in m)]
                return statistics.median(values) if values else float("nan")

            startup = statistics.median(r.seconds - m.get("final", float("nan")) for r, m in zip(group, marks, strict=True))
            built = images[name]
            imported = imports[name]
            print(f"  {name:<7} {medians[name]:>8.2f} {min(seconds):>6.2f} {max(seconds):>6.2f} | {startup:>13.2f} "
                  f"{part('record', None):>7.2f} {part('tests', 'record'):>11.2f} {part('final', 'tests'):>6.2f} | "
                  + " ".join(f"{(f'{imported[m]:.2f}' if m in imported else 'not'):>{w}}" for m, w in zip(IMPORTS, (12, 8, 6), strict=True))
                  + f" | {zips[name].stat().st_size / 1024:>7.0f} {built.seconds:>8.1f} "
                  f"{(f'{built.check_seconds:.1f}' if built.check_seconds is not None else '-'):>8} "
                  f"{max(r.peak_mb or 0 for r in group):>7} {','.join(f'{s:g}' for s in sorted(scores[name]))}")
            for table in built.tables:
                print(f"          setup.sh: {table}")
        ratio = medians["before"] / medians["after"]
        same = results["before"] == results["after"] and len(results["after"]) == 1
        print(f"  ratio before/after (medians): {ratio:.2f}x (target {TARGET_RATIO:g}x: {'meets' if ratio >= TARGET_RATIO else 'MISSES'}); "
              f"results.json {'identical' if same else 'DIFFER'} across every run of both zips")
        worse += ratio < TARGET_RATIO or not same
        for group in runs.values():
            for run in group:
                emulator.remove_run(run)
    print("\nseconds: run_autograder's wall time in the emulator; start+imports: seconds minus the runner's last log "
          "line (Python start-up, imports before grading, exit); record/otter tests/write: from the runner's log; "
          "import columns: cumulative seconds under -X importtime in one extra run ('not': never imported); build s: "
          "the emulator's image build (no CPU limit; incremental on a cached base, full when setup.sh is new to it); check "
          "s: setup.sh's image check building the replay tables (the new image only; about 0 when the base already "
          "holds tables of the same key)")
    return 1 if worse else 0


def alone(args: argparse.Namespace, scratch: Path) -> int:
    """This tree's zips (or ``--autograders``) at 2 CPUs and 0.5 CPU, against the absolute targets."""
    zips = ({lab: args.autograders / f"{lab}-autograder.zip" for lab in args.lab} if args.autograders
            else {lab: path for lab, path in emulator.autograder_zips().zips.items() if lab in args.lab})
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
            once = functools.partial(_run, images[mode], scratch, lab, args.track, mode=mode, cpu=cpu, with_bundle=with_bundle)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="folder with the zips to compare against (see the docstring)")
    parser.add_argument("--after", type=Path, help="folder with the new zips (default: build this tree's)")
    parser.add_argument("--autograders", type=Path, help="without --before: folder holding the zips to time")
    parser.add_argument("--lab", action="append", choices=("lab07", "lab11"), help="lab(s) to run (default: both)")
    parser.add_argument("--track", default="cloud", choices=("tinyml", "mobile", "edge", "cloud"))
    parser.add_argument("--repeat", type=int, default=3, help="runs per zip and setting; medians are printed (default 3)")
    parser.add_argument("--rerun", action="store_true", help="without --before: also the notebook re-run and no bundle")
    args = parser.parse_args(argv)
    args.lab = args.lab or ["lab07", "lab11"]
    if not emulator.EMULATOR.is_file():
        raise SystemExit(f"cannot run the emulator: {emulator.EMULATOR} is missing (a copy of shared/ beside the repository)")
    if os.geteuid() != 0:
        raise SystemExit("cannot run the emulator: it needs root (namespaces, overlayfs, chroot)")
    with tempfile.TemporaryDirectory(prefix="gradescope-bench-") as scratch_name:
        scratch = Path(scratch_name)
        if args.before is None:
            return alone(args, scratch)
        after = args.after
        if after is None:
            after = scratch / "after"
            subprocess.run([sys.executable, "-m", "mlsys_grader", "autograder", "-o", str(after), "--no-run-tests"],
                           cwd=ROOT, check=True, capture_output=True)
        print(f"before: {args.before}; after: {after}")
        return compare(args.before, after, args.lab, args.track, args.repeat, scratch)


if __name__ == "__main__":
    sys.exit(main())
