"""The book's marimo exports, graded exactly as the book writes them.

``tests/fixtures/marimo/`` holds genuine downloads of the book's Lab 07 and Lab 11 marimo
notebooks (unedited; see ``/work/shared/marimo-exports/README.md`` for how they were made).
Every honest export earns full marks; each tamper below is derived from a genuine export
the way a student would make it, and is caught with its reason, by part, criterion,
flag and message.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from mlsys_grader.api import default_replay
from mlsys_grader.cli import EXIT_OK, EXIT_UNGRADABLE, main
from mlsys_grader.course._ingest import Candidate, discover, load_candidate
from mlsys_grader.course._options import resolve_rubrics
from mlsys_grader.course._worker import check_file, grade_candidate
from mlsys_grader.intake._marimo import export_bundle, export_from_json, export_from_markdown
from mlsys_grader.intake._reader import LOCK_TIME_NOTE
from mlsys_grader.labs import Lab, get_lab

MARIMO = Path(__file__).parent / "fixtures" / "marimo"
GENUINE_JSON = ("lab07-cloud.json", "lab07-tinyml.json", "lab11-edge.json", "lab11-tinyml.json")
GENUINE_MD = "lab07-cloud.report.md"
SOURCE_ORDER = ("hardware", "scenario", "calculations", "results")


# -- deriving exports from the genuine ones -------------------------------------------------

def genuine(name: str) -> dict:
    return json.loads((MARIMO / name).read_text(encoding="utf-8"))


def seal(track: str, inputs: dict) -> str:
    """The lab's fingerprint, computed here from the README's words (independently of the package)."""
    text = json.dumps({"track": track, "inputs": inputs}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def refit(report: dict, *, reseal: bool = True) -> dict:
    """Rewrite every copy of the captures (and, with ``reseal``, their fingerprints) as the book's
    report code writes them: what a careful forger does after editing a capture."""
    captures = report["result_snapshot"]["captures"]
    if reseal:
        for capture in captures.values():
            capture["upstream_fingerprint"] = seal(capture["track"], capture["inputs"])
    report["predictions"] = {p: c["prediction"] for p, c in captures.items()}
    report["knob_settings"] = {p: c["inputs"] for p, c in captures.items()}
    report["evidence_summary"] = {p: {arm: c[arm] for arm in ("baseline", "result", "alternatives")} for p, c in captures.items()}
    if report["metadata"]["lab_id"] == "v1_11_hardware_roofline":
        report["binding_constraints"] = {p: (c["chosen_result"] or c["result"])["outputs"] for p, c in captures.items()}
    else:
        chosen = captures["E"]["chosen_result"] or captures["E"]["result"]
        report["binding_constraints"] = {"runtime_path": chosen["status"],
                                         "activation_memory": "PASS" if captures["D"]["result"]["memory_feasible"] else "OOM"}
    return report


def render_markdown(report: dict) -> str:
    """The Markdown report as the book's report code writes it (checked byte for byte against the genuine one)."""
    meta = report["metadata"]

    def items(mapping, order):
        return [f"- {key}: {mapping[key]}" for key in order if key in mapping]

    summary = report["evidence_summary"]
    lines = [
        f"# {meta['title']} Lab Report", "", "## Lab", "",
        f"- Student: {report['student_id'] or 'Not provided'}", f"- Lab ID: {meta['lab_id']}", f"- Lab title: {meta['title']}",
        f"- Lab version: {meta['lab_version']}", f"- Book anchor: {meta['book_anchor']}", f"- Updated at: {meta['updated_at']}",
        f"- MLSysIM version: {meta['mlsysim_version']}", f"- MLSysBook Labs version: {meta['mlsysbook_labs_version']}",
        f"- Report schema version: {meta['report_schema_version']}", "",
        "## Track And Scenario", "", f"- Track: {report['track']}", f"- Scenario: {report['scenario']}", "",
        "## Learning Objectives", "", *[f"- {line}" for line in report["learning_objectives"]], "",
        "## Predictions", "", *items(report["predictions"], "ABCDE"), "",
        "## Evidence Summary", "",
        *[f"- {p}: { {arm: summary[p][arm] for arm in ('baseline', 'result', 'alternatives')} }" for p in "ABCDE"], "",
        "## Final Decision", "", *items(report["final_decision"], ("recommendation", "rejected_alternative", "rationale")), "",
        "## Big Takeaways", "", *[f"- {line}" for line in report["big_takeaways"]], "",
        "## Reflections", "", *items(report["reflections"], ("rationale", "reevaluation_trigger")), "",
        "## Residual Risk", "", str(report["residual_risk"]), "",
        "## Source Trace", "", *items(report["source_trace"], sorted(report["source_trace"], key=SOURCE_ORDER.index)), "", "", "",
        "### MLSysIM Result Snapshot", "", "```json", json.dumps(report["result_snapshot"], indent=2, sort_keys=True), "```", "", "",
    ]
    return "\n".join(lines)


def write(tmp_path: Path, report: dict | str, name: str = "v1_07_framework_tax_snapshot.json") -> Path:
    path = tmp_path / name
    path.write_text(report if isinstance(report, str) else json.dumps(report, indent=2, sort_keys=True), encoding="utf-8")
    return path


def graded(path: Path) -> dict:
    kind = "markdown" if path.suffix == ".md" else "json"
    return grade_candidate(Candidate(str(path), kind, str(path)), RUBRICS)


RUBRICS = resolve_rubrics({})


def findings(result: dict, part: str, criterion: str) -> list[str]:
    return [message for p, c, _item, message in result["findings"] if (p, c) == (part, criterion)]


def scale_outputs(value, factor: float):
    """Every float an evaluator computed, times ``factor`` (inputs untouched): another mlsysim's numbers."""
    if isinstance(value, dict):
        return {key: item if key == "inputs" else scale_outputs(item, factor) for key, item in value.items()}
    if isinstance(value, list):
        return [scale_outputs(item, factor) for item in value]
    return value * factor if isinstance(value, float) else value


# -- honest exports ------------------------------------------------------------------------

@pytest.mark.parametrize("name", [*GENUINE_JSON, GENUINE_MD])
def test_every_genuine_export_scores_full_marks_with_the_excuse_visible(name):
    result = graded(MARIMO / name)
    assert (result["status"], result["score"], result["max_score"]) == ("graded", 100.0, 100.0), result["findings"]
    assert result["flags"] == []
    assert result["origin"] == ("marimo-md" if name.endswith(".md") else "marimo-json")
    assert result["findings"] == [["bundle", "prediction", "", LOCK_TIME_NOTE]], "the only note is the visible lock-time excuse"
    assert all(points == 2 for item, points in result["items"].items() if item.endswith(".prediction_locked"))


@pytest.mark.parametrize("name", GENUINE_JSON)
def test_the_labs_own_fingerprint_verifies_on_every_capture(name):
    for part, capture in genuine(name)["result_snapshot"]["captures"].items():
        assert capture["upstream_fingerprint"] == seal(capture["track"], capture["inputs"]), part


@pytest.mark.parametrize("name", GENUINE_JSON)
def test_the_export_is_read_with_the_layout_its_lab_module_declares(name):
    """Which snapshot keys hold the answers, and whether the recommendation is a part's decision, are the lab's."""
    export = export_from_json(genuine(name))
    layout = get_lab(export.lab_id).marimo_layout
    assert export.lab_id == name.split("-")[0] and export.layout is layout
    assert export.layout.book_lab_id == export.report["metadata"]["lab_id"]
    synthesis = export_bundle(export).synthesis
    if layout.decision_part is None:  # Lab 07: the recommendation and rejected alternative are synthesis answers
        assert (synthesis.recommendation, synthesis.rejected_alternative) == (
            export.snapshot[layout.recommendation], export.snapshot[layout.rejected])
    else:  # Lab 11: they are part E's captured decision, so the bundle's synthesis leaves them out
        assert layout.decision_part == "E" and synthesis.recommendation is synthesis.rejected_alternative is None
        assert export.captures["E"]["decision"]["recommendation"] == export.snapshot[layout.recommendation]
    assert synthesis.reevaluation_trigger == export.snapshot[layout.trigger]


def test_the_markdown_report_reads_as_the_same_submission_as_its_json():
    report = genuine("lab07-cloud.json")
    assert render_markdown(report) == (MARIMO / GENUINE_MD).read_text(encoding="utf-8"), "the renderer below is the book's"
    from_md = export_from_markdown((MARIMO / GENUINE_MD).read_bytes())
    from_json = export_from_json(report)
    assert from_md.snapshot == from_json.snapshot
    assert from_md.report["evidence_summary"] == report["evidence_summary"]
    assert export_bundle(from_md) == export_bundle(from_json)
    assert export_bundle(from_md).synthesis.rationale == report["final_decision"]["rationale"]


@pytest.mark.parametrize("name", ["lab11-edge.json", "lab11-tinyml.json"])
def test_a_lab11_markdown_report_rendered_from_a_genuine_export_scores_full_marks(tmp_path, name):
    result = graded(write(tmp_path, render_markdown(genuine(name)), "v1_11_hardware_roofline_report.md"))
    assert (result["score"], result["flags"], result["origin"]) == (100.0, [], "marimo-md"), result["findings"]


def test_the_static_version_label_is_never_trusted_either_way(tmp_path):
    """metadata.mlsysim_version is "0.1.2" whatever ran: relabelling it changes nothing, honest or edited."""
    for label in ("0.3.0", "0.2.9"):
        report = genuine("lab11-tinyml.json")
        report["metadata"]["mlsysim_version"] = label
        assert graded(write(tmp_path, report))["score"] == 100.0
        report["result_snapshot"]["captures"]["B"]["result"]["outputs"]["dram_bytes"]["magnitude"] += 1024
        result = graded(write(tmp_path, refit(report)))
        assert findings(result, "B", "replay") and not findings(result, "B", "version"), label
        assert "version_drift" not in result["flags"]


# -- tampers -------------------------------------------------------------------------------

def test_one_edited_output_is_tampering_not_version_drift(tmp_path):
    report = genuine("lab07-cloud.json")
    report["result_snapshot"]["captures"]["C"]["result"]["total_traffic_mb"] += 1.0
    result = graded(write(tmp_path, refit(report)))  # even with every copy rewritten to agree
    [message] = findings(result, "C", "replay")
    assert message == ("Part C's result.total_traffic_mb does not match what mlsysim 0.3.0 computes for its inputs, while the "
                       "rest of its evidence replays exactly; recapture the part instead of editing numbers.")
    assert "integrity" in result["flags"] and "version_drift" not in result["flags"]
    assert result["parts"] == {"A": 16.0, "B": 16.0, "C": 0.0, "D": 16.0, "E": 20.0, "synthesis": 16.0}


def test_an_output_edited_in_the_capture_but_not_its_copy_names_the_copy(tmp_path):
    report = genuine("lab11-edge.json")
    report["result_snapshot"]["captures"]["C"]["result"]["outputs"]["latency"]["magnitude"] = 0.0125
    result = graded(write(tmp_path, report))
    [message] = findings(result, "C", "integrity")
    assert message.startswith("Part C's captured result.outputs.latency.magnitude is 0.0125, but its copy in "
                              "evidence_summary.C.result.outputs.latency.magnitude says 0.0155809 (and 1 more copy); "
                              "the lab writes both from the same capture, so the export was edited")
    assert findings(result, "C", "replay") and result["parts"]["C"] == 0 and "integrity" in result["flags"]


def test_one_edited_input_breaks_the_labs_own_seal(tmp_path):
    report = genuine("lab07-cloud.json")
    report["result_snapshot"]["captures"]["B"]["inputs"]["executions"] = 90
    report["knob_settings"]["B"]["executions"] = 90  # the copy edited too: only the seal is left to tell
    result = graded(write(tmp_path, report))
    sealed = [m for m in findings(result, "B", "integrity") if "upstream_fingerprint" in m]
    assert sealed == ["Part B's inputs.executions is 90, but the lab sealed the capture with 100 (its upstream_fingerprint no "
                      "longer matches its track and inputs); submit the file exactly as the lab downloaded it, or recapture "
                      "the part in the lab and download again."]
    assert result["parts"]["B"] == 0 and "integrity" in result["flags"]
    assert all(result["parts"][p] == 16 for p in "ACD")


def test_a_relabelled_track_is_named_by_the_seal(tmp_path):
    report = genuine("lab07-tinyml.json")
    for capture in report["result_snapshot"]["captures"].values():
        capture["track"] = "mobile"
    report["result_snapshot"]["track"] = report["track"] = "mobile"
    result = graded(write(tmp_path, report))
    for part in "ABCDE":
        assert (f"Part {part} is labelled track 'mobile', but the lab sealed it on track 'tinyml' (its upstream_fingerprint); "
                "submit the file exactly as the lab downloaded it, or recapture the part in the lab and download again."
                ) in findings(result, part, "integrity")
        assert result["parts"][part] == 0
    assert result["track"] == "mobile" and "integrity" in result["flags"] and "version_drift" not in result["flags"]


def test_a_prediction_changed_in_the_capture_but_not_its_copy(tmp_path):
    report = genuine("lab07-cloud.json")
    report["result_snapshot"]["captures"]["B"]["prediction"] = "eager"
    result = graded(write(tmp_path, report))
    assert findings(result, "B", "integrity") == [
        "Part B's captured prediction is 'eager', but its copy in predictions.B says 'compiled'; the lab writes both from the "
        "same capture, so the export was edited; submit the file exactly as the lab downloaded it, or recapture the part in "
        "the lab and download again."]
    assert result["parts"]["B"] == 0 and result["score"] == 84.0 and result["flags"] == ["integrity"]


def test_a_prediction_changed_in_the_markdown_copy(tmp_path):
    text = (MARIMO / GENUINE_MD).read_text(encoding="utf-8").replace("- B: compiled\n", "- B: eager\n", 1)
    result = graded(write(tmp_path, text, "v1_07_framework_tax_report.md"))
    assert [m.split(";")[0] for m in findings(result, "B", "integrity")] == [
        "Part B's captured prediction is 'compiled', but its copy in predictions.B says 'eager'"]
    assert (result["origin"], result["parts"]["B"], result["flags"]) == ("marimo-md", 0, ["integrity"])


def _snapshot_block(text: str) -> tuple[int, int]:
    """Where the report's JSON snapshot block (its ```json fence to the closing fence) is."""
    start = text.index("```json", text.index("### MLSysIM Result Snapshot"))
    return start, text.index("\n```", start + 7) + 4


@pytest.mark.parametrize("where", ["after", "before"])
def test_a_markdown_report_with_a_second_different_snapshot_trusts_neither(tmp_path, where):
    """Measured: a second, edited JSON snapshot block was graded from the first block with no flag.  The lab writes one
    snapshot; with two that differ, which is this session's cannot be told, so every part and the synthesis are void."""
    text = (MARIMO / GENUINE_MD).read_text(encoding="utf-8")
    start, end = _snapshot_block(text)
    block = text[start:end]
    snapshot = json.loads(block[len("```json"):-3])
    snapshot["captures"]["B"]["result"]["compiled_total_ms"] *= 0.5
    edited = "```json\n" + json.dumps(snapshot, indent=2) + "\n```"
    heading = "\n\n### MLSysIM Result Snapshot\n\n"
    text = text + heading + edited + "\n" if where == "after" else text[:start] + edited + heading + text[start:]
    result = graded(write(tmp_path, text, "v1_07_framework_tax_report.md"))
    for part in ("A", "B", "C", "D", "E", "synthesis"):  # (read first, the edited block also differs from B's copy)
        assert ("The report holds 2 different JSON result snapshots, but the lab writes one, so which is this session's "
                "cannot be told and none of its evidence is trusted") in [m.split(";")[0] for m in findings(result, part, "integrity")]
    assert result["flags"] == ["integrity"] and all(result["parts"][part] == 0 for part in "ABCDE")


def test_a_markdown_report_whose_snapshot_is_pasted_twice_unchanged_grades_as_once(tmp_path):
    text = (MARIMO / GENUINE_MD).read_text(encoding="utf-8")
    start, end = _snapshot_block(text)
    once = graded(write(tmp_path, text, "v1_07_framework_tax_report.md"))
    (tmp_path / "twice").mkdir()
    twice = graded(write(tmp_path / "twice", text + "\n\n" + text[start:end] + "\n", "v1_07_framework_tax_report.md"))
    assert (twice["score"], twice["flags"]) == (once["score"], once["flags"]) and "integrity" not in twice["flags"]


def _recapture_c(report: dict, track: str, controls: dict) -> None:
    """Part C recaptured with other settings after part D, as the lab would capture it (Lab 11)."""
    lab = get_lab("lab11")
    capture = report["result_snapshot"]["captures"]["C"]
    plan = lab.plan(default_replay(), track, "C", controls, {})
    capture.update(baseline=json.loads(json.dumps(plan.baseline)), result=json.loads(json.dumps(plan.result)),
                   inputs={"baseline": Lab.arm_inputs(plan.baseline), "result": Lab.arm_inputs(plan.result)},
                   prediction="fallback")


def test_a_stale_part_cannot_come_from_the_lab(tmp_path):
    report = genuine("lab11-edge.json")
    captured = report["result_snapshot"]["captures"]["C"]
    genuine_plan = get_lab("lab11").plan(default_replay(), "edge", "C", {"shape": "misaligned", "operation": "gemm"}, {})
    assert json.loads(json.dumps(genuine_plan.result)) == captured["result"], "the lab module builds the book's arms"
    _recapture_c(report, "edge", {"shape": "aligned", "operation": "scatter"})
    result = graded(write(tmp_path, refit(report), "v1_11_hardware_roofline_snapshot.json"))
    assert findings(result, "D", "integrity") == [
        "Part D is stale in this export, but the lab downloads its report only once every part is current; recapture it in "
        "the lab and download the report again."]
    assert findings(result, "D", "stale") and findings(result, "C", "integrity") == []
    assert {"integrity", "stale"} <= set(result["flags"])
    assert (result["parts"]["C"], result["parts"]["D"]) == (16.0, 0.0)


def test_a_missing_part_and_an_incomplete_synthesis_cannot_come_from_the_lab(tmp_path):
    report = genuine("lab07-tinyml.json")
    del report["result_snapshot"]["captures"]["D"]
    for section in ("predictions", "knob_settings", "evidence_summary"):
        del report[section]["D"]
    report["final_decision"]["rationale"] = report["reflections"]["rationale"] = " "
    result = graded(write(tmp_path, report))
    assert findings(result, "D", "integrity") == [
        "Part D is missing from this export, but the lab downloads its report only once every part is captured; recapture "
        "it in the lab and download the report again."]
    assert findings(result, "synthesis", "integrity") == [
        "The export's synthesis lacks rationale, but the lab downloads its report only once the synthesis is complete; "
        "complete it in the lab and download the report again."]
    assert (result["parts"]["D"], result["parts"]["synthesis"]) == (0, 0) and {"integrity", "missing"} <= set(result["flags"])


def test_listed_incomplete_fields_void_what_they_name(tmp_path):
    report = genuine("lab07-cloud.json")
    report["incomplete_fields"] = ["predictions.E"]
    result = graded(write(tmp_path, report))
    assert [m.split(",")[0] for m in findings(result, "E", "integrity")] == ["The export lists incomplete fields (predictions.E)"]
    assert result["parts"]["E"] == 0 and result["parts"]["A"] == 16


def test_lab11_decision_edited_in_part_e_but_not_in_the_snapshot(tmp_path):
    report = genuine("lab11-edge.json")
    report["result_snapshot"]["captures"]["E"]["decision"]["recommendation"] = "primary"
    result = graded(write(tmp_path, report))
    assert [m.split(";")[0] for m in findings(result, "E", "integrity")] == [
        "Part E's captured decision recommendation is 'primary', but its copy in the result snapshot says 'alternative'"]
    # The decision no longer matches the inputs it was captured with (they hold the choice): unverified evidence.
    assert findings(result, "E", "domain") and result["parts"]["E"] == 0 and "integrity" in result["flags"]


def test_several_numbers_forged_in_one_arm_or_one_per_part_are_still_edits(tmp_path):
    """The drift pattern needs numbers off in more than one arm: a forger who makes one arm
    consistent, or edits one number in each of two parts, is still editing."""
    report = genuine("lab07-cloud.json")
    captures = report["result_snapshot"]["captures"]
    fused = captures["C"]["result"]
    fused["total_traffic_mb"] += 10.0
    fused["graph_traffic_mb"] += 10.0
    fused["eliminated_traffic_mb"] -= 10.0
    captures["D"]["result"]["step_time_ms"] *= 0.5
    result = graded(write(tmp_path, refit(report)))
    for part in "CD":
        [message] = findings(result, part, "replay")
        assert message.endswith("while the rest of its evidence replays exactly; recapture the part instead of editing numbers.")
    assert findings(result, "C", "version") == findings(result, "D", "version") == []
    assert "version_drift" not in result["flags"] and (result["parts"]["C"], result["parts"]["D"]) == (0, 0)


def test_every_number_off_reads_as_version_drift(tmp_path):
    """What another mlsysim looks like: the computed numbers of every arm move, inputs stay."""
    report = genuine("lab11-edge.json")
    for capture in report["result_snapshot"]["captures"].values():
        for arm in ("baseline", "result", "chosen_result"):
            if capture[arm] is not None:
                capture[arm] = scale_outputs(capture[arm], 1.01)
        capture["alternatives"] = scale_outputs(capture["alternatives"], 1.01)
    result = graded(write(tmp_path, refit(report, reseal=False), "v1_11_hardware_roofline_snapshot.json"))
    for part in "ABCDE":
        [message] = findings(result, part, "version")
        assert "as when another mlsysim version produced them; install mlsysim==0.3.0 and recapture the part." in message
        assert findings(result, part, "replay") == findings(result, part, "integrity") == []
        assert result["parts"][part] == 0
    assert "version_drift" in result["flags"]


# -- the command line ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["lab07-cloud.json", GENUINE_MD])
def test_check_reads_marimo_exports_and_says_what_grade_says(tmp_path, capsys, name):
    report = genuine("lab07-cloud.json")
    report["result_snapshot"]["captures"]["A"]["prediction"] = "25_50"
    text = render_markdown(report) if name.endswith(".md") else json.dumps(report, indent=2, sort_keys=True)
    path = write(tmp_path, text, name)
    assert main(["check", str(path), "--json", "--all"]) == EXIT_OK
    printed = json.loads(capsys.readouterr().out)
    row = graded(path)
    assert (printed["score"], printed["flags"]) == (row["score"], row["flags"]) == (84.0, ["integrity"])
    assert [[f["part"], f["criterion"], f["rubric_item"] or "", f["message"]] for f in printed["findings"]] == row["findings"]
    assert check_file(MARIMO / name).score == 100.0


def test_check_names_every_format_it_reads(tmp_path, capsys):
    path = write(tmp_path, {"hello": 1})
    assert main(["check", str(path)]) == EXIT_UNGRADABLE
    err = capsys.readouterr().err
    assert "neither a submission bundle" in err and "marimo lab export" in err and "Markdown report" in err


def test_a_course_can_refuse_marimo_exports_and_every_row_shows_its_origin(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    assert main(["solve", "--lab", "lab07", "--track", "edge", "--seed", "2", "-o", str(folder / "lab07-submission.json")]) == EXIT_OK
    for name in ("lab11-edge.json", GENUINE_MD):
        (folder / name).write_bytes((MARIMO / name).read_bytes())
    (folder / "README.md").write_text("# not an input\n")
    (folder / "broken.json").write_text("{not json")
    rows = {}
    for formats in ("bundle,otter,marimo", "bundle,otter"):
        out = tmp_path / f"{formats}.csv"
        assert main(["grade", str(folder), "-o", str(out), "--no-db", "--jobs", "1", "-q", "--formats", formats]) == EXIT_OK
        rows[formats] = {Path(row["path"]).name: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    everything, jupyter = rows["bundle,otter,marimo"], rows["bundle,otter"]
    assert set(everything) == set(jupyter) == {"lab07-submission.json", "lab11-edge.json", GENUINE_MD, "broken.json",
                                               "README.md"}
    assert {name: row["origin"] for name, row in jupyter.items()} == {
        "lab07-submission.json": "bundle", "lab11-edge.json": "marimo-json", GENUINE_MD: "marimo-md",
        "broken.json": "unreadable json", "README.md": "unreadable other"}
    readme = jupyter["README.md"]
    assert (readme["status"], readme["error_kind"]) == ("unsupported", "Unsupported")
    assert readme["reasons"] == ("README.md is a text file, not a submission in an accepted format (the notebook's "
                                 "<lab>-submission.json bundle; an Otter export zip)"), "it names the formats this course accepts"
    assert {name: float(everything[name]["score"]) for name in ("lab11-edge.json", GENUINE_MD)} == {
        "lab11-edge.json": 100.0, GENUINE_MD: 100.0}
    assert LOCK_TIME_NOTE in everything["lab11-edge.json"]["reasons"], "the excuse is visible on the row"
    for name, words in (("lab11-edge.json", "a marimo JSON snapshot"), (GENUINE_MD, "a marimo Markdown report")):
        row = jupyter[name]
        assert (row["status"], float(row["score"]), row["flags"]) == ("error", 0.0, "ungradable")
        assert row["reasons"] == (f"{name}: {words} is not accepted by this course (--formats bundle,otter); submit "
                                  "the lab's <lab>-submission.json bundle from the course notebook instead")
        assert row["error_kind"] == "FormatRefused"
    assert jupyter["lab07-submission.json"]["status"] == "graded"


def test_unknown_formats_are_a_usage_error(tmp_path, capsys):
    assert main(["grade", str(tmp_path), "--no-db", "-q", "--formats", "bundle,ipynb"]) == 2
    assert "formats" in capsys.readouterr().err


def test_a_hand_converted_bundle_never_borrows_the_lock_time_excuse(tmp_path):
    """The captures of a genuine export, resealed as a bundle: no lock times, and charged for it."""
    from conftest import reseal

    bundle = json.loads(export_bundle(export_from_json(genuine("lab07-cloud.json"))).to_json())
    path = write(tmp_path, reseal(bundle), "lab07-submission.json")
    result = graded(path)
    assert result["origin"] == "bundle" and result["score"] == 90.0
    assert all(result["items"][f"{p}.prediction_locked"] == 0 for p in "ABCDE")
    assert not any(message == LOCK_TIME_NOTE for *_, message in result["findings"])


def test_folders_yield_markdown_reports_as_reports_and_other_markdown_as_unsupported(tmp_path):
    (tmp_path / "v1_07_framework_tax_report.md").write_bytes((MARIMO / GENUINE_MD).read_bytes())
    (tmp_path / "README.md").write_text("# notes\n")
    readme, candidate = discover([tmp_path])
    assert (Path(candidate.source).name, candidate.kind) == ("v1_07_framework_tax_report.md", "markdown")
    loaded = load_candidate(candidate)
    assert (loaded.error, loaded.origin, loaded.bundle.lab, loaded.findings) == (None, "marimo-md", "lab07", ())
    assert (Path(readme.source).name, readme.kind, load_candidate(readme).error_kind) == ("README.md", "other", "Unsupported")


def test_a_synthesis_answer_edited_in_one_copy_voids_the_synthesis(tmp_path):
    report = genuine("lab07-tinyml.json")
    report["final_decision"]["rejected_alternative"] = "compiled"
    result = graded(write(tmp_path, report))
    assert findings(result, "synthesis", "integrity") == [
        "The synthesis answer in final_decision.rejected_alternative says 'compiled', but the result snapshot holds "
        f"{report['result_snapshot']['rejected_alternative']!r}; the lab writes both from the same answers, so the export was "
        "edited; submit the file exactly as the lab downloaded it, or download it again from the lab."]
    assert result["parts"]["synthesis"] == 0 and all(result["parts"][p] == 16 for p in "ABCD")
