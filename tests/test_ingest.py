"""Input discovery and safe loading: bundles, Otter zips, notebooks, Gradescope exports, marimo reports."""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

from mlsys_grader import solve
from mlsys_grader.course._gradebook import grade_candidate, resolve_rubrics
from mlsys_grader.course._ingest import (
    Candidate,
    bundle_from_marimo_report,
    discover,
    load_candidate,
    read_gradescope_metadata,
)

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("course", ROOT / "benchmarks" / "course.py")
course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course)


@pytest.fixture(scope="module")
def lab07_bundle() -> dict:
    return json.loads(solve("lab07", "mobile", 3).to_json())


@pytest.fixture(scope="module")
def lab11_bundle() -> dict:
    return json.loads(solve("lab11", "edge", 4).to_json())


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
    assert loaded.error is None and loaded.bundle.lab == "lab07" and loaded.origin == "zip:bundle"
    plain = tmp_path / "lab07-submission.json"
    plain.write_bytes(text)
    assert _load(plain).input_hash == loaded.input_hash, "the same bundle is the same input, zipped or not"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab07-submission.json", "sub.zip"], "nothing extracted"


@pytest.mark.parametrize("members, symlink, reason", [
    ({"../evil.json": b"{}", "lab07-submission.json": b"{}"}, None, "escapes the archive root (path traversal)"),
    ({"/abs/x.json": b"{}"}, None, "path traversal"),
    ({"lab07-submission.json": b"{}"}, "link.json", "is a symbolic link"),
    ({"lab07-submission.json": b" " * (8 * 1024 * 1024)}, None, "zip bomb refused"),
    ({"notes.txt": b"hi"}, None, "zip holds no lab07-submission.json or lab11-submission.json at its root (found: notes.txt)"),
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
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "link.json").symlink_to(tmp_path / "alice" / "lab07-submission.json")
    found = discover([tmp_path])
    assert [(Path(c.source).relative_to(tmp_path).as_posix(), c.kind, bool(c.primary)) for c in found] == [
        ("alice/lab07.ipynb", "notebook", True), ("bob/lab11.ipynb", "notebook", False)]
    assert load_candidate(found[1]).error.startswith("notebook has no lab07-submission.json or lab11-submission.json beside it")


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


@pytest.mark.parametrize("fixture", ["lab07_bundle", "lab11_bundle"])
def test_marimo_report_converts_and_earns_full_marks(request, tmp_path, fixture):
    bundle = request.getfixturevalue(fixture)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(course.marimo_report(bundle)))
    converted = bundle_from_marimo_report(json.loads(path.read_text()))
    assert converted.controls == bundle["controls"], "controls inferred by the lab module"
    assert all(r.mlsysim_version is None for r in converted.evidence.values())
    result = grade_candidate(Candidate(str(path), "json", str(path)), resolve_rubrics({}))
    assert result["origin"] == "marimo" and result["score"] == 100.0, result["findings"]


def test_one_edited_number_in_a_marimo_report_is_tampering_not_version_drift(tmp_path, lab07_bundle):
    """A marimo capture carries no mlsysim version; when every other number replays exactly
    under the pinned version, one number that does not is an edit, and its part earns nothing."""
    report = course.marimo_report(copy.deepcopy(lab07_bundle))
    report["result_snapshot"]["captures"]["C"]["result"]["total_traffic_mb"] += 1.0
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    result = grade_candidate(Candidate(str(path), "json", str(path)), resolve_rubrics({}))
    assert "integrity" in result["flags"] and "version_drift" not in result["flags"]
    assert any(f[:2] == ["C", "replay"] and "recapture the part instead of editing numbers" in f[3] for f in result["findings"])
    assert result["parts"]["C"] == 0


def test_json_that_is_neither_bundle_nor_report_names_both(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    error = _load(path).error
    assert "neither a submission bundle" in error and "result_snapshot.captures" in error and "['hello']" in error


def test_named_files_are_always_inputs_and_named_notebooks_find_their_bundle(tmp_path, lab07_bundle):
    (tmp_path / "lab07-submission.json").write_text(json.dumps(lab07_bundle))
    (tmp_path / "lab07.ipynb").write_text("{}")
    (tmp_path / "other").mkdir()
    found = discover([tmp_path / "lab07.ipynb", tmp_path / "missing.json", tmp_path / "lab07.ipynb"])
    assert [(Path(c.source).name, c.kind, c.primary and Path(c.primary).name) for c in found] == [
        ("lab07.ipynb", "notebook", "lab07-submission.json"), ("missing.json", "json", "missing.json")]
    assert load_candidate(found[0]).bundle.lab == "lab07"
    assert "cannot read" in load_candidate(found[1]).error and "No such file" in load_candidate(found[1]).error
