"""Input discovery and safe loading: bundles, Otter zips, notebooks, Gradescope exports, marimo exports.

How a marimo export is graded (its seals, copies and tampers) is ``tests/test_marimo.py``.
"""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

from mlsys_grader import solve
from mlsys_grader.course._ingest import Candidate, discover, labs_named, load_candidate, read_gradescope_metadata
from mlsys_grader.intake import lab_named
from mlsys_grader.labs import lab_ids

BUNDLE_NAMES = " or ".join(f"{lab}-submission.json" for lab in lab_ids())
"""What a zip or a notebook's folder is looked through for: every registered lab's bundle name."""

MARIMO = Path(__file__).parent / "fixtures" / "marimo"


@pytest.fixture(scope="module")
def lab07_bundle() -> dict:
    return json.loads(solve("lab07", "mobile", 3).to_json())


def _zip(tmp_path: Path, members: dict[str, bytes], *, symlink: str | None = None) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    path = tmp_path / "sub.zip"
    path.write_bytes(buffer.getvalue())
    return path


def _load(path: Path):
    return load_candidate(Candidate(source=str(path), kind="zip" if path.suffix == ".zip" else "json", primary=str(path)))


def test_otter_zip_bundle_is_read_in_memory_and_hashed_by_content(tmp_path, lab07_bundle):
    text = json.dumps(lab07_bundle).encode()
    loaded = _load(_zip(tmp_path, {"lab07.ipynb": b"{}", "lab07-submission.json": text}))
    assert loaded.error is None and loaded.bundle.lab == "lab07" and loaded.origin == "otter"
    plain = tmp_path / "lab07-submission.json"
    plain.write_bytes(text)
    assert _load(plain).input_hash == loaded.input_hash, "the same bundle is the same input, zipped or not"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab07-submission.json", "sub.zip"], "nothing extracted"


@pytest.mark.parametrize("members, symlink, reason", [
    ({"../evil.json": b"{}", "lab07-submission.json": b"{}"}, None, "escapes the archive root (path traversal)"),
    ({"/abs/x.json": b"{}"}, None, "path traversal"),
    ({"lab07-submission.json": b"{}"}, "link.json", "is a symbolic link"),
    ({"lab07-submission.json": b" " * (8 * 1024 * 1024)}, None, "zip bomb refused"),
    ({"notes.txt": b"hi"}, None, f"zip holds no {BUNDLE_NAMES} at its root (found: notes.txt)"),
])
def test_hostile_zips_are_refused_with_the_reason(tmp_path, members, symlink, reason):
    loaded = _load(_zip(tmp_path, members, symlink=symlink))
    assert loaded.bundle is None and reason in loaded.error


def test_truncated_zip_names_what_was_expected(tmp_path, lab07_bundle):
    path = _zip(tmp_path, {"lab07-submission.json": json.dumps(lab07_bundle).encode()})
    path.write_bytes(path.read_bytes()[:300])
    assert "is not a readable zip archive" in _load(path).error and "expected an Otter export zip" in _load(path).error


def test_discover_pairs_notebook_with_bundle_and_skips_symlinks(tmp_path, lab07_bundle):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "lab07-submission.json").write_text(json.dumps(lab07_bundle))
    (tmp_path / "alice" / "lab07.ipynb").write_text("{}")
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "lab11.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("not a submission")
    (tmp_path / "link.json").symlink_to(tmp_path / "alice" / "lab07-submission.json")
    found = discover([tmp_path])
    assert [(Path(c.source).relative_to(tmp_path).as_posix(), c.kind, bool(c.primary)) for c in found] == [
        ("notes.txt", "other", True), ("alice/lab07.ipynb", "notebook", True), ("bob/lab11.ipynb", "notebook", False)]
    assert load_candidate(found[2]).error.startswith(f"notebook has no {BUNDLE_NAMES} beside it")
    notes = load_candidate(found[0])
    assert notes.error_kind == "Unsupported"
    assert notes.error.startswith("notes.txt is a text file, not a submission in an accepted format (the notebook's "
                                  "<lab>-submission.json bundle; an Otter export zip; the book's marimo export")


def test_gradescope_metadata_gives_names_emails_and_groups(tmp_path):
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ada L\n    :email: ada@x.edu\n    :sid: '7'\n"
        "  - :name: Bo K\n    :email: bo@x.edu\n    :sid: '8'\n  :score: 0.0\n", encoding="utf-8")
    (tmp_path / "submission_1").mkdir()
    (tmp_path / "submission_1" / "lab07-submission.json").write_text("{}")
    students = read_gradescope_metadata(tmp_path / "submission_metadata.yml")
    assert students["submission_1"].name == "Ada L; Bo K" and students["submission_1"].email == "ada@x.edu; bo@x.edu"
    [candidate] = discover([tmp_path])
    assert candidate.kind == "gradescope" and candidate.primary.endswith("lab07-submission.json")
    assert candidate.student.sid == "7; 8"


@pytest.mark.parametrize("name, origin, controls", [
    ("lab07-cloud.json", "marimo-json", {"B": {"executions": 100, "recompilations": 2}}),
    ("lab07-cloud.report.md", "marimo-md", {"D": {"policy": "input_only", "batch_size": 16}}),
    ("lab11-edge.json", "marimo-json", {"C": {"shape": "misaligned", "operation": "gemm"}}),
])
def test_marimo_exports_are_read_by_content_into_bundles(tmp_path, name, origin, controls):
    """Whatever the file is called (here ``submission.txt``), a marimo export is read as one: its captures
    become records with no mlsysim version (the export's label is a static default) and the lab module
    infers the settings they were captured with."""
    path = tmp_path / "submission.txt"
    path.write_bytes((MARIMO / name).read_bytes())
    loaded = _load(path)
    assert (loaded.error, loaded.origin, loaded.findings) == (None, origin, ())
    bundle = loaded.bundle
    assert sorted(bundle.evidence) == list("ABCDE") and all(r.mlsysim_version is None for r in bundle.evidence.values())
    assert {part: bundle.controls[part] for part in controls} == controls
    assert bundle.hash_matches() and bundle.synthesis.rationale.startswith("I ")


def test_an_otter_zip_holding_a_marimo_export_says_so(tmp_path):
    loaded = _load(_zip(tmp_path, {"lab11-submission.json": (MARIMO / "lab11-tinyml.json").read_bytes()}))
    assert (loaded.error, loaded.origin, loaded.bundle.lab) == (None, "otter/marimo-json", "lab11")


def test_json_that_is_neither_bundle_nor_report_names_both(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    error = _load(path).error
    assert "neither a submission bundle" in error and "result_snapshot.captures" in error and "['hello']" in error
    assert "Markdown report" in error


def test_markdown_without_the_embedded_snapshot_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "v1_07_framework_tax_report.md"
    text = (MARIMO / "lab07-cloud.report.md").read_text(encoding="utf-8")
    path.write_text(text.split("```json")[0], encoding="utf-8")
    loaded = load_candidate(Candidate(str(path), "markdown", str(path)))
    assert loaded.error == "marimo Markdown report has no JSON block under '### MLSysIM Result Snapshot'; download the report again"
    assert loaded.error_kind == "BundleFormatError", "the class name is its own field, not a prefix of the sentence"


def test_named_files_are_always_inputs_and_named_notebooks_find_their_bundle(tmp_path, lab07_bundle):
    (tmp_path / "lab07-submission.json").write_text(json.dumps(lab07_bundle))
    (tmp_path / "lab07.ipynb").write_text("{}")
    (tmp_path / "other").mkdir()
    found = discover([tmp_path / "lab07.ipynb", tmp_path / "missing.json", tmp_path / "lab07.ipynb"])
    assert [(Path(c.source).name, c.kind, c.primary and Path(c.primary).name) for c in found] == [
        ("lab07.ipynb", "notebook", "lab07-submission.json"), ("missing.json", "json", "missing.json")]
    assert load_candidate(found[0]).bundle.lab == "lab07"
    assert "cannot read" in load_candidate(found[1]).error and "No such file" in load_candidate(found[1]).error


# -- the labs a batch readies before it reads anything ---------------------------------------------------------------
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


@pytest.mark.parametrize("source, lab", [
    (SOLUTIONS.parent / "examples" / "submissions" / "lab11-edge.json", "lab11"),   # a bundle names its lab in its first line
    (SOLUTIONS / "lab02" / "reference-mobile.ipynb", "lab02"),            # a notebook: the bundle saved in its outputs
    (MARIMO / "lab08-cloud.json", "lab08"),                               # the book's marimo snapshot
    (MARIMO / "lab07-cloud.report.md", "lab07"),                          # and its Markdown report
])
def test_the_lab_a_file_names_is_read_from_its_content_not_its_name(tmp_path, source, lab):
    copy = tmp_path / f"lab99-{source.suffix.lstrip('.')}{''.join(source.suffixes)}"  # a name that mentions no lab of it
    copy.write_bytes(source.read_bytes())
    assert lab_named(copy) == lab


def test_a_file_whose_content_names_no_lab_falls_back_to_its_name_and_a_guess_never_blocks_or_raises(tmp_path, lab07_bundle):
    import os

    archive = _zip(tmp_path, {"lab11-submission.json": json.dumps(lab07_bundle).encode()})  # compressed: no field read
    assert lab_named(archive) is None
    named = tmp_path / "lab11_2026-11-30.zip"
    archive.rename(named)
    assert lab_named(named) == "lab11"
    unknown = tmp_path / "other.json"
    unknown.write_text(json.dumps({"lab": "lab99", "lab_id": "v1_99_unknown", "parts": {"A": {"lab": "lab11"}}}))
    assert lab_named(unknown) == "lab11"  # only a registered lab counts: the first field that names one
    quoted = tmp_path / "quoted.json"  # a student's text quoting the field is escaped in JSON, and is not the field
    quoted.write_text(json.dumps({"rationale": '{"lab": "lab08"}', "lab": "lab02"}))
    assert lab_named(quoted) == "lab02"
    link = tmp_path / "lab08-link.json"
    link.symlink_to(tmp_path / "quoted.json")
    assert lab_named(link) == "lab08"  # the link is not followed: only its name is read
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert lab_named(fifo) is None and lab_named(tmp_path / "missing.json") is None and lab_named(tmp_path) is None


def test_a_batch_readies_the_labs_its_inputs_name_or_every_lab_when_one_names_none(tmp_path, lab07_bundle):
    first = tmp_path / "a.json"
    first.write_text(json.dumps(lab07_bundle))
    notebook = Candidate(source=str(tmp_path), kind="gradescope", primary=str(SOLUTIONS / "lab02" / "reference-edge.ipynb"))
    assert labs_named([Candidate(source=str(first), kind="json", primary=None), notebook]) == ["lab02", "lab07"]
    assert labs_named([]) == []
    nameless = Candidate(source=str(_zip(tmp_path, {"x.json": b"{}"})), kind="zip", primary=None)
    assert labs_named([Candidate(source=str(first), kind="json", primary=None), nameless]) is None


def test_grade_builds_tables_for_the_labs_its_inputs_name_and_every_lab_when_one_names_none(tmp_path):
    """``labs_to_grade``: what ``grade`` builds replay tables for before grading — the labs the inputs name, the staff's
    own files left out; None (every lab) when an input names none or the paths cannot be listed."""
    from mlsys_grader.course import labs_to_grade

    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "ada.json").write_text(solve("lab11", "edge").to_json(), encoding="utf-8")
    (folder / "bo.json").write_text(solve("lab07", "cloud").to_json(), encoding="utf-8")
    roster = folder / "roster.csv"
    roster.write_text("name,email\nAda,ada@example.edu\n", encoding="utf-8")
    assert labs_to_grade([folder], roster) == ["lab07", "lab11"]
    assert labs_to_grade([folder]) is None  # the roster, read as an input, names no lab: every lab
    assert labs_to_grade([folder / "bo.json"]) == ["lab07"]
    (tmp_path / "empty").mkdir()
    assert labs_to_grade([tmp_path / "empty"]) == []  # nothing to grade: no table to build
    assert labs_to_grade([tmp_path / "nowhere"]) is None  # not listable: every lab, and the batch says why
