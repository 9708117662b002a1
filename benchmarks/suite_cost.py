"""What README's test command costs: the full suite run once (or a JUnit report of an earlier run read), its wall time,
and where the time goes — per lab, per kind of test, per module, and the slowest tests.

    python benchmarks/suite_cost.py                       # runs `python -m pytest -q -n auto` with a JUnit report
    python benchmarks/suite_cost.py --workers 2 --keep run.xml
    python benchmarks/suite_cost.py --from run.xml        # the figures of an earlier run, nothing run

A test's time is pytest's for it (setup, call and teardown: a module fixture is paid by the first test that asks for
it).  A test whose id names a lab (a lab-parametrised case, or a test written for one lab) is that lab's; the rest is
the shared machinery's.  The sum of the tests' times is CPU-bound work spread over the workers, so the wall time is
about that sum over the workers when the run is balanced: the report prints both, and their ratio.  Figures move
with the machine's load (±20 % on the 2-core development machine): compare runs made one after the other.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAB_ID = re.compile(r"(?<![A-Za-z0-9])lab\d\d(?!\d)")

KINDS = (
    ("kit and new-lab venvs", ("tests.test_kit", "tests.test_new_lab")),
    ("Gradescope emulator", ("tests.test_gradescope_emulator",)),
    ("notebooks in a kernel, otter assign", ("tests.test_notebooks",)),
    ("otter run, autograder zips", ("tests.test_autograder", "tests.test_registry")),
    ("replay tables and live sweeps", ("tests.test_replay_table", "tests.test_mlsysim_import", "tests.labs.test_contract")),
    ("command line in a subprocess, batches", ("tests.test_nothing_lost", "tests.test_pool", "tests.test_cli",
                                               "tests.test_gradebook", "tests.test_examples")),
)
"""Kinds of test by module; every other module is "in process"."""


@dataclass(frozen=True)
class Case:
    module: str
    name: str
    seconds: float
    outcome: str

    @property
    def kind(self) -> str:
        for kind, modules in KINDS:
            if self.module in modules:
                return kind
        return "in process"

    @property
    def labs(self) -> tuple[str, ...]:
        named = set(LAB_ID.findall(self.name)) | set(LAB_ID.findall(self.module))
        return tuple(sorted(named))


def read_junit(path: Path) -> list[Case]:
    cases = []
    for case in ET.parse(path).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        cases.append(Case(case.get("classname") or "?", case.get("name") or "?", float(case.get("time") or 0), outcome))
    return cases


def run_suite(report: Path, workers: str) -> float:
    """README's test command (its pytest part) with a JUnit report; the wall time in seconds."""
    command = [sys.executable, "-m", "pytest", "-q", "-n", workers, f"--junitxml={report}", "-p", "no:randomly"]
    print("running:", " ".join(command), flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)")
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}")
    return seconds


def _table(title: str, rows: list[tuple[str, int, float]], total: float) -> None:
    print(f"\n{title}")
    print(f"  {'':42} {'tests':>6} {'seconds':>9} {'share':>6}")
    for label, count, seconds in rows:
        print(f"  {label:42.42} {count:6d} {seconds:9.1f} {seconds / total:6.1%}")


def report(cases: list[Case], wall: float | None, workers: int | None) -> None:
    total = sum(case.seconds for case in cases)
    outcomes: dict[str, int] = defaultdict(int)
    for case in cases:
        outcomes[case.outcome] += 1
    print(f"{len(cases)} tests ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}); "
          f"test time {total:.0f} s" + (f", wall {wall:.0f} s on {workers} workers: test time / wall = {total / wall:.2f}"
                                          if wall and workers else ""))

    by_lab: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        for lab in case.labs or ("shared (no lab named)",):
            by_lab[lab].append(case.seconds / max(1, len(case.labs)))
    _table("per lab (a test naming several labs is split between them)",
           [(lab, len(times), sum(times)) for lab, times in sorted(by_lab.items())], total)

    by_kind: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_kind[case.kind].append(case)
    _table("per kind of test", sorted(((kind, len(group), sum(c.seconds for c in group)) for kind, group in by_kind.items()),
                                      key=lambda row: -row[2]), total)

    labs = sorted({lab for case in cases for lab in case.labs if lab.startswith("lab")})
    if labs:
        print("\nper lab and kind (seconds)")
        kinds = [kind for kind, _ in KINDS] + ["in process"]
        print("  " + f"{'':38}" + "".join(f"{lab:>8}" for lab in labs))
        for kind in kinds:
            cells = [sum(c.seconds / len(c.labs) for c in by_kind[kind] if lab in c.labs) for lab in labs]
            print("  " + f"{kind:38.38}" + "".join(f"{cell:8.1f}" for cell in cells))

    by_module: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_module[case.module].append(case)
    _table("the 15 costliest modules", sorted(((m, len(g), sum(c.seconds for c in g)) for m, g in by_module.items()),
                                             key=lambda row: -row[2])[:15], total)
    print("\nthe 15 slowest tests")
    for case in sorted(cases, key=lambda c: -c.seconds)[:15]:
        print(f"  {case.seconds:7.1f} s  {case.module.removeprefix('tests.')}::{case.name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="read this JUnit report instead of running the suite")
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (-n), default auto")
    parser.add_argument("--keep", type=Path, help="keep the run's JUnit report here")
    args = parser.parse_args(argv)
    if args.source:
        report(read_junit(args.source), None, None)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        junit = args.keep or Path(scratch) / "suite.xml"
        wall = run_suite(junit, args.workers)
        workers = os.cpu_count() if args.workers == "auto" else int(args.workers)
        report(read_junit(junit), wall, workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
