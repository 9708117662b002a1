"""Benchmark replay-only grading (prints figures; not a timed test).

    python benchmarks/grade_bundles.py [--count 1000] [--jobs 2] [--rounds 2] [--compare] [--baseline-tree DIR] [--bound]
        [--breakdown [--breakdown-only]] [--profile N [--profile-mode table|live]]

1. Generates COUNT bundles with ``solve`` across both labs, four tracks and many
   seeds (not timed).
2. Times one bundle graded in-process after import: with empty replay caches, with
   only the shared baseline arms cached, and graded a second time.
3. Times ``mlsys-grader warm`` (building the replay tables into a fresh cache directory) once.
4. Times ``mlsys-grader grade DIR --jobs J`` cold — a fresh process and gradebook, import of
   mlsysim included, the tables already built — with the replay table and with
   ``--live-replay``, interleaved for ROUNDS rounds, and reports submissions/s, the speedup
   and the peak memory of that process tree.  ``--compare`` also checks the two grade CSVs
   are byte-identical.  With ``--baseline-tree DIR`` (a checkout of the package at another commit,
   e.g. ``git worktree add /tmp/wt-9612023 9612023``) the same bundles are also graded cold with
   ``PYTHONPATH=DIR``, every grade started in a folder that holds no package (``python -m`` puts the
   working directory first on ``sys.path``) and each tree's imported package checked, in the same interleaved rounds: with that tree's own replay tables (built by its
   ``warm``, untimed) and its live replay, or, when it cannot build tables, as it grades (live
   replay); the medians' ratios against this tree's table and live runs are printed.  The same rounds also
   time reading only: a fresh process that imports the package, discovers the bundles, reads each with the one
   reader (strict parse, content hash, validation) in the same ``--jobs`` pool and writes a CSV — the cost of
   reading the JSON, against which grading's cost is printed.  ``--bound`` also times, in the same rounds, each
   tree's batch with every replay memoised before the clock starts (every bundle graded once in the process, which
   then forks the pool): the most a free replay could give that tree.  Both trees'
   bytecode is written first (as an install does), so no timed process compiles sources.
5. ``--breakdown``: the time per bundle split into reading, the lab's first use (table attached),
   replay or lookup (the grading context), each check by name, scoring and writing (the row's
   result, then the gradebook database in the parent), each worker's preparation (the batch's own
   ``Replay.prepare``: labs, tables; mlsysim for live replay) and whether it imported
   mlsysim or pint, and each worker's peak RSS: every variant graded cold in a fresh process whose pool (``--jobs``)
   grades every bundle, the variants interleaved for ROUNDS rounds (medians, with ratios).  The
   variants are the table and live modes, and with ``--baseline-tree DIR`` the same two on another
   checkout of the package (e.g. ``git worktree add /tmp/wt-before <commit>``), so a change is
   measured against its parent in one run (the worker drives the package's internals, so that tree
   must have the replay tables and this breakdown's entry points: 9b9e539 or later).  ``--breakdown-only`` skips 2–4.
6. ``--profile N``: cProfile of grading N bundles in one process (``--profile-mode`` table or
   live; the tables built first), the top functions by own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


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


# -- the cold figure (4.): variants ---------------------------------------------------------------

_COLD_LABELS = {"table": "replay table", "live": "--live-replay", "table@base": "baseline, its replay table",
                "live@base": "baseline, live replay", "reading": "reading only (no grading)"}


def _tree_env(tree: str | None) -> dict[str, str]:
    """The environment that grades with the package at ``tree`` (None: this tree, as installed)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _grader(arguments: Sequence[str], tree: str | None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m mlsys_grader ARGUMENTS`` with the package at ``tree``, started in a folder that holds no package:
    ``-m`` puts the working directory first on ``sys.path``, so started in a checkout it would import that checkout's
    package whatever ``PYTHONPATH`` says."""
    return subprocess.run([sys.executable, "-m", "mlsys_grader", *arguments], capture_output=True, text=True,
                          env=_tree_env(tree), cwd=tempfile.gettempdir(), **kwargs)


def expect_tree(tree: str | None) -> str:
    """The folder of the package a fresh ``python -m mlsys_grader`` imports for ``tree``; exits when it is another."""
    import mlsys_grader

    proc = subprocess.run([sys.executable, "-c", "import mlsys_grader; print(mlsys_grader.__file__)"], capture_output=True,
                          text=True, env=_tree_env(tree), cwd=tempfile.gettempdir(), check=True)
    found = Path(proc.stdout.strip()).resolve().parent
    wanted = (Path(tree) / "mlsys_grader").resolve() if tree else Path(mlsys_grader.__file__).resolve().parent
    if found != wanted:
        raise SystemExit(f"a fresh process for {tree or 'this tree'} imports mlsys_grader from {found}, not {wanted}")
    return str(found)


def compile_trees(*trees: str | None) -> None:
    """Write the bytecode of this package and of each tree, as installing a package does, so no timed process
    compiles sources (``PYTHONDONTWRITEBYTECODE`` would otherwise make every fresh process compile the whole package,
    and the tree with more source pay more)."""
    import mlsys_grader

    folders = [str(Path(mlsys_grader.__file__).parent)] + [str(Path(tree) / "mlsys_grader") for tree in trees if tree]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, capture_output=True)


def _describe_tree(tree: str) -> str:
    proc = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h %cs"], capture_output=True, text=True)
    return proc.stdout.strip() or "not a git checkout"


def cold_variants(baseline: str | None, base_cache: Path) -> list[tuple[str, str | None, list[str] | None]]:
    """(name, tree, extra grade arguments) of every cold variant: this tree with its table (extra None: the
    table folder) and live, and with ``baseline`` that tree with its own tables when its ``warm`` builds them
    (built here, untimed), else as it grades (live replay: a tree before the tables has nothing else)."""
    variants: list[tuple[str, str | None, list[str] | None]] = [("table", None, None), ("live", None, ["--live-replay"])]
    print(f"this tree: mlsys_grader from {expect_tree(None)}")
    if baseline is None:
        return variants
    print(f"@base: mlsys_grader from {expect_tree(baseline)}")
    warm = _grader(["warm", "--replay-cache", str(base_cache)], baseline)
    if warm.returncode == 0:
        return [*variants, ("table@base", baseline, ["--replay-cache", str(base_cache)]),
                ("live@base", baseline, ["--live-replay"])]
    return [*variants, ("live@base", baseline, [])]


def read_floor(folder: Path, out: Path, jobs: int) -> None:
    """The cost of reading the bundles, in the harness ``grade`` uses: import, discovery, the one reader (strict
    parse, content hash, validation) on every bundle in the same pool of ``jobs`` workers, and a CSV of what each
    held (run as its own process, like a grade)."""
    from mlsys_grader.course._files import write_csv
    from mlsys_grader.course._ingest import discover_all, load_candidate
    from mlsys_grader.course._pool import run_tasks
    from mlsys_grader.course._row import Result

    candidates = discover_all([folder], frozenset()).candidates
    rows: list[Result] = [{} for _ in candidates]

    def work(index: int) -> Result:
        read = load_candidate(candidates[index])
        return {"status": "read" if read.bundle is not None else "error", "input_hash": read.input_hash,
                "lab": read.bundle.lab if read.bundle is not None else ""}

    def collect(index: int, result: Result) -> None:
        rows[index] = result

    run_tasks(list(range(len(candidates))), work, jobs=jobs, on_result=collect)
    write_csv(rows, out, ["status", "input_hash", "lab"])


def memoised_bound(folder: Path, jobs: int) -> None:
    """The batch's time when replay costs nothing: every bundle graded once in this process first (so every evaluation,
    plan and check cache is filled, and mlsysim imported), then the timed ``grade_paths`` whose workers fork with all
    of it.  Prints one JSON line (import and batch seconds).  Uses only what the package had before the replay table
    (``resolve_rubrics``, ``grade_candidate``, ``BatchOptions``, ``grade_paths``), so it runs on a baseline tree too."""
    started = time.perf_counter()
    from mlsys_grader.course import _gradebook as gradebook
    from mlsys_grader.course._ingest import discover

    imported = time.perf_counter() - started
    rubrics = gradebook.resolve_rubrics({})
    for candidate in discover(sorted(folder.glob("*.json"))):
        gradebook.grade_candidate(candidate, rubrics)
    with tempfile.TemporaryDirectory() as tmp:
        options = gradebook.BatchOptions(jobs=jobs, db=str(Path(tmp) / "gradebook.sqlite"))
        started = time.perf_counter()
        result = gradebook.grade_paths([str(folder)], options)
        batch = time.perf_counter() - started
    print(json.dumps({"import_s": imported, "batch_s": batch, "rows": len(result.rows)}))


def _bound(folder: Path, jobs: int, tree: str | None) -> dict[str, Any]:
    """:func:`memoised_bound` in a fresh process with the package at ``tree``."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_memoised-bound", str(folder), str(jobs)],
                          capture_output=True, text=True, env=_tree_env(tree), cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        raise SystemExit(f"the memoised bound ({tree or 'this tree'}) exited {proc.returncode}")
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def _read_only(folder: Path, out: Path, jobs: int) -> subprocess.CompletedProcess[str]:
    """:func:`read_floor` in a fresh process of this tree, started where ``grade`` is (a folder with no package)."""
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_read-floor", str(folder), str(out), str(jobs)],
                          capture_output=True, text=True, env=_tree_env(None), cwd=tempfile.gettempdir())


# -- the breakdown: one variant graded cold in a fresh process ------------------------------------

class _Clock:
    """Times the checks of one grade through ``grade(checks=...)``: the first check starts when the
    grading context (replay or lookup) is built, and scoring is what follows the last one."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.first: float | None = None
        self.last = 0.0

    def wrap(self, check: Any) -> Any:
        run, name = check.run, check.name

        def timed_run(*args: Any) -> list[Any]:
            start = time.perf_counter()
            if self.first is None:
                self.first = start
            try:
                return list(run(*args))
            finally:
                self.last = time.perf_counter()
                self.spent[name] = self.spent.get(name, 0.0) + self.last - start

        timed_run.__name__ = name
        return dataclasses.replace(check, run=timed_run)


def _service(mode: str, cache: Path) -> tuple[Any, Callable[[], None]]:
    """(the replay service a batch hands its workers, what a worker runs before its first task) for this tree: a
    :class:`~mlsys_grader.replay.Replay` on the tables (or live) and its ``prepare``; a tree from before the replay
    service has none (None) and prepares with ``labs.prepare_worker`` (or by importing mlsysim)."""
    try:
        from mlsys_grader.replay import Replay
    except ImportError:
        try:
            from mlsys_grader.labs import prepare_worker
        except ImportError:
            from mlsys_grader._mlsysim import import_mlsysim as prepare_worker
        return None, prepare_worker
    replay = Replay.from_tables(cache) if mode == "table" else Replay()
    return replay, replay.prepare


def _tables_for(mode: str, cache: Path) -> contextlib.AbstractContextManager[Any]:
    """Build the tables (table mode) and, on a tree from before the replay service, attach them for the block."""
    if mode != "table":
        return contextlib.nullcontext()
    try:
        from mlsys_grader.replay import ensure_tables
    except ImportError:
        from mlsys_grader.course._replay_table import ensure_tables, replay_tables

        ensure_tables(cache)
        return replay_tables(cache)  # type: ignore[no-any-return]
    ensure_tables(cache)
    return contextlib.nullcontext()


def _graded(candidate: Any, rubrics: dict[str, Any], replay: Any = None) -> dict[str, Any]:
    """One candidate graded as the gradebook grades it (``grade_candidate``), phase by phase (through ``replay`` on a
    tree that has the replay service)."""
    import mlsys_grader
    from mlsys_grader.api import mlsysim_version
    from mlsys_grader.core.audits import CHECKS
    from mlsys_grader.core.grading import grade
    from mlsys_grader.course._ingest import load_candidate
    from mlsys_grader.course._worker import graded_result
    from mlsys_grader.labs import get_lab

    times: dict[str, float] = {}
    started = time.perf_counter()
    loaded = load_candidate(candidate)
    bundle = loaded.raise_for_error()
    times["read"] = time.perf_counter() - started
    started = time.perf_counter()
    lab, rubric = get_lab(bundle.lab), rubrics[bundle.lab]
    times["lab (first use: load, table)"] = time.perf_counter() - started
    clock = _Clock()
    started = time.perf_counter()
    service = () if replay is None else (replay,)
    report = grade(bundle, lab, rubric, *service, mlsysim_version=mlsysim_version(), grader_version=mlsys_grader.__version__,
                   checks=[clock.wrap(check) for check in CHECKS], importer_findings=loaded.findings,
                   excuses=loaded.excuses, only_when_complete=loaded.only_when_complete)
    ended = time.perf_counter()
    times["replay or lookup (context)"] = (clock.first or ended) - started
    times.update((f"check {name}", seconds) for name, seconds in clock.spent.items())
    times["scoring (and report)"] = ended - (clock.last or started)
    started = time.perf_counter()
    result = {"input_hash": loaded.input_hash, "origin": loaded.origin, **graded_result(report, bundle, loaded.origin)}
    times["write (row result, spans)"] = time.perf_counter() - started
    return {**result, "_bench": {"times": times, "pid": os.getpid(),
                                 "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}


def _prepare_worker(folder: Path, prepare_worker: Callable[[], None]) -> Callable[[], None]:
    """The batch's own worker preparation (``Replay.prepare``: the labs and their tables, and mlsysim only for live
    replay; ``labs.prepare_worker`` on an earlier tree, and on one without it mlsysim's import), timed, and whether it
    imported mlsysim or pint."""
    def prepare() -> None:
        started = time.perf_counter()
        prepare_worker()
        (folder / f"import-{os.getpid()}.json").write_text(json.dumps(
            {"s": time.perf_counter() - started, "mlsysim": "mlsysim" in sys.modules, "pint": "pint" in sys.modules}))

    return prepare


def breakdown_worker(mode: str, folder: Path, cache: Path, jobs: int, out: Path) -> None:
    """Grade every bundle in ``folder`` in a pool of ``jobs`` workers (``mode`` table or live) and
    write the phases of each to ``out`` as JSON (run in a fresh process: this is the cold start)."""
    started = time.perf_counter()
    import mlsys_grader
    from mlsys_grader.course._ingest import discover
    from mlsys_grader.course._options import resolve_rubrics, rubric_key
    from mlsys_grader.course._pool import run_tasks
    from mlsys_grader.course._store import GradebookDB

    package_s = time.perf_counter() - started
    rubrics = resolve_rubrics({})
    candidates = discover([folder / "submissions"])
    scratch = Path(tempfile.mkdtemp(dir=folder))
    results: list[dict[str, Any]] = [{}] * len(candidates)

    def collect(index: int, result: Any) -> None:
        results[index] = result

    started = time.perf_counter()
    with _tables_for(mode, cache):
        replay, prepare = _service(mode, cache)
        run_tasks(list(range(len(candidates))), lambda index: _graded(candidates[index], rubrics, replay), jobs=jobs,
                  on_result=collect, prepare=_prepare_worker(scratch, prepare))
    pool_s = time.perf_counter() - started
    failed = [r for r in results if "_bench" not in r]
    if failed:
        raise SystemExit(f"{len(failed)} bundles did not grade: {failed[0]}")
    benches = [r.pop("_bench") for r in results]
    started = time.perf_counter()
    db = GradebookDB(scratch / "gradebook.sqlite")
    db.store(results, mlsys_grader.__version__, rubric_key(rubrics))
    db.close()
    store_s = time.perf_counter() - started
    rss: dict[int, float] = {}
    for bench in benches:
        rss[bench["pid"]] = max(rss.get(bench["pid"], 0.0), bench["rss_mb"])
    prepared = [json.loads(path.read_text()) for path in scratch.glob("import-*.json")]
    imports = [entry["s"] for entry in prepared]
    phases: dict[str, float] = {}
    for bench in benches:
        for name, seconds in bench["times"].items():
            phases[name] = phases.get(name, 0.0) + seconds
    out.write_text(json.dumps({
        "bundles": len(results), "package_import_s": package_s, "pool_wall_s": pool_s, "store_s": store_s,
        "mlsysim_import_s": imports, "worker_rss_mb": sorted(rss.values()),
        "imported": {name: sum(entry[name] for entry in prepared) for name in ("mlsysim", "pint")},
        "phases_ms": {name: seconds * 1000 / len(results) for name, seconds in phases.items()},
        "scores": [r.get("score") for r in results],
    }))


def _run_variant(mode: str, tree: str | None, folder: Path, cache: Path, jobs: int, out: Path) -> dict[str, Any]:
    env = _tree_env(tree)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--_breakdown-worker", mode, str(folder), str(_tables(cache, tree)), str(jobs),
                           str(out)],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        raise SystemExit(f"breakdown worker ({mode}, {tree or 'this tree'}) exited {proc.returncode}")
    return {**json.loads(out.read_text()), "wall_s": wall}


def _tables(cache: Path, tree: str | None) -> Path:
    """Each tree's own table folder: tables of another format or lab digest would be rebuilt inside the timed run."""
    return cache / ("base" if tree else "this")


def _median_of(runs: Sequence[dict[str, Any]], pick: Callable[[dict[str, Any]], float]) -> float:
    return statistics.median(pick(run) for run in runs)


def breakdown(folder: Path, cache: Path, jobs: int, rounds: int, baseline: str | None) -> None:
    """Run every variant ROUNDS times interleaved and print the medians per bundle, with ratios."""
    variants = [("table", None), ("live", None)] + ([("table", baseline), ("live", baseline)] if baseline else [])
    names = [f"{mode}{'@base' if tree else ''}" for mode, tree in variants]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_ in range(rounds):
        order = list(zip(names, variants, strict=True))
        for name, (mode, tree) in order if round_ % 2 == 0 else reversed(order):
            runs[name].append(_run_variant(mode, tree, folder, cache, jobs, folder / f"breakdown-{name}-{round_}.json"))
    scores = {name: runs[name][0]["scores"] for name in names}
    phases = list(dict.fromkeys(phase for name in names for run in runs[name] for phase in run["phases_ms"]))
    bundles = runs[names[0]][0]["bundles"]
    width = max(len(p) for p in phases) + 2
    print(f"\nbreakdown: {bundles} bundles, --jobs {jobs}, medians of {rounds} interleaved rounds; ms per bundle "
          f"(worker time, summed over workers){'; @base = ' + baseline if baseline else ''}")
    header = "".join(f"{name:>12}" for name in names)
    ratios = [("live/table", "live", "table")]
    if baseline:
        ratios += [("base/this table", "table@base", "table"), ("base/this live", "live@base", "live")]
    print(f"{'phase':<{width}}{header}" + "".join(f"{label:>17}" for label, _, _ in ratios))

    def line(label: str, pick: Callable[[dict[str, Any]], float], unit: str = "") -> None:
        values = {name: _median_of(runs[name], pick) for name in names}
        cells = "".join(f"{values[name]:>12.3f}" for name in names)
        shown = "".join(f"{values[a] / values[b]:>16.2f}x" if values[b] else f"{'-':>17}" for _, a, b in ratios)
        print(f"{label + unit:<{width}}{cells}{shown}")

    for phase in phases:
        line(phase, lambda run, phase=phase: run["phases_ms"].get(phase, 0.0))
    line("checks, all", lambda run: sum(v for k, v in run["phases_ms"].items() if k.startswith("check ")))
    line("worker total", lambda run: sum(run["phases_ms"].values()))
    line("gradebook store (parent)", lambda run: run["store_s"] * 1000 / run["bundles"])
    print("per process, seconds or MB:")
    line("package import (parent) s", lambda run: run["package_import_s"])
    line("worker preparation s", lambda run: statistics.median(run["mlsysim_import_s"] or [0.0]))
    for name in names:
        imported = runs[name][0].get("imported", {})
        print(f"  {name}: workers that imported mlsysim {imported.get('mlsysim', '?')}, pint {imported.get('pint', '?')} "
              f"(of {len(runs[name][0]['mlsysim_import_s'])})")
    line("peak RSS per worker MB", lambda run: max(run["worker_rss_mb"]))
    line("pool wall s", lambda run: run["pool_wall_s"])
    line("process wall s", lambda run: run["wall_s"])
    same = all(scores[name] == scores[names[0]] for name in names)
    print(f"scores identical across variants: {same}")


def profile(paths: Sequence[Path], cache: Path, mode: str, top: int = 30) -> None:
    """cProfile of grading ``paths`` in this process as the gradebook does (tables built first in table mode)."""
    from mlsys_grader._mlsysim import import_mlsysim
    from mlsys_grader.course._ingest import discover
    from mlsys_grader.course._options import resolve_rubrics
    from mlsys_grader.course._worker import grade_candidate
    from mlsys_grader.replay import Replay, ensure_tables

    import_mlsysim()
    rubrics = resolve_rubrics({})
    candidates = discover(paths)
    if mode == "table":
        ensure_tables(cache)
    replay = Replay.from_tables(cache) if mode == "table" else Replay()

    def grade_all() -> None:
        for candidate in candidates:
            grade_candidate(candidate, rubrics, replay=replay)

    profiler = cProfile.Profile()
    profiler.runcall(grade_all)
    for order in ("tottime", "cumulative"):
        stream = io.StringIO()
        stats = pstats.Stats(profiler, stream=stream)
        stats.sort_stats(order).print_stats(top)
        print(f"\nprofile of {len(candidates)} bundles in one process ({mode}), top {top} by {order}:")
        print("\n".join(line for line in stream.getvalue().splitlines() if line.strip())[-(top + 2) * 200:])


def _profile_paths(folder: Path, count: int) -> list[Path]:
    return sorted((folder / "submissions").glob("*.json"))[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of table vs live (default 2)")
    parser.add_argument("--compare", action="store_true", help="fail unless both modes write byte-identical grade CSVs")
    parser.add_argument("--breakdown", action="store_true", help="time per bundle by phase and check, table vs live (5.)")
    parser.add_argument("--baseline-tree", metavar="DIR",
                        help="also grade with the package at DIR (a checkout of another commit): in 4. and in --breakdown")
    parser.add_argument("--breakdown-only", action="store_true", help="with --breakdown: skip the figures 2-4")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile grading N bundles in one process (6.)")
    parser.add_argument("--profile-mode", choices=("table", "live"), default="table")
    parser.add_argument("--_breakdown-worker", nargs=5, dest="breakdown_worker", help=argparse.SUPPRESS)
    parser.add_argument("--bound", action="store_true",
                        help="also time each tree's batch with every replay memoised first: what a free replay would give (4.)")
    parser.add_argument("--_read-floor", nargs=3, dest="read_floor", help=argparse.SUPPRESS)
    parser.add_argument("--_memoised-bound", nargs=2, dest="memoised_bound", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memoised_bound:
        folder, jobs = args.memoised_bound
        memoised_bound(Path(folder), int(jobs))
        return
    if args.read_floor:
        folder, out, jobs = args.read_floor
        read_floor(Path(folder), Path(out), int(jobs))
        return
    if args.breakdown_worker:
        mode, folder, cache, jobs, out = args.breakdown_worker
        breakdown_worker(mode, Path(folder), Path(cache), int(jobs), Path(out))
        return
    if args.breakdown_only or args.profile:
        quick(args)
        return

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

        # In-process, after import.  A fresh replay has empty caches, so the first grade
        # of each lab is "cold"; the rest reuse shared baseline arms.
        from mlsys_grader.replay import Replay

        replay = Replay()
        data = [path.read_bytes() for path in paths[:200]]
        cold = []
        for blob in data[:8]:
            t = time.perf_counter()
            grade_bundle(blob, replay=replay)
            cold.append(time.perf_counter() - t)
        mixed = []
        for blob in data[8:]:
            t = time.perf_counter()
            grade_bundle(blob, replay=replay)
            mixed.append(time.perf_counter() - t)
        warm = []
        for blob in data[8:]:
            t = time.perf_counter()
            grade_bundle(blob, replay=replay)
            warm.append(time.perf_counter() - t)

        cache = Path(tmp) / "replay"
        t0 = time.perf_counter()
        _grader(["warm", "--replay-cache", str(cache)], None, check=True)
        build_s = time.perf_counter() - t0

        compile_trees(args.baseline_tree)
        variants = [*cold_variants(args.baseline_tree, Path(tmp) / "replay-base"), ("reading", None, [])]
        walls: dict[str, list[float]] = {name: [] for name, _, _ in variants}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in variants}
        csvs: dict[str, bytes] = {}
        rows = 0
        for round_ in range(args.rounds):
            for name, tree, extra in variants if round_ % 2 == 0 else list(reversed(variants)):
                out = Path(tmp) / f"grades-{name}-{round_}.csv"
                if extra is None:  # this tree, with the replay table
                    extra = ["--replay-cache", str(cache)]
                t0, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
                if name == "reading":
                    proc = _read_only(folder, out, args.jobs)
                else:
                    proc = _grader(["grade", str(folder), "-o", str(out), "--jobs", str(args.jobs),
                                    "--db", str(Path(tmp) / f"gradebook-{name}-{round_}.sqlite"), "-q", *extra], tree)
                walls[name].append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the process tree: its workers were waited for
                cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                if proc.returncode != 0:
                    print(proc.stdout, proc.stderr)
                    raise SystemExit(f"grade ({name}) exited {proc.returncode}")
                rows = out.read_text(encoding="utf-8").count("\n") - 1
                csvs.setdefault(name, out.read_bytes())
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        identical = csvs["table"] == csvs["live"]
        bounds: dict[str, list[dict[str, Any]]] = {}
        if args.bound:
            trees = [("this tree", None)] + ([("@base", args.baseline_tree)] if args.baseline_tree else [])
            for round_ in range(args.rounds):
                for label, tree in trees if round_ % 2 == 0 else list(reversed(trees)):
                    bounds.setdefault(label, []).append(_bound(folder, args.jobs, tree))

    print(f"mlsys_grader {mlsys_grader.__version__}, mlsysim {mlsys_grader.mlsysim_version()}, {os.cpu_count()} cores")
    print(f"import + first grade of each lab:       {import_s:6.2f} s")
    print(f"generated {args.count} bundles with solve: {generate_s:6.2f} s (not part of grading)")
    print(f"one bundle after import, empty caches:   {statistics.median(cold) * 1000:6.2f} ms median of {len(cold)} (max {max(cold) * 1000:.2f} ms)")
    print(f"one bundle, new settings, shared arms cached: {statistics.median(mixed) * 1000:6.2f} ms median of {len(mixed)}")
    print(f"one bundle graded again (all cached):    {statistics.median(warm) * 1000:6.2f} ms median of {len(warm)}")
    print(f"mlsys-grader warm (both replay tables, fresh process): {build_s:6.2f} s")
    if args.baseline_tree:
        print(f"@base = {args.baseline_tree} ({_describe_tree(args.baseline_tree)}): "
              + ("its own replay tables built by its warm" if any(n == "table@base" for n, _, _ in variants)
                 else "no replay table (its grade replays live)"))
    medians = {name: statistics.median(walls[name]) for name in walls}
    cpu = {name: statistics.median(cpus[name]) for name in cpus}
    for name in walls:
        what = "the same" if name == "reading" else "mlsys-grader grade"
        print(f"{what} {rows} bundles cold, --jobs {args.jobs}, {_COLD_LABELS.get(name, name)}: "
              f"{medians[name]:6.2f} s median wall of {[round(w, 2) for w in walls[name]]} incl. import = "
              f"{rows / medians[name]:7.1f} submissions/s; CPU of the process tree {cpu[name]:6.2f} s median")
    print(f"speedup of the table (interleaved medians): {medians['live'] / medians['table']:.2f}x; "
          f"peak RSS of the largest process {peak_mb:.0f} MB")
    reading = medians["reading"]
    print(f"grading with the table costs {medians['table'] / reading:.2f}x reading only ({reading:.2f} s: import, "
          f"discovery, the strict reader on every bundle in the same --jobs {args.jobs} pool, a CSV); "
          f"beyond reading it takes {medians['table'] - reading:.2f} s")
    for name in walls:
        if name.endswith("@base"):
            print(f"speedup of this tree's table over {name} (interleaved medians): {medians[name] / medians['table']:.2f}x "
                  f"wall, {cpu[name] / cpu['table']:.2f}x CPU; this tree's live replay over {name}: "
                  f"{medians[name] / medians['live']:.2f}x wall, {cpu[name] / cpu['live']:.2f}x CPU")
            print(f"  4x over {name} is {medians[name] / 4:.2f} s: {medians[name] / 4 - reading:.2f} s beyond reading only "
                  f"for every check, the rationale reader, collusion and the gradebook (now {medians['table'] - reading:.2f} s)")
    for label, runs in bounds.items():
        total = statistics.median(run["import_s"] + run["batch_s"] for run in runs)
        base = medians.get("live@base") if label == "@base" else medians["table"]
        print(f"{label}, every replay memoised before the clock (mlsysim imported, every cache full; import + batch): "
              f"{total:6.2f} s median of {len(runs)}" + (f": {base / total:.2f}x faster than its cold run, the most a free "
                                                          f"replay could give it" if label == "@base" and base else
                                                          f": its cold table run is {base / total:.2f}x that"))
    if args.compare:
        print(f"grade CSVs byte-identical (table vs live): {identical}")
        for name in sorted(csvs):
            if name.endswith("@base"):
                print(f"grade CSVs byte-identical ({name} vs this tree's table): {csvs[name] == csvs['table']}")
        if not identical:
            raise SystemExit(1)
    if args.breakdown:
        quick(args)


def quick(args: argparse.Namespace) -> None:
    """The breakdown (5.) and the profile (6.), on COUNT freshly generated bundles and freshly built tables."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        generate(folder, args.count)
        cache = Path(tmp) / "replay"
        started = time.perf_counter()
        _grader(["warm", "--replay-cache", str(_tables(cache, None))], None, check=True)
        print(f"mlsys-grader warm (both replay tables, fresh process): {time.perf_counter() - started:6.2f} s")
        if args.baseline_tree:
            _grader(["warm", "--replay-cache", str(_tables(cache, args.baseline_tree))], args.baseline_tree, check=True)
        if args.breakdown or args.breakdown_only:
            compile_trees(args.baseline_tree)
            breakdown(Path(tmp), cache, args.jobs, args.rounds, args.baseline_tree)
        if args.profile:
            profile(_profile_paths(Path(tmp), args.profile), _tables(cache, None), args.profile_mode)


if __name__ == "__main__":
    main()
