"""The collusion report's ``clock`` test: the copies it pairs, and the independent work it must not.

    python benchmarks/collusion.py [--students 400] [--copies 100] [--identical 1000] [--course 10000]

Prints, per lab:

* **false pairs** among ``--students`` independent students paced by a person: half ``solve --seed 0..``
  (settings drawn across the domain, each with solve's own session: 90-480 s before a lock, 3-90 s to the run,
  45-540 s before the capture), half students who keep every notebook default on ``cloud`` or ``edge`` (identical
  evidence within a track), each with their own clock: the notebook's events in order, the interval before each
  new time log-normal (median 40 s, sigma 1) plus, before a tenth of them, a break of one to three hours;
* **false pairs** among the recorded top-to-bottom notebook runs (``tests/fixtures/top-to-bottom-notebook-runs.json``,
  written by ``tests/make_notebook_runs.py``) and among the shipped reference examples of different tracks;
* **caught copies** of each copying kind: ``--copies`` originals (the first students of the population above), each
  copied with its times changed one way and a new rationale of its own (so only the times can pair it).

Then, for Lab 08 and Lab 02, how many pairs of ``--identical`` students who keep every default on one track (each with
their own clock) match on one, two, three… parts — the chance the four-part rule stands on — and the time
:func:`find_groups` takes for a course of ``--course`` submissions (four labs, four tracks, a third of
them keeping the defaults, each with its own clock; a rationale each).  Deterministic (fixed seeds).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mlsys_grader import solve
from mlsys_grader.core.models import load_bundle
from mlsys_grader.course._collusion import MIN_CLOCK_PARTS, Work, find_groups, matching_parts, part_times, work_path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "tests" / "fixtures" / "top-to-bottom-notebook-runs.json"
LABS = ("lab08", "lab02", "lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
DEFAULT_TRACKS = ("cloud", "edge")
WORDS = ("the", "compiled", "path", "wins", "because", "dispatch", "overhead", "falls", "while", "memory", "traffic",
         "drops", "under", "our", "budget", "and", "the", "kernel", "launch", "count", "matters", "most", "here")
Labelled = list[tuple[str, str]]


def is_time(label: str) -> bool:
    return label.endswith("_at")


def retimed(path: Sequence[Sequence[str]], change: Callable[[datetime, str], datetime]) -> Labelled:
    """``path`` (:func:`work_path`) with every time passed through ``change(time, label)``."""
    return [(label, change(datetime.fromisoformat(text), label).isoformat() if is_time(label) else text)
            for label, text in path]


def own_clock(path: Sequence[Sequence[str]], rng: random.Random) -> Labelled:
    """``path`` as a student with their own clock made it: the same events in the same order (equal times stay equal),
    a new interval before each new time: log-normal, median 40 s, sigma 1, and a break of 1-3 h before a tenth."""
    moment = datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(days=rng.randrange(28), seconds=rng.uniform(0, 14 * 3600))
    mapped: dict[datetime, datetime] = {}
    for old in sorted({datetime.fromisoformat(text) for label, text in path if is_time(label)}):
        pause = rng.uniform(3600, 10800) if rng.random() < 0.1 else 0.0
        moment += timedelta(seconds=rng.lognormvariate(math.log(40), 1) + pause, microseconds=rng.randrange(1, 10**6))
        mapped[old] = moment
    return retimed(path, lambda t, label: mapped[t])


def population(lab: str, students: int, rng: random.Random) -> list[Labelled]:
    """Independent students of ``lab``, paced by a person: half solve seeds, half defaults with their own clocks."""
    return [work_path(solve(lab, TRACKS[n // 2 % 4], n // 2)) if n % 2 == 0 else
            own_clock(work_path(solve(lab, DEFAULT_TRACKS[n // 2 % 2])), rng) for n in range(students)]


def own_words(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(45, 90)))


def work(key: int, lab: str, path: Labelled, rationale: str) -> Work:
    return Work(key, lab, {}, rationale, f"student{key}", path)


def per_part(offset: Callable[[random.Random], timedelta]) -> Callable[[Labelled, random.Random], Labelled]:
    def copy(path: Labelled, rng: random.Random) -> Labelled:
        shifts: dict[str, timedelta] = {}
        return retimed(path, lambda t, label: t + shifts.setdefault(label.split(".")[0], offset(rng)))
    return copy


def jitter(seconds: float) -> Callable[[datetime, random.Random], datetime]:
    return lambda t, rng: t + timedelta(microseconds=rng.randint(-round(seconds * 1e6), round(seconds * 1e6)))


def each_time(change: Callable[[datetime, random.Random], datetime]) -> Callable[[Labelled, random.Random], Labelled]:
    return lambda path, rng: retimed(path, lambda t, label: change(t, rng))


def _hours(rng: random.Random) -> timedelta:
    return timedelta(hours=rng.uniform(-72, 72), microseconds=rng.randrange(10**6))


COPIES: dict[str, Callable[[Labelled, random.Random], Labelled]] = {
    "one offset for every time": lambda path, rng: (lambda shift: retimed(path, lambda t, label: t + shift))(_hours(rng)),
    "each part shifted by its own offset": per_part(_hours),
    "every time jittered by up to ±3 s": each_time(jitter(3.0)),
    "each part shifted by its own offset, then every time jittered by up to ±3 s":
        lambda path, rng: each_time(jitter(3.0))(per_part(_hours)(path, rng), rng),
    "every time truncated to whole seconds": each_time(lambda t, rng: t.replace(microsecond=0)),
}


def recorded_runs() -> list[Work]:
    """The recorded top-to-bottom runs as the gradebook sees them (their paths, read as :func:`work_path` reads a bundle)."""
    runs = json.loads(RUNS.read_text(encoding="utf-8"))["runs"]
    return [work(n, run["lab"], work_path(_as_bundle(run)), f"run {n}") for n, run in enumerate(runs)]


def _as_bundle(run: dict) -> object:
    from types import SimpleNamespace

    def entry(fields: dict) -> SimpleNamespace:
        return SimpleNamespace(**{name: datetime.fromisoformat(value.replace("Z", "+00:00")) if name.endswith("_at") and value
                                  else value for name, value in fields.items()})
    return SimpleNamespace(track=run["track"], controls=run["controls"],
                           evidence={part: entry(fields) for part, fields in run["evidence"].items()},
                           runs={part: entry(fields) for part, fields in run["runs"].items()})


def longest_interval(subs: Sequence[Work]) -> float:
    """The longest interval between consecutive times of one part, in seconds, over every part of ``subs``."""
    longest = 0.0
    for sub in subs:
        by_part: dict[str, list[datetime]] = {}
        for label, text in sub.path:
            if is_time(label):
                by_part.setdefault(label.split(".")[0], []).append(datetime.fromisoformat(text))
        for times in by_part.values():
            ordered = sorted(times)
            longest = max([longest, *((b - a).total_seconds() for a, b in itertools.pairwise(ordered))])
    return longest


def examples() -> list[Work]:
    found = []
    for n, path in enumerate(sorted((ROOT / "examples" / "submissions").glob("lab??-*.json"))):
        bundle = load_bundle(path.read_text(encoding="utf-8"))
        found.append(Work(n, bundle.lab, part_times(bundle), bundle.synthesis.rationale or "", path.stem, work_path(bundle)))
    return found


def clock_pairs(groups: Sequence) -> int:
    return sum(1 for group in groups for pair in group.pairs if pair.basis == "clock")


def identical_pairs(paths: Sequence[Labelled]) -> int:
    """Pairs of the population with identical evidence: the same track, settings and predictions in every part."""
    counts: dict[tuple, int] = {}
    for path in paths:
        key = tuple((label, text) for label, text in path if not is_time(label))
        counts[key] = counts.get(key, 0) + 1
    return sum(n * (n - 1) // 2 for n in counts.values())


def near_misses(lab: str, students: int, rng: random.Random) -> str:
    """How many pairs of ``students`` who keep every default on one track (identical evidence), each with their own
    clock, match by clock on 1, 2, 3… parts: the chance the ``MIN_CLOCK_PARTS`` rule stands on."""
    base = work_path(solve(lab, "cloud"))
    matches = matching_parts([work(n, lab, own_clock(base, rng), "") for n in range(students)])
    by_count: dict[int, int] = {}
    for parts in matches.values():
        by_count[len(parts)] = by_count.get(len(parts), 0) + 1
    pairs = students * (students - 1) // 2
    return (f"{lab}: {students} students keeping every default on cloud, {pairs} pairs: matching on "
            + ", ".join(f"{k} part(s) {n} ({n / pairs:.2e})" for k, n in sorted(by_count.items()))
            + f"; a clock pair needs {MIN_CLOCK_PARTS}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=400)
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--course", type=int, default=10_000)
    parser.add_argument("--identical", type=int, default=1000, help="students on the defaults of one track, for near misses")
    args = parser.parse_args()
    rng = random.Random(0)
    started = time.perf_counter()
    for lab in LABS:
        paths = population(lab, args.students, rng)
        groups = find_groups(work(n, lab, path, own_words(rng)) for n, path in enumerate(paths))
        print(f"{lab}: {len(paths)} independent students paced by a person ({identical_pairs(paths)} pairs with identical "
              f"evidence): {sum(len(g.members) for g in groups)} paired, {clock_pairs(groups)} clock pair(s)")
        for name, copier in COPIES.items():
            caught = 0
            for n in range(args.copies):
                copied = copier(paths[n], rng)
                caught += bool(find_groups([work(0, lab, paths[n], own_words(rng)), work(1, lab, copied, own_words(rng))]))
            print(f"  {name}: {caught}/{args.copies} copies paired")
    for lab in LABS[:2]:
        print(near_misses(lab, args.identical, rng))
    runs = recorded_runs()
    groups = find_groups(runs)
    labs = sorted({w.lab for w in runs})
    print(f"recorded top-to-bottom notebook runs: {len(runs)} ({', '.join(labs)}; the longest interval within a part "
          f"{longest_interval(runs):.2f} s): {clock_pairs(groups)} clock pair(s), {len(groups)} group(s)")
    shipped = examples()
    groups = find_groups(shipped)
    print(f"shipped examples ({len(shipped)}): {len(groups)} group(s): "
          + "; ".join(" + ".join(shipped[m].who for m in g.members) + f" ({', '.join(g.bases)})" for g in groups))
    course = []
    for n in range(args.course):
        lab, track = LABS[n % 4], TRACKS[(n // 4) % 4]
        bundle = solve(lab, track, None if n % 3 == 0 else n)
        course.append(work(n, lab, own_clock(work_path(bundle), rng), own_words(rng)))
    began = time.perf_counter()
    matching_parts(course)
    clock_seconds = time.perf_counter() - began
    began = time.perf_counter()
    groups = find_groups(course)
    print(f"a course of {len(course)} submissions: find_groups {time.perf_counter() - began:.2f} s (the clock test "
          f"{clock_seconds:.2f} s of it; the rest is the rationales' MinHash, which the gradebook computes while grading), "
          f"{clock_pairs(groups)} clock pair(s), {len(groups)} group(s)")
    print(f"({time.perf_counter() - started:.1f} s in all)")


if __name__ == "__main__":
    main()
