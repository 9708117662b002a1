"""What a term's honest students cost staff: the share of honest submissions that reach the review queue for their
rationale, and the share of rationale points they keep.

A synthetic term of 200 students per shipped lab, each handing in the reference evidence of a track with an honest
rationale from the held-out sets (``tests/rationale_heldout/*``, written without reading the reader's rules; student
``i`` gets the lab's ``i``-th honest text, round robin), graded as ``grade`` grades it.  A submission reaches the queue
for its rationale when an item of its synthesis is ``uncertain`` or it is flagged.

    python benchmarks/term_queue.py              # every held-out set
    python benchmarks/term_queue.py set8 set9    # only these sets' texts
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import heldout  # noqa: E402  (the held-out sets and the bundle each text goes in)

STUDENTS = 200


def main(argv: list[str]) -> int:
    from mlsys_grader import grade_bundle

    chosen = argv or heldout.sets()
    labs = sorted({lab for kept in chosen for lab in heldout.labs(kept)})
    print("| lab | honest submissions | queued for the rationale | rationale points kept | why queued (items) |")
    print("|---|---|---|---|---|")
    total_queued = total = 0
    for lab in labs:
        honest = [t for kept in chosen for t in heldout.texts(lab, kept) if t["kind"] == "honest"]
        cache: dict[str, tuple[bool, float, list[str]]] = {}
        queued = kept_points = 0
        reasons: Counter[str] = Counter()
        for student in range(STUDENTS):
            text = honest[student % len(honest)]
            if text["name"] + text["track"] not in cache:
                report = grade_bundle(heldout.bundle_for(lab, text))
                unsure = [f"{i.item.removeprefix('rationale_')}: {i.certainty_reason}" for i in report.uncertain_items()]
                points = sum(i.points for i in report.parts["synthesis"].items if i.item in heldout.ITEMS)
                cache[text["name"] + text["track"]] = (bool(unsure or report.flags), points, unsure)
            is_queued, points, unsure = cache[text["name"] + text["track"]]
            queued += is_queued
            kept_points += points
            reasons.update(unsure)
        total_queued += queued
        total += STUDENTS
        top = "; ".join(f"{why} ×{n}" for why, n in reasons.most_common(3))
        print(f"| {lab} | {STUDENTS} | {queued} ({queued / STUDENTS:.1%}) | {kept_points / (12 * STUDENTS):.1%} | {top} |")
    print(f"\nall labs: {total_queued} of {total} honest submissions queued ({total_queued / total:.1%})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT.parent))
    raise SystemExit(main(sys.argv[1:]))
