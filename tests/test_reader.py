"""One reader: the same submission, in every form a student can hand in, gets the same grade from
``mlsys-grader check``, bulk ``grade`` and the Gradescope runner's upload path.

The notebooks are the committed, executed reference notebooks (``solutions/<lab>/reference-<track>.ipynb``),
whose outputs hold the bundle the student API embedded on save (:mod:`mlsys_grader.core.embed`); a case
with findings swaps that embedded bundle for one of ``examples/submissions`` in the same format.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

import pytest

from mlsys_grader import Submission, grade_file, grade_submission, read_submission
from mlsys_grader.cli import main
from mlsys_grader.core.embed import BUNDLE_MIME, bundle_display_data, bundle_from_outputs
from mlsys_grader.core.models import submission_filename
from mlsys_grader.course import BatchOptions, grade_paths
from mlsys_grader.gradescope._record import grade_upload
from mlsys_grader.gradescope._upload import inspect_upload
from mlsys_grader.labs import lab_ids

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "submissions"
MARIMO = ROOT / "tests" / "fixtures" / "marimo"

CASES = {
    "lab07": [("cloud", None), ("mobile", "lab07-mobile-rationale-without-numbers.json")],
    "lab11": [("tinyml", None), ("edge", "lab11-edge-stale-part-d.json")],
}
"""Lab → (track of the reference notebook, example bundle embedded in it instead, or None: the notebook as committed)."""


def _cases() -> list[tuple[str, str, str | None]]:
    return [(lab, track, example) for lab in lab_ids() for track, example in CASES.get(lab, [("cloud", None)])]


def _notebook(lab: str, track: str, example: str | None) -> tuple[dict, bytes]:
    """(notebook, the bundle it embeds) for a case; the reference notebook's saved bundles replaced by ``example``."""
    notebook = json.loads((ROOT / "solutions" / lab / f"reference-{track}.ipynb").read_text(encoding="utf-8"))
    if example is not None:
        text = (EXAMPLES / example).read_text(encoding="utf-8")
        notebook = copy.deepcopy(notebook)
        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                if BUNDLE_MIME in output.get("data", {}):
                    output["data"] = bundle_display_data(text)
    latest = bundle_from_outputs(notebook)
    assert latest is not None
    return notebook, latest.text.encode("utf-8")


def _forms(root: Path, lab: str, notebook: dict, bundle: bytes) -> dict[str, Path]:
    """Each form of one submission on disk: bundle, Otter export zip, notebook with bundle beside, notebook alone."""
    paths = {}
    paths["bundle"] = root / "bundle" / submission_filename(lab)
    paths["bundle"].parent.mkdir(parents=True)
    paths["bundle"].write_bytes(bundle)
    paths["otter zip"] = root / "zip" / f"{lab}_2026_02_06T23_10_00_123456.zip"
    paths["otter zip"].parent.mkdir()
    with zipfile.ZipFile(paths["otter zip"], "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{lab}.ipynb", json.dumps(notebook))
        archive.writestr(submission_filename(lab), bundle)
    paths["notebook with bundle beside"] = root / "beside" / f"{lab}.ipynb"
    paths["notebook with bundle beside"].parent.mkdir()
    paths["notebook with bundle beside"].write_text(json.dumps(notebook), encoding="utf-8")
    (root / "beside" / submission_filename(lab)).write_bytes(bundle)
    paths["notebook alone"] = root / "alone" / f"{lab}.ipynb"
    paths["notebook alone"].parent.mkdir()
    paths["notebook alone"].write_text(json.dumps(notebook), encoding="utf-8")
    return paths


def _check(path: Path, capsys) -> dict:
    assert main(["check", "--json", "--all", str(path)]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _grade_row(path: Path) -> dict:
    (row,) = grade_paths([path], BatchOptions(db=None, jobs=1)).rows
    return row


def _reasons(findings: list[tuple[str, str, str]]) -> str:
    return " | ".join(f"{part}/{criterion}: {message}" for part, criterion, message in findings)


@pytest.mark.parametrize(("lab", "track", "example"), _cases())
def test_every_form_of_one_submission_gets_one_grade_from_check_grade_and_gradescope(lab, track, example, tmp_path, capsys):
    notebook, bundle = _notebook(lab, track, example)
    expected = grade_submission(read_submission(bundle))
    findings = [(f.part, f.criterion, f.message) for f in expected.findings]
    assert (expected.score < expected.max_score) == (example is not None)  # the example cases have findings to compare
    for form, path in _forms(tmp_path, lab, notebook, bundle).items():
        checked = _check(path, capsys)
        assert (checked["score"], [(f["part"], f["criterion"], f["message"]) for f in checked["findings"]]) == \
            (expected.score, findings), form
        assert grade_file(path) == expected, form
        row = _grade_row(path)
        assert (row["status"], row["score"], row["reasons"]) == ("graded", expected.score, _reasons(findings)), form
        assert {name: row[f"part_{name}"] for name in expected.parts} == {n: p.score for n, p in expected.parts.items()}, form
        record = grade_upload(inspect_upload(path.parent, lab))  # Gradescope gets the folder the student uploaded
        assert record.problem is None, (form, record.problem)
        assert record.report.model_dump(exclude={"versions"}) == expected.model_dump(exclude={"versions"}), form


def test_the_origin_says_what_each_form_was_read_as(tmp_path):
    lab = lab_ids()[0]
    track, example = CASES.get(lab, [("cloud", None)])[0]
    notebook, bundle = _notebook(lab, track, example)
    origins = {form: read_submission(path).origin for form, path in _forms(tmp_path, lab, notebook, bundle).items()}
    assert origins == {"bundle": "bundle", "otter zip": "otter", "notebook with bundle beside": "bundle",
                       "notebook alone": "notebook"}
    alone = read_submission(tmp_path / "alone" / f"{lab}.ipynb")
    assert alone.input_hash == read_submission(bundle).input_hash  # the bundle, not its container, identifies the input
    assert alone.source == "the bundle saved in the notebook's outputs"


def test_marimo_exports_get_one_grade_from_check_and_grade_and_are_not_gradescope_work(tmp_path, capsys):
    """The JSON snapshot and the Markdown report of one marimo lab run grade alike (the lock-time excuse and the
    export's own findings are the core's inputs); a zip holding the snapshot too; Gradescope refuses them by name."""
    snapshot, report = MARIMO / "lab07-cloud.json", MARIMO / "lab07-cloud.report.md"
    zipped = tmp_path / "lab07_2026_02_06T23_10_00_123456.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr(submission_filename("lab07"), snapshot.read_bytes())
    expected = grade_file(snapshot)
    assert [(f.part, f.criterion) for f in expected.findings] == [("bundle", "prediction")]  # the excuse, said once
    assert expected.score == expected.max_score
    # scored once, by the core: the rationale reader's verdicts stay on the report (re-scoring outside used to drop them)
    assert all(i.certainty for i in expected.parts["synthesis"].items if i.item.startswith("rationale_"))
    for path in (snapshot, report, zipped):
        checked = _check(path, capsys)
        assert (checked["score"], [f["message"] for f in checked["findings"]]) == \
            (expected.score, [f.message for f in expected.findings]), path.name
        row = _grade_row(path)
        assert (row["status"], row["score"]) == ("graded", expected.score), path.name
    assert read_submission(zipped).origin == "otter/marimo-json"
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / submission_filename("lab07")).write_bytes(snapshot.read_bytes())
    record = grade_upload(inspect_upload(upload, "lab07"))
    assert record.report.score == 0 and "a marimo JSON snapshot, which this assignment does not grade" in (record.problem or "")


def test_a_course_policy_refuses_a_form_by_name_and_keeps_what_it_was(tmp_path):
    refused = read_submission(MARIMO / "lab07-cloud.json", formats=("bundle", "otter"))
    assert (refused.bundle, refused.origin, refused.error_kind) == (None, "marimo-json", "FormatRefused")
    assert "a marimo JSON snapshot is not accepted by this course (--formats bundle,otter)" in (refused.error or "")
    with pytest.raises(ValueError, match="not accepted by this course"):
        grade_file(MARIMO / "lab07-cloud.json", formats=("bundle",))


def test_a_notebook_without_any_saved_bundle_says_so_and_keeps_no_bytes(tmp_path, capsys):
    master = ROOT / "solutions" / "lab07" / "lab07-master.ipynb"
    read = read_submission(master)
    assert isinstance(read, Submission) and (read.bundle, read.error_kind) == (None, "MissingBundle")
    assert "no bundle saved in its outputs" in (read.error or "")
    assert main(["check", str(master)]) == 1
    assert "no bundle saved in its outputs; run its save cell" in capsys.readouterr().err


def test_bytes_are_read_by_content_whatever_their_name(tmp_path):
    """A zip is a zip and a notebook a notebook from their bytes; a hostile zip is refused, never extracted."""
    notebook, bundle = _notebook("lab07", "cloud", None)
    assert read_submission(json.dumps(notebook).encode(), name="upload").origin == "notebook"
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../lab07-submission.json", bundle)
    read = read_submission(evil.read_bytes(), name="evil")
    assert read.error_kind == "BundleFormatError" and "path traversal" in (read.error or "")
    assert not (tmp_path.parent / "lab07-submission.json").exists()


def test_a_gradescope_submission_folder_is_read_and_a_whole_export_is_refused(tmp_path):
    """One submission folder of a Gradescope download is one input; the download itself (many students) is not."""
    notebook, bundle = _notebook("lab07", "cloud", None)
    folder = tmp_path / "export" / "submission_1234"
    folder.mkdir(parents=True)
    (folder / "lab07.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    read = read_submission(folder)
    assert (read.origin, read.input_hash) == ("notebook", read_submission(bundle).input_hash)
    (tmp_path / "export" / "submission_metadata.yml").write_text("{}", encoding="utf-8")
    whole = read_submission(tmp_path / "export")
    assert whole.error_kind == "Refused" and "a Gradescope export of many submissions" in (whole.error or "")


def test_a_fifo_named_like_a_submission_is_refused_without_blocking(tmp_path):
    import os

    for name in ("lab07-submission.json", "lab07_2026.zip"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        read = read_submission(fifo)  # a blocking open would hang here
        assert (read.bundle, read.error_kind) == (None, "OSError") and "not a regular file" in (read.error or ""), name
