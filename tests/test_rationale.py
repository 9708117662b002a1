"""The rationale reader: quantities read as people write them, choices read in context.

The first tests reproduce what was measured on the earlier reader (named in each docstring);
the rest pin the reading rules of :mod:`mlsys_grader.core.rationale` one by one.
"""

from __future__ import annotations

import itertools
import random

import pytest
from conftest import reseal, solved

from mlsys_grader import grade_bundle
from mlsys_grader.api import default_replay, default_rubric
from mlsys_grader.core import rationale as R
from mlsys_grader.core.context import build_context
from mlsys_grader.core.labspec import Choice
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.labs import get_lab, lab_ids

LABS = lab_ids()
TRACKS = ("tinyml", "mobile", "edge", "cloud")
ITEMS = ("rationale_cites_evidence", "rationale_names_recommendation", "rationale_names_rejected",
         "rationale_names_limitation", "rationale_names_trigger")


def _report(lab, track, seed, text, **synthesis):
    bundle = solved(lab, track, seed)
    bundle["synthesis"].update(rationale=text, **synthesis)
    return grade_bundle(reseal(bundle))


def _lost(lab, track, seed, text, **synthesis) -> set[str]:
    report = _report(lab, track, seed, text, **synthesis)
    return {item.item for item in report.parts["synthesis"].items if item.points < item.max_points}


def _matches(text: str, evidence: list[tuple[float, str]], tol: float = 0.01) -> list[bool]:
    """Whether each quantity cited in ``text`` agrees with ``evidence``, looked up as grading looks up a part's."""
    index = R._evidence._indexed(evidence)
    return [R._evidence._agrees([q], index, tol) for q in R.cited_quantities(text)]


def _names(text: str, keywords: list[str]) -> bool:
    """Whether ``text`` names an option called ``keywords``, read as grading reads option names in a
    stance and a selected limitation (both readings must agree)."""
    choice = Choice("option", "Option", tuple(keywords))
    reader = R.Reader(R.ChoiceTerms("names", (choice,), frozenset({"option"}), frozenset()), (), (choice,))
    doc = R._stances._Text(text)
    as_option = reader.names is not None and any(True for _ in reader.names.finditer(doc))
    as_limitation = R._stances._named(doc, reader.limitations["option"], reader.limitations) == R.NAMED
    assert as_option == as_limitation, (text, keywords)
    return as_option


def _stances(lab: str, track: str, seed, text: str) -> set[tuple[str, str]]:
    lab_spec = get_lab(lab)
    terms = lab_spec.final_choice_terms(bundle_from_mapping(solved(lab, track, seed)))
    return {(s.option, s.stance) for s in R.read_stances(text, R.reader_for(default_replay().memos, lab_spec, terms))}


# -- measured on the earlier reader ------------------------------------------------------------

KEYWORD_SENTENCE = (
    "Recommendation eager compiled fusion hold none no feasible primary alternative neither; limitation: timing "
    "unmodeled unmeasured power tdp contract shape mix; trigger: execution count shape operator set activation "
    "latency energy support; 1x 100%")


@pytest.mark.parametrize("lab, track, seed", [(lab, track, seed) for lab in LABS for track in TRACKS for seed in (None, 3)])
def test_one_fixed_keyword_sentence_no_longer_earns_the_rationale_points(lab, track, seed):
    """Measured: this ~30-word sentence earned every rationale point on every lab, track and seed."""
    assert set(ITEMS) <= _lost(lab, track, seed, KEYWORD_SENTENCE)


def test_threshold_is_not_hold_and_nonetheless_is_not_none():
    """Measured: "threshold" named *hold* and "Nonetheless" named *none* (substring matching)."""
    hold = dict(recommendation="hold", rejected_alternative="compiled_fused", reevaluation_trigger="operator_set",
                residual_risk="operator_interactions")
    assert "rationale_names_recommendation" in _lost(
        "lab07", "mobile", 1, "The threshold is 239.14 ms compiled; I reject compiled with fusion. Operator interactions "
        "are unmodelled; if the operator set changes I will look again.", **hold)
    assert "rationale_names_recommendation" in _lost(
        "lab11", "cloud", 2, "Nonetheless, I reject the A100 at 6.2 ms. The workload shape mix may change; I would "
        "revisit if execution support changes.")


def test_arguing_for_the_rejected_option_costs_both_naming_items():
    """Measured: a rationale that recommends the rejected option passed as long as both names appeared."""
    report = _report("lab07", "edge", None, "I recommend eager execution and reject compiled with fusion: 66.17 ms "
                     "against 18.42 ms. Timings are illustrative; I would revisit if the execution count changes.",
                     recommendation="compiled_fused", rejected_alternative="eager",
                     reevaluation_trigger="execution_count", residual_risk="timing_assumptions")
    [finding] = [f for f in report.findings if f.part == "synthesis"]
    assert (finding.criterion, finding.rubric_item, finding.also_costs) == (
        "rationale", "rationale_names_recommendation", ("rationale_names_rejected",))
    assert finding.message == ("Your rationale argues for the alternative you reject ('i recommend eager execution'); "
                               "make it defend your recommendation against your rejected alternative.")
    assert report.parts["synthesis"].score == report.parts["synthesis"].max_score - 4


@pytest.mark.parametrize("lab, track, text", [
    ("lab07", "edge", "90.7 percent"),   # percent as a word
    ("lab07", "edge", "90.7 per cent"),
    ("lab11", "edge", "682.7 FLOP/B"),   # the notebook's own display unit
    ("lab11", "edge", "31.5 MFLOPS"),    # extra work, written as people write it
    ("lab11", "edge", "31.5 MFLOPs"),
    ("lab11", "edge", "2147 MFLOP"),
    ("lab07", "edge", "3.6x faster"),    # 66.17 ms / 18.42 ms, computed by the student
    ("lab07", "edge", "3.6 times faster"),
    ("lab07", "edge", "0.1 GB"),         # 100.663 MB
])
def test_honest_quantities_that_lost_the_citation_now_earn_it(lab, track, text):
    """Measured: each of these cited a real number but earned no citation point."""
    synthesis = dict(recommendation="compiled_fused", rejected_alternative="eager", reevaluation_trigger="execution_count",
                     residual_risk="timing_assumptions") if lab == "lab07" else {}
    report = _report(lab, track, None, f"The evidence shows {text} against the baseline for this track.", **synthesis)
    cites = next(item for item in report.parts["synthesis"].items if item.item == "rationale_cites_evidence")
    assert cites.points > 0, [f.message for f in report.findings if f.rubric_item == "rationale_cites_evidence"]


def test_british_spelling_phone_and_hold_phrasings_are_read():
    """Measured: "unmodelled", "behaviour", "not measured on the phone" and "no change for now" named nothing."""
    hold = dict(recommendation="hold", rejected_alternative="compiled_fused", reevaluation_trigger="operator_set")
    text = ("No change for now: I reject compiled with fusion, since custom attention falls back at 1269.91 µs. {risk}; "
            "if the operator set changes I will look again.")
    assert _lost("lab07", "mobile", 1, text.format(risk="The behaviour was not measured on the phone"),
                 residual_risk="target_measurement", **hold) == set()
    assert _lost("lab07", "mobile", 1, text.format(risk="Operator interactions are unmodelled"),
                 residual_risk="operator_interactions", **hold) == set()


@pytest.mark.parametrize("track, primary, alternative", [
    ("tinyml", "nRF52840", "ESP32-S3"), ("tinyml", "Nordic nRF52840", "ESP32"),
    ("mobile", "Apple M2", "iPhone 15 Pro"), ("mobile", "M2 Neural Engine", "A17 Pro"),
    ("edge", "Jetson AGX Orin", "Orin NX"), ("edge", "AGX Orin", "Jetson Orin NX"),
    ("cloud", "H100", "A100"), ("cloud", "NVIDIA H100", "NVIDIA A100"),
])
def test_lab11_candidates_are_named_by_their_hardware_as_people_write_it(track, primary, alternative):
    """Measured: "Jetson AGX Orin", "Orin NX" and "Apple M2" did not name the candidates."""
    text = f"I choose the {primary} and reject the {alternative}."
    assert _stances("lab11", track, None, text) == {("primary", R.REC), ("alternative", R.REJ)}


def test_candidate_names_come_from_the_hardware_registry_and_never_overlap():
    lab = get_lab("lab11")
    from mlsys_grader.labs.lab11.evaluate import ev
    from mlsys_grader.labs.lab11.judge import track_options as _track_options
    for track in TRACKS:
        options, _ = _track_options(lab, track)
        names = {o.value: {R.normalise(k) for k in o.keywords} for o in options if o.value in ("primary", "alternative")}
        scenario = ev.get_track_scenario(track)
        assert R.normalise(scenario.hardware.name) in names["primary"], track
        assert R.normalise(scenario.alternative.name) in names["alternative"], track
        assert not names["primary"] & names["alternative"], track
    assert lab.tracks == TRACKS


# -- quantities --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["0.42 ms", "420 µs", "420 μs", "420 us", "4.2e-4 s", "0.00042 s", "420 microseconds",
                                  "0.42 milliseconds", "4.2 × 10^-4 s", "4.2×10⁻⁴ s"])
def test_a_time_matches_in_any_unit(text):
    assert _matches(text, [(420.3, "microsecond")]) == [True]


@pytest.mark.parametrize("text, evidence", [
    ("88%", (0.8799, R.FRACTION)), ("88 percent", (0.8799, R.FRACTION)), ("88 per cent", (0.8799, R.FRACTION)),
    ("3.75x", (3.7485, R.RATIO)), ("3.7×", (3.7485, R.RATIO)), ("3.75X", (3.7485, R.RATIO)),
    ("3.75 times", (3.7485, R.RATIO)), ("3.75-fold", (3.7485, R.RATIO)), ("a factor of 3.75", (3.7485, R.RATIO)),
    ("1.2 MB", (1.2, "megabyte")), ("1200 kB", (1.2, "megabyte")), ("1200 KB", (1.2, "megabyte")),
    ("1.14 MiB", (1.2, "megabyte")), ("0.0012 GB", (1.2, "megabyte")), ("3.0 KiB", (3072, "B")),
    ("$0.003", (0.003, "dollar")), ("0.003 USD", (0.003, "dollar")), ("0.003 dollars", (0.003, "dollar")),
    ("$1 per hour", (1.0, "dollar/h")), ("17 mJ", (17.0, "millijoule")), ("0.017 J", (17.0, "millijoule")),
    ("68.9 µJ", (0.0689, "millijoule")), ("1.3 kJ", (1.3, "kilojoule")), ("60 W", (60.0, "watt")),
    ("682.7 FLOP/B", (682.6667, "flop/B")), ("682.7 FLOPs/byte", (682.6667, "flop/B")),
    ("139 TFLOP/s", (1.39e14, "flop/s")), ("139 TFLOPS", (1.39e14, "flop/s")), ("2.1 GFLOPs", (2.147e9, "flop")),
    ("31.5 MFLOPS", (31457280, "flop")),
])
def test_units_as_people_write_them(text, evidence):
    assert _matches(text, [evidence]) == [True]


def test_dimensions_never_mix():
    """mlsysim's registry makes bytes and dollars dimensionless; the base unit keeps them apart."""
    assert _matches("8 B", [(8.0, R.RATIO)]) == [False]
    assert _matches("$8", [(8.0, "B")]) == [False]
    assert _matches("18.42 MB", [(18.42, "millisecond")]) == [False]
    assert _matches("3.7x", [(3.7, R.FRACTION)]) == [False], "a multiplier is a ratio, never a share"


def test_bare_numbers_and_far_values_do_not_count():
    assert R.cited_quantities("I chose 50 executions, 3 launches and a 1024 by 1024 tile on the H100 and A17") == []
    assert _matches("0.5 ms", [(420.3, "microsecond")]) == [False]


def test_the_rounding_the_student_wrote_is_respected_and_capped():
    assert _matches("340 ms", [(340.96, "millisecond")]) == [True]
    # the rubric's 1 %, never wider than a unit of the last digit written: a decimal claims a precision
    assert _matches("341.9 ms", [(340.96, "millisecond")]) == [False]
    assert _matches("341 ms", [(340.96, "millisecond")]) == [True]
    assert _matches("96.0 %", [(0.969, R.FRACTION)]) == [False]
    assert _matches("96 %", [(0.9604, R.FRACTION)]) == [True]
    assert _matches("345.0 ms", [(340.96, "millisecond")]) == [False]
    assert _matches("4x", [(4.09, R.RATIO)]) == [True]  # "4x" covers 3.5..4.5, capped at 3 % of 4.09 (one digit)
    assert _matches("4x", [(4.15, R.RATIO)]) == [False]
    assert _matches("1.1x", [(1.06, R.RATIO)]) == [True], "two significant digits: capped at 5 %"
    assert _matches("4x", [(3.59, R.RATIO)]) == [False]


@pytest.mark.parametrize("text, reason", [("1x", "0 or 1"), ("1.0x", "0 or 1"), ("100%", "0 or 1"), ("100.0 percent", "0 or 1"),
                                          ("0 ms", "0 or 1"), ("1 ms", "0 or 1"), ("0%", "0 or 1"),
                                          ("10x", "a setting you chose"), ("4x", "a setting you chose"),
                                          ("50 times", "a setting you chose"), ("35%", "a setting you chose")])
def test_trivial_numbers_and_the_students_own_settings_are_not_evidence(text, reason):
    [quantity] = R.cited_quantities(text)
    assert R.trivial_reason(quantity, settings=[10, 4, 50, 0.35]) == reason


def test_a_recorded_one_is_not_evidence():
    assert _matches("1.0x", [(1.0, R.RATIO)]) == [False]
    assert R._evidence._indexed([(1.0, R.RATIO), (0.0, "millisecond"), (float("nan"), "ms"), (2.5, "no-such-unit")]) == {}


# -- derived quantities ------------------------------------------------------------------------

def test_derivations_of_the_same_field_within_one_record():
    derived = R.compared(66.17, 18.42, "millisecond")
    assert _matches("3.59x", derived) == [True]          # ratio baseline / result
    assert _matches("0.28x", derived) == [True]          # and the other way
    assert _matches("47.75 ms", derived) == [True]       # difference
    assert _matches("72.2% less", derived) == [True]     # change relative to the baseline
    assert _matches("259% more", derived) == [False]     # relative to the result: only for two paths side by side
    assert _matches("259% more", R.compared(66.17, 18.42, "millisecond", both=True)) == [True]
    assert _matches("16.6%", R.share(0.166, 1.0)) == [True]


def test_a_computed_change_allows_for_the_rounding_of_the_numbers_shown():
    """2.127 ms → 2.481 ms as displayed gives 16.64 %; the recorded values give 16.67 %."""
    assert _matches("16.6%", R.compared(2.12683392, 2.48130624, "millisecond")) == [True]
    assert _matches("17.5%", R.compared(2.12683392, 2.48130624, "millisecond")) == [False]


def test_shares_of_a_total_are_derived_within_one_record():
    bundle = bundle_from_mapping(solved("lab11", "edge"))
    quantities = get_lab("lab11").evidence_quantities(bundle.evidence["D"])
    # kernel 0.01558 ms of a 3.616 ms path; host 2 ms of it
    assert _matches("0.43%", quantities) == [True]
    assert _matches("55.3%", quantities) == [True]


def _bundle_context(lab: str, track: str, seed):
    bundle = bundle_from_mapping(solved(lab, track, seed))
    lab_spec = get_lab(lab)
    return bundle, lab_spec, build_context(bundle, lab_spec, default_rubric(lab), default_replay(), mlsysim_version="x", grader_version="y")


CHANCE_MULTIPLIER = {"lab02": 0.20, "lab07": 0.12, "lab08": 0.20, "lab11": 0.15}
"""The largest share of random multipliers ("3.4x") that may match a lab's evidence, each just above what it is on
this draw (Lab 07 6.6 %, Lab 11 12.6 %, Lab 02 17.9 %, Lab 08 18.5 %): Lab 02's and Lab 08's records hold more
quantities a student would divide, so a guessed multiplier lands more often there."""


def _multiplier_draw(labs) -> tuple[int, int, int]:
    """(matched by the lab's own derivations, matched by arbitrary pairs of recorded values, drawn): 25 random
    one-decimal multipliers per bundle of ``labs`` (every track, seeds 1 and 2), one seeded sequence across them."""
    rng = random.Random(20240611)
    ours = pairs = total = 0
    for lab in labs:
        for track in TRACKS:
            for seed in (1, 2):
                bundle, lab_spec, ctx = _bundle_context(lab, track, seed)
                settings = R._check._settings(bundle.controls)
                parts = [R.part_evidence(ctx.replay.memos, lab_spec, state) for state in ctx.parts.values()]
                recorded = sorted({abs(v) for state in ctx.parts.values()
                                   for v, dims, _ in R.usable(lab_spec.evidence_quantities(state.record))
                                   if not dims.startswith(R.DERIVED)})
                arbitrary = {R.RATIO: sorted(a / b for a, b in itertools.permutations(recorded, 2))}
                for _ in range(25):
                    [quantity] = R.cited_quantities(f"{rng.uniform(1.5, 9.9):.1f}x")
                    if R.trivial_reason(quantity, settings):
                        continue
                    total += 1
                    ours += any(R._evidence._agrees([quantity], part, 0.01) for part in parts)
                    pairs += R._evidence._agrees([quantity], arbitrary, 0.01)
    return ours, pairs, total


@pytest.mark.parametrize("lab", sorted(CHANCE_MULTIPLIER))
def test_a_random_multiplier_matches_each_labs_evidence_rarely(lab):
    """Per lab, the same draw as below: the share of random multipliers its evidence accepts stays under the lab's
    line, and arbitrary pairs of its recorded values would accept far more."""
    ours, pairs, total = _multiplier_draw([lab])
    assert total > 150
    assert ours / total < CHANCE_MULTIPLIER[lab], ours / total
    assert pairs > 2 * ours, (pairs / total, ours / total)


def test_a_random_multiplier_does_not_match_by_chance():
    """With some 45 recorded values a bundle has ~2,000 pairwise ratios: under arbitrary pairs a random
    one-decimal multiplier would match most bundles.  Only derivations a student makes count, so it
    matches rarely (and the same draw is checked against both readings).  Lab 07 and Lab 11, the labs this line was
    measured on; every lab has its own line above."""
    ours, pairs, total = _multiplier_draw(["lab07", "lab11"])
    assert total > 350
    assert ours / total < 0.12, ours / total
    assert pairs / total > 0.4 and pairs > 4 * ours, (pairs / total, ours / total)


def test_about_three_times_matches_only_where_a_record_shows_it():
    """'About 3x' counts only on bundles whose records hold a ratio near 3 (launches, traffic), not on the rest."""
    hits = []
    for track in TRACKS:
        _, lab_spec, ctx = _bundle_context("lab07", track, None)
        [quantity] = R.cited_quantities("3x")
        hits.append(any(R._evidence._agrees([quantity], R.part_evidence(ctx.replay.memos, lab_spec, s), 0.01) for s in ctx.parts.values()))
    assert hits == [False, False, False, False]


# -- normalisation -----------------------------------------------------------------------------

def test_normalise_reads_case_hyphens_contractions_and_british_spelling():
    assert R.normalise("The Compiled-with-Fusion path's behaviour is UNMODELLED; we'd optimise it.") == (
        "the compiled with fusion path behavior is unmodeled . we would optimize it .")
    assert R.normalise("I don't recommend eager — it's 3.6x slower, e.g. at 50 runs") == (
        "i do not recommend eager , it 3.6x slower , eg at 50 runs")
    assert R.normalise("Recommendation: fused\n- Rejected: eager\n\nTrigger") == (
        "recommendation : fused . rejected : eager . trigger")


def test_names_match_whole_words_only():
    assert _names("We keep the Compiled-with-Fusion path", ["compiled with fusion"])
    assert not _names("eager only", ["fusion"])
    assert not _names("the threshold", ["hold"]) and not _names("Nonetheless", ["none"])
    assert R.word_count("Three short words.") == 3


# -- the clause reader -------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("I recommend compiled with fusion over eager execution.", {("compiled_fused", R.REC), ("eager", R.REJ)}),
    ("I recommend the compiled path with fusion rather than eager.", {("compiled_fused", R.REC), ("eager", R.REJ)}),
    ("Instead of eager, compiled with fusion is the better choice.", {("compiled_fused", R.REC), ("eager", R.REJ)}),
    ("Go with compiled+fused; eager loses.", {("compiled_fused", R.REC), ("eager", R.REJ)}),
    ("Compiled with fusion, not eager.", {("compiled_fused", R.REC), ("eager", R.REJ)}),  # a headline verdict
    ("I would not choose eager.", {("eager", R.REJ)}),
    ("I do not think we should choose eager.", {("eager", R.REJ)}),
    ("Rule out eager; keep compiled execution.", {("eager", R.REJ), ("compiled", R.REC)}),
    ("The rejected alternative is eager.", {("eager", R.REJ)}),
    ("My recommendation is compiled execution without fusion.", {("compiled", R.REC)}),
    ("I reject eager because compiled with fusion takes 18.42 ms.", {("eager", R.REJ)}),
    ("Eager compiled fusion hold none.", set()),
    ("I recommend eager, compiled and fusion.", {("eager", R.REC)}),  # a cue reaches the first name only
    ("The threshold is clear. Nonetheless.", set()),
])
def test_a_choice_counts_only_in_a_recommending_or_rejecting_context(text, expected):
    assert _stances("lab07", "edge", None, text) == expected


@pytest.mark.parametrize("text", [
    "I would hold the native baseline for more evidence.", "Hold for now.", "No change for now.",
    "Keep the current path until the operator is native.", "We stay with the baseline.", "I recommend holding.",
])
def test_hold_is_named_by_natural_phrasings(text):
    assert ("hold", R.REC) in _stances("lab07", "mobile", 1, text)


@pytest.mark.parametrize("text", [
    "There is no feasible target path.", "No feasible path: the callback cannot run.",
    "I recommend none of the tested paths.", "The graph can't run on the ESP32-S3.",
])
def test_lab07_none_is_named_by_natural_phrasings(text):
    assert ("none", R.REC) in _stances("lab07", "tinyml", None, text)


@pytest.mark.parametrize("text", ["Neither candidate is feasible.", "No feasible design.",
                                  "Neither the H100 nor the A100 fits the budgets.", "Both candidates fail the latency budget.",
                                  "I recommend none."])
def test_lab11_none_is_named_by_natural_phrasings(text):
    assert ("none", R.REC) in _stances("lab11", "cloud", 2, text)


def test_hold_in_lab11_also_accepts_keeping_the_primary():
    report = _report("lab11", "tinyml", 0, "We keep the nRF52840 and reject the ESP32-S3: 68.9 µJ against 487 µJ. Power "
                     "draw differs from the TDP proxy; revisit if the energy budget tightens.",
                     reevaluation_trigger="energy", residual_risk="power")
    assert [f for f in report.findings if f.part == "synthesis"] == []


@pytest.mark.parametrize("text", [
    "If the execution count dropped below 3, I would choose eager.",  # a condition: a trigger, not a contradiction
    "Although eager is the better choice for a single run, I recommend compiled with fusion.",
    "Eager only wins below 3 executions.",
    "Compiled with fusion wins and eager is faster at one execution.",  # weak cues never make a contradiction
    "Eager is the better choice at one execution, but not at 50.",  # scoped claims
    "For one-off runs eager is the right choice.",
    "I would choose eager for debugging and compiled with fusion for production.",
    "We chose eager last year; that is no longer right.",
])
def test_conditional_concessive_and_scoped_claims_are_not_contradictions(text):
    text += " I recommend compiled with fusion and reject eager at 18.42 ms. Timings are illustrative."
    report = _report("lab07", "edge", None, text, recommendation="compiled_fused", rejected_alternative="eager",
                     reevaluation_trigger="execution_count", residual_risk="timing_assumptions")
    assert not any(f.rubric_item in ("rationale_names_recommendation", "rationale_names_rejected") for f in report.findings)


@pytest.mark.parametrize("text, excerpt", [
    ("Eager is the better choice: it needs no setup.", "eager is the better choice"),
    ("I recommend eager execution and reject compiled with fusion.", "i recommend eager execution"),
    ("Compiled with fusion is ruled out, since it costs 18.42 ms.", "compiled with fusion is ruled out"),
])
def test_an_unqualified_claim_against_the_choices_is_a_contradiction(text, excerpt):
    report = _report("lab07", "edge", None, text + " I recommend compiled with fusion and reject eager at 18.42 ms. "
                     "Timings are illustrative; revisit if the execution count changes.", recommendation="compiled_fused",
                     rejected_alternative="eager", reevaluation_trigger="execution_count", residual_risk="timing_assumptions")
    [finding] = [f for f in report.findings if f.part == "synthesis"]
    assert f"('{excerpt}')" in finding.message and finding.also_costs == ("rationale_names_rejected",)


def test_rejecting_the_recommendation_is_a_contradiction():
    report = _report("lab11", "edge", None, "I choose the AGX Orin, reject the Orin NX at 3.63 ms, and the AGX Orin is "
                     "ruled out too. Power draw differs from the TDP proxy; revisit if the energy budget tightens.",
                     reevaluation_trigger="energy", residual_risk="power")
    [finding] = [f for f in report.findings if f.part == "synthesis"]
    assert finding.message.startswith("Your rationale rejects the option you recommend ('agx orin is ruled out')")
    assert finding.also_costs == ("rationale_names_rejected",)


# -- limitations and triggers ------------------------------------------------------------------

LAB07_LIMITATIONS = {
    "timing_assumptions": ["The timings are illustrative.", "These numbers are analytical estimates, not measurements.",
                           "Setup time is an assumed compiler-pass cost.", "The timing model is illustrative."],
    "operator_interactions": ["Operator interactions are unmodelled.", "Each operator is costed in isolation.",
                              "Interactions between operators inside the fused region are not modelled."],
    "target_measurement": ["It was not measured on the phone.", "Nothing was profiled on the ESP32-S3.",
                           "Target behaviour is unmeasured.", "None of these numbers were validated on the Pixel 8.",
                           "We never benchmarked it on the Jetson Orin Nano.", "Not tested on the real T4."],
}
LAB11_LIMITATIONS = {
    "contract": ["Deployed kernels may differ from the scenario contract.", "Real kernels could deviate from the contract.",
                 "The execution contract is only an assumption."],
    "power": ["Power draw differs from the TDP proxy.", "Energy figures are TDP-based estimates.",
              "Actual power draw will differ.", "The model assumes full TDP."],
    "shape_mix": ["The workload shape mix may change.", "Production shapes may differ.",
                  "A different mix of shapes would change this.", "Misaligned shapes may become common."],
}
# Per trigger: phrasings said as a condition or a change, then a sentence that only mentions the topic.
LAB07_TRIGGERS = {
    "execution_count": (["I would revisit if the execution count drops.", "Look again when we run it fewer times.",
                         "The number of runs changes the answer."], "The execution count was 50 here."),
    "shape_guards": (["Revisit when the shape guards change.", "If the deployment shapes change, redo part B.",
                      "Once guards start firing, recompiles add up.", "I would re-check if dynamic shapes appear."],
                     "Shape guards exist in every compiled graph."),
    "operator_set": (["I would revisit if the operator set changes.", "When a new operator is added, rerun part E.",
                      "Revisit if an operator is inserted."], "The operator set is the one part E tested."),
    "activation_memory": (["If activation memory changes, redo part D.", "Revisit when the batch size grows.",
                           "I would look again if memory capacity shrinks."], "Activation memory is 100.663 MB."),
}
LAB11_TRIGGERS = {
    "latency": (["I would revisit if the latency budget tightens.", "Re-rank when the latency target drops.",
                 "A tighter deadline would reopen this."], "The latency budget is 20 ms."),
    "energy": (["Revisit if the energy budget tightens.", "When the battery budget shrinks, re-rank.",
                "If a tighter energy cap arrives I would look again."], "The energy budget is 1 kJ."),
    "support": (["I would revisit if execution support changes.", "Re-check when scatter gets native support.",
                 "Revisit if operator support improves."], "Execution support is native for the gemm."),
}


def _listed_lost(lab, track, seed, text, **synthesis):
    return _lost(lab, track, seed, text, **synthesis) & {"rationale_names_limitation", "rationale_names_trigger"}


@pytest.mark.parametrize("lab, value, sentence, track", [
    *[("lab07", value, sentence, "tinyml" if "ESP32" in sentence else "mobile" if "Pixel" in sentence or "phone" in sentence
       else "edge" if "Orin" in sentence else "cloud") for value, items in LAB07_LIMITATIONS.items() for sentence in items],
    *[("lab11", value, sentence, "edge") for value, items in LAB11_LIMITATIONS.items() for sentence in items],
])
def test_each_limitation_has_natural_phrasings(lab, value, sentence, track):
    trigger = "execution_count" if lab == "lab07" else "latency"
    text = f"{sentence} I would revisit if the {'execution count' if lab == 'lab07' else 'latency budget'} changes."
    extra = dict(recommendation="compiled_fused", rejected_alternative="eager") if lab == "lab07" else {}
    seed = None if track != "tinyml" else 2
    extra = dict(recommendation="none", rejected_alternative="eager") if (lab, track) == ("lab07", "tinyml") else extra
    assert _listed_lost(lab, track, seed, text, residual_risk=value, reevaluation_trigger=trigger, **extra) == set()


@pytest.mark.parametrize("lab, value, sentence", [
    *[("lab07", value, sentence) for value, (items, _) in LAB07_TRIGGERS.items() for sentence in items],
    *[("lab11", value, sentence) for value, (items, _) in LAB11_TRIGGERS.items() for sentence in items],
])
def test_each_trigger_has_natural_phrasings_said_as_a_condition_or_a_change(lab, value, sentence):
    extra = dict(recommendation="compiled_fused", rejected_alternative="eager") if lab == "lab07" else {}
    risk = "timing_assumptions" if lab == "lab07" else "power"
    limitation = "The timings are illustrative." if lab == "lab07" else "Power draw differs from the TDP proxy."
    assert _listed_lost(lab, "edge", None, f"{limitation} {sentence}", residual_risk=risk,
                        reevaluation_trigger=value, **extra) == set()


@pytest.mark.parametrize("lab, value, topic", [
    *[("lab07", value, topic) for value, (_, topic) in LAB07_TRIGGERS.items()],
    *[("lab11", value, topic) for value, (_, topic) in LAB11_TRIGGERS.items()],
    ("lab07", "execution_count", "Trigger: execution count."), ("lab11", "energy", "Trigger: energy budget."),
])
def test_a_trigger_topic_or_label_alone_is_not_a_trigger(lab, value, topic):
    extra = dict(recommendation="compiled_fused", rejected_alternative="eager") if lab == "lab07" else {}
    risk = "timing_assumptions" if lab == "lab07" else "power"
    limitation = "The timings are illustrative." if lab == "lab07" else "Power draw differs from the TDP proxy."
    assert _listed_lost(lab, "edge", None, f"{limitation} {topic}", residual_risk=risk,
                        reevaluation_trigger=value, **extra) == {"rationale_names_trigger"}


def test_a_sentence_listing_every_option_names_none_of_them():
    text = ("Limitations: illustrative timing, unmodelled operator interactions and unmeasured target behaviour. Revisit "
            "if the execution count changes.")
    assert _listed_lost("lab07", "edge", None, text, residual_risk="timing_assumptions", reevaluation_trigger="execution_count",
                        recommendation="compiled_fused", rejected_alternative="eager") == {"rationale_names_limitation"}


# -- messages, publicity, compiled patterns ----------------------------------------------------

def test_rationale_findings_are_public_single_sentences_that_do_not_name_the_answer():
    report = _report("lab07", "edge", None, "Some words that say nothing in particular about the lab at all, twenty words "
                     "long so that only the naming items fail here today.", recommendation="compiled_fused",
                     rejected_alternative="eager", reevaluation_trigger="execution_count", residual_risk="timing_assumptions")
    findings = [f for f in report.findings if f.part == "synthesis"]
    assert {f.rubric_item for f in findings} == set(ITEMS)
    public = report.public()
    assert {f.rubric_item for f in public.findings if f.part == "synthesis"} == set(ITEMS)
    for finding in findings:
        one_sentence = finding.message.replace("e.g.", "eg").count(". ") == 0
        assert not finding.hidden and finding.message.endswith(".") and one_sentence, finding.message
        lowered = finding.message.lower()
        assert "fusion" not in lowered and "eager" not in lowered and "execution count" not in lowered
        assert "timing assumption" not in lowered


def test_every_pattern_compiles_for_every_track_and_scans_only_where_it_can_start():
    assert R._stances._CUES.starts is not None
    for lab in LABS:
        lab_spec = get_lab(lab)
        for track in TRACKS:
            terms = lab_spec.final_choice_terms(bundle_from_mapping(solved(lab, track)))
            reader = R.reader_for(default_replay().memos, lab_spec, terms)
            scanners = [reader.names, reader.decisive, *reader.triggers.values(), *reader.limitations.values()]
            assert all(s is not None and s.starts is not None for s in scanners), (lab, track)
            assert reader is R.reader_for(default_replay().memos, lab_spec, terms), "compiled once per lab and track"


# -- issue 15: honest styles, and how sure the reader is ----------------------------------------

L07 = dict(recommendation="compiled_fused", rejected_alternative="eager", reevaluation_trigger="execution_count",
           residual_risk="timing_assumptions")
EDGE = "66.17 ms against 18.42 ms at 50 executions"  # eager vs compiled totals of lab07 edge's default bundle


def _readings(text: str) -> list[tuple[float, str]]:
    return [(round(q.value * 1000, 6), q.reading) for q in R.cited_quantities(text)]


def test_a_decimal_comma_is_a_point_where_the_text_or_the_evidence_tells():
    """Measured: "24,28 ms" cited nothing and "4,096 ms" was read as 4096 ms where the evidence says 4.096."""
    assert _readings("24,28 ms") == [(24.28, "")]                     # no thousands group has two digits
    assert _readings("0,5 ms") == [(0.5, "")]                         # nor starts with 0
    assert _readings("5,22 ms and 4,096 ms") == [(5.22, ""), (4.096, "")]  # the text writes decimal commas
    assert _readings("5.22 ms and 4,096 ms") == [(5.22, ""), (4096.0, ""), (4.096, R.COMMA_AMBIGUOUS)]
    assert _readings("4,096 ms") == [(4096.0, ""), (4.096, R.COMMA_AMBIGUOUS)]  # the evidence decides
    assert _readings("1,308.623 ms") == [(1308.623, "")]              # grouped thousands stay thousands
    assert _matches("4,096 ms", [(4.096, "millisecond")]) == [False, True]
    assert _matches("4,096 ms", [(4096.0, "millisecond")]) == [True, False]


def test_latex_math_is_read_and_money_stays_money():
    """Measured: "$39.09\\,\\text{ms}$" was read as 39.09 dollars."""
    assert _readings(r"$39.09\,\text{ms}$") == [(39.09, "")]
    assert R.cited_quantities(r"$3.05\times 10^{-6}$ dollars")[0].value == pytest.approx(3.05e-6)
    assert R.cited_quantities(r"\(17.4\,\mu s\)")[0].value == pytest.approx(17.4e-6)
    assert [q.dims for q in R.cited_quantities(r"$88\%$ of the time")] == [(R.FRACTION, R.CHANGE, R.RATIO)]
    money = R.cited_quantities("$2.50 vs $4.10")  # no markup between the signs: money, not math
    assert [(q.text, q.value) for q in money] == [("$2.50", 2.5), ("$4.10", 4.1)]


def test_a_whole_number_is_read_to_its_last_significant_digit_within_the_cap():
    """The documentation (docs/grading.md) promises the rounding the student wrote: "40 ms" for 39.09 ms, "about 130 ms" for 132.34 ms."""
    assert _matches("40 ms", [(39.09, "millisecond")]) == [True]
    assert _matches("about 130 ms", [(132.34, "millisecond")]) == [True]
    assert _matches("about 190 ms", [(185.27, "millisecond")]) == [True]
    assert _matches("about 50 ms", [(47.52, "millisecond")]) == [False]  # 5.2 %: past SIGNIFICANT_ROUNDING_CAP
    assert _matches("130 ms", R.compared(0.2, 0.0677, "second")) == [False], "derived values: digits as written"
    assert _matches("40%", [(0.391, R.FRACTION)]) == [False], "a percentage or multiplier: digits as written"
    assert _matches("40x", [(39.09, R.RATIO)]) == [False]


def test_a_pronoun_stands_for_the_one_option_named_just_before():
    assert _stances("lab07", "edge", None, "Eager execution is slow at 66.17 ms. I reject it.") == {("eager", R.REJ)}
    assert _stances("lab07", "edge", None, "Eager needs 66.17 ms, so I reject it.") == {("eager", R.REJ)}
    assert _stances("lab07", "edge", None, "Eager costs 66.17 ms and compiled with fusion 18.42 ms. I reject it.") == set()
    assert _stances("lab07", "edge", None, "Of eager and compiled with fusion, I recommend the latter.") == {
        ("compiled_fused", R.REC)}
    assert _stances("lab07", "edge", None, "Eager costs 66.17 ms. Later on, I recommend it.") == {("eager", R.REC)}


@pytest.mark.parametrize("text, expected", [
    ("I'd lean towards compiled with fusion.", {("compiled_fused", R.REC)}),
    ("Eager execution probably isn't the way to go.", {("eager", R.REJ)}),
    ("Eager execution I reject.", {("eager", R.REJ)}),
    ("Compiled with fusion, we recommend, since it is faster.", {("compiled_fused", R.REC)}),
    ("Eager execution was ruled out by us.", {("eager", R.REJ)}),
    ("Eager execution is dropped.", {("eager", R.REJ)}),
    ("So compiled with fusion it is.", {("compiled_fused", R.REC)}),
    ("Compiled with fusion (my pick) is faster.", {("compiled_fused", R.REC)}),
    ("Eager is a non-starter.", {("eager", R.REJ)}),
    ("Eager, we rule it out.", {("eager", R.REJ)}),
])
def test_hedged_object_first_passive_and_short_stances(text, expected):
    """Measured: each of these styles lost the naming point it states."""
    assert _stances("lab07", "edge", None, text) == expected


def test_a_hedge_or_a_pronoun_names_an_option_but_never_contradicts():
    hedged = _report("lab07", "edge", None, f"Eager probably is the better bet here, though I reject eager execution: {EDGE}. "
                     "I recommend compiled with fusion. The timings are illustrative; I would revisit if the execution count "
                     "changes.", **L07)
    assert [f for f in hedged.findings if f.part == "synthesis"] == []


@pytest.mark.parametrize("value, sentence", [
    ("target_measurement", "Nobody ran it on the Jetson."),
    ("target_measurement", "Nothing here was run on an actual Orin Nano."),
    ("target_measurement", "The Jetson numbers are not measured."),
    ("target_measurement", "Actual on-device behaviour has not been measured."),
    ("target_measurement", "The real target was never benchmarked."),
    ("timing_assumptions", "Timings are illustrative, operator interactions unmodelled and the device unmeasured, but the "
                           "main caveat is that the timings are illustrative."),
])
def test_negated_measurement_and_a_caveat_with_a_main_one_name_the_limitation(value, sentence):
    text = f"I recommend compiled with fusion and reject eager execution: {EDGE}. {sentence} I would revisit if the execution count changes."
    assert _lost("lab07", "edge", None, text, **dict(L07, residual_risk=value)) == set()


@pytest.mark.parametrize("sentence", ["Should the execution count fall, I would revisit.",
                                      "We'll revisit if the run count drops.",
                                      "A drop in the execution count would send me back to part B."])
def test_triggers_said_as_should_revisit_or_a_change(sentence):
    text = f"I recommend compiled with fusion and reject eager execution: {EDGE}. The timings are illustrative. {sentence}"
    assert _lost("lab07", "edge", None, text, **L07) == set()


def test_every_rationale_item_says_how_sure_the_reader_is_in_the_report_json():
    text = (f"Compiled with fusion looks like the safer bet: {EDGE}, about 70 ms for eager. Eager execution I reject. "
            "The timings are illustrative; I would revisit if the execution count changes.")
    report = _report("lab07", "edge", None, text, **L07)
    items = {item["item"]: item for item in report.model_dump(mode="json")["parts"]["synthesis"]["items"]}
    assert {name for name, item in items.items() if item["certainty"] is not None} == {"rationale_length", *ITEMS}
    assert items["choices_valid"]["certainty"] is None and items["choices_valid"]["certainty_reason"] is None
    assert items["rationale_names_recommendation"]["certainty"] == "uncertain"
    assert items["rationale_names_recommendation"]["certainty_reason"] == "option recommended only with a hedge"
    assert items["rationale_names_rejected"]["certainty"] == "certain"
    assert [item.item for item in report.uncertain_items()] == ["rationale_names_recommendation"]
    assert report.parts["synthesis"].score == report.parts["synthesis"].max_score  # the points follow the verdict
    assert "uncertain" not in report.text() and "hedge" not in report.public().text()


def test_an_uncertain_verdict_that_costs_points_shows_the_same_message_as_before():
    # eager only hedged, so nothing decides the recommendation either (a firm rejection would imply it)
    text = (f"Compiled with fusion: {EDGE}. Eager execution is probably not the way to go. The timings are illustrative; I "
            "would revisit if the execution count changes.")
    report = _report("lab07", "edge", None, text, **L07)
    [finding] = [f for f in report.findings if f.part == "synthesis"]
    assert finding.message == R.MESSAGES["recommendation"]
    [item] = [item for item in report.uncertain_items() if item.points == 0]
    assert (item.item, item.points, item.certainty_reason) == (
        "rationale_names_recommendation", 0.0, "option named, no stance cue found")
    quantity = _report("lab07", "edge", None, "I recommend compiled with fusion and reject eager execution: about 40 ms "
                       "less. The timings are illustrative; I would revisit if the execution count changes.", **L07)
    assert [i.certainty_reason for i in quantity.uncertain_items()] == []  # 47.75 ms saved is derived: digits as written
    rounded = _report("lab07", "edge", None, "I recommend compiled with fusion and reject eager execution: 66.17 ms against "
                      "about 20 ms. The timings are illustrative; I would revisit if the execution count changes.", **L07)
    assert "rationale_cites_evidence" not in {i.item for i in rounded.uncertain_items()}
    for quantity, reason in (("about 190 ms", "quantity matched only after rounding to its last significant digit"),
                             ("25,166 MB", "quantity matched only with a decimal comma read as a point")):
        text = (f"I recommend compiled with fusion and reject eager execution: eager takes {quantity} at 140 runs. The timings "
                "are illustrative; I would revisit if the execution count changes.")
        report = _report("lab07", "edge", 0, text, **L07)  # eager 185.27 ms; traffic 25.166 MB
        assert [(i.item, i.points, i.certainty_reason) for i in report.uncertain_items()] == [
            ("rationale_cites_evidence", 4.0, reason)]


def test_the_rationale_is_read_once_per_grade(monkeypatch):
    calls = []
    read = R._check.read_rationale
    monkeypatch.setattr(R._check, "read_rationale", lambda ctx: calls.append(ctx) or read(ctx))
    report = _report("lab07", "edge", None, f"I recommend compiled with fusion and reject eager execution: {EDGE}.", **L07)
    assert len(calls) == 1
    assert all(item.certainty is not None for item in report.parts["synthesis"].items if item.item.startswith("rationale_"))


def test_the_report_carries_the_spans_of_its_own_reading_and_a_wall_of_text_is_read_within_bounds():
    """The review page's spans are the grade's reading (no second reading): a cited quantity is labelled with the
    evidence it matches, the stance with the option; a hostile wall of text still cites at most ``MAX_CITED``."""
    report = _report("lab07", "edge", None, f"I recommend compiled with fusion and reject eager execution: {EDGE}.", **L07)
    kinds = {span.kind for span in report.rationale_spans}
    assert {"quantity", "stance"} <= kinds, report.rationale_spans
    assert all(0 <= span.start < span.end for span in report.rationale_spans)
    assert "rationale_spans" not in report.model_dump() and "rationale_spans" not in report.model_dump_json()
    wall = "It took 28.49 ms. " * 1200
    assert len(R.cited_quantities(wall)) == R.MAX_CITED




def test_a_bit_rate_is_read_by_its_case_and_a_byte_stays_a_byte():
    """A capital prefix over a small "b" per second is bits ("Mb/s", "Gb per second"), as are "Mbit/s" and "Mbps";
    "MB/s", "mb/s" and "Mb" alone stay bytes (people write "Mb" for megabytes)."""
    from mlsys_grader.core.rationale import cited_quantities

    def read(text):
        return [(q.value, q.dims) for q in cited_quantities(text)]

    bits = [(2e6, ("1 / [time]|bit/s",))]
    assert read("a 2 Mb/s link") == read("a 2 Mbit/s link") == read("a 2 Mbps link") == read("2 megabits per second") == bits
    assert read("2 Gb per second") == [(2e9, ("1 / [time]|bit/s",))]
    assert read("2 MB/s") == read("2 mb/s") == [(1.6e7, ("1 / [time]|bit/s",))]
    assert read("a 12 Mb payload") == read("a 12 MB payload") == [(9.6e7, ("dimensionless|bit",))]
