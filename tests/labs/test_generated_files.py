"""The committed masters and reference submissions are what ``mlsys-grader generate … --check`` says they are.

``generate masters --check`` compares each master byte for byte with the one the lab's words write;
``generate references --check`` compares every cell source and the bundle's answers with what filling in
the student notebook gives (execution records times, so it executes nothing).  The student notebooks'
check is ``assign --check`` (:func:`mlsys_grader.staff.drift`), run by ``tests/test_notebooks.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import LABS

from mlsys_grader import cli
from mlsys_grader.labs import get_lab
from mlsys_grader.staff._generate import reference_paths

ROOT = Path(__file__).resolve().parents[2]


def test_committed_masters_are_what_generate_writes(capsys):
    assert cli.main(["generate", "masters", "--check", "--root", str(ROOT)]) == cli.EXIT_OK
    assert capsys.readouterr().out == "committed masters are what `mlsys-grader generate masters` writes\n"


def test_committed_references_are_what_generate_writes(capsys):
    assert cli.main(["generate", "references", "--check", "--root", str(ROOT)]) == cli.EXIT_OK
    assert capsys.readouterr().out == "committed references are what `mlsys-grader generate references` writes\n"


def _copy(tmp_path: Path, lab_id: str) -> None:
    """The lab's master, student notebook and reference submissions (notebooks and bundles), at the same places under
    ``tmp_path``."""
    master = get_lab(lab_id).master_path(ROOT)
    target = get_lab(lab_id).master_path(tmp_path)
    shutil.copytree(master.parent, target.parent)
    (tmp_path / "assignments").mkdir(exist_ok=True)
    shutil.copyfile(ROOT / "assignments" / f"{lab_id}.ipynb", tmp_path / "assignments" / f"{lab_id}.ipynb")
    for track in get_lab(lab_id).tracks:
        bundle = reference_paths(ROOT, lab_id, track)[1]
        copy = reference_paths(tmp_path, lab_id, track)[1]
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bundle, copy)


def test_an_edited_master_and_a_missing_one_are_named(tmp_path, capsys):
    first, *rest = LABS
    _copy(tmp_path, first)
    master = get_lab(first).master_path(tmp_path)
    master.write_text(master.read_text(encoding="utf-8").replace("Predict first", "Guess first", 1), encoding="utf-8")
    assert cli.main(["generate", "masters", "--check", "--root", str(tmp_path)]) == cli.EXIT_UNGRADABLE
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{master}: differs from the master the lab's words generate; run `mlsys-grader generate masters`"
    assert [line.split(":")[0] for line in lines[1:]] == [str(get_lab(lab).master_path(tmp_path)) for lab in rest]
    assert all(line.endswith(": missing; run `mlsys-grader generate masters`") for line in lines[1:])
    assert cli.main(["generate", "masters", "--lab", first, "--root", str(tmp_path)]) == cli.EXIT_OK
    assert master.read_text(encoding="utf-8") == get_lab(first).master_path(ROOT).read_text(encoding="utf-8")


def test_a_shipped_labs_reference_bundle_is_the_quick_starts_example_once():
    """``generate references`` writes a shipped lab's bundle where the quick start grades it, and nowhere else."""
    for lab_id in LABS:
        for track in get_lab(lab_id).tracks:
            notebook, bundle = reference_paths(ROOT, lab_id, track)
            assert bundle == ROOT / "examples" / "submissions" / f"{lab_id}-{track}.json" and bundle.is_file()
            assert notebook.is_file() and not notebook.with_name(f"reference-{track}-submission.json").exists()


def test_a_committed_reference_keeps_its_latest_save_only_and_no_execution_times(tmp_path, capsys):
    """A reference notebook carries the bundle it saved last (what an upload of it is graded from, the same as the
    quick start's example), not each earlier save's copy, nor the times its cells ran; --check names one that does."""
    import nbformat

    from mlsys_grader.core.embed import bundle_from_outputs, find_embedded_bundles

    for lab_id in LABS:
        for track in get_lab(lab_id).tracks:
            notebook, bundle = reference_paths(ROOT, lab_id, track)
            read = nbformat.read(notebook, as_version=4)
            assert len(find_embedded_bundles(read)) == 1, notebook
            assert json.loads(bundle_from_outputs(read).text) == json.loads(bundle.read_text(encoding="utf-8"))
            assert not [cell for cell in read.cells if "execution" in cell.get("metadata", {})], notebook
    lab_id = LABS[0]
    track = get_lab(lab_id).tracks[0]
    _copy(tmp_path, lab_id)
    notebook = reference_paths(tmp_path, lab_id, track)[0]
    read = nbformat.read(notebook, as_version=4)
    read.cells[-1].metadata["execution"] = {"iopub.execute_input": "2026-12-07T10:00:00Z"}
    nbformat.write(read, notebook)
    assert cli.main(["generate", "references", "--check", "--lab", lab_id, "--track", track, "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (f"{notebook}: it keeps earlier saves of its bundle or execution times; "
                                       "run `mlsys-grader generate references`\n")


def test_a_reference_whose_answers_were_edited_is_named(tmp_path, capsys):
    lab_id = LABS[0]
    track = get_lab(lab_id).tracks[0]
    _copy(tmp_path, lab_id)
    notebook, bundle = reference_paths(tmp_path, lab_id, track)
    data = json.loads(bundle.read_text(encoding="utf-8"))
    data["synthesis"]["rationale"] += " Edited by hand."
    bundle.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["generate", "references", "--check", "--lab", lab_id, "--track", track, "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (f"{bundle}: its synthesis are not the reference answers; "
                                       "run `mlsys-grader generate references`\n")
    text = notebook.read_text(encoding="utf-8")
    notebook.write_text(text.replace('TRACK = \\"', 'TRACK  = \\"', 1), encoding="utf-8")
    assert cli.main(["generate", "references", "--check", "--lab", lab_id, "--track", track, "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith(f"{notebook}: its cells are not the student notebook filled in")
