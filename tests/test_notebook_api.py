"""The student API (mlsys_grader.student._session): predict before run, capture, staleness, reload, self-check."""

from __future__ import annotations

import inspect
import json
import os
import re
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import LAB_TRACKS, as_schema_2, sweep

from mlsys_grader import cli
from mlsys_grader.api import default_replay, grade_file
from mlsys_grader.core.jsonio import sha256_of
from mlsys_grader.core.models import SCHEMA_VERSION, load_bundle
from mlsys_grader.errors import DomainError, UnknownLabError
from mlsys_grader.labs import get_lab
from mlsys_grader.student import assert_item
from mlsys_grader.student._session import (
    LabSession,
    Notice,
    PartResult,
    _open_lab_with_clock,
    open_lab,
    submission_path,
)


class Clock:
    """A fake clock that advances one second per reading, so every timestamp is distinct."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def lab07(tmp_path, clock, track="cloud") -> LabSession:
    return _open_lab_with_clock("lab07", track, clock, directory=tmp_path)


def lab11(tmp_path, clock, track="tinyml") -> LabSession:
    return _open_lab_with_clock("lab11", track, clock, directory=tmp_path)


def saved(tmp_path, lab_id="lab07"):
    return load_bundle(submission_path(lab_id, tmp_path).read_bytes())


# -- predict before run -----------------------------------------------------------------
def test_run_refuses_before_a_prediction_and_records_no_result_time(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    shown = lab.run("A", dispatches=1)
    assert isinstance(shown, Notice) and not shown.ok
    assert "stays hidden until you lock a prediction" in shown.title
    assert shown.lines[0].startswith('Set prediction_A to one of "below_25" (Below 25%)')
    assert '"above_75" (Above 75%)' in shown.lines[0] and "lab.predict('A', choice) locks it" in shown.lines[0]
    assert lab._parts["A"].shown_at is None
    assert not submission_path("lab07", tmp_path).exists()


def test_unanswered_prediction_is_a_notice_not_an_error(tmp_path, clock):
    notice = lab07(tmp_path, clock).predict("A", ...)
    assert notice.kind == "warn" and "no prediction yet" in notice.title


def test_prediction_outside_the_choices_names_them_and_the_nearest(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    with pytest.raises(DomainError) as raised:
        lab.predict("B", "faster")
    assert str(raised.value) == ('Part B: prediction_B must be one of "eager" (Eager remains faster), "compiled" '
                                 '(Compilation repays setup), "equal" (They are equal); you set "faster".')
    with pytest.raises(DomainError, match=r'you set "above75" — did you mean "above_75"\?$'):
        lab.predict("A", "above75")
    assert lab._parts["A"].prediction is None and not submission_path("lab07", tmp_path).exists()


def test_controls_are_checked_as_soon_as_a_part_runs_even_before_its_prediction(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    with pytest.raises(DomainError) as raised:
        lab.run("B", executions=205, recompilations=0)
    assert str(raised.value) == "Part B: executions must be a number from 10 to 200 in steps of 10; you set 205."
    with pytest.raises(DomainError, match=r'^Part A: dispatches must be one of 1, 2, 3; you set 4\.$'):
        lab.run("A", dispatches=4)
    with pytest.raises(DomainError, match=r"^Part B: lab.run takes executions and recompilations; recompiles is not one "
                                          r"of them — did you mean recompilations\?$"):
        lab.run("B", executions=50, recompiles=0)
    with pytest.raises(DomainError, match=r"^Part B: lab.run also needs recompilations \(set it in the part's cell"):
        lab.run("B", executions=50)
    eleven = lab11(tmp_path, clock)
    with pytest.raises(DomainError, match=r"^Part A: factor must be a number from 2 to 8 in steps of 1; you set 10\.$"):
        eleven.run("A", change="compute", factor=10)
    with pytest.raises(DomainError, match=r'^Part B: fused must be True or False; you set "yes"\.$'):
        eleven.run("B", tile="compact", fused="yes")
    with pytest.raises(DomainError, match=r'^Part C: shape must be one of "aligned", "misaligned"; you set "Aligned" — did you mean "aligned"\?$'):
        eleven.run("C", shape="Aligned", operation="gemm")
    assert isinstance(lab.run("B", executions=200, recompilations=8), Notice)  # allowed values: only the lock is missing


def test_every_refusal_keeps_its_data_part_control_allowed_and_what_arrived(tmp_path, clock):
    """A DomainError from the notebook API carries what its sentence says, so no caller parses the sentence."""
    lab, eleven = lab07(tmp_path, clock), lab11(tmp_path, clock)

    def data(call) -> tuple:
        with pytest.raises(DomainError) as raised:
            call()
        error = raised.value
        return error.part, error.control, error.allowed, error.got

    assert data(lambda: lab.run("B", executions=205, recompilations=0)) == ("B", "executions", (), 205)
    assert data(lambda: lab.run("A", dispatches="2")) == ("A", "dispatches", (1, 2, 3), "2")
    assert data(lambda: eleven.run("C", shape="Aligned", operation="gemm")) == ("C", "shape", ("aligned", "misaligned"), "Aligned")
    assert data(lambda: eleven.run("B", tile="compact", fused="yes")) == ("B", "fused", (False, True), "yes")
    assert data(lambda: lab.predict("B", "faster")) == ("B", "prediction_B", ("eager", "compiled", "equal"), "faster")
    assert data(lambda: lab.run("B", executions=50, recompiles=0)) == ("B", "recompiles", ("executions", "recompilations"),
                                                                       ("recompiles",))
    assert data(lambda: lab.run("a", dispatches=1)) == (None, None, ("A", "B", "C", "D", "E"), "a")
    assert data(lambda: lab.capture("E", decision="selcted"))[1:] == ("decision", ("selected", "hold", "none"), "selcted")
    assert data(lambda: lab.synthesis(rationale=42)) == ("synthesis", "rationale", (), 42)
    assert data(lambda: lab.synthesis(recommendation="fast"))[:2] == ("synthesis", "recommendation")
    assert data(lambda: open_lab("lab11", ..., directory=tmp_path)) == (None, "TRACK", ("tinyml", "mobile", "edge", "cloud"), ...)
    with pytest.raises(UnknownLabError) as raised:
        open_lab("lab07", "Edge", directory=tmp_path)
    assert (raised.value.lab, raised.value.track, raised.value.known) == ("lab07", "Edge", ("tinyml", "mobile", "edge", "cloud"))


def test_a_refused_control_is_said_from_the_cores_data_and_without_it_from_the_sessions():
    """The sentence comes from the core's DomainError data (part, control, allowed, got), never from its message;
    an error without data (an older lab) is said from the control and the value the session checked."""
    from mlsys_grader.student._advice import refused_control

    shape = get_lab("lab11").parts["C"].control("shape")
    from_data = refused_control(DomainError("not read", part="C", control="shape", allowed=("aligned", "misaligned"),
                                            got="Misaligned"), shape, part="X", value="ignored")
    assert str(from_data) == 'Part C: shape must be one of "aligned", "misaligned"; you set "Misaligned" — did you mean "misaligned"?'
    assert (from_data.part, from_data.control, from_data.allowed, from_data.got) == ("C", "shape", ("aligned", "misaligned"),
                                                                                     "Misaligned")
    bare = refused_control(DomainError("not read"), shape, part="C", value="Aligned")
    assert str(bare) == 'Part C: shape must be one of "aligned", "misaligned"; you set "Aligned" — did you mean "aligned"?'
    executions = get_lab("lab07").parts["B"].control("executions")
    text = refused_control(DomainError("not read"), executions, part="B", value="50")
    assert str(text) == 'Part B: executions must be a number from 10 to 200 in steps of 10; you set the text "50"; write 50 without quotes.'
    assert (text.allowed, text.got) == ((), "50")


def test_unknown_track_part_and_unanswered_track_are_named(tmp_path, clock):
    with pytest.raises(UnknownLabError) as raised:
        open_lab("lab07", "Edge", directory=tmp_path)
    assert str(raised.value) == 'TRACK must be one of "tinyml", "mobile", "edge", "cloud"; you set "Edge" — did you mean "edge"?'
    with pytest.raises(DomainError, match=r'^Choose a track first: set TRACK to one of "tinyml", "mobile", "edge", "cloud"\.$'):
        open_lab("lab11", ..., directory=tmp_path)
    lab = lab07(tmp_path, clock)
    with pytest.raises(DomainError, match=r'^lab.run takes a part from "A", "B", "C", "D", "E"; you gave "a" — did you mean "A"\?$'):
        lab.run("a", dispatches=1)
    with pytest.raises(DomainError, match=r'^lab.check takes "A", "B", "C", "D", "E", "synthesis", or nothing for every part; '
                                          r'you gave "F"\.$'):
        lab.check("F")


def test_times_are_recorded_in_order_and_rerunning_predict_keeps_the_lock_time(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("A", "above_75")
    locked = lab._parts["A"].locked_at
    again = lab.predict("A", "above_75")
    assert again.ok and "keeps that time" in again.lines[0]
    assert lab._parts["A"].locked_at == locked
    lab.run("A", dispatches=1)
    lab.capture("A")
    record = saved(tmp_path).evidence["A"]
    assert record.prediction == "above_75"
    assert record.prediction_locked_at < record.result_shown_at < record.captured_at


def test_changing_a_prediction_after_the_result_warns_and_is_graded_late(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("A", "below_25")
    lab.run("A", dispatches=1)
    notice = lab.predict("A", "above_75")
    assert notice.kind == "warn" and "after its result was shown" in notice.title
    assert "graded as locked late" in notice.lines[0]
    lab.capture("A")
    check = lab.check("A")
    assert ("prediction_locked", 0.0, 2.0) in check.items
    assert any("locked after the result was shown" in message for message in check.messages)


# -- results ------------------------------------------------------------------------------
def test_run_shows_a_table_and_a_matplotlib_chart(tmp_path, clock):
    from matplotlib.figure import Figure

    from mlsys_grader.student._display import Table

    lab = lab07(tmp_path, clock)
    lab.predict("A", "above_75")
    result = lab.run("A", dispatches=2)
    assert isinstance(result, PartResult)
    assert isinstance(result.table, Table) and result.table.column("Path") == ["Fine", "Coarse"]
    assert result.table.column("Dispatches") == [6, 2]
    header, fine, coarse = repr(result).splitlines()[3:6]  # plain text: a header, numbers right-aligned under theirs
    assert header.split()[:2] == ["Path", "Dispatches"] and fine.startswith("Fine ") and coarse.startswith("Coarse ")
    assert fine.index("6") == coarse.index("2") == header.index("Dispatches") + len("Dispatches") - 1
    assert "<td>Coarse</td><td>2</td>" in result.table.to_html()
    assert isinstance(result.figure, Figure)
    page = result._repr_html_()
    assert "<table" in page and "data:image/png;base64," in page and "Observed analytically" in page
    assert result.png().startswith(b"\x89PNG")


PART_RUNS = [
    ("lab07", "B", {"executions": 50, "recompilations": 2}, "compiled"),
    ("lab07", "C", {"graph_breaks": 1}, "both"),
    ("lab07", "D", {"policy": "input_only", "batch_size": 64}, "memory_for_time"),
    ("lab07", "E", {"operator": "dynamic_slice", "shape_mode": "dynamic"}, "fallback"),
    ("lab11", "A", {"change": "bandwidth", "factor": 8}, "small"),
    ("lab11", "B", {"tile": "oversized", "fused": False}, "spill"),
    ("lab11", "C", {"shape": "aligned", "operation": "scatter"}, "fallback"),
    ("lab11", "E", {"objective": "cost", "budget_scale": 0.05}, "none"),
]


@pytest.mark.parametrize("lab_id, part, controls, prediction", sweep(PART_RUNS, fast=[PART_RUNS[0], PART_RUNS[5]]))
def test_every_part_renders_for_every_track(tmp_path, clock, lab_id, part, controls, prediction):
    for track in ("tinyml", "mobile", "edge", "cloud"):
        lab = _open_lab_with_clock(lab_id, track, clock, directory=tmp_path / track)
        lab.predict(part, prediction)
        result = lab.run(part, **controls)
        assert isinstance(result, PartResult), result
        assert len(result.table) >= 1 and result.png().startswith(b"\x89PNG")


def test_lab11_d_needs_part_c_run_first(tmp_path, clock):
    lab = lab11(tmp_path, clock)
    lab.predict("D", "under_half")
    shown = lab.run("D", speedup=10)
    assert isinstance(shown, Notice) and shown.title == "Run part C first."


# -- capture --------------------------------------------------------------------------------
def test_capture_saves_the_bundle_next_to_the_notebook_and_keeps_it_across_reruns(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    assert lab.capture("A").title == "Nothing to capture for part A yet."
    lab.predict("A", "above_75")
    lab.run("A", dispatches=1)
    first = lab.capture("A")
    assert first.title == "Part A evidence captured." and "lab07-submission.json" in first.lines[0]
    captured_at = saved(tmp_path).evidence["A"].captured_at
    lab.run("A", dispatches=1)
    again = lab.capture("A")
    assert again.title.startswith("Part A evidence unchanged")
    assert "already in lab07-submission.json" in again.lines[0] and "saved to" not in again.lines[0]  # nothing new saved
    assert saved(tmp_path).evidence["A"].captured_at == captured_at
    assert saved(tmp_path).controls["A"] == {"dispatches": 1}


def test_capture_refuses_an_intervention_identical_to_the_baseline(tmp_path, clock):
    lab = lab11(tmp_path, clock)
    lab.predict("C", "native")
    lab.run("C", shape="aligned", operation="gemm")
    refused = lab.capture("C")
    assert refused.kind == "warn" and "identical to its baseline" in refused.title
    assert "C" not in saved(tmp_path, "lab11").evidence


def test_capture_refuses_a_decision_the_lab_rule_forbids(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("E", "native")
    lab.run("E", operator="layer_norm", shape_mode="static")  # cloud: executable
    assert "choose the decision" in lab.capture("E").title
    refused = lab.capture("E", decision="none")
    assert refused.kind == "warn" and "valid only when the selected path cannot execute" in refused.lines[0]
    with pytest.raises(DomainError, match=r'^Part E: decision must be one of "selected" \(Use selected path\), "hold" '
                                          r'\(Hold native baseline for more evidence\), "none" \(No feasible target path\); '
                                          r'you set "selcted" — did you mean "selected"\?$'):
        lab.capture("E", decision="selcted")
    assert lab.capture("E", decision="hold").title == "Part E evidence captured."
    record = saved(tmp_path).evidence["E"]
    assert record.decision == "hold" and record.chosen_result["inputs"] == record.baseline["inputs"]


def test_changing_a_control_after_capture_warns_that_the_record_is_stale(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("C", "both")
    lab.run("C", graph_breaks=0)
    lab.capture("C")
    result = lab.run("C", graph_breaks=3)
    assert len(result.warnings) == 1
    assert "no longer matches your final settings" in result.warnings[0] and "recapture part C" in result.warnings[0]
    row = lab.progress().table.row("Part", "C")
    assert (row["Captured"], row["Fresh"], row["Contrasting"]) == ("yes", "STALE", "yes")
    lab.capture("C")
    assert lab.progress().table.row("Part", "C")["Fresh"] == "yes"


def test_recapturing_lab11_c_after_d_warns_that_d_is_stale(tmp_path, clock):
    lab = lab11(tmp_path, clock)
    lab.predict("C", "padded")
    lab.run("C", shape="misaligned", operation="gemm")
    lab.capture("C")
    lab.predict("D", "under_half")
    lab.run("D", speedup=10)
    assert lab.capture("D").kind == "success"
    shown = lab.run("C", shape="aligned", operation="scatter")
    assert any(w.startswith("Part D is stale") for w in shown.warnings)
    notice = lab.capture("C")
    assert notice.kind == "warn"
    assert any(line.startswith("Part D is now stale") and "recapture part D" in line for line in notice.lines)
    assert lab.progress().table.row("Part", "D")["Fresh"] == "STALE"


# -- reload ------------------------------------------------------------------------------
def test_a_new_kernel_continues_from_the_saved_file(tmp_path, clock):
    first = lab07(tmp_path, clock)
    first.predict("A", "above_75")
    first.run("A", dispatches=1)
    first.capture("A")
    before = saved(tmp_path).evidence["A"]

    second = lab07(tmp_path, clock)
    assert second.notices[0].title == "Continuing from lab07-submission.json: captured part A."
    assert second.check("A").passed
    second.predict("A", "above_75")
    second.run("A", dispatches=1)
    assert second.capture("A").title.startswith("Part A evidence unchanged")
    assert saved(tmp_path).evidence["A"] == before


def test_opening_another_track_sets_the_old_file_aside(tmp_path, clock):
    first = lab07(tmp_path, clock, track="cloud")
    first.predict("A", "above_75")
    first.run("A", dispatches=1)
    first.capture("A")
    second = lab07(tmp_path, clock, track="edge")
    assert "holds lab07 evidence for track 'cloud'" in second.notices[0].title
    aside = [p.name for p in tmp_path.iterdir() if p.name.startswith("lab07-submission.lab07-cloud.")]
    assert len(aside) == 1
    assert not second.check("A").passed


def test_an_unreadable_file_is_set_aside_not_fatal(tmp_path, clock):
    submission_path("lab11", tmp_path).write_text("{not json", encoding="utf-8")
    lab = lab11(tmp_path, clock)
    assert lab.notices[0].title.endswith("could not be read, so this session starts empty.")
    assert any(p.name.startswith("lab11-submission.unreadable.") for p in tmp_path.iterdir())


def test_sessions_in_different_folders_share_nothing(tmp_path, clock):
    one, two = lab07(tmp_path / "one", clock), lab07(tmp_path / "two", clock)
    (tmp_path / "one").mkdir()
    one.predict("A", "above_75")
    assert two._parts["A"].prediction is None


# -- prediction timing ------------------------------------------------------------------------
class StoppedClock:
    """A clock that always reads the same time."""

    def __call__(self) -> datetime:
        return datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class ClockRunningBack:
    """A clock that goes back one minute per reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now -= timedelta(minutes=1)
        return self.now


def test_no_public_entry_point_takes_a_clock(tmp_path):
    frozen = StoppedClock()
    with pytest.raises(TypeError, match="unexpected keyword argument 'clock'"):
        open_lab("lab07", "cloud", directory=tmp_path, clock=frozen)
    with pytest.raises(TypeError, match="unexpected keyword argument 'clock'"):
        LabSession("lab07", "cloud", submission_path("lab07", tmp_path), clock=frozen)
    assert "clock" not in inspect.signature(open_lab).parameters
    assert "clock" not in inspect.signature(LabSession).parameters


@pytest.mark.parametrize("odd_clock", [StoppedClock, ClockRunningBack])
def test_a_clock_that_stops_or_runs_back_cannot_make_a_late_prediction_look_early(tmp_path, odd_clock):
    lab = _open_lab_with_clock("lab07", "cloud", odd_clock(), directory=tmp_path)
    lab.predict("A", "below_25")
    lab.run("A", dispatches=1)
    assert lab.predict("A", "50_75").kind == "warn"
    lab.capture("A")
    bundle = saved(tmp_path)
    record, run = bundle.evidence["A"], bundle.runs["A"]
    assert run.first_shown_at < run.prediction_locked_at
    assert record.result_shown_at < record.prediction_locked_at < record.captured_at
    check = lab.check("A")
    assert ("prediction_locked", 0.0, 2.0) in check.items
    assert any("locked after the result was shown" in message for message in check.messages)


def test_a_new_kernel_remembers_an_uncaptured_result_so_a_prediction_made_after_it_is_late(tmp_path, clock):
    first = lab07(tmp_path, clock)
    first.predict("B", "eager")
    first.run("B", executions=50, recompilations=0)  # cloud: compilation repays setup
    shown = saved(tmp_path).runs["B"].first_shown_at
    assert shown is not None and "B" not in saved(tmp_path).evidence

    second = lab07(tmp_path, clock)
    assert second.notices[0].title == "Continuing from lab07-submission.json: no part captured yet."
    notice = second.predict("B", "compiled")
    assert notice.kind == "warn" and notice.title == "Part B prediction changed to Compilation repays setup after its result was shown."
    assert notice.lines[0].startswith("It was 'Eager remains faster'.") and "in this or an earlier session" in notice.lines[0]
    second.run("B", executions=50, recompilations=0)
    assert second.capture("B").title == "Part B evidence captured."
    bundle = saved(tmp_path)
    assert bundle.runs["B"].first_shown_at == shown
    assert bundle.evidence["B"].result_shown_at == shown < bundle.evidence["B"].prediction_locked_at
    assert ("prediction_locked", 0.0, 2.0) in second.check("B").items


def test_first_shown_at_survives_reopening_and_never_moves_later(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("C", "both")
    lab.run("C", graph_breaks=0)
    before = saved(tmp_path).runs["C"]
    for breaks in (2, 4):
        reopened = lab07(tmp_path, clock)
        assert isinstance(reopened.run("C", graph_breaks=breaks), PartResult)  # the lock is restored too
    after = saved(tmp_path).runs["C"]
    assert (after.prediction, after.prediction_locked_at, after.first_shown_at) == \
        ("both", before.prediction_locked_at, before.first_shown_at)
    assert "C" not in saved(tmp_path).evidence


def test_settings_changed_after_the_first_run_are_named_and_the_first_run_is_kept(tmp_path, clock):
    """Lock "eager", see "compiled", then change the settings until eager wins: the first run's settings are stored."""
    lab = lab07(tmp_path, clock)
    spec = lab.lab
    assert spec.accepted_predictions("cloud", "B", spec.plan(default_replay(), "cloud", "B", {"executions": 50, "recompilations": 0}, {})) == {"compiled"}
    assert spec.accepted_predictions("cloud", "B", spec.plan(default_replay(), "cloud", "B", {"executions": 50, "recompilations": 4}, {})) == {"eager"}
    lab.predict("B", "eager")
    assert lab.run("B", executions=50, recompilations=0).notices == []
    changed = lab.run("B", executions=50, recompilations=4)
    assert [notice.title for notice in changed.notices] == [
        "Part B: your prediction is judged against your first run after locking it, not these settings."]
    line = changed.notices[0].lines[0]
    assert line.startswith("Your prediction 'Eager remains faster' is judged against executions = 50, recompilations = 0 "
                           "(your first run after locking it), not executions = 50, recompilations = 4;")
    assert "Your prediction 'Eager remains faster' is judged against" in repr(changed)
    assert "judged against executions = 50, recompilations = 0" in changed._repr_html_()
    captured = lab.capture("B")
    assert captured.kind == "warn" and captured.title == "Part B evidence captured." and line in captured.lines
    bundle = saved(tmp_path)
    run = bundle.runs["B"]
    assert (run.prediction, run.first_run_controls, run.first_run_upstream) == ("eager", {"executions": 50, "recompilations": 0}, None)
    assert run.prediction_locked_at < run.first_run_at == run.first_shown_at
    assert bundle.controls["B"] == {"executions": 50, "recompilations": 4}
    assert bundle.evidence["B"].prediction == "eager"
    assert lab.run("B", executions=50, recompilations=0).notices == []


def test_the_first_run_after_the_lock_survives_reopening(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("B", "eager")
    lab.run("B", executions=50, recompilations=0)
    reopened = lab07(tmp_path, clock)
    shown = reopened.run("B", executions=50, recompilations=4)
    assert "judged against executions = 50, recompilations = 0" in shown.notices[0].lines[0]
    assert saved(tmp_path).runs["B"].first_run_controls == {"executions": 50, "recompilations": 0}


def test_a_new_lock_starts_a_new_first_run(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("B", "eager")
    lab.run("B", executions=50, recompilations=0)
    lab.predict("B", "compiled")
    relocked = saved(tmp_path).runs["B"]
    assert (relocked.prediction, relocked.first_run_controls, relocked.first_run_at) == ("compiled", None, None)
    assert lab.run("B", executions=200, recompilations=8).notices == []
    run = saved(tmp_path).runs["B"]
    assert run.first_run_controls == {"executions": 200, "recompilations": 8}
    assert run.first_shown_at < run.prediction_locked_at < run.first_run_at


def test_lab11_d_keeps_the_part_c_settings_of_its_first_run(tmp_path, clock):
    lab = lab11(tmp_path, clock)
    lab.predict("C", "padded")
    lab.run("C", shape="misaligned", operation="gemm")
    lab.predict("D", "under_half")
    assert lab.run("D", speedup=10).notices == []
    assert saved(tmp_path, "lab11").runs["D"].first_run_upstream == {"C": {"shape": "misaligned", "operation": "gemm"}}
    lab.run("C", shape="aligned", operation="scatter")
    line = lab.run("D", speedup=10).notices[0].lines[0]
    assert ('judged against speedup = 10; part C: shape = "misaligned", operation = "gemm" (your first run after locking it), '
            'not speedup = 10; part C: shape = "aligned", operation = "scatter"') in line
    run = saved(tmp_path, "lab11").runs["D"]
    assert (run.first_run_controls, run.first_run_upstream) == ({"speedup": 10}, {"C": {"shape": "misaligned", "operation": "gemm"}})


def test_switching_track_and_back_continues_and_keeps_what_was_shown(tmp_path, clock):
    cloud = lab07(tmp_path, clock, track="cloud")
    cloud.predict("B", "eager")
    cloud.run("B", executions=50, recompilations=0)
    shown = saved(tmp_path).runs["B"].first_shown_at
    edge = lab07(tmp_path, clock, track="edge")
    assert "opening lab07 on 'cloud' again continues from it." in edge.notices[0].lines[0]
    edge.predict("A", "above_75")
    back = lab07(tmp_path, clock, track="cloud")
    assert "holds lab07 evidence for track 'edge'" in back.notices[0].title
    assert back.notices[1].title.endswith("was set aside when another track was opened; it is lab07-submission.json again.")
    assert back.predict("B", "compiled").kind == "warn"
    bundle = saved(tmp_path)
    assert (bundle.track, bundle.runs["B"].first_shown_at) == ("cloud", shown)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("lab07-submission.lab07-edge.")] != []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("lab07-submission.lab07-cloud.")] == []


def test_a_version_1_file_continues_and_its_captured_times_still_count(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("A", "below_25")
    lab.run("A", dispatches=1)
    lab.capture("A")
    data = as_schema_2(json.loads(submission_path("lab07", tmp_path).read_text(encoding="utf-8")))  # as schema 2 sealed it
    del data["runs"]
    data["schema_version"] = 1
    data.pop("content_hash")
    data["content_hash"] = sha256_of(data)
    submission_path("lab07", tmp_path).write_text(json.dumps(data), encoding="utf-8")
    shown = load_bundle(json.dumps(data)).evidence["A"].result_shown_at

    reopened = lab07(tmp_path, clock)
    assert reopened.notices[0].title == "Continuing from lab07-submission.json: captured part A."
    assert reopened.check("A").passed
    assert reopened.predict("A", "50_75").kind == "warn"
    bundle = saved(tmp_path)
    assert bundle.schema_version == SCHEMA_VERSION and bundle.runs["A"].first_shown_at == shown
    record = bundle.evidence["A"]  # the continued session saves it with the book's seal of its inputs
    assert record.upstream_fingerprint == get_lab("lab07").fingerprint("cloud", "A", record.inputs) != data["evidence"]["A"]["upstream_fingerprint"]
    assert bundle.runs["A"].prediction_locked_at > shown


# -- synthesis -------------------------------------------------------------------------------
def test_synthesis_validates_choices_and_leaves_ellipsis_unanswered(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    with pytest.raises(DomainError, match=r'^Synthesis: recommendation must be one of "eager" \(Eager execution\), .*'
                                          r'"none" \(No feasible target path\); you set "fast"\.$'):
        lab.synthesis(recommendation="fast")
    with pytest.raises(DomainError, match=r'you set "compiled fused" — did you mean "compiled_fused"\?$'):
        lab.synthesis(recommendation="compiled fused")
    with pytest.raises(DomainError, match=r"^The lab07 synthesis takes recommendation, rejected_alternative, reevaluation_trigger, "
                                          r"residual_risk and rationale; decision is not one of them\.$"):
        lab.synthesis(decision="eager")
    with pytest.raises(DomainError, match=r"^Synthesis: the rationale must be text in quotes; you set 42\.$"):
        lab.synthesis(rationale=42)
    notice = lab.synthesis(recommendation="eager", rejected_alternative=..., reevaluation_trigger="execution_count",
                           residual_risk=..., rationale=...)
    assert (notice.kind, notice.title) == ("warn", "Synthesis saved, with 3 of 5 answers still to give.")
    assert notice.lines == ["Choose the tested alternative you reject (eager, compiled or compiled with fusion).",
                            "Choose a remaining limitation from the lab's list.",
                            "Write a rationale that compares your recommendation with the rejected alternative using saved numbers."]
    synthesis = saved(tmp_path).synthesis
    assert synthesis.recommendation == "eager" and synthesis.rejected_alternative is None and synthesis.rationale == ""


def test_lab11_synthesis_takes_only_trigger_limitation_and_rationale(tmp_path, clock):
    lab = lab11(tmp_path, clock)
    with pytest.raises(DomainError, match=r"^The lab11 synthesis takes reevaluation_trigger, residual_risk and rationale; "
                                          r"recommendation is not one of them\.$"):
        lab.synthesis(recommendation="primary")
    assert set(lab.synthesis_options()) == {"reevaluation_trigger", "residual_risk"}


# -- self-check -------------------------------------------------------------------------------
def complete(lab: LabSession) -> None:
    """Work through every part as the reference answers do, with the hand-written synthesis of that bundle."""
    from mlsys_grader import staff

    reference = staff.solve(lab.lab_id, lab.track)
    for part in lab.lab.part_ids():
        spec = lab.lab.parts[part]
        controls = reference.controls[part]
        lab.predict(part, reference.evidence[part].prediction)
        lab.run(part, **{c.name: controls[c.name] for c in spec.controls if not c.decision})
        lab.capture(part, **{c.name: controls[c.name] for c in spec.controls if c.decision})
    lab.synthesis(**own_synthesis(lab.lab_id, lab.track))


def own_synthesis(lab_id: str, track: str) -> dict:
    """A student's own synthesis for the default bundle of ``lab_id`` on ``track`` (``solutions/reference_rationales.toml``)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "solutions" / "reference_answers.py"
    spec = importlib.util.spec_from_file_location("solutions_reference_answers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_synthesis(lab_id, track)


@pytest.mark.parametrize("lab_id, track", sweep(LAB_TRACKS, fast=[("lab07", "cloud"), ("lab11", "tinyml")]))
def test_a_complete_session_earns_full_marks(tmp_path, clock, lab_id, track):
    lab = _open_lab_with_clock(lab_id, track, clock, directory=tmp_path)
    complete(lab)
    report = grade_file(submission_path(lab_id, tmp_path))
    assert (report.score, report.findings, report.flags) == (report.max_score, (), ())
    progress = lab.progress()
    assert progress.ready and set(progress.table.column("Fresh")) == {"yes"}


def test_checks_grade_the_saved_bundle_once_until_it_changes(tmp_path, clock):
    """Checking part after part reuses one report; running part B again saves a new bundle, graded once more."""
    lab = lab07(tmp_path, clock)
    complete(lab)
    graded = lab._full_report()
    for part in ("A", "B", "C", "D", "E", "synthesis"):
        assert lab.check(part).passed
    assert lab.check().score == lab.check().score
    assert lab._full_report() is graded
    lab.predict("B", "eager")  # a new prediction after the result invalidates nothing until recaptured
    lab.run("B", executions=10, recompilations=8)
    stale = lab.check("B")
    assert not stale.passed and any("recapture part B" in message for message in stale.messages)
    regraded = lab._full_report()
    assert regraded is not graded and regraded.score < graded.score
    lab.check("B")
    lab.check()
    assert lab._full_report() is regraded


def test_self_check_agrees_with_the_cli_on_the_saved_bundle(tmp_path, clock, capsys):
    lab = lab11(tmp_path, clock)
    complete(lab)
    lab.predict("B", "fit_more")
    lab.run("B", tile="oversized", fused=True)  # B now stale
    lab.synthesis(reevaluation_trigger="support", residual_risk=..., rationale="too short")
    ours = lab.check()
    assert cli.main(["check", str(submission_path("lab11", tmp_path)), "--json"]) == 0
    theirs = json.loads(capsys.readouterr().out)
    assert theirs["score"] == ours.score and theirs["max_score"] == ours.max_score
    assert [(f["part"], f["criterion"], f["message"]) for f in theirs["findings"]] == \
        [(f.part, f.criterion, f.message) for f in ours.findings]
    assert {name: part["score"] for name, part in theirs["parts"].items()} == {n: p.score for n, p in ours.parts.items()}
    assert ours.parts["B"].score < ours.parts["B"].max_score


def test_public_check_never_shows_hidden_items(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("A", "below_25")  # wrong on cloud (50–75%)
    lab.run("A", dispatches=1)
    lab.capture("A")
    check = lab.check("A")
    assert check.passed
    assert {item for item, _, _ in check.items} == {"captured", "fresh", "contrast", "prediction_locked"}
    assert not any("support" in message for message in check.messages)
    assert "<table>" in check._repr_html_()


# -- Otter test helper --------------------------------------------------------------------------
def test_assert_item_lives_with_the_otter_glue_and_keeps_the_name_the_test_files_import():
    """Every master's test file says ``from mlsys_grader.student import assert_item``; the function is mlsys_grader.otter's."""
    import mlsys_grader.otter as otter
    import mlsys_grader.student._session as session

    assert assert_item is otter.assert_item and assert_item.__module__ == "mlsys_grader.otter"
    assert not hasattr(session, "assert_item")


def test_the_notebook_api_embeds_its_bundle_without_the_gradescope_package(tmp_path):
    """student/ imports no gradescope/: a session that saves (and embeds) its bundle loads only the core's format."""
    import subprocess
    import sys

    code = ("import sys; from mlsys_grader.student import open_lab; from mlsys_grader.core.embed import BUNDLE_MIME, "
            "bundle_display_data, bundle_from_outputs; "
            f"lab = open_lab('lab07', track='cloud', directory={str(tmp_path)!r}); lab.save(); "
            "data = bundle_display_data((lab.path).read_text(), summary=False); "
            "found = bundle_from_outputs({'cells': [{'cell_type': 'code', 'outputs': [{'data': data}]}]}); "
            "print(sorted(m for m in sys.modules if m.startswith('mlsys_grader.gradescope')), data['text/plain'] == '', "
            "found.text == __import__('json').dumps(data[BUNDLE_MIME], ensure_ascii=False))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["[]", "True", "True"], done.stderr


def test_assert_item_explains_a_lost_item_and_passes_a_kept_one(tmp_path, clock):
    with pytest.raises(AssertionError, match=r"No lab07-submission\.json next to the notebook"):
        assert_item("lab07", "A", "captured", directory=tmp_path)
    lab = lab07(tmp_path, clock)
    lab.predict("A", "below_25")
    lab.run("A", dispatches=1)
    lab.predict("A", "50_75")
    lab.capture("A")
    assert_item("lab07", "A", "captured", directory=tmp_path)
    assert_item("lab07", "A", "replay", directory=tmp_path)
    with pytest.raises(AssertionError, match=r"Part A's prediction was locked after the result was shown; predictions count only when made first"):
        assert_item("lab07", "A", "prediction_locked", directory=tmp_path)
    with pytest.raises(AssertionError, match="Part B has no captured evidence"):
        assert_item("lab07", "B", "captured", directory=tmp_path)
    with pytest.raises(AssertionError, match="rubric has no item 'speed'"):
        assert_item("lab07", "A", "speed", directory=tmp_path)


def test_predict_checks_the_controls_set_in_its_cell_before_locking(tmp_path, clock):
    """The notebook passes the part's controls to lab.predict, so a wrong value is named in the cell that sets it."""
    lab = lab07(tmp_path, clock)
    with pytest.raises(DomainError, match=r"^Part B: executions must be a number from 10 to 200 in steps of 10; you set 205\.$"):
        lab.predict("B", "compiled", executions=205, recompilations=0)
    assert lab._parts["B"].prediction is None and not submission_path("lab07", tmp_path).exists()
    with pytest.raises(DomainError, match=r"^Part B: lab.predict also needs recompilations"):
        lab.predict("B", "compiled", executions=50)
    with pytest.raises(DomainError, match=r"^Part A: dispatches must be one of 1, 2, 3; you set 4\.$"):
        lab.predict("A", ..., dispatches=4)  # even before a prediction is chosen
    assert lab.predict("B", "compiled", executions=50, recompilations=0).title == "Part B prediction locked: Compilation repays setup."


# -- the closing evidence report -----------------------------------------------------------------
def test_the_evidence_report_of_a_complete_session_is_the_books_closing_report(tmp_path, clock):
    lab = lab11(tmp_path, clock, track="edge")
    complete(lab)
    report = lab.report()
    assert report.complete and report.missing == ()
    assert report.objectives[0] == "Identify the binding roofline resource"
    assert report.takeaways[-1] == "Selection filters constraints before optimizing an objective."
    assert report.scenario == "NVIDIA Jetson AGX Orin analytical accelerator-fit investigation"
    saved_bundle = saved(tmp_path, "lab11")
    rows = {row.part: row for row in report.parts}
    assert [row.status for row in report.parts] == ["fresh"] * 5
    assert rows["C"].settings == 'shape = "misaligned", operation = "gemm"'
    assert rows["D"].settings == "speedup = 10, built on part C"
    assert rows["E"].decision == "choice: Primary; rejected: Alternative"
    assert rows["B"].prediction == lab.lab.parts["B"].predictions[saved_bundle.evidence["B"].prediction]
    assert rows["D"].evidence.endswith("of the kernel gain survives.")
    assert dict(report.decision)["Recommendation (part E)"] == "Primary"
    assert report.rationale == saved_bundle.synthesis.rationale
    page = report._repr_html_()
    assert "<h3>Local evidence report</h3>" in page and "Ready to submit." in page and "Big takeaways" in page
    assert "Still to do" not in repr(report) and "Ready to submit." in repr(report)


def test_the_evidence_report_says_what_is_still_missing(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    empty = lab.report()
    assert not empty.complete and [row.status for row in empty.parts] == ["missing"] * 5
    assert "Part A: lock a prediction, run the part and capture it." in empty.missing
    lab.predict("C", "both")
    lab.run("C", graph_breaks=0)
    lab.capture("C")
    lab.run("C", graph_breaks=2)  # the final setting moves on: the evidence is stale
    report = lab.report()
    row = next(row for row in report.parts if row.part == "C")
    assert row.status == "STALE: recapture" and row.settings == "graph_breaks = 0"
    assert any(m.startswith("Part C: Part C's evidence no longer matches your final settings (graph_breaks is now 2, captured "
                            "with 0)") for m in report.missing)
    assert "Still to do" in report._repr_html_()


# -- the export cell ----------------------------------------------------------------------------------
EXPORT_MEMBERS = ["lab07.ipynb", "lab07-submission.json", "__zip_filename__"]


def capture_every_part(lab: LabSession, answers: dict) -> None:
    """Lock, run and capture each part of ``lab`` with the settings, prediction and decision of the solved bundle
    ``answers``, as a student working through the notebook does."""
    for part in ("A", "B", "C", "D", "E"):
        record = answers["evidence"][part]
        lab.predict(part, record["prediction"])
        controls = dict(answers["controls"][part])
        chosen = {"decision": controls.pop("decision")} if "decision" in controls else {}
        lab.run(part, **controls)
        lab.capture(part, **chosen)


def _saved_notebook(tmp_path) -> Path:
    """The handed-out notebook saved beside the bundle, as the student's Save writes it (after the last capture)."""
    path = tmp_path / "lab07.ipynb"
    path.write_bytes((Path(__file__).resolve().parents[1] / "assignments" / "lab07.ipynb").read_bytes())
    bundle = submission_path("lab07", tmp_path)
    os.utime(path, ns=(bundle.stat().st_atime_ns, bundle.stat().st_mtime_ns + 1_000_000_000))  # file times are coarse
    return path


def test_export_writes_otters_layout_that_every_route_reads_with_the_saved_bundle(tmp_path, clock, capsys):
    from mlsys_grader.gradescope._upload import inspect_upload
    from mlsys_grader.intake import read_submission

    lab = lab07(tmp_path, clock)
    lab.predict("A", "above_75", dispatches=2)
    lab.run("A")
    lab.capture("A")
    notebook = _saved_notebook(tmp_path)
    notice = lab.export()
    (exported,) = tmp_path.glob("lab07_*.zip")
    assert re.fullmatch(r"lab07_\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d_\d{6}\.zip", exported.name)  # Otter's export name
    assert (notice.kind, notice.title, notice.lines) == (
        "warn", f"Exported {exported.name} (your notebook and lab07-submission.json), with what is listed above still to do: "
                "fix it and export again, or upload this zip knowing what it costs.", []), "never 'upload it as it is' over gaps"
    assert capsys.readouterr().out.startswith("[warn] Still missing: parts B, C, D and E and the synthesis's")  # before_export, once
    with zipfile.ZipFile(exported) as archive:
        assert archive.namelist() == EXPORT_MEMBERS  # no .OTTER_LOG: a pickle nothing here loads
        assert archive.read("lab07.ipynb") == notebook.read_bytes()
        assert archive.read("lab07-submission.json") == submission_path("lab07", tmp_path).read_bytes()
        assert archive.read("__zip_filename__") == exported.name.encode()
        archive.extractall(tmp_path / "gradescope")
    read = read_submission(exported)  # mlsys-grader grade and check
    assert (read.origin, read.error, read.bundle.content_hash) == ("otter", None, saved(tmp_path).content_hash)
    upload = inspect_upload(tmp_path / "gradescope", "lab07")  # the Gradescope autograder, on the unpacked zip
    assert (upload.source, upload.problem, upload.flags, upload.bundle) == (
        "lab07-submission.json", None, (), submission_path("lab07", tmp_path).read_bytes())
    assert cli.main(["check", str(exported)]) == 0  # read and graded like the bundle: parts B to E still missing
    assert "Part B has no captured evidence" in capsys.readouterr().out


def test_export_says_plainly_when_the_notebook_was_not_saved_after_the_latest_work(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    lab.predict("A", "above_75", dispatches=2)
    notebook = _saved_notebook(tmp_path)
    lab.run("A")  # after the save: the bundle on disk is newer than the notebook
    bundle = submission_path("lab07", tmp_path)
    os.utime(notebook, ns=(bundle.stat().st_atime_ns, bundle.stat().st_mtime_ns - 1_000_000_000))  # file times are coarse
    notice = lab.export()
    (exported,) = tmp_path.glob("lab07_*.zip")
    assert (notice.kind, notice.title) == ("warn", f"lab07.ipynb on disk is older than lab07-submission.json: the notebook was "
                                                   f"not saved after your latest work. Save it (File > Save) and run this cell "
                                                   f"again; {exported.name} holds your evidence as it is now, but the notebook "
                                                   "as last saved.")
    with zipfile.ZipFile(exported) as archive:
        assert archive.namelist() == EXPORT_MEMBERS and archive.read("lab07.ipynb") == notebook.read_bytes()
        assert archive.read("lab07-submission.json") == submission_path("lab07", tmp_path).read_bytes()


def test_export_without_a_saved_notebook_or_bundle_says_what_to_do_and_writes_no_zip(tmp_path, clock):
    lab = lab07(tmp_path, clock)
    assert lab.export().title == ("Nothing to export yet: lab07-submission.json is written when you lock your first "
                                  "prediction; run the cells from the top first.")
    lab.predict("A", "above_75", dispatches=2)
    assert lab.export().title == (f"No saved notebook lab07.ipynb next to lab07-submission.json in {tmp_path.resolve()}: save "
                                  'the notebook there (File > Save), or pass its file name (lab.export("my-lab07.ipynb")), '
                                  "then run this cell again.")
    assert list(tmp_path.glob("lab07_*.zip")) == []
    (tmp_path / "my-lab07.ipynb").write_text("{}", encoding="utf-8")  # renamed: its name is passed, read beside the bundle
    assert lab.export("my-lab07.ipynb").title.startswith("Exported lab07_")
    (exported,) = tmp_path.glob("lab07_*.zip")
    assert zipfile.ZipFile(exported).namelist() == ["my-lab07.ipynb", "lab07-submission.json", "__zip_filename__"]


def test_export_names_every_public_point_still_to_earn_with_its_cost(tmp_path, clock):
    """Measured: a complete submission whose rationale cites no number was told "upload that zip as it is" although the
    self-check had 4 points still to earn; the export names each item left and what it costs."""
    from conftest import solved

    answers = solved("lab07", "cloud")
    lab = lab07(tmp_path, clock)
    capture_every_part(lab, answers)
    synthesis = {k: v for k, v in answers["synthesis"].items() if k != "rationale"}
    lab.synthesis(**synthesis, rationale=(
        "I recommend the plan I chose over the alternative I rejected, because my saved evidence showed it runs faster "
        "on this device once compilation is repaid. The timings are illustrative, and I would revisit this if the "
        "number of executions changes."))
    _saved_notebook(tmp_path)
    assert lab.missing() is None
    check = lab.check()
    lost = {f"{item.item}": item.max_points - item.points for item in check.parts["synthesis"].items
            if item.points < item.max_points}
    assert lost.get("rationale_cites_evidence") == 4
    notice = lab.export()
    (exported,) = tmp_path.glob("lab07_*.zip")
    assert notice.kind == "warn" and "upload that zip as it is" not in notice.title
    assert "the synthesis's rationale cites evidence (4)" in notice.title, notice.title
    total = check.max_score - check.score
    assert notice.title.startswith(f"Exported {exported.name} (your notebook and lab07-submission.json); the public checks "
                                   f"still find {total:g} points to earn: ")


def test_export_says_what_quantifying_the_rejected_alternative_would_add(tmp_path, clock):
    """Numbers of the evidence that quantify nothing rejected earn half the evidence item, certainly: the self-check
    says what the other half needs, and the export names the 2 points before upload."""
    from conftest import solved

    answers = solved("lab07", "cloud")
    lab = lab07(tmp_path, clock)
    capture_every_part(lab, answers)
    synthesis = {k: v for k, v in answers["synthesis"].items() if k != "rationale"}
    lab.synthesis(**synthesis, rationale=(
        "I recommend compiled with fusion, which totals 8.99 ms over the 50 executions. I reject eager execution. The "
        "timings are illustrative assumptions, and I would revisit this if the execution count changes."))
    _saved_notebook(tmp_path)
    check = lab.check()
    cites = next(item for item in check.parts["synthesis"].items if item.item == "rationale_cites_evidence")
    assert (cites.points, cites.certainty) == (2, "certain")
    assert any("Quantify the rejected alternative" in f.message for f in check.findings)
    notice = lab.export()
    assert notice.kind == "warn" and "the synthesis's rationale cites evidence (2)" in notice.title, notice.title
