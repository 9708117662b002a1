"""Collusion: identical evidence and near-identical rationales, grouped."""

from __future__ import annotations

import json

from mlsys_grader import solve
from mlsys_grader.collusion import (
    MIN_PARTS,
    RATIONALE_THRESHOLD,
    Submission,
    evidence_digest,
    find_groups,
    jaccard,
    shingles,
)
from mlsys_grader.core.models import load_bundle

TEXT = ("I recommend compiled execution with fusion because at 120 executions the compiled total of 8.5 ms beats "
        "eager at 11.2 ms, and I reject eager execution; the limitation is unmodeled operator interactions and I "
        "would re-evaluate when the operator set changes or the batch size grows beyond the memory budget of the target.")
OTHER = ("Eager wins on this edge device: compilation never repays itself with only ten runs and two recompilations, "
         "so the tax is not worth paying. Fusion would save 100 MB of traffic but the fallback path for the dynamic "
         "slice operator makes the compiled plan fragile, which is the limitation I keep in mind for the next release.")


def test_shingles_and_jaccard():
    assert jaccard(shingles(TEXT), shingles(TEXT)) == 1.0
    assert jaccard(shingles(TEXT), shingles(OTHER)) < 0.05
    one_word = TEXT.replace("beats", "exceeds")
    assert RATIONALE_THRESHOLD <= jaccard(shingles(TEXT), shingles(one_word)) < 1.0


def test_evidence_digest_ignores_times_but_not_predictions():
    bundle = solve("lab07", "edge", 21)
    data = json.loads(bundle.to_json())
    data["evidence"]["A"]["captured_at"] = "2030-01-01T00:00:00Z"
    retimed = load_bundle(json.dumps(data))
    assert evidence_digest(retimed) == evidence_digest(bundle)
    data["evidence"]["A"]["prediction"] = "lt25" if data["evidence"]["A"]["prediction"] != "lt25" else "gt75"
    assert evidence_digest(load_bundle(json.dumps(data))) != evidence_digest(bundle)
    data["evidence"] = {k: v for k, v in list(data["evidence"].items())[: MIN_PARTS - 1]}
    assert evidence_digest(load_bundle(json.dumps(data))) is None


def test_groups_join_pairs_and_keep_independent_work_apart():
    subs = [
        Submission(0, "lab07", "e1", TEXT, "a"),
        Submission(1, "lab07", "e2", TEXT.replace("beats", "exceeds"), "b"),
        Submission(2, "lab07", "e3", OTHER, "c"),
        Submission(3, "lab07", "e1", "short", "d"),
        Submission(4, "lab11", "e9", TEXT, "e"),       # another lab: never paired
        Submission(5, "lab07", "e1", "", "a"),          # the same student twice: not collusion with itself
    ]
    groups = find_groups(subs)
    assert [(g.group_id, g.members, g.bases) for g in groups] == [("G1", [0, 1, 3], ["evidence", "rationale"])]
    rationale = [p for p in groups[0].pairs if p.basis == "rationale"]
    assert [(p.left, p.right) for p in rationale] == [(0, 1)] and rationale[0].similarity >= RATIONALE_THRESHOLD


def test_many_copies_form_one_group_without_pairwise_blowup():
    subs = [Submission(i, "lab07", None, TEXT + f" Student number {i}.", str(i)) for i in range(300)]
    groups = find_groups(subs)
    assert len(groups) == 1 and len(groups[0].members) == 300
