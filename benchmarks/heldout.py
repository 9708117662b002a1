"""The rationale reader on texts it was not tuned on: ``tests/rationale_heldout/<set>/<lab>.toml``.

Each set was written by a different writer, blind to the other sets; each lab's file holds honest and gaming rationales written from the lab's notebook, its reference evidence
(``examples/submissions/<lab>-<track>.json``) and the rubric only, without reading the reader's rules, each with its
writer's judgement of the fair points per item; the history shows each set committed before the reader was changed
for it (``set1`` was measured once before the reader changed, and its results were seen while the reader was changed
afterwards; ``set2`` was committed before those changes were committed and first read after them).  Every text is put into its track's reference bundle (with its closed choices), resealed and graded.

    python benchmarks/heldout.py            # per set and lab: honest points kept, gaming texts paid above their fair points
    python benchmarks/heldout.py --texts    # and one line per text
    python benchmarks/heldout.py set2       # one set

Figures go in ``docs/grading.md`` beside the tuned corpus's (``tests/rationale_corpus``).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "tests" / "rationale_heldout"
EXAMPLES = ROOT / "examples" / "submissions"
CHOICES = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk")
ITEMS = ("rationale_length", "rationale_cites_evidence", "rationale_names_recommendation", "rationale_names_rejected",
         "rationale_names_limitation", "rationale_names_trigger")


def texts(lab: str, kept: str) -> list[dict]:
    """The held-out texts of ``lab`` in the set ``kept``."""
    return tomllib.loads((HELDOUT / kept / f"{lab}.toml").read_text(encoding="utf-8"))["text"]


def sets() -> list[str]:
    return sorted(path.name for path in HELDOUT.iterdir() if path.is_dir())


def labs(kept: str) -> list[str]:
    return sorted(path.stem for path in (HELDOUT / kept).glob("*.toml"))


def bundle_for(lab: str, entry: dict) -> dict:
    """The track's reference bundle with the text and its closed choices (a choice the bundle leaves to the lab, as
    Lab 11's recommendation, stays as the bundle has it), resealed."""
    from mlsys_grader.core.jsonio import sha256_of

    data = json.loads((EXAMPLES / f"{lab}-{entry['track']}.json").read_text(encoding="utf-8"))
    synthesis = data["synthesis"]
    for name in CHOICES:
        if name in entry and synthesis.get(name) is not None:
            synthesis[name] = entry[name]
    synthesis["rationale"] = entry["rationale"]
    data.pop("content_hash", None)
    data["content_hash"] = sha256_of(data)
    return data


def paid(lab: str, entry: dict) -> tuple[dict[str, float], tuple[str, ...], list[str]]:
    """(points per rationale item, staff flags, uncertain items) of the text graded in its bundle."""
    from mlsys_grader import grade_bundle

    report = grade_bundle(bundle_for(lab, entry))
    points = {item.item: item.points for item in report.parts["synthesis"].items if item.item in ITEMS}
    return points, tuple(report.flags), [item.item for item in report.uncertain_items()]


def measure(lab: str, kept: str) -> dict:
    """One lab's figures: honest points kept of their fair total, gaming texts paid above their fair points."""
    honest_fair = honest_paid = 0.0
    over: list[tuple[str, float, float]] = []
    lines = []
    uncertain = 0
    honest = 0
    for entry in texts(lab, kept):
        points, flags, unsure = paid(lab, entry)
        fair = {item: float(entry["fair"].get(item, 0)) for item in ITEMS}
        total, fair_total = sum(points.values()), sum(fair.values())
        if entry["kind"] == "honest":
            honest += 1
            honest_fair += fair_total
            honest_paid += min(total, fair_total)
            uncertain += bool(unsure)
        elif total > fair_total + 1e-9:
            over.append((entry["name"], total, fair_total))
        lost = [f"{item.removeprefix('rationale_')} {points[item]:g}/{fair[item]:g}" for item in ITEMS
                if abs(points[item] - fair[item]) > 1e-9]
        lines.append(f"  {entry['kind']:6} {entry['name']:40} {total:4g}/{fair_total:<4g} {', '.join(lost)}"
                     f"{'  flags: ' + ','.join(flags) if flags else ''}{'  uncertain: ' + ','.join(unsure) if unsure else ''}")
    return {"set": kept, "lab": lab, "honest": honest, "kept": honest_paid / honest_fair if honest_fair else 1.0,
            "honest_paid": honest_paid, "honest_fair": honest_fair, "uncertain": uncertain,
            "gaming": sum(e["kind"] == "gaming" for e in texts(lab, kept)), "over": over, "lines": lines}


def main(argv: list[str]) -> int:
    print("| set | lab | honest texts | honest points kept | honest texts queued (uncertain) | gaming texts | paid above fair |")
    print("|---|---|---|---|---|---|---|")
    chosen = [name for name in sets() if name in argv] or sets()
    results = [measure(lab, kept) for kept in chosen for lab in labs(kept)]
    for r in results:
        over = "; ".join(f"{name} {p:g} > {f:g}" for name, p, f in r["over"]) or "none"
        print(f"| {r['set']} | {r['lab']} | {r['honest']} | {r['honest_paid']:g}/{r['honest_fair']:g} ({r['kept']:.1%}) | {r['uncertain']} "
              f"| {r['gaming']} | {over} |")
    if "--texts" in argv:
        for r in results:
            print(r["set"], r["lab"])
            print("\n".join(r["lines"]))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
