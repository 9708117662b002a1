"""The bundle models (mlsys_grader.core.models): times read as UTC, the run log, schema upgrades."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_schema_2, reseal, solved

from mlsys_grader import cli
from mlsys_grader.api import grade_bundle
from mlsys_grader.core.models import SCHEMA_VERSION, Bundle, PartRun, load_bundle
from mlsys_grader.errors import BundleFormatError

UTC = UTC


def with_naive_times(data: dict) -> dict:
    """The bundle with every time but ``result_shown_at`` written without a time zone, so naive
    and aware times meet in every comparison the grader makes."""
    data = json.loads(json.dumps(data))

    def naive(text: str) -> str:
        return datetime.fromisoformat(text).astimezone(UTC).replace(tzinfo=None).isoformat()

    for entry in [*data["evidence"].values(), *data["runs"].values()]:
        for name, value in entry.items():
            if name.endswith("_at") and name != "result_shown_at" and value is not None:
                entry[name] = naive(value)
    data["created_at"] = naive(data["created_at"])
    assert data["runs"]["B"]["first_shown_at"] and "+" not in data["runs"]["B"]["first_shown_at"]
    return reseal(data)


# -- times without a zone -----------------------------------------------------------------------
def test_a_time_without_zone_reads_as_utc_and_one_with_an_offset_is_kept_in_utc():
    data = solved("lab07", "cloud")
    data["evidence"]["A"]["prediction_locked_at"] = "2026-01-01T00:00:00"
    data["evidence"]["A"]["result_shown_at"] = "2026-01-01T02:00:05+02:00"
    record = load_bundle(json.dumps(reseal(data))).evidence["A"]
    assert record.prediction_locked_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert record.prediction_locked_at.tzinfo is UTC
    assert record.result_shown_at == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC) and record.result_shown_at.tzinfo is UTC


def test_naive_times_everywhere_grade_without_a_grader_error():
    report = grade_bundle(json.dumps(with_naive_times(solved("lab07", "cloud"))))
    assert "grader_error" not in report.flags
    assert [f for f in report.findings if f.criterion in ("grader", "format")] == []
    assert report.parts["B"].score == report.parts["B"].max_score


def test_a_naive_lock_time_is_compared_as_utc():
    """Read as UTC, a lock written one hour after the (aware) time the result was shown is late."""
    data = solved("lab07", "cloud")
    shown = datetime.fromisoformat(data["evidence"]["A"]["result_shown_at"])
    data["evidence"]["A"]["prediction_locked_at"] = (shown + timedelta(hours=1)).replace(tzinfo=None).isoformat()
    report = grade_bundle(json.dumps(reseal(data)))
    late = [f for f in report.findings if f.part == "A" and f.rubric_item == "prediction_locked"]
    assert len(late) == 1 and "locked after the result was shown" in late[0].message
    assert "grader_error" not in report.flags


def _assert_full_report_of_naive_times(report: dict) -> None:
    assert [f["message"] for f in report["findings"] if f["criterion"] in ("grader", "format")] == []
    assert report["parts"]["A"]["score"] == report["parts"]["A"]["max_score"]


def test_mlsys_grader_check_on_a_file_with_naive_times_prints_a_report(tmp_path, capsys):
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(with_naive_times(solved("lab07", "cloud"))), encoding="utf-8")
    assert cli.main(["check", str(path), "--json"]) == cli.EXIT_OK
    _assert_full_report_of_naive_times(json.loads(capsys.readouterr().out))


@pytest.mark.slow
def test_mlsys_grader_check_on_a_file_with_naive_times_prints_a_report_not_a_traceback(tmp_path):
    """As above, through ``python -m mlsys_grader`` in a fresh process."""
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(with_naive_times(solved("lab07", "cloud"))), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mlsys_grader", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    _assert_full_report_of_naive_times(json.loads(done.stdout))


def test_a_time_that_is_not_a_time_is_a_format_error_naming_the_field():
    data = solved("lab07", "cloud")
    data["evidence"]["A"]["captured_at"] = "yesterday"
    with pytest.raises(BundleFormatError, match=r"evidence\.A\.captured_at: Input should be a valid datetime"):
        load_bundle(json.dumps(data))


# -- the run log ----------------------------------------------------------------------------------
def test_the_run_log_round_trips_through_json():
    bundle = load_bundle(json.dumps(solved("lab11", "edge")))
    moment = datetime(2026, 3, 1, 9, 0, 1, 250, tzinfo=UTC)
    logged = bundle.model_copy(update={"runs": {"D": PartRun(
        prediction="under_half", prediction_locked_at=moment, first_shown_at=moment + timedelta(seconds=1),
        first_run_controls={"speedup": 10}, first_run_at=moment + timedelta(seconds=1),
        first_run_upstream={"C": {"shape": "misaligned", "operation": "gemm"}})}}).sealed()
    again = load_bundle(logged.to_json())
    assert again.model_dump() == logged.model_dump() and again.hash_matches()
    assert again.runs["D"].first_run_upstream == {"C": {"shape": "misaligned", "operation": "gemm"}}


def test_a_run_log_entry_with_an_unknown_field_is_refused():
    data = solved("lab07", "cloud")
    data["runs"] = {"B": {"prediction": "eager", "first_run_shown": "2026-01-01T00:00:00Z"}}
    with pytest.raises(BundleFormatError, match=r"runs\.B\.first_run_shown: Extra inputs are not permitted"):
        load_bundle(json.dumps(data))


# -- schema versions -------------------------------------------------------------------------------
def as_version_1(data: dict) -> dict:
    """The bundle as schema version 1 wrote it: no run log, its records sealed as schema 2 sealed them, sealed over that
    content."""
    data = {key: value for key, value in as_schema_2(data).items() if key != "runs"}
    data["schema_version"] = 1
    return reseal(data)


def test_a_version_1_bundle_loads_with_an_empty_run_log_and_keeps_its_own_seal():
    bundle = load_bundle(json.dumps(as_version_1(solved("lab07", "mobile"))))
    assert (bundle.schema_version, bundle.runs) == (SCHEMA_VERSION, {})
    assert bundle.hash_matches()


def test_a_version_1_bundle_still_grades_as_its_current_twin():
    data = solved("lab11", "cloud")
    old, new = grade_bundle(json.dumps(as_version_1(data))), grade_bundle(json.dumps(data))
    assert [f for f in old.findings if f.criterion == "format"] == []
    assert {part: score.score for part, score in old.parts.items()} == {part: score.score for part, score in new.parts.items()}
    assert old.parts["C"].score == old.parts["C"].max_score


def test_a_version_2_bundle_reads_with_the_books_result_role_and_keeps_its_seals():
    """The reader upgrades schema 2: an empty ``result_role`` becomes the book's default, each record keeps the
    fingerprint schema 2 sealed it with, and the bundle's own content hash still verifies."""
    data = as_schema_2(solved("lab07", "edge", 2))
    bundle = load_bundle(json.dumps(data))
    assert (bundle.schema_version, bundle.read_version) == (SCHEMA_VERSION, 2) == (3, 2)
    assert {part: record.result_role for part, record in bundle.evidence.items()} == {
        "A": "tested intervention", "B": "tested intervention", "C": "tested intervention", "D": "tested intervention",
        "E": data["evidence"]["E"]["result_role"]}
    assert {part: record.upstream_fingerprint for part, record in bundle.evidence.items()} == {
        part: record["upstream_fingerprint"] for part, record in data["evidence"].items()}
    assert bundle.hash_matches()
    # A writer that left a default out: the bundle is hashed as schema 2 held it, so the seal still verifies.
    del data["evidence"]["A"]["result_role"]
    assert load_bundle(json.dumps(data)).hash_matches()
    assert bundle.sealed().hash_matches() and bundle.sealed().content_hash != bundle.content_hash


@pytest.mark.parametrize("lab_id, track", [("lab07", "mobile"), ("lab11", "edge")])
def test_a_version_2_bundle_grades_as_its_current_twin(lab_id, track):
    data = solved(lab_id, track, 4)
    old, new = grade_bundle(json.dumps(as_schema_2(data))), grade_bundle(json.dumps(data))
    assert old.findings == new.findings and old.score == new.score and old.parts == new.parts


def test_a_stale_version_2_record_is_reported_with_the_fingerprints_it_holds():
    """A record written before schema 3 is stale when its settings moved, and the finding quotes the fingerprint the
    file holds against the one schema 2 gives the final settings (what the grader reported before schema 3)."""
    from mlsys_grader.core.seal import legacy_fingerprint

    data = as_schema_2(solved("lab07", "cloud", 1))
    data["controls"]["D"]["batch_size"] = 1 if data["controls"]["D"]["batch_size"] != 1 else 2
    report = grade_bundle(json.dumps(reseal(data)))
    (stale,) = [f for f in report.findings if f.criterion == "stale"]
    final_upstream = {"batch_size": data["controls"]["D"]["batch_size"], "policy": data["controls"]["D"]["policy"]}
    assert stale.part == "D" and "batch_size is now" in stale.message
    assert (stale.expected, stale.actual) == (legacy_fingerprint("lab07", "cloud", "D", final_upstream),
                                              data["evidence"]["D"]["upstream_fingerprint"])


def test_a_current_record_without_a_result_role_is_refused_naming_the_field():
    data = solved("lab07", "cloud")
    data["evidence"]["B"]["result_role"] = None
    with pytest.raises(BundleFormatError, match=r"evidence\.B\.result_role: Input should be a valid string \(got None\)"):
        load_bundle(json.dumps(reseal(data)))


def test_an_edited_version_1_bundle_is_still_caught():
    data = as_version_1(solved("lab07", "cloud"))
    data["evidence"]["A"]["prediction"] = "below_25"
    report = grade_bundle(json.dumps(data))
    assert any(f.part == "bundle" and "edited after it was saved" in f.message for f in report.findings)


def test_a_future_schema_version_is_refused_by_number():
    data = solved("lab07", "cloud")
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(BundleFormatError, match=rf"schema_version {SCHEMA_VERSION + 1} is not supported"):
        load_bundle(json.dumps(data))


def test_a_bundle_built_in_python_with_naive_times_seals_consistently():
    bundle = Bundle(lab="lab07", track="cloud", created_at=datetime(2026, 1, 1)).sealed()
    assert bundle.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert load_bundle(bundle.to_json()).hash_matches()
