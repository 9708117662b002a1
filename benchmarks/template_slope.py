"""The paraphrase slope: ``solve``'s template rewritten one sentence at a time (the hand rewrites of
``tests/test_generated.py``), both labs, every track, seeds None and 3, in the template's order and last sentence
first; prints the rationale points after each rewrite, whether they ever fall, and the largest step.

    python benchmarks/template_slope.py

``F`` marks a text flagged as the template (no rationale point), ``t`` one below the flag that still pays only a
share (a third or two thirds withheld), ``-`` one read as the student's own.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import LABS, TRACKS, reseal, solved  # noqa: E402  (the tests' bundle factory)
from test_generated import _rewrite, _sentences  # noqa: E402

from mlsys_grader import grade_bundle  # noqa: E402
from mlsys_grader.core import generated  # noqa: E402


def _step(data: dict, text: str) -> tuple[str, float]:
    data = json.loads(json.dumps(data))
    data["synthesis"]["rationale"] = text
    report = grade_bundle(reseal(data))
    points = sum(i.points for i in report.parts["synthesis"].items if i.item.startswith("rationale_"))
    found = [f for f in report.findings if f.criterion == "generated" and f.rubric_item]
    mark = "F" if any(f.message == generated.MESSAGE for f in found) else "t" if found else "-"
    return mark, points


def main() -> int:
    worst: dict[str, float] = {"template": 0.0, "last first": 0.0}
    falls = 0
    print("| lab | track | seed | order | points after k sentences rewritten (k = 0 …) | largest step |")
    print("|---|---|---|---|---|---|")
    for lab in LABS:
        for track in TRACKS:
            for seed in (None, 3):
                data = solved(lab, track, seed)
                template = _sentences(data["synthesis"]["rationale"])
                for order in ("template", "last first"):
                    indices = list(range(len(template)))
                    if order == "last first":
                        indices.reverse()
                    row = []
                    for k in range(len(template) + 1):
                        done = set(indices[:k])
                        row.append(_step(data, " ".join(_rewrite(s) if i in done else s for i, s in enumerate(template))))
                    points = [p for _, p in row]
                    steps = [b - a for a, b in itertools.pairwise(points)]
                    falls += sum(step < 0 for step in steps)
                    worst[order] = max(worst[order], *(abs(step) for step in steps))
                    cells = " ".join(f"{mark}{p:g}" for mark, p in row)
                    print(f"| {lab} | {track} | {seed} | {order} | {cells} | {max(steps):g} |")
    print(f"\nlargest step between adjacent rewrites: {worst['template']:g} points in the template's order, "
          f"{worst['last first']:g} last sentence first; steps where points fall: {falls}")
    return 0 if worst["template"] <= 4 and not falls else 1


if __name__ == "__main__":
    raise SystemExit(main())
