"""The collusion report against copies whose clock was edited, and against independent work.

Prints, for each lab, the pairing rate of each evasion (a classmate's bundle with every timestamp changed one way,
the rationale reworded: every fifth word replaced) and the false-pair rate on a fixed independent population:
``solve --seed 0..N-1`` per lab, plus ``--defaults`` bundles per lab that keep every notebook default and follow the
notebook's order, each with its own clock (intervals between events log-normal, median 40 s, sigma 1, a break of
one to three hours before a tenth of the events) and its own rationale.  Deterministic (fixed seeds).

    python benchmarks/collusion.py [--seeds 400] [--defaults 100] [--copies 40]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from mlsys_grader import solve
from mlsys_grader.core.jsonio import sha256_of
from mlsys_grader.core.models import load_bundle
from mlsys_grader.course._collusion import Work, find_groups, part_times, work_path

LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
WORDS = ("the", "compiled", "path", "wins", "because", "dispatch", "overhead", "falls", "while", "memory", "traffic",
         "drops", "under", "our", "budget", "and", "the", "kernel", "launch", "count", "matters", "most", "here")


def reseal(data: dict) -> dict:
    data = copy.deepcopy(data)
    data.pop("content_hash", None)
    data["content_hash"] = sha256_of(data)
    return data


def retimed(data: dict, change: Callable[[datetime, int], datetime]) -> dict:
    """Every time of every record and run-log entry passed through ``change(time, field index)``."""
    data = copy.deepcopy(data)
    index = 0
    for entry, names in (("evidence", ("captured_at", "prediction_locked_at", "result_shown_at")),
                         ("runs", ("prediction_locked_at", "first_shown_at", "first_run_at"))):
        for part in sorted(data.get(entry) or {}):
            for name in names:
                value = data[entry][part].get(name)
                if value:
                    data[entry][part][name] = change(datetime.fromisoformat(value.replace("Z", "+00:00")), index).isoformat()
                    index += 1
    return reseal(data)


def own_clock(data: dict, rng: random.Random) -> dict:
    """``data`` as a student with their own clock made it: the same events in the same order, new intervals."""
    moment = datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(days=rng.randrange(28), seconds=rng.uniform(0, 14 * 3600))
    mapped: dict[str, datetime] = {}
    order = sorted({t for t in _times(data)})
    for old in order:
        pause = rng.uniform(3600, 10800) if rng.random() < 0.1 else 0.0
        moment = moment + timedelta(seconds=rng.lognormvariate(math.log(40), 1) + pause, microseconds=rng.randrange(1, 10**6))
        mapped[old] = moment
    return retimed(data, lambda t, i: mapped[t.isoformat()])


def _times(data: dict) -> list[str]:
    found = []
    for entry, names in (("evidence", ("captured_at", "prediction_locked_at", "result_shown_at")),
                         ("runs", ("prediction_locked_at", "first_shown_at", "first_run_at"))):
        for part in data.get(entry) or {}:
            for name in names:
                value = data[entry][part].get(name)
                if value:
                    found.append(datetime.fromisoformat(value.replace("Z", "+00:00")).isoformat())
    return found


def own_words(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(45, 90)))


def submission(key: int, data: dict, rationale: str) -> Work:
    bundle = load_bundle(json.dumps(data))
    return Work(key, bundle.lab, part_times(bundle), rationale, f"student{key}", work_path(bundle))


def reworded(text: str) -> str:
    return " ".join("indeed" if n % 5 == 4 else word for n, word in enumerate(text.split()))


EVASIONS: dict[str, Callable[[datetime, int], datetime]] = {
    "constant offset of every timestamp": lambda t, i: t + timedelta(days=3, seconds=7, microseconds=123),
    "truncation to whole seconds": lambda t, i: t.replace(microsecond=0),
    "+1 us": lambda t, i: t + timedelta(microseconds=1),
    "1-999 us jitter per field": lambda t, i: t + timedelta(microseconds=1 + (i * 389) % 999),
    "a shift then truncation": lambda t, i: (t + timedelta(hours=2, microseconds=654321)).replace(microsecond=0),
    "a 5-hour shift, every fifth word replaced": lambda t, i: t + timedelta(hours=5),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--defaults", type=int, default=100)
    parser.add_argument("--copies", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(0)
    started = time.perf_counter()
    for lab in LABS:
        population = [solve(lab, TRACKS[seed % 4], seed) for seed in range(args.seeds)]
        defaults = [own_clock(json.loads(solve(lab, TRACKS[n % 4]).to_json()), rng) for n in range(args.defaults)]
        bundles = [json.loads(b.to_json()) for b in population] + defaults
        subs = [submission(i, data, own_words(rng)) for i, data in enumerate(bundles)]
        groups = find_groups(subs)
        paired = sum(len(g.members) for g in groups)
        print(f"{lab}: independent population of {len(subs)} ({args.seeds} solve seeds, {args.defaults} notebook defaults "
              f"with their own clocks): {len(groups)} group(s), {paired} submission(s) paired "
              f"(false-pair rate {paired / len(subs):.2%})")
        for name, change in EVASIONS.items():
            caught = 0
            for n in range(args.copies):
                original = bundles[n]
                text = own_words(rng)
                copied = retimed(original, change)
                pair = find_groups([submission(0, original, text), submission(1, copied, reworded(text))])
                caught += bool(pair)
            print(f"  {name}: {caught}/{args.copies} copies paired ({caught / args.copies:.0%})")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
