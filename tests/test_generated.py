"""The grader's own template is not the student's writing; ``solve`` sessions differ by seed.

``solve`` writes a reference rationale from a template.  A rationale that is mostly that
template — as written, or lightly edited — earns no rationale points and carries the
``generated`` staff flag; honest rationales (the book's marimo exports, hand-written ones)
that share a natural sentence or the lab's own phrases with it do not.  The measure and
its thresholds are documented in ``mlsys_grader/core/generated.py``; the numbers quoted
there are what these cases measure.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tomllib
from datetime import timedelta
from pathlib import Path

import needs
import pytest
from conftest import LABS, TRACKS, reference_answers, reseal, solved

from mlsys_grader import __version__, get_lab, grade_bundle, mlsysim_version, solve
from mlsys_grader.api import default_replay, default_rubric
from mlsys_grader.core import generated
from mlsys_grader.core.capture import plan_all
from mlsys_grader.core.models import PARTS, SCHEMA_VERSION, load_bundle
from mlsys_grader.labs import Lab
from mlsys_grader.staff import bundle_from_controls

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT / "tests" / "rationale_corpus"
SEEDS = (None, 1, 7)

# The settings each export was made with (its README), as this package's controls; a test
# checks they rebuild exactly the inputs the export recorded.
EXPORT_CONTROLS = {
    "lab07-cloud": ("lab07", "cloud", {
        "A": {"dispatches": 1}, "B": {"executions": 100, "recompilations": 2}, "C": {"graph_breaks": 1},
        "D": {"policy": "input_only", "batch_size": 16},
        "E": {"operator": "host_callback", "shape_mode": "dynamic", "decision": "hold"}}),
    "lab07-tinyml": ("lab07", "tinyml", {
        "A": {"dispatches": 2}, "B": {"executions": 30, "recompilations": 1}, "C": {"graph_breaks": 0},
        "D": {"policy": "alternate", "batch_size": 8},
        "E": {"operator": "custom_attention", "shape_mode": "static", "decision": "none"}}),
    "lab11-edge": ("lab11", "edge", {
        "A": {"change": "bandwidth", "factor": 2}, "B": {"tile": "baseline", "fused": True},
        "C": {"shape": "misaligned", "operation": "gemm"}, "D": {"speedup": 10},
        "E": {"objective": "energy", "budget_scale": 1.0, "choice": "alternative", "rejected": "primary"}}),
    "lab11-tinyml": ("lab11", "tinyml", {
        "A": {"change": "compute", "factor": 2}, "B": {"tile": "oversized", "fused": True},
        "C": {"shape": "aligned", "operation": "scatter"}, "D": {"speedup": 10},
        "E": {"objective": "latency", "budget_scale": 0.1, "choice": "none", "rejected": "primary"}}),
}

# Rationales as students write them, for the default settings of each track (plus the
# overrides given): some plain, some terse, some reusing the lab's own labels and the
# template's opening sentence.  (lab, track, control overrides, trigger, limitation, text)
HANDWRITTEN = [
    ("lab07", "edge", {}, "execution_count", "timing_assumptions",
     "I recommend compiled with fusion and reject eager execution. On the Jetson Orin Nano the fine-grained graph spends "
     "90.7% of its time in dispatch, so eager pays the framework tax on every call. At 50 executions compilation repays "
     "its 2.25 ms setup: 18.42 ms total compiled versus 66.17 ms eager, and break-even is only 3 executions. Fusing with "
     "zero graph breaks cuts launches from 6 to 1 and eliminates 41.94 MB of traffic. The host callback falls back at "
     "446.7 µs, so it costs something but still runs. My main limitation is that the timing assumptions are illustrative "
     "and not measured on the device; I would revisit this if the execution count drops toward the break-even point."),
    ("lab07", "mobile", {}, "shape_guards", "target_measurement",
     "Compiled with fusion is my choice for the Pixel 8. Eager execution spends 7.2 ms per call mostly on dispatch "
     "(99.5% of the time is dispatch), and over 50 runs it reaches 361.7 ms while the compiled path needs 64.0 ms "
     "including setup. So I reject eager. Fusion removed 10.49 MB of intermediate traffic and brought launches down to "
     "one. Recomputation with the alternate policy halves stored activations (50.3 MB to 25.2 MB) but raises step time "
     "from 1.65 ms to 1.93 ms, which is a tradeoff I don't need at inference. The behavior on the real phone is "
     "unmeasured, and if shape guards change and force recompilations the math changes."),
    ("lab07", "tinyml", {}, "operator_set", "operator_interactions",
     "There is no feasible target path here. The host callback is unsupported on the microcontroller and there is no "
     "fallback runtime, so the graph cannot execute no matter how I compile it. I reject compiled with fusion: it would "
     "save time (93.2 ms vs 341.0 ms for 50 executions) and remove 0.33 MB of traffic, but a fused graph that still "
     "contains the callback will not run. Limitation: the model does not capture interactions between operators. This "
     "should be reopened when the operator set changes, for example if the callback is replaced by a supported op."),
    ("lab07", "cloud", {}, "activation_memory", "operator_interactions",
     "Recommendation: compiled with fusion. Rejected: eager. Evidence: with 50 executions the compiled total was 8.99 ms "
     "and eager was 14.24 ms, and fusion with no breaks removed 167.8 MB of graph traffic. The fallback for the host "
     "callback is acceptable on the cloud GPU. Recomputation (alternate) drops retained activations from 805.3 MB to "
     "402.7 MB, which matters only if memory gets tight. Risk: unmodeled operator interactions. Trigger: activation "
     "memory changes."),
    ("lab07", "edge", {"E": {"decision": "hold"}}, "operator_set", "target_measurement",
     "I'd hold the current path for more evidence rather than switch. Compiling clearly pays off after 3 executions "
     "(18.4 ms vs 66.2 ms at 50), so eager is rejected on time alone, but the inserted host callback only runs through a "
     "portable fallback that takes 446.7 µs and copies 8.39 MB, more than the whole fused graph at 323.4 µs. Until we "
     "know how that fallback behaves on the real Orin Nano I would not commit. The limitation is that none of this is "
     "measured on the target; the decision should be revisited if the operator set changes."),
    ("lab07", "mobile", {}, "execution_count", "timing_assumptions",
     "I recommend compiled with fusion over eager execution. The compiled total at 50 executions is 64.00 ms against "
     "361.75 ms for eager execution, so compilation repays setup almost immediately. Fusion removes 10.486 MB of graph "
     "traffic. The remaining limitation is illustrative timing assumptions, and I would re-evaluate when the execution "
     "count changes a lot."),
    ("lab11", "cloud", {}, "latency", "contract",
     "I choose the primary H100 and reject the alternative A100. Under the latency objective both fit the 10 ms budget, "
     "but the A100 takes 6.195 ms end to end against 5.127 ms on the H100, and its accelerator energy is higher too "
     "(878 mJ vs 789 mJ). Part D shows why the margin is small: a 10x faster kernel only improves the application by "
     "1.003x, because host time (3 ms), transfer (1.05 ms) and postprocessing dominate. The limitation is that the "
     "deployed kernels may not match the scenario contract; I'd re-evaluate if the latency budget tightens."),
    ("lab11", "mobile", {}, "support", "shape_mix",
     "I keep the primary Apple M2 Neural Engine and reject the iPhone 15 Pro alternative. Both meet the 25 ms latency "
     "budget (9.017 ms and 8.031 ms), so the choice is close, but the misaligned GEMM still ran natively after padding "
     "on the M2 and the kernel is not where the time goes anyway: a 10x kernel speedup became 1.002x end to end because "
     "4 ms of host work, 3 ms of launches and 2 ms of postprocessing stay. Limitation: the workload shape mix could "
     "change. Trigger: if execution support changes on either chip I would rerun the ranking."),
    ("lab11", "edge", {}, "energy", "power",
     "Primary Jetson AGX Orin it is; I reject the Orin NX alternative at 3.631 ms end to end. The application is "
     "dominated by 2 ms of host time and 1 ms of postprocessing, so even a 10x kernel gain is worth 1.004x overall. The "
     "remaining limitation is that power draw differs from the TDP proxy, so energy numbers are rough; I would "
     "re-evaluate when the energy budget tightens."),
    ("lab11", "tinyml", {}, "latency", "contract",
     "I choose the primary nRF52840 and reject the ESP32-S3 alternative, which needs 5.218 ms end to end. The "
     "misaligned shape forces padding on the nRF52840, and the whole-path result is what matters: the 10x kernel-only "
     "speedup turns into 1.836x end to end. The limitation is that deployed kernels differ from the scenario contract. "
     "I would re-evaluate when the latency budget tightens."),
    ("lab11", "cloud", {}, "energy", "power",
     "Decision: primary (H100). Rejected: alternative (A100) at 6.195 ms vs 5.127 ms under the latency objective. "
     "Kernel-only 10x gives 1.003x application speedup since host, transfer and postprocess stay. Limitation: power draw "
     "differs from the TDP proxy. Trigger: energy budget tightens."),
]

NATURAL = "I recommend compiled with fusion and reject eager execution."
OWN_SENTENCE = "I double-checked these numbers against the plots in the notebook and they look consistent to me."
PADDING = ("I spent a while on this lab and found the framework tax idea interesting, especially how small kernels "
           "waste time. In practice I would want to profile a real device before trusting these numbers. Overall the "
           "experiments were consistent with what the chapter describes about overheads.")
RATIONALE_ITEMS = tuple(item for item in default_rubric("lab07").synthesis if item.startswith("rationale_"))


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text)


def _numbers_changed(text: str) -> str:
    return re.sub(r"\d+(?:\.\d+)?", lambda m: f"{float(m.group()) * 1.37 + 2:.1f}", text)


def _words_swapped(text: str, count: int = 5) -> str:
    words = text.split(" ")
    step = len(words) // (count + 1)
    for k, replacement in enumerate(("really", "clearly", "overall", "basically", "notably")[:count]):
        words[step * (k + 1)] = replacement
    return " ".join(words)


EDITS = {
    "numbers changed": _numbers_changed,
    "five words swapped": _words_swapped,
    "sentences reordered": lambda t: " ".join(reversed(_sentences(t))),
    "a sentence added": lambda t: " ".join([_sentences(t)[0], OWN_SENTENCE, *_sentences(t)[1:]]),
    "a sentence dropped": lambda t: " ".join([_sentences(t)[0], *_sentences(t)[2:]]),
    "padded with fifty words": lambda t: f"{t} {PADDING}",
    "all at once": lambda t: _words_swapped(" ".join(reversed(_sentences(_numbers_changed(t))[1:])), 3) + " " + OWN_SENTENCE,
}


def _with_synthesis(data: dict, **fields) -> dict:
    data = json.loads(json.dumps(data))
    data["synthesis"].update(fields)
    return reseal(data)


def _generated_findings(report) -> list:
    return [finding for finding in report.findings if finding.criterion == "generated"]


def _assert_flagged(report, why: str) -> None:
    found = _generated_findings(report)
    assert len(found) == 1, (why, [f.message for f in report.findings])
    finding = found[0]
    assert finding.part == "synthesis" and finding.rubric_item == "rationale_length" and not finding.hidden, why
    assert set(finding.also_costs) == set(RATIONALE_ITEMS) - {"rationale_length"}, why
    assert finding.message == generated.MESSAGE, why
    assert "in your own words" in finding.message
    points = {item.item: item.points for item in report.parts["synthesis"].items}
    assert all(points[item] == 0 for item in RATIONALE_ITEMS), (why, points)
    assert "generated" in report.flags, (why, report.flags)


def _bundle(lab_id: str, track: str, controls: dict, **synthesis) -> dict:
    lab = get_lab(lab_id)
    bundle = bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version(), grader_version=__version__)
    return _with_synthesis(json.loads(bundle.to_json()), **synthesis)


def _default_controls(lab_id: str, track: str, overrides: dict) -> dict:
    lab = get_lab(lab_id)
    return {part: {**lab.sample_controls(default_replay(), track, part, None), **overrides.get(part, {})}
            for part in lab.part_ids()}


# -- solve's own rationale --------------------------------------------------------------------

@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("track", TRACKS)
def test_solve_keeps_every_evidence_point_but_its_rationale_earns_nothing_and_is_flagged(lab, track):
    rubric = default_rubric(lab)
    rationale_points = sum(points for item, points in rubric.synthesis.items() if item.startswith("rationale_"))
    for seed in SEEDS:
        report = grade_bundle(solved(lab, track, seed))
        _assert_flagged(report, (lab, track, seed))
        assert [f.criterion for f in report.findings] == ["generated"], (seed, [f.message for f in report.findings])
        assert report.score == report.max_score - rationale_points == 88
        assert all(part.score == part.max_score for name, part in report.parts.items() if name != "synthesis")
        assert report.flags == ("generated",)


@pytest.mark.parametrize("lab", LABS)
def test_a_rationale_of_ones_own_in_a_bundle_is_not_flagged(lab):
    """Bundles of the same settings with a rationale the student wrote: no ``generated`` finding or flag."""
    for lab_id, track, overrides, trigger, limitation, text in HANDWRITTEN:
        if lab_id != lab:
            continue
        fields = {"reevaluation_trigger": trigger, "residual_risk": limitation, "rationale": text}
        data = _bundle(lab, track, _default_controls(lab, track, overrides), **fields)
        report = grade_bundle(data)
        assert _generated_findings(report) == [], (track, text[:40])
        assert "generated" not in report.flags


# -- lightly edited templates ------------------------------------------------------------------

@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_lightly_edited_template_is_still_flagged(lab, edit):
    for track, seed in (("tinyml", 2), ("cloud", None), ("edge", 5)):
        data = solved(lab, track, seed)
        edited = EDITS[edit](data["synthesis"]["rationale"])
        assert edited != data["synthesis"]["rationale"]
        report = grade_bundle(_with_synthesis(data, rationale=edited))
        if edit == "a sentence dropped" and lab == "lab11":
            # Lab 11's template has three evidence sentences: with one dropped, two are kept and the slope pays a third
            # at most (no step of the paraphrase ladder is larger than a third), flagged all the same
            assert "generated" in report.flags and _rationale_points(report) <= 4, (track, seed)
            continue
        _assert_flagged(report, (edit, track, seed))


@pytest.mark.parametrize("lab", LABS)
def test_another_seeds_template_pasted_into_this_bundle_is_flagged(lab):
    """Other numbers, another policy, path or candidate: still the template's words."""
    for track in TRACKS:
        data, other = solved(lab, track, 3), solved(lab, track, 4)
        _assert_flagged(grade_bundle(_with_synthesis(data, rationale=other["synthesis"]["rationale"])), track)


def test_the_template_with_an_answer_outside_the_lists_is_still_flagged():
    """An unknown trigger or limitation is compared with every trigger × limitation template."""
    data = solved("lab07", "mobile", 6)
    report = grade_bundle(_with_synthesis(data, reevaluation_trigger="deadline", residual_risk=None))
    _assert_flagged(report, "unknown trigger")


def test_the_template_is_flagged_even_when_a_part_it_cites_is_missing():
    """No record and no final settings for part D: the lab's default settings stand in for it."""
    for lab in LABS:
        data = solved(lab, "edge", 8)
        del data["evidence"]["D"], data["controls"]["D"], data["runs"]["D"]
        report = grade_bundle(reseal(data))
        _assert_flagged(report, lab)
        assert any(f.part == "D" and f.criterion == "missing" for f in report.findings)


def test_the_template_is_flagged_when_a_part_it_cites_cannot_be_rebuilt():
    """Part C's record and final settings are outside the domain (no plan replays): its record stands in."""
    data = solved("lab07", "edge", 4)
    data["evidence"]["C"]["result"]["inputs"]["graph_breaks"] = 9
    data["controls"]["C"]["graph_breaks"] = 9
    report = grade_bundle(reseal(data))
    assert {(f.part, f.criterion) for f in report.findings} == {("C", "domain"), ("synthesis", "generated")}
    _assert_flagged(report, "part C outside the domain")


def test_the_template_renders_for_any_part_e_decision_a_record_can_hold():
    """A replayed plan carries the record's decision as it was written; the template still renders."""
    for lab_id, hostile in (("lab07", ["x"]), ("lab11", {"recommendation": ["x"], "rejected": {"y": 1}}), ("lab11", None)):
        lab = get_lab(lab_id)
        plans = plan_all(lab, default_replay(), "edge", _default_controls(lab_id, "edge", {}))
        plans["E"] = dataclasses.replace(plans["E"], decision=hostile)
        text = lab.reference_rationale("edge", plans, lab.triggers[0].value, lab.limitations[0].value)
        assert text.startswith("I recommend " if lab_id == "lab07" else "I choose no feasible"), text


def test_a_hostile_part_e_decision_does_not_break_the_check():
    data = solved("lab11", "cloud", 2)
    data["evidence"]["E"]["decision"] = {"recommendation": ["x"], "rejected": {"y": 1}}
    report = grade_bundle(reseal(data))
    assert not [f.message for f in report.findings if f.criterion == "grader" and "check_generated" in f.message]
    _assert_flagged(report, "hostile decision")


# -- honest rationales ---------------------------------------------------------------------------

def test_sharing_one_natural_sentence_with_the_template_is_not_flagged():
    data = solved("lab07", "cloud", None)
    assert data["synthesis"]["rationale"].startswith(NATURAL)
    own = HANDWRITTEN[3][5]
    for text in (NATURAL, f"{NATURAL} {own}", f"{own} {NATURAL}", HANDWRITTEN[0][5]):
        report = grade_bundle(_with_synthesis(data, rationale=text))
        assert _generated_findings(report) == [], text[:60]


def test_the_lab11_opening_sentence_alone_is_not_flagged():
    for track in TRACKS:
        data = solved("lab11", track, None)
        opening = _sentences(data["synthesis"]["rationale"])[0]
        assert opening.startswith("I choose")
        found = generated.similarity(opening, data["synthesis"]["rationale"])
        assert found.containment == 1.0 and not found.generated, (track, found)


def _export(name: str) -> tuple[dict, dict]:
    export = json.loads(needs.shared_path("marimo-exports", f"{name}.json").read_text(encoding="utf-8"))
    return export, export["result_snapshot"]


@pytest.mark.parametrize("name", sorted(EXPORT_CONTROLS))
def test_the_export_settings_rebuild_the_recorded_inputs(name):
    lab_id, track, controls = EXPORT_CONTROLS[name]
    export, snapshot = _export(name)
    assert export["track"] == track
    plans = plan_all(get_lab(lab_id), default_replay(), track, controls)
    for part in PARTS:
        capture = snapshot["captures"][part]
        rebuilt = json.loads(json.dumps(Lab.arm_inputs(plans[part].result)))
        assert rebuilt == Lab.arm_inputs(capture["result"]), part
        assert plans[part].decision == capture["decision"], part


@pytest.mark.parametrize("name", sorted(EXPORT_CONTROLS))
def test_genuine_marimo_export_rationales_are_not_the_template(name):
    lab_id, track, controls = EXPORT_CONTROLS[name]
    lab = get_lab(lab_id)
    export, snapshot = _export(name)
    rationale = export["final_decision"]["rationale"]
    trigger = snapshot.get("reevaluation_trigger") or snapshot.get("trigger")
    limitation = snapshot["residual_risk"]
    plans = plan_all(lab, default_replay(), track, controls)
    for t in lab.triggers:
        for risk in lab.limitations:
            found = generated.similarity(rationale, lab.reference_rationale(track, plans, t.value, risk.value))
            assert not found.generated, (t.value, risk.value, found)
            assert found.coverage < generated.PASTED_COVERAGE - 0.1, found  # a margin, not a knife edge
    fields = {"reevaluation_trigger": trigger, "residual_risk": limitation, "rationale": rationale}
    if lab_id == "lab07":
        fields.update(recommendation=snapshot["recommendation"], rejected_alternative=snapshot["rejected_alternative"])
    report = grade_bundle(_bundle(lab_id, track, controls, **fields))
    assert _generated_findings(report) == []
    assert "generated" not in report.flags


def _corpus() -> list[tuple[str, str]]:
    """(where, text) of every hand-written rationale kept in the repository."""
    found: list[tuple[str, str]] = []
    if CORPUS_DIR.is_dir():
        for path in sorted(CORPUS_DIR.rglob("*")):
            if path.suffix in (".txt", ".md"):
                found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
            elif path.suffix == ".toml":
                found += _toml_texts(str(path.relative_to(ROOT)), tomllib.loads(path.read_text(encoding="utf-8")))
            elif path.suffix == ".json":
                found += _toml_texts(str(path.relative_to(ROOT)), json.loads(path.read_text(encoding="utf-8")))
        if not found:
            raise AssertionError(f"{CORPUS_DIR} holds no rationale this test can read (.txt, .md, .toml or .json)")
    texts = _toml_texts("the labs' reference answers", reference_answers())
    if not texts:
        raise AssertionError("the labs' reference answers (Lab.reference_answers) hold no rationale of 20 words or more")
    found += texts
    return found


def _toml_texts(where: str, value, path: str = "") -> list[tuple[str, str]]:
    """Every string of at least 20 words in a parsed TOML or JSON value (rationales, whatever the layout)."""
    if isinstance(value, dict):
        return [item for key, inner in value.items() for item in _toml_texts(where, inner, f"{path}.{key}")]
    if isinstance(value, list):
        return [item for i, inner in enumerate(value) for item in _toml_texts(where, inner, f"{path}[{i}]")]
    return [(f"{where}{path}", value)] if isinstance(value, str) and len(value.split()) >= 20 else []


def _labs_of(where: str) -> tuple[str, ...]:
    """The lab a corpus entry names in its path or key, else both."""
    named = [lab for lab in LABS if lab in where or lab.replace("lab", "lab_") in where]
    return tuple(named) or LABS


def test_hand_written_rationales_in_the_repository_are_not_the_template():
    """Every rationale in tests/rationale_corpus/ and the labs' reference answers (Lab.reference_answers), plus
    the ones in this file, against every template of its lab (every track, trigger and limitation;
    the default settings' plans: numbers are normalised, so only a few words depend on them)."""
    texts = _corpus() + [(f"{lab} {track} (this file)", text) for lab, track, _, _, _, text in HANDWRITTEN]
    assert len(texts) >= len(HANDWRITTEN)
    for where, text in texts:
        for lab_id in _labs_of(where):
            lab = get_lab(lab_id)
            for track in TRACKS:
                plans = plan_all(lab, default_replay(), track, _default_controls(lab_id, track, {}))
                for trigger in lab.triggers:
                    for risk in lab.limitations:
                        found = generated.similarity(text, lab.reference_rationale(track, plans, trigger.value, risk.value))
                        assert not found.generated, (where, track, trigger.value, risk.value, found)


# -- invisible characters (issue 15: measured 24/24 unflagged, 22/24 with 12/12 before) ---------------------

INVISIBLE_ATTACK = ("\u200b", "\u200c", "\u2060", "\u00ad")
# The words the reader needs besides the names (stance and label cues), left intact as the attack left them.
READER_WORDS = frozenset({"recommend", "reject", "choose", "remaining", "limitation", "trigger", "evaluation"})


def _names(lab_id: str, data: dict) -> set[str]:
    """Lower-case words of every option name the reader needs on this bundle's track."""
    lab = get_lab(lab_id)
    terms = lab.final_choice_terms(load_bundle(json.dumps(data).encode()))
    texts = [t for choice in (*terms.options, *lab.triggers, *lab.limitations) for t in (choice.label, *choice.keywords)]
    texts += [name for _, values in terms.slots for name in values]
    return {word for text in texts for word in re.findall(r"[a-z]+", text.lower())}


def _invisible_in_filler_words(text: str, names: set[str], char: str) -> str:
    """One ``char`` inside every word of four letters or more that is neither an option name nor a cue the reader needs."""
    return re.sub(r"[A-Za-z]{4,}", lambda m: m.group() if m.group().lower() in names | READER_WORDS else m.group()[:2] + char + m.group()[2:], text)


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("track", TRACKS)
def test_invisible_characters_in_the_templates_filler_words_are_still_the_template(lab, track):
    for seed, char in zip((None, 1, 7, 3), INVISIBLE_ATTACK, strict=True):
        data = solved(lab, track, seed)
        typed = _invisible_in_filler_words(data["synthesis"]["rationale"], _names(lab, data), char)
        assert typed.count(char) >= 10 and typed != data["synthesis"]["rationale"]
        _assert_flagged(grade_bundle(_with_synthesis(data, rationale=typed)), (seed, hex(ord(char))))


# -- the paraphrase ladder: a sentence at a time rewritten by hand ---------------------------------------------

# One hand paraphrase per template sentence, with the template's own numbers (so what it cites is true).
REWRITES = [
    (r"I recommend (?P<rec>.+) and reject (?P<rej>.+)\.", "After the five parts I would go with {rec} rather than {rej}."),
    (r"Evidence from part B: (?P<n>\d+) executions with (?P<r>\d+) compilation\(s\) give a compiled total of "
     r"(?P<c>[\d.]+ \w+) against an eager total of (?P<e>[\d.]+ \w+)\.",
     "Over {n} runs with {r} recompilation(s), compiling costs {c} in all while staying eager costs {e}."),
    (r"Evidence from part C: with (?P<b>\d+) graph break\(s\) left, fusion eliminates (?P<x>[\d.]+ \w+) of graph traffic\.",
     "Fusing the graph, {b} breaks remaining, saves {x} of memory traffic."),
    (r"Evidence from part D: the (?P<p>\w+) recomputation policy retains (?P<a>[\d.]+ \w+) of activations where "
     r"retaining all of them needs (?P<b>[\d.]+ \w+)\.",
     "Recomputing under the {p} policy keeps only {a} of activations in memory instead of {b}."),
    (r"Evidence from part E: the inserted (?P<op>\w+) operator with (?P<s>\w+) shapes takes the (?P<path>\w+) path\.",
     "When I inserted the {op} operator ({s} shapes), it went down the {path} path."),
    (r"I choose (?P<c>.+?) \((?P<l>.+?)\) and reject the (?P<rej>\w+) candidate \((?P<hw>.+)\)\.",
     "I go with {c} ({l}) and reject the {rej}, the {hw}."),
    (r"Evidence from part E: under the (?P<o>\w+) objective the rejected candidate takes (?P<lat>[\d.e+-]+ \w+) end to end "
     r"and (?P<en>[\d.e+-]+ \w+) of accelerator energy, (?P<v>.+)\.",
     "With {o} as the objective, the candidate I turned down needs {lat} per inference and {en} of accelerator energy ({v})."),
    (r"Evidence from part D: a (?P<k>\d+)x kernel-only speedup yields (?P<s>[\d.]+x) end to end once host, transfer, "
     r"launch and postprocessing time are added back\.",
     "Making the kernel {k}x faster only buys {s} for the whole application, because host work, transfers and "
     "postprocessing do not shrink."),
    (r"Evidence from part C: the (?P<op>\w+) workload takes the (?P<path>\w+) path in (?P<lat>[\d.e+-]+ \w+)\.",
     "The {op} kernel ran on the {path} path and took {lat}."),
    (r"Evidence from part A: the AdamW arm records optimizer_state_gb = (?P<o>[\d.]+ GB) and total_memory_gb = "
     r"(?P<t>[\d.]+ GB)\.", "Under AdamW the optimizer state alone takes {o} out of {t}."),
    (r"Evidence from part B: the (?P<p>\d+) x (?P<a>\d+) arm records update_time_ms = (?P<u>[\d.]+ ms) and a time to "
     r"target of (?P<t>.+)\.", "With a physical batch of {p} accumulated {a} times, each update takes {u}; time to target: {t}."),
    (r"Evidence from part C: the (?P<p>\w+) arm records total_memory_gb = (?P<x>[\d.]+ GB) against (?P<y>[\d.]+ GB) for "
     r"fp32\.", "Switching to {p} brings training memory to {x}, where full FP32 would need {y}."),
    (r"Evidence from part D: the (?P<p>\w+) ledger records total_memory_gb = (?P<x>[\d.]+ GB) against (?P<y>[\d.]+ GB) "
     r"without checkpointing\.", "At the probe batch, {p} checkpointing needs {x} of memory compared with {y} when nothing is recomputed."),
    (r"Evidence from part E: the (?P<f>\w+) comparison records delta_update_time_ms = (?P<d>-?[\d.]+ ms)\.",
     "The {f} fix moves each update by {d} against the shared baseline."),
    (r"Evidence from part D: the rejected design came out at latency (?P<lat>[\d.]+ ms|unavailable), upload "
     r"(?P<up>[\d.e+-]+ MB), information (?P<inf>[\d.]+%), outcome (?P<v>.+)\.",
     "The placement I turn down answers in {lat}, sends {up} and keeps {inf} of the information, so it {v}."),
    (r"Evidence from part A: payload (?P<p>[\d.]+ MB), link (?P<r>[\d.]+ Mb/s), remote total (?P<l>[\d.]+ ms) "
     r"against a deadline of (?P<d>[\d.]+ ms)\.",
     "Shipping a {p} request over {r} took {l} end to end, with {d} allowed."),
    (r"Evidence from part B: memory needed (?P<m>[\d.]+ MB) against (?P<c>[\d.]+ MB), execution (?P<e>[\d.]+ ms)\.",
     "Scaled up, the model wanted {m} where the device has {c}, and ran for {e}."),
    (r"Evidence from part C: duty setting (?P<d>[\d.]+), mean draw (?P<p>[\d.]+ W) against an allowed (?P<b>[\d.]+ W)\.",
     "Kept active a fraction {d} of the day, it averaged {p} against the {b} allowed."),
    (r"Remaining limitation: (?P<lim>.+)\.", "My main worry is that the result rests on {lim}."),
    (r"Re-evaluation trigger: (?P<t>.+)\.", "I would revisit the decision if {t}."),
]
# Where the lines are (every track, seeds None and 3), rewriting in the template's order:
# at most this many rewritten keeps the flag (and 0 rationale points) ...
LADDER_FLAGGED_UP_TO = {"lab02": 2, "lab07": 2, "lab08": 2, "lab11": 1}  # Lab 11: two of its three evidence sentences kept
# beside the student's own lines pay a third (the slope), not nothing
# ... and from this many on, the text is never flagged.
LADDER_UNFLAGGED_FROM = {"lab02": 3, "lab07": 3, "lab08": 4, "lab11": 3}


def _rewrite(sentence: str) -> str:
    for pattern, replacement in REWRITES:
        found = re.fullmatch(pattern, sentence)
        if found:
            return replacement.format(**found.groupdict())
    raise AssertionError(f"no hand rewrite for {sentence!r}")


def _rationale_points(report) -> float:
    return sum(item.points for item in report.parts["synthesis"].items if item.item in RATIONALE_ITEMS)


def _ladder(data: dict, order: list[int]) -> list[tuple[str, dict[int, str], object]]:
    """For k = 0 … all: (text, {index: sentence} of the template sentences kept, report)."""
    template = _sentences(data["synthesis"]["rationale"])
    steps = []
    for k in range(len(template) + 1):
        rewritten = set(order[:k])
        parts = [_rewrite(s) if i in rewritten else s for i, s in enumerate(template)]
        text = " ".join(parts)
        kept = {i: s for i, s in enumerate(template) if i not in rewritten}
        steps.append((text, kept, grade_bundle(_with_synthesis(data, rationale=text))))
    return steps


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("order", ["template order", "last sentence first"])
def test_the_paraphrase_ladder_pays_only_for_the_students_own_sentences(lab, order):
    """Mostly template: flagged, 0 rationale points.  Below the flag, a text that keeps template sentences or the
    template's limitation and trigger lines pays what its own sentences earn less a third per template sentence kept
    (two thirds while the whole text is still largely the template's); the points never fall as sentences are
    rewritten, and in the template's order no step is larger than a third (4 points).  All rewritten: 12/12."""
    for track in TRACKS:
        for seed in (None, 3):
            data = solved(lab, track, seed)
            count = len(_sentences(data["synthesis"]["rationale"]))
            indices = list(range(count)) if order == "template order" else list(reversed(range(count)))
            steps = _ladder(data, indices)
            flagged = [generated.MESSAGE in [f.message for f in report.findings] for _, _, report in steps]
            assert flagged == sorted(flagged, reverse=True), (track, seed, flagged)  # one line, no flicker
            points = [_rationale_points(report) for _, _, report in steps]
            assert points == sorted(points), (track, seed, points)  # never falls as more words change
            for k, (text, kept, report) in enumerate(steps):
                where = (track, seed, k)
                if flagged[k]:
                    _assert_flagged(report, where)
                    continue
                long_kept = [s for s in kept.values() if not s.startswith(("I recommend", "I choose", "Remaining", "Re-evaluation"))]
                notes = [f for f in report.findings if f.criterion == "generated"]
                share = [f for f in notes if f.rubric_item is not None]
                own = text
                for sentence in long_kept:
                    own = own.replace(sentence, "")
                alone = grade_bundle(_with_synthesis(data, rationale=" ".join(own.split())))
                withheld = {item for f in share for item in (f.rubric_item, *f.also_costs)}
                lost_alone = {i.item for i in alone.parts["synthesis"].items if i.points < i.max_points}
                lost = {i.item for i in report.parts["synthesis"].items if i.points < i.max_points}
                assert lost == lost_alone | withheld, where  # its own sentences read, less the template's share
                if long_kept:
                    assert len(notes) == 1 and len(share) == 1, where
                    assert set(share[0].actual) == set(long_kept), where
                    assert "of its rationale points are withheld" in share[0].message
            assert points[-1] == 12 and "generated" not in steps[-1][2].flags
            assert max(b - a for a, b in itertools.pairwise(points)) <= 4, (track, seed, points)  # a slope, either order
            if order == "template order":
                assert not any(flagged[LADDER_UNFLAGGED_FROM[lab]:]) and all(flagged[:LADDER_FLAGGED_UP_TO[lab] + 1]), (track, seed, flagged)


@pytest.mark.parametrize("lab", LABS)
def test_the_templates_evidence_sentences_earn_no_evidence_point_beside_sentences_of_ones_own(lab):
    """One of the template's evidence sentences beside an own opening, limitation and trigger: that sentence is not
    read (its number earns nothing) and a share of the rationale points is withheld as the template's (a third per
    template sentence, two thirds while the whole short text is still largely the template's)."""
    for track in TRACKS:
        data = solved(lab, track, 2)
        template = _sentences(data["synthesis"]["rationale"])
        evidence = [s for s in template if s.startswith("Evidence from part")]
        own = [_rewrite(s) for s in template if not s.startswith("Evidence from part")]
        text = " ".join([own[0], evidence[1], "I double-checked this against the notebook's chart.", *own[1:]])
        report = grade_bundle(_with_synthesis(data, rationale=text))
        assert generated.MESSAGE not in [f.message for f in report.findings], track
        lost = {i.item for i in report.parts["synthesis"].items if i.points < i.max_points}
        share = [f for f in report.findings if f.criterion == "generated" and f.rubric_item]
        assert len(share) == 1 and share[0].actual == [evidence[1]], track
        assert lost == {share[0].rubric_item, *share[0].also_costs} >= {"rationale_cites_evidence"}, (track, lost)
        assert "generated" in report.flags


def test_the_word_count_counts_only_ones_own_sentences():
    data = solved("lab07", "cloud", 4)
    template = _sentences(data["synthesis"]["rationale"])
    text = " ".join([NATURAL, template[3], "It is faster."])  # part D's evidence sentence
    report = grade_bundle(_with_synthesis(data, rationale=text))
    length = [f for f in report.findings if f.rubric_item == "rationale_length"]
    assert len(length) == 1 and length[0].actual == 12, [f.message for f in report.findings]  # 9 + 3 own words


def test_a_natural_sentence_shared_with_the_template_stays_the_students():
    """Short lines that only state choices in the lab's words are never template sentences, whatever their wording."""
    for lab_id, track, _, _, _, own in HANDWRITTEN:
        data = solved(lab_id, track, None)
        opening, *_, limit_line, trigger_line = _sentences(data["synthesis"]["rationale"])
        for text in (f"{opening} {own}", f"{own} {limit_line} {trigger_line}"):
            report = grade_bundle(_with_synthesis(data, rationale=text))
            assert [f for f in report.findings if f.criterion == "generated"] == [], (lab_id, track, text[:50])


def test_a_template_sentence_with_two_words_changed_is_still_the_templates():
    """Part C's sentence keeps 62 % of its 3-grams with two words changed, 23 % with four (the line is 50 %)."""
    data = solved("lab07", "mobile", 5)
    template = _sentences(data["synthesis"]["rationale"])
    own = [_rewrite(s) for s in template]
    for changed, still in ((_words_swapped(template[2], 2), True), (_words_swapped(template[2], 4), False)):
        text = " ".join([*own[:2], changed, *own[3:]])
        use_notes = [f for f in grade_bundle(_with_synthesis(data, rationale=text)).findings if f.criterion == "generated"]
        assert bool(use_notes) is still, changed


def test_no_sentence_of_a_genuine_rationale_is_near_a_template_sentence():
    """Every sentence of the corpus, the reference answers, this file's texts and the marimo exports
    against every long template sentence of its lab (every track, trigger and limitation): at most
    33 % of a template sentence's 3-grams, against the line of 50 %."""
    texts = _corpus() + [(f"{lab} {track} (this file)", text) for lab, track, _, _, _, text in HANDWRITTEN]
    exports = [needs.SHARED / "marimo-exports" / f"{name}.json" for name in sorted(EXPORT_CONTROLS)]  # where present
    texts += [(path.stem, json.loads(path.read_text(encoding="utf-8"))["final_decision"]["rationale"])
              for path in exports if path.is_file()]
    worst = 0.0
    for lab_id in LABS:
        lab = get_lab(lab_id)
        sentences = set()
        for track in TRACKS:
            data = solved(lab_id, track, None)
            terms = lab.final_choice_terms(load_bundle(json.dumps(data).encode()))
            names = generated._name_words((*terms.options, *lab.triggers, *lab.limitations), terms.slots)
            plans = plan_all(lab, default_replay(), track, _default_controls(lab_id, track, {}))
            for trigger, risk in itertools.product(lab.triggers, lab.limitations):
                template = lab.reference_rationale(track, plans, trigger.value, risk.value)
                sentences.update(generated._template_sentences(generated.skeleton(template), names))
        for where, text in texts:
            if lab_id not in _labs_of(where):
                continue
            for start, end in generated.sentence_spans(text):
                own = generated.word_ngrams(text[start:end])
                worst = max([worst, *(len(own & sentence) / len(sentence) for sentence in sentences)])
    assert worst <= 0.34 < generated.SENTENCE_COVERAGE, worst


# -- the measure itself ----------------------------------------------------------------------------

def test_numbers_are_one_placeholder_and_sentences_are_their_own_sequences():
    assert generated.word_ngrams("It takes 28.49 ms.") == generated.word_ngrams("It takes 31 ms.")
    assert generated.word_ngrams("A 10x gain. B 1,024 MB fits.") == generated.word_ngrams("B 7 MB fits. A 3.5x gain.")
    assert ("gain", "b", "#") not in generated.word_ngrams("A 10x gain. B 1,024 MB fits.")


def test_similarity_is_containment_and_coverage_of_distinct_trigrams():
    template = "one two three four. five six seven eight."
    found = generated.similarity("one two three four. nine ten eleven.", template)
    assert (found.shared, found.containment, found.coverage) == (2, 2 / 3, 0.5)
    assert found.generated  # half of the template reproduced
    assert not generated.similarity("one two three. nine ten eleven twelve.", template).generated


def test_an_empty_rationale_is_left_to_the_rationale_check():
    report = grade_bundle(_with_synthesis(solved("lab07", "edge", 1), rationale="   "))
    assert _generated_findings(report) == []


# -- solve's sessions ------------------------------------------------------------------------------

def _times(bundle) -> list:
    return [(r.prediction_locked_at, r.result_shown_at, r.captured_at) for r in bundle.evidence.values()]


def _steps(bundle) -> list:
    """The spans between consecutive moments of the session (lock, shown, captured per part)."""
    moments = [moment for triple in _times(bundle) for moment in triple]
    return [later - earlier for earlier, later in itertools.pairwise(moments)]


@pytest.mark.parametrize("lab", LABS)
def test_solve_times_come_from_the_seed(lab):
    first, again, other, none, none_again = (solve(lab, "mobile", s) for s in (11, 11, 12, None, None))
    assert first.to_json() == again.to_json()
    assert none.to_json() == none_again.to_json()
    for one, two in ((first, other), (first, none), (other, none)):
        pairs = list(zip(_times(one), _times(two), strict=True))
        assert all(a != b for left, right in pairs for a, b in zip(left, right, strict=True))
        assert all(a != b for a, b in zip(_steps(one), _steps(two), strict=True))  # not one session shifted in time
        assert one.created_at != two.created_at


@pytest.mark.parametrize("lab", LABS)
def test_a_solve_session_runs_like_a_students(lab):
    for seed in (None, 3, 4):
        bundle = solve(lab, "edge", seed)
        moments = [t for triple in _times(bundle) for t in triple] + [bundle.created_at]
        assert moments == sorted(moments) and len(set(moments)) == len(moments)
        assert all(moment.microsecond != 0 for moment in moments)  # stamped by a clock, not round
        for part, (locked, shown, captured) in zip(get_lab(lab).part_ids(), _times(bundle), strict=True):
            assert timedelta(seconds=1) <= shown - locked <= timedelta(minutes=2), part
            assert timedelta(seconds=30) <= captured - shown <= timedelta(minutes=10), part
        for (_, _, captured), (locked, _, _) in itertools.pairwise(_times(bundle)):
            assert timedelta(minutes=1) <= locked - captured <= timedelta(minutes=10)


@pytest.mark.parametrize("lab", LABS)
def test_the_run_log_agrees_with_each_record(lab):
    spec = get_lab(lab)
    bundle = solve(lab, "cloud", 9)
    assert bundle.schema_version == SCHEMA_VERSION and set(bundle.runs) == set(spec.part_ids())
    for part, record in bundle.evidence.items():
        run = bundle.runs[part]
        assert run.prediction == record.prediction
        assert run.prediction_locked_at == record.prediction_locked_at
        assert run.first_shown_at == run.first_run_at == record.result_shown_at
        runnable = {c.name for c in spec.parts[part].controls if not c.decision}
        assert run.first_run_controls == {name: bundle.controls[part][name] for name in runnable}
        deps = spec.parts[part].depends_on
        assert run.first_run_upstream == ({dep: {c.name: bundle.controls[dep][c.name] for c in spec.parts[dep].controls
                                                 if not c.decision} for dep in deps} or None)


# A synonym for each word a map knows, applied to the whole template (the words change, its numbers and order do not)
SYNONYMS = {"I recommend": "I suggest", "recommend": "advise", "and reject": "and turn down", "reject": "turn down",
            "Evidence from part": "Data from part", "Remaining limitation": "Outstanding caveat",
            "Re-evaluation trigger": "Reconsider when", "records": "logs", "against": "versus", "give": "produce",
            "takes": "needs", "eliminates": "removes", "retains": "keeps", "yields": "gives", "under the": "with the",
            "I choose": "I pick", "the alternative": "the other", "with": "using", "of": "for"}


def _synonym_mapped(text: str) -> str:
    for word, other in SYNONYMS.items():
        text = re.sub(rf"\b{re.escape(word)}\b", other, text)
    return text


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("track", TRACKS)
def test_the_template_with_its_words_swapped_earns_no_rationale_point(lab, track):
    data = solved(lab, track)
    mapped = _synonym_mapped(data["synthesis"]["rationale"])
    assert mapped != data["synthesis"]["rationale"]
    data["synthesis"]["rationale"] = mapped
    report = grade_bundle(reseal(data))
    assert "generated" in report.flags
    assert sum(i.points for i in report.parts["synthesis"].items if i.item.startswith("rationale_")) == 0
    assert generated.shape_ratio(mapped, solved(lab, track)["synthesis"]["rationale"]) >= generated.SHAPE_GENERATED


def test_no_honest_rationale_follows_a_templates_shape():
    corpus = Path(__file__).parent / "rationale_corpus"
    worst = 0.0
    for path in sorted(corpus.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for entry in data["honest"] + data.get("honest_forms", []):
            template = solved(path.stem, entry["track"], entry.get("seed"))["synthesis"]["rationale"]
            worst = max(worst, generated.shape_ratio(entry["rationale"], template))
    assert worst < 0.75, worst  # measured 0.66
