"""The reader's rules on the cases that were paid without the work, in every shipped lab (the tuned side: these texts
were written knowing the rules; ``tests/rationale_heldout`` holds the texts that were not).

Each lab's edge reference bundle is graded with an honest base text, then with chat filler, a bare list of numbers, the
base text taken back in other words, and numbers tied to an option but quantifying nothing rejected."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import needs
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
    "other verbs": "{rec} gets my sign-off and {rej} is declined: {rej} needs {rej_n} against {rec_n}. {limitation} {trigger}",
    "binning": "I am binning {rej} ({rej_n} against {rec_n}); {rec} stays and ships. {limitation} {trigger}",
    "against the obvious": "The obvious answer is {rej}, and I talked myself out of it: it needs {rej_n} against {rec_n}, so I "
                           "say no to {rej} and keep {rec}. {limitation} {trigger}",
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


# A firm stance on one side and the other option named with nothing against it: the other stance follows
@pytest.mark.parametrize("lab", LABS)
def test_a_firm_rejection_and_a_named_recommendation_earn_both_naming_items_certainly(lab):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    text = f"{rec[0].upper() + rec[1:]} needs {rec_n}. I reject {rej}, which needs {rej_n}. {limitation} {trigger}"
    points, report = _points(lab, text)
    assert sum(points.values()) == 12, points
    assert report.uncertain_items() == []


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("against", [
    "{Rec} probably is not the way to go either.",  # a hedge against the recommendation
    "Thinking it over, I would not actually put my name to any of this.",  # a refusal the reader cannot place
])
def test_nothing_is_inferred_for_a_recommendation_the_text_doubts(lab, against):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    text = (f"{rec[0].upper() + rec[1:]} needs {rec_n}. I reject {rej}, which needs {rej_n}. {limitation} {trigger} "
            + against.format(Rec=rec[0].upper() + rec[1:]))
    points, _ = _points(lab, text)
    assert points["names_recommendation"] == 0 and points["names_rejected"] == 2, points


@pytest.mark.parametrize("lab", LABS)
def test_a_short_list_with_one_verdict_infers_nothing(lab):
    rec, rej, rej_n, rec_n, _, _ = CASES[lab]
    points, _ = _points(lab, f"{rec}: {rec_n}; {rej}: {rej_n} (rejected)")
    assert points["names_recommendation"] == 0 and points["length"] == 0, points


# The choices' labels pasted into a form, capitals and all, with no number: not the student's own text
FORM_FILLED = {
    "lab02": "Based on the evidence, Run locally is the best choice because it provides the optimal trade-off. The main "
             "limitation is that Connection rate may vary, and I would re-evaluate if the Observation or power requirement "
             "changes.",
    "lab08": "Based on the evidence, Faster arithmetic is the best choice because it provides the best performance. The main "
             "limitation is that Stage timing may change. I would re-evaluate the decision if the Schedule or cost limit is "
             "crossed.",
}


@pytest.mark.parametrize("lab", sorted(FORM_FILLED))
def test_a_form_filled_with_the_labels_and_no_number_loses_its_length(lab):
    points, report = _points(lab, FORM_FILLED[lab])
    assert points["length"] == 0 and points["cites_evidence"] == 0, points
    assert any("restates the labels" in f.message for f in report.findings)
    # the same words in the student's own case are not a pasted form
    points, _ = _points(lab, FORM_FILLED[lab].replace("Run locally", "run locally").replace("Connection", "connection")
                        .replace("Observation", "observation").replace("Faster", "faster").replace("Stage", "stage")
                        .replace("Schedule", "schedule"))
    assert points["length"] == 2, points


def test_a_rationale_partly_in_another_language_is_read_and_what_is_missed_goes_to_staff():
    text = ("Mi recomendación: compiled with fusion. En el Jetson casi todo el tiempo es dispatch, so eager execution es la "
            "opción que rechazo: eager needs 66.168 ms against 18.418 ms with fusion. El riesgo: operator interactions are "
            "not modelled, y hay que revisar si cambia la activation memory.")
    points, report = _points("lab07", text)
    assert points["length"] == 2 and points["cites_evidence"] == 4 and points["names_limitation"] == 1, points
    lost = {i.item for i in report.parts["synthesis"].items if i.item.startswith("rationale_") and i.points < i.max_points}
    assert lost and lost <= {i.item for i in report.uncertain_items()}
    assert all(i.certainty_reason.startswith("partly not English") for i in report.uncertain_items())


def test_a_list_of_numbers_counts_only_its_words():
    points, _ = _points("lab02", "16, 50, 1934.64, 24, 2, 56.04, 96, 32.24, 89, 92, 0.442, 100, 300, 8.0, 11.0 - see the "
                                 "evidence above for all values.")
    assert points["length"] == 0, points


@pytest.mark.parametrize("text, contradicts", [
    # a consequence after a comma is a main clause of its own, even after a concession ("while …")
    ("I went with compiled with fusion and rejected eager. Eager finishes one request in 0.285 ms while compiled needs "
     "2.385 ms, so the numbers favour eager execution for this endpoint.", True),
    # but a condition governs it
    ("I recommend compiled with fusion and reject eager: 66.168 ms against 18.418 ms. If the count drops below 16, eager "
     "is faster, so I would switch to eager.", False),
    # "once more" sets no condition
    ("I recommend compiled with fusion and reject eager: 66.168 ms against 18.418 ms. Looking at the numbers once more, "
     "the evidence clearly favours eager execution.", True),
])
def test_a_later_sentence_for_the_alternative_is_read_where_it_stands(text, contradicts):
    points, _ = _points("lab07", text + " Operator interactions are not modelled. I would revisit this if the activation "
                                        "memory changes.")
    assert (points["names_recommendation"] == 0) == contradicts, points


@pytest.mark.parametrize("lab", LABS)
def test_a_list_of_labels_and_numbers_earns_nothing(lab):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    for separator in (" | ", " / ", "; ", "\n"):
        text = separator.join([rec, rej, rec_n, rej_n, limitation.rstrip("."), trigger.rstrip(".")])
        points, report = _points(lab, re.sub(r"I would revisit this if (the )?", "", text))
        assert sum(points.values()) == 0, (separator, points)
        assert any("list of labels and numbers" in f.message for f in report.findings)


def test_a_tick_beside_a_number_checks_a_budget_and_never_contradicts():
    text = ("Compiled with fusion → 18.418 ms ✓ deadline. Eager execution → 66.168 ms ✓ deadline too, native ✓. I "
            "recommend compiled with fusion and reject eager execution, which needs 66.168 ms against 18.418 ms. Operator "
            "interactions are not modelled. I would revisit this if the activation memory changes.")
    points, report = _points("lab07", text)
    assert sum(points.values()) == 12, [f.message for f in report.findings if f.part == "synthesis"]


def test_words_typed_in_a_hurry_are_read():
    def limitation(text: str) -> float:
        data = solved("lab07", "edge")
        data["synthesis"].update(residual_risk="timing_assumptions", rationale=(
            f"going w/ compiled + fusion, eager is out: 66.168 ms vs 18.418 ms. {text} if the activation memory changes i "
            "redo this."))
        items = grade_bundle(reseal(data)).parts["synthesis"].items
        return next(i.points for i in items if i.item == "rationale_names_limitation")

    assert limitation("all the timings r illustrative, not measured on the board.") == 1
    assert limitation("all the timings b illustrative, not measured on the board.") == 0  # the reading rests on "r"


# The book's own exports (../shared/marimo-exports, sessions run in the book's notebooks): each one's rationale pasted into
# the reference of every other track pays no evidence (on its own track the part E numbers are the same scenario's)
BOOK_EXPORTS = ("lab02-edge", "lab02-mobile", "lab07-cloud", "lab07-tinyml", "lab08-cloud", "lab08-tinyml", "lab11-edge",
                "lab11-tinyml")


@pytest.mark.parametrize("name", BOOK_EXPORTS)
def test_the_books_own_rationale_pasted_into_another_track_pays_no_evidence(name):
    export = json.loads(needs.shared_path("marimo-exports", f"{name}.json").read_text(encoding="utf-8"))
    lab, own = name.split("-")
    text = export["final_decision"]["rationale"]
    assert len(text.split()) >= 20
    for track in ("tinyml", "mobile", "edge", "cloud"):
        if track != own:
            points, _ = _points(lab, text, track)
            assert points["cites_evidence"] == 0, (track, points)


@pytest.mark.parametrize("lab", LABS)
def test_until_after_a_claim_bounds_it_in_time_and_does_not_make_it_a_condition(lab):
    rec, rej, rej_n, rec_n, limitation, trigger = CASES[lab]
    text = (f"I recommend {rec} and reject {rej}: {rej} needs {rej_n} where {rec} needs {rec_n}. {limitation} {trigger} "
            f"Thinking it over, {rec} should stay off the table until the numbers are measured.")
    points, _ = _points(lab, text)
    assert points["names_recommendation"] == 0 and points["names_rejected"] == 0, points
