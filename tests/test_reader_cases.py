"""The reader's rules on the cases that were paid without the work, in every shipped lab (the tuned side: these texts
were written knowing the rules; ``tests/rationale_heldout`` holds the texts that were not).

Each lab's edge reference bundle is graded with an honest base text, then with chat filler, a bare list of numbers, the
base text taken back in other words, and numbers tied to an option but quantifying nothing rejected."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from conftest import reseal, solved

from mlsys_grader import grade_bundle

# (recommended option as people write it, rejected option, a number of the rejected option, one of the recommended,
#  the limitation and trigger as sentences) for each lab's edge bundle
CASES = {
    "lab02": ("running locally", "sending the raw input", "1934.64 ms", "32.0 ms",
              "The connection rate may vary.", "I would revisit this if the observation or power requirement changes."),
    "lab07": ("compiled with fusion", "eager execution", "66.168 ms", "18.418 ms",
              "Operator interactions are not modelled.", "I would revisit this if the activation memory changes."),
    "lab08": ("faster arithmetic", "prefetch input", "233.6 ms", "200.4 ms",
              "Stage timing may change.", "I would revisit this if training memory exceeds capacity."),
    "lab11": ("the Jetson AGX Orin", "the Orin NX", "3.631 ms", "3.615 ms",
              "Power draw differs from the TDP proxy.", "I would revisit this if the energy budget tightens."),
}
LABS = tuple(CASES)


def _points(lab: str, text: str, track: str = "edge") -> tuple[dict[str, float], object]:
    data = solved(lab, track)
    data["synthesis"]["rationale"] = text
    report = grade_bundle(reseal(data))
    return {i.item.removeprefix("rationale_"): i.points for i in report.parts["synthesis"].items
            if i.item.startswith("rationale_")}, report


def _honest(lab: str) -> str:
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    return f"I recommend {rec} and reject {rej}: {rej} needs {rej_n} where {rec} needs {rec_n}. {limitation} {trigger}"


@pytest.mark.parametrize("lab", LABS)
def test_the_honest_base_text_earns_every_rationale_point(lab):
    points, _ = _points(lab, _honest(lab))
    assert sum(points.values()) == 12, points


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("filler", [
    "Great question! Based on the lab, {rec} offers a compelling balance at about {rec_n}, while {rej} is less "
    "attractive overall. Ultimately the right choice depends on your goals. I hope this helps!",
    "Certainly! Here is a rationale. {rec} is the best option here, at {rec_n}, and {rej} needs {rej_n}. {limitation} "
    "{trigger} Let me know if you need anything else!",
])
def test_chat_filler_earns_at_most_half_the_rationale_points(lab, filler):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    points, report = _points(lab, filler.format(rec=rec, rej=rej, rej_n=rej_n, rec_n=rec_n, limitation=limitation,
                                                trigger=trigger))
    assert sum(points.values()) <= 6, points
    assert "generated" in report.flags


@pytest.mark.parametrize("lab", LABS)
def test_a_bare_list_of_numbers_beside_the_option_labels_earns_at_most_two_points(lab):
    rec, rej, rej_n, rec_n, _, _ = CASES[lab]
    text = f"{rec} {rec_n}\n{rej} {rej_n}\n{rec} {rec_n} {rej_n}\n{rej} {rej_n} {rec_n}\nnumbers from the lab runs above"
    points, _ = _points(lab, text)
    assert sum(points.values()) <= 2, points


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("takeback", [
    "All things considered, though, {rej} is the better choice for this system.",
    "Overall the saved evidence favours {rej}.",
    "In the end I'd rather stick with {rej}.",
    "That said, {rej} would serve us better.",
    "On second thought, I am not comfortable committing to {rec}.",
])
def test_a_text_that_takes_its_recommendation_back_loses_both_naming_items(lab, takeback):
    rec, rej, *_ = CASES[lab]
    points, _ = _points(lab, _honest(lab) + " " + takeback.format(rec=rec, rej=rej))
    assert points["names_recommendation"] == 0 and points["names_rejected"] == 0, points


@pytest.mark.parametrize("lab", LABS)
def test_numbers_that_quantify_nothing_rejected_earn_half_the_evidence_item_certainly(lab):
    rec, rej, _, rec_n, limitation, trigger = CASES[lab]
    points, report = _points(lab, f"I recommend {rec}, which needs {rec_n}. I reject {rej}. {limitation} {trigger}")
    assert points["cites_evidence"] == 2, points
    assert "rationale_cites_evidence" not in [item.item for item in report.uncertain_items()]
    [finding] = [f for f in report.findings if f.rubric_item == "rationale_cites_evidence"]
    assert "Quantify the rejected alternative" in finding.message and finding.keeps == 0.5


def test_a_decimal_claims_its_precision():
    rec, rej, *_ , limitation, trigger = CASES["lab08"]
    exact, _ = _points("lab08", f"I recommend {rec} and reject {rej}, which needs 233.6 ms. {limitation} {trigger}")
    assert exact["cites_evidence"] == 4
    off, _ = _points("lab08", f"I recommend {rec} and reject {rej}, which needs 234.5 ms. {limitation} {trigger}")
    assert off["cites_evidence"] == 0, "within 1 % of 233.6 ms, but not at the precision it is written with"


def _corpus_honest() -> list:
    cases = []
    for path in sorted((Path(__file__).parent / "rationale_corpus").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        cases += [(path.stem, entry) for entry in data["honest"] + data.get("honest_forms", [])]
    return cases


# Measured: this honest text cites numbers that are the same on both tracks (Lab 08's shared host and its update counts)
SHARED_NUMBERS = {("lab08", "percent-style", "tinyml")}


def test_another_tracks_rationale_pasted_pays_no_evidence():
    paid = set()
    for lab, entry in _corpus_honest():
        for track in ("tinyml", "mobile", "edge", "cloud"):
            if track == entry["track"]:
                continue
            points, _ = _points(lab, entry["rationale"], track)
            if points["cites_evidence"] > 0:
                paid.add((lab, entry["name"], track))
    assert paid == SHARED_NUMBERS


# Honest forms read the same way in every lab (each earns every rationale point)
FORMS = {
    "question and answer": "Q: Which option do I recommend? A: {rec}, at {rec_n}.\nQ: What do I reject? A: {rej}, which needs "
                           "{rej_n}.\nQ: Limitation? A: {limitation}\nQ: Trigger? A: {trigger}",
    "ticks and crosses": "{rec} \u2714 ({rec_n})\n{rej} \u2718 ({rej_n} against {rec_n})\n{limitation} {trigger}",
    "headline": "{rec} over {rej}. {rej} needs {rej_n} against {rec_n}. {limitation} {trigger}",
    "elimination": "{rej} is out: it needs {rej_n} against {rec_n}. That leaves {rec}. {limitation} {trigger}",
    "subjunctive": "It is proposed that {rec} be retained and that {rej} be rejected, since {rej} needs {rej_n} against "
                   "{rec_n}. {limitation} {trigger}",
    "progressive": "I am keeping {rec} and rejecting {rej}: {rej} needs {rej_n} against {rec_n}. {limitation} {trigger}",
    "table verdict column": "| option | time | verdict |\n|---|---|---|\n| {rec} | {rec_n} | chosen |\n| {rej} | {rej_n} | "
                            "rejected, slower than {rec_n} |\n\n{limitation} {trigger}",
}


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_honest_forms_are_read_in_every_lab(lab, form):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    text = FORMS[form].format(rec=rec[0].upper() + rec[1:] if form == "headline" else rec, rej=rej, rej_n=rej_n,
                              rec_n=rec_n, limitation=limitation, trigger=trigger)
    points, report = _points(lab, text)
    assert sum(points.values()) == 12, (points, [f.message for f in report.findings if f.part == "synthesis"])
