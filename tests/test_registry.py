"""Labs come from a registry: shipped labs, installed entry points (group ``mlsys_grader.labs``), register_lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mlsys_grader
from mlsys_grader import UnknownLabError, grade_bundle, lab_ids, register_lab, solve
from mlsys_grader.labs import ENTRY_POINT_GROUP, lab_modules

ROOT = Path(__file__).resolve().parents[1]


def _course_package(tmp_path: Path, lab_id: str = "lab07copy") -> Path:
    """A separate installed package holding one lab (a copy of Lab 07 under another id) and its rubric,
    declared through an entry point, as a course would ship it."""
    package = tmp_path / "course_labs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / f"{lab_id}.py").write_text(
        "from mlsys_grader.labs.lab07 import Lab07\n\n\n"
        f"class CourseLab(Lab07):\n    lab_id = {lab_id!r}\n    title = 'Lab 07 (course copy)'\n\n\nLAB = CourseLab()\n")
    rubric = (ROOT / "mlsys_grader" / "labs" / "lab07.toml").read_text().replace('lab = "lab07"', f'lab = "{lab_id}"')
    (package / f"{lab_id}.toml").write_text(rubric)
    info = tmp_path / "course_labs-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: course-labs\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lab_id} = course_labs.{lab_id}\n")
    return tmp_path


def test_shipped_labs_are_registered():
    assert {"lab07", "lab11"} <= set(lab_ids())
    assert lab_modules()["lab11"] == "mlsys_grader.labs.lab11"


def test_register_lab_adds_a_lab_that_solves_and_grades(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab("lab07copy", "course_labs.lab07copy")
    try:
        assert "lab07copy" in lab_ids()
        bundle = solve("lab07copy", "edge", 3)
        assert bundle.lab == "lab07copy" and all(r.lab == "lab07copy" for r in bundle.evidence.values())
        report = grade_bundle(bundle.to_json())
        assert report.lab == "lab07copy" and report.versions["rubric"].startswith("lab07copy-")
        evidence = sum(p.score for name, p in report.parts.items() if name != "synthesis")
        assert evidence == 84  # every part verified; the synthesis is solve's template (flagged generated)
    finally:
        from mlsys_grader import labs

        labs._REGISTERED.pop("lab07copy", None)
        labs._LOADED.pop("lab07copy", None)


def test_an_installed_entry_point_adds_a_lab_to_the_command_line(tmp_path):
    site = _course_package(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "copy.json"
    solved = subprocess.run([sys.executable, "-m", "mlsys_grader", "solve", "--lab", "lab07copy", "--track", "cloud", "-o", str(out)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert solved.returncode == 0, solved.stderr
    checked = subprocess.run([sys.executable, "-m", "mlsys_grader", "check", str(out), "--json"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["lab"] == "lab07copy"


def test_a_module_that_implements_another_lab_is_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_course_package(tmp_path)))
    register_lab("lab99", "course_labs.lab07copy")
    try:
        with pytest.raises(UnknownLabError, match="implements lab 'lab07copy', registered as 'lab99'"):
            mlsys_grader.get_lab("lab99")
    finally:
        from mlsys_grader import labs

        labs._REGISTERED.pop("lab99", None)


def test_unknown_lab_names_the_registered_ones():
    with pytest.raises(UnknownLabError, match="unknown lab 'lab42'; expected one of lab07, lab11"):
        mlsys_grader.get_lab("lab42")
