"""Benchmark ``mlsys-grader check`` in a fresh process, the student side (prints figures; not a timed test).

    python benchmarks/check.py [--baseline-tree DIR] [--rounds 7] [--track cloud]

One ``solve`` bundle of each registered lab (made with this tree, not timed) is checked with
``python -m mlsys_grader check FILE`` in a fresh process each time — interpreter start, imports,
replay and the printed report: ``check`` answers from the verified replay tables in the user cache (built here
first, untimed, as ``mlsys-grader warm`` builds them), and ``live`` checks with an empty cache, through mlsysim — with
this tree and, with ``--baseline-tree DIR`` (a checkout of the package at another commit, e.g.
``git worktree add /tmp/wt-9612023 9612023``), with ``PYTHONPATH=DIR``, the variants interleaved
for ROUNDS rounds (the order reversed every other round), both trees' bytecode written first.  Prints each variant's median wall
time and CPU time (user + system of the process) per lab, the ratios baseline / this tree, and each lab's wall time
over Lab 07's (the quick start's lab).
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

EMPTY_CACHE = tempfile.mkdtemp(prefix="mlsys-grader-no-tables-")
"""``XDG_CACHE_HOME`` of the ``live`` variant: a cache with no replay table."""


def _env(tree: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree == "live":
        env["XDG_CACHE_HOME"] = EMPTY_CACHE
        return env
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _check(path: Path, tree: str | None) -> tuple[float, float, str]:
    """(wall s, CPU s, the report's first line) of one ``check`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mlsys_grader", "check", str(path)], capture_output=True, text=True,
                          env=_env(tree), cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
        raise SystemExit(f"check ({tree or 'this tree'}) exited {proc.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, (proc.stdout.strip().splitlines() or [""])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", metavar="DIR", help="also check with the package at DIR")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--track", default="cloud")
    args = parser.parse_args()

    import mlsys_grader
    from mlsys_grader import solve
    from mlsys_grader.labs import lab_ids

    # Bytecode written first, as an install does: otherwise (PYTHONDONTWRITEBYTECODE) every fresh process compiles
    # the whole package, and the tree with more source pays more.
    folders = [str(Path(mlsys_grader.__file__).parent)] + ([str(Path(args.baseline_tree) / "mlsys_grader")]
                                                           if args.baseline_tree else [])
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, capture_output=True)
    from mlsys_grader.replay import ensure_tables

    ensure_tables(None)  # every lab's table in the user cache, as `warm` builds them (untimed)
    variants = [("this", None), ("live", "live")] + ([("base", args.baseline_tree)] if args.baseline_tree else [])
    with tempfile.TemporaryDirectory() as tmp:
        bundles = {}
        for lab in lab_ids():
            bundles[lab] = Path(tmp) / f"{lab}-submission.json"
            bundles[lab].write_text(solve(lab, args.track, seed=1).to_json(), encoding="utf-8")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        first: dict[tuple[str, str], str] = {}
        for round_ in range(args.rounds):
            order = variants if round_ % 2 == 0 else list(reversed(variants))
            for lab, path in bundles.items():
                for name, tree in order:
                    wall, cpu, line = _check(path, tree)
                    times.setdefault((lab, name), []).append((wall, cpu))
                    first.setdefault((lab, name), line)
    print(f"mlsys-grader check in a fresh process, one {args.track} bundle per lab, {args.rounds} interleaved rounds, "
          f"medians{'; base = ' + args.baseline_tree if args.baseline_tree else ''}")
    for lab in bundles:
        cells = []
        medians = {}
        for name, _ in variants:
            runs = times[(lab, name)]
            medians[name] = (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
            cells.append(f"{name} {medians[name][0]:5.2f} s wall, {medians[name][1]:5.2f} s CPU")
        ratio = ""
        if "base" in medians:
            ratio = (f"; base/this {medians['base'][0] / medians['this'][0]:.2f}x wall, "
                     f"{medians['base'][1] / medians['this'][1]:.2f}x CPU")
        if "lab07" in bundles:
            ratio += "".join(f"; {name} {medians[name][0] / statistics.median(w for w, _ in times[('lab07', name)]):.2f}x "
                             "Lab 07's wall" for name, _ in variants)
        print(f"{lab}: " + "; ".join(cells) + ratio)
        for name, _ in variants:
            print(f"  {name}: {first[(lab, name)]}")


if __name__ == "__main__":
    main()
