"""How often a rationale of random numbers earns ``rationale_cites_evidence`` by chance (prints rates).

    python benchmarks/chance_match.py [--bundles 500] [--texts 4] [--seed 15]

Every widening of what the rationale reader accepts as a cited quantity must leave this
rate no higher: run it before and after a change and compare the figures.

1. Makes BUNDLES bundles with ``mlsys_grader.solve(lab, track, seed)``: both labs, the four
   tracks in turn, seed = the bundle's index.
2. For each bundle writes TEXTS random rationales, each with four random quantities in the
   ways people write numbers (a one-decimal multiplier "3.7x", a percentage, a time with
   three significant digits, a round time "about 130 ms", a data size), puts each into the
   bundle's synthesis and grades it with ``grade_bundle``.  The headline figure is the share
   of those rationales that earn ``rationale_cites_evidence``.
3. Per style, the same draw is graded one quantity at a time, so a change to one notation
   shows in its own line: the styles above, and the same three-significant-digit times
   written with a decimal comma ("24,28 ms") and in LaTeX ("$24.28\\,\\text{ms}$").

The random generator is seeded, so the figures are comparable between runs of the code.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections import Counter
from collections.abc import Callable

LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")
ITEM = "rationale_cites_evidence"


def _sig(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, written without an exponent."""
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{round(value, decimals):.{decimals}f}"


def _time(rng: random.Random) -> float:
    return 10 ** rng.uniform(-2, 3.3)  # 0.01 ms .. 2 s, log-uniform


STYLES: dict[str, Callable[[random.Random], str]] = {
    "multiplier": lambda rng: f"{rng.uniform(1.1, 12.0):.1f}x",
    "percentage": lambda rng: f"{rng.uniform(2, 98):.{rng.choice((0, 1))}f}%",
    "time": lambda rng: f"{_sig(_time(rng), 3)} ms",
    "round time": lambda rng: f"about {_sig(_time(rng), rng.choice((1, 2)))} ms",
    "data": lambda rng: f"{_sig(10 ** rng.uniform(-1, 3.5), 3)} MB",
    "decimal comma": lambda rng: f"{_sig(_time(rng), 3).replace('.', ',')} ms",
    "latex": lambda rng: f"${_sig(_time(rng), 3)}\\,\\text{{ms}}$",
}
HEADLINE = ("multiplier", "percentage", "time", "round time", "data")
FRAME = ("I recommend the first option and reject the second: it is {0} faster, saves {1}, takes {2} against {3}, "
         "and the limitation and trigger are as selected.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=500)
    parser.add_argument("--texts", type=int, default=4)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()

    import mlsys_grader
    from mlsys_grader import grade_bundle

    try:  # staff-only since issue 15; earlier releases export it from the package itself
        from mlsys_grader.staff import solve
    except ImportError:
        from mlsys_grader import solve

    def earns(bundle, text: str) -> bool:
        synthesis = bundle.synthesis.model_copy(update={"rationale": text})
        report = grade_bundle(bundle.model_copy(update={"synthesis": synthesis}))
        return all(item.points == item.max_points for item in report.parts["synthesis"].items if item.item == ITEM)

    rng = random.Random(args.seed)
    started = time.perf_counter()
    texts = hits = 0
    style_tries: Counter[str] = Counter()
    style_hits: Counter[str] = Counter()
    for index in range(args.bundles):
        lab, track = LABS[index % 2], TRACKS[(index // 2) % 4]
        bundle = solve(lab, track, index)
        for _ in range(args.texts):
            quantities = [STYLES[rng.choice(HEADLINE)](rng) for _ in range(4)]
            texts += 1
            hits += earns(bundle, FRAME.format(*quantities))
        for style, write in STYLES.items():
            style_tries[style] += 1
            style_hits[style] += earns(bundle, FRAME.format(write(rng), "a lot", "longer", "before"))
    elapsed = time.perf_counter() - started

    print(f"mlsys_grader {mlsys_grader.__version__}: {args.bundles} bundles, seed {args.seed}, {elapsed:.0f} s")
    print(f"rationales with four random quantities earning {ITEM}: {hits}/{texts} = {hits / texts:.2%}")
    for style in STYLES:
        print(f"  one {style:<14} quantity: {style_hits[style]:>4}/{style_tries[style]} = "
              f"{style_hits[style] / style_tries[style]:.2%}")


if __name__ == "__main__":
    main()
