"""Benchmark replay-only grading (prints figures; not a timed test).

    python benchmarks/grade_bundles.py [--count 1000] [--jobs 2]

1. Generates COUNT bundles with ``solve`` across both labs, four tracks and many
   seeds (not timed).
2. Times one bundle graded in-process after import: with empty replay caches, with
   only the shared baseline arms cached, and graded a second time.
3. Times ``mlsys-grader grade DIR --jobs J`` as a fresh process — import of mlsysim
   included — and reports submissions/s and the peak memory of that process tree.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def generate(folder: Path, count: int) -> list[Path]:
    from mlsys_grader import solve

    paths = []
    combos = [(lab, track) for lab in ("lab07", "lab11") for track in ("tinyml", "mobile", "edge", "cloud")]
    for index in range(count):
        lab, track = combos[index % len(combos)]
        path = folder / f"{index:05d}-{lab}-{track}.json"
        path.write_text(solve(lab, track, seed=index).to_json(indent=None), encoding="utf-8")
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    started = time.perf_counter()
    import mlsys_grader  # imported here: the import is part of what is timed
    from mlsys_grader import grade_bundle

    grade_bundle(mlsys_grader.solve("lab07", "cloud"))  # loads both evaluator modules lazily
    grade_bundle(mlsys_grader.solve("lab11", "cloud"))
    import_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        t0 = time.perf_counter()
        paths = generate(folder, args.count)
        generate_s = time.perf_counter() - t0

        # In-process, after import.  A fresh lab object has an empty replay cache, so
        # the first grade of each lab is "cold"; the rest reuse shared baseline arms.
        from mlsys_grader.labs import _LOADED

        for lab in _LOADED.values():
            lab.__dict__.pop("_cache", None)
            lab.__dict__.pop("_plans", None)
        data = [path.read_bytes() for path in paths[:200]]
        cold = []
        for blob in data[:8]:
            t = time.perf_counter()
            grade_bundle(blob)
            cold.append(time.perf_counter() - t)
        mixed = []
        for blob in data[8:]:
            t = time.perf_counter()
            grade_bundle(blob)
            mixed.append(time.perf_counter() - t)
        warm = []
        for blob in data[8:]:
            t = time.perf_counter()
            grade_bundle(blob)
            warm.append(time.perf_counter() - t)

        out = Path(tmp) / "grades.csv"
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "mlsys_grader", "grade", str(folder), "-o", str(out), "--jobs", str(args.jobs),
             "--db", str(Path(tmp) / "gradebook.sqlite")],
            capture_output=True, text=True,
        )
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
            raise SystemExit(f"grade exited {proc.returncode}")
        rows = out.read_text(encoding="utf-8").count("\n") - 1

    print(f"mlsys_grader {mlsys_grader.__version__}, mlsysim {mlsys_grader.mlsysim_version()}, {os.cpu_count()} cores")
    print(f"import + first grade of each lab:       {import_s:6.2f} s")
    print(f"generated {args.count} bundles with solve: {generate_s:6.2f} s (not part of grading)")
    print(f"one bundle after import, empty caches:   {statistics.median(cold) * 1000:6.2f} ms median of {len(cold)} (max {max(cold) * 1000:.2f} ms)")
    print(f"one bundle, new settings, shared arms cached: {statistics.median(mixed) * 1000:6.2f} ms median of {len(mixed)}")
    print(f"one bundle graded again (all cached):    {statistics.median(warm) * 1000:6.2f} ms median of {len(warm)}")
    print(f"mlsys-grader grade {rows} bundles, --jobs {args.jobs}: {wall:6.2f} s wall incl. import "
          f"= {rows / wall:7.1f} submissions/s; peak RSS of the largest process {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
