"""Benchmark replay-only grading (prints figures; not a timed test).

    python benchmarks/grade_bundles.py [--count 1000] [--jobs 2] [--rounds 2] [--compare]

1. Generates COUNT bundles with ``solve`` across both labs, four tracks and many
   seeds (not timed).
2. Times one bundle graded in-process after import: with empty replay caches, with
   only the shared baseline arms cached, and graded a second time.
3. Times ``mlsys-grader warm`` (building the replay tables into a fresh cache directory) once.
4. Times ``mlsys-grader grade DIR --jobs J`` cold — a fresh process and gradebook, import of
   mlsysim included, the tables already built — with the replay table and with
   ``--live-replay``, interleaved for ROUNDS rounds, and reports submissions/s, the speedup
   and the peak memory of that process tree.  ``--compare`` also checks the two grade CSVs
   are byte-identical.
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
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of table vs live (default 2)")
    parser.add_argument("--compare", action="store_true", help="fail unless both modes write byte-identical grade CSVs")
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

        cache = Path(tmp) / "replay"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mlsys_grader", "warm", "--replay-cache", str(cache)],
                       check=True, capture_output=True, text=True)
        build_s = time.perf_counter() - t0

        walls: dict[str, list[float]] = {"table": [], "live": []}
        csvs: dict[str, bytes] = {}
        rows = 0
        for round_ in range(args.rounds):
            for mode in ("table", "live") if round_ % 2 == 0 else ("live", "table"):
                out = Path(tmp) / f"grades-{mode}-{round_}.csv"
                extra = ["--replay-cache", str(cache)] if mode == "table" else ["--live-replay"]
                t0 = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "mlsys_grader", "grade", str(folder), "-o", str(out), "--jobs", str(args.jobs),
                     "--db", str(Path(tmp) / f"gradebook-{mode}-{round_}.sqlite"), "-q", *extra],
                    capture_output=True, text=True,
                )
                walls[mode].append(time.perf_counter() - t0)
                if proc.returncode != 0:
                    print(proc.stdout, proc.stderr)
                    raise SystemExit(f"grade exited {proc.returncode}")
                rows = out.read_text(encoding="utf-8").count("\n") - 1
                csvs.setdefault(mode, out.read_bytes())
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        identical = csvs["table"] == csvs["live"]

    print(f"mlsys_grader {mlsys_grader.__version__}, mlsysim {mlsys_grader.mlsysim_version()}, {os.cpu_count()} cores")
    print(f"import + first grade of each lab:       {import_s:6.2f} s")
    print(f"generated {args.count} bundles with solve: {generate_s:6.2f} s (not part of grading)")
    print(f"one bundle after import, empty caches:   {statistics.median(cold) * 1000:6.2f} ms median of {len(cold)} (max {max(cold) * 1000:.2f} ms)")
    print(f"one bundle, new settings, shared arms cached: {statistics.median(mixed) * 1000:6.2f} ms median of {len(mixed)}")
    print(f"one bundle graded again (all cached):    {statistics.median(warm) * 1000:6.2f} ms median of {len(warm)}")
    print(f"mlsys-grader warm (both replay tables, fresh process): {build_s:6.2f} s")
    for mode in ("table", "live"):
        wall = statistics.median(walls[mode])
        print(f"mlsys-grader grade {rows} bundles cold, --jobs {args.jobs}, {'replay table' if mode == 'table' else '--live-replay'}: "
              f"{wall:6.2f} s median wall of {[round(w, 2) for w in walls[mode]]} incl. import = {rows / wall:7.1f} submissions/s")
    print(f"speedup of the table (interleaved medians): {statistics.median(walls['live']) / statistics.median(walls['table']):.2f}x; "
          f"peak RSS of the largest process {peak_mb:.0f} MB")
    if args.compare:
        print(f"grade CSVs byte-identical (table vs live): {identical}")
        if not identical:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
