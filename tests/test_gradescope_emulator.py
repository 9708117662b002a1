"""Uploads graded by the real autograder zip in the Gradescope emulator (``../shared/gradescope-emulator``).

Each upload runs in a fresh container of the image the zip's own ``setup.sh`` built: the
zip's ``run_autograder`` as root, Gradescope's layout, a 10-minute kill, and what Gradescope
records read 1 s after the run ends (a process left behind could still write then).  Images
are built once per session (the emulator caches them by zip content), and the runs are few:
the reference at Gradescope's 0.5 CPU / 768 MB, two notebooks without their bundle, and every
hostile notebook with the notebook re-run on (there, at 2 CPUs to keep CI short).

These tests need ``shared/`` beside the repository and root (see ``needs.py``): a newcomer's
clone skips them with the reason, and CI, which has both, sets ``MLSYS_GRADER_REQUIRE`` so a
missing emulator fails there instead.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from pathlib import Path

import emulator
import needs
import pytest
from test_autograder import (
    HOSTILE,
    HOSTILE_TRACK,
    PART_TITLES,
    _MarkerPayload,
    _reference,
    assert_reports_record,
    export_zip,
    make_hostile,
)

from mlsys_grader import grade_bundle

# One pytest-xdist worker takes the module: its images (the zips built, a base image of a minute on a new machine) are
# built once, and the emulator's runs, each limited to half a core, leave the other worker the rest of the suite.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("emulator")]
LAB = "lab07"
RERUN = {"rerun_notebook": True, "notebook_budget_s": 90, "cell_timeout_s": 20}


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[str, Path]:
    """The lab's default image and one with the notebook re-run on, built from the zip ``mlsys-grader autograder`` made
    (and, as ``zip``, the default image's zip)."""
    needs.shared_path("gradescope-emulator", "gradescope-emulator")
    needs.root("the Gradescope emulator uses namespaces, overlayfs and chroot")
    try:
        built = emulator.autograder_zips()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    out = tmp_path_factory.mktemp("emulator-zips")
    default, relaxed = emulator.for_emulator(built.zips[LAB], out / f"{LAB}-autograder.zip")
    print(f"pins relaxed for the emulator's Python: {relaxed or 'none'}")
    rerun = emulator.zip_with_config(default, out / f"{LAB}-rerun.zip", **RERUN)
    return {"default": emulator.build(default), "rerun": emulator.build(rerun), "zip": default}


def _upload(folder: Path, notebook: Path, bundle: str | None, extra: dict[str, bytes] | None = None, lab: str = LAB) -> Path:
    folder.mkdir()
    zipfile.ZipFile(io.BytesIO(export_zip(notebook, bundle, lab, extra))).extractall(folder)
    return folder


def _valid(run: emulator.Run) -> None:
    assert run.rc == 0 and not run.timed_out and run.results is not None, run.line
    ok, report = emulator.validate(run.folder / "results" / "results.json")
    assert ok, report


def _log(run: emulator.Run) -> list[str]:
    return [line.split("] ", 1)[1] for line in run.stdout.splitlines() if line.startswith("[")]


def test_reference_is_graded_without_running_the_notebook_at_gradescopes_limits(images, tmp_path):
    notebook, bundle = _reference(LAB, HOSTILE_TRACK)
    run = emulator.run(images["default"], _upload(tmp_path / "up", notebook, bundle), cpu=0.5, mem="768M", name="ref")
    print(f"reference at 0.5 CPU / 768 MB: {run.line}")
    _valid(run)
    assert_reports_record(run.results, bundle)
    mlsys = run.results["extra_data"]["mlsys_grader"]
    assert mlsys["flags"] == sorted(grade_bundle(bundle.encode()).flags)
    assert "notebook_run" not in mlsys and mlsys["otter_tests"]["error"] is None
    log = _log(run)
    # setup.sh built the lab's replay table: the record is a lookup, graded without importing mlsysim
    assert log[0].startswith("replay: verified table in /root/miniforge3/envs/") and "evaluations" in log[0], log
    assert log[1].startswith("score of record ") and log[1].endswith("results.json written"), log
    assert log[2].startswith("imported so far: mlsysim no, pint no"), log
    assert not any("sandbox" in line for line in log)
    emulator.remove_run(run)


@pytest.mark.parametrize("lab, track", [("lab02", "edge")])
def test_another_labs_reference_is_graded_by_its_own_zip_at_gradescopes_limits(lab, track, tmp_path):
    """Lab 02 (four parts, part D built on part A): its zip's image answers its reference with the score of record, from
    its own replay table."""
    needs.shared_path("gradescope-emulator", "gradescope-emulator")
    needs.root("the Gradescope emulator uses namespaces, overlayfs and chroot")
    try:
        built = emulator.autograder_zips()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    default, _ = emulator.for_emulator(built.zips[lab], tmp_path / f"{lab}-autograder.zip")
    notebook, bundle = _reference(lab, track)
    run = emulator.run(emulator.build(default), _upload(tmp_path / "up", notebook, bundle, lab=lab), cpu=0.5, mem="768M",
                       name=f"ref-{lab}")
    print(f"{lab} reference at 0.5 CPU / 768 MB: {run.line}")
    _valid(run)
    assert_reports_record(run.results, bundle)
    assert run.results["score"] == grade_bundle(bundle.encode()).score == 100.0
    assert _log(run)[0].startswith("replay: verified table"), _log(run)
    emulator.remove_run(run)


def _with_setup_line(zip_path: Path, target: Path, line: str) -> Path:
    """A copy of an autograder zip whose ``setup.sh`` ends with ``line``."""
    with zipfile.ZipFile(zip_path) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info.filename)
            out.writestr(info, data.rstrip(b"\n") + b"\n" + line.encode() + b"\n" if info.filename == "setup.sh" else data)
    return target


def test_the_images_replay_table_changes_nothing_in_what_gradescope_reads(images, tmp_path):
    """The reference graded with the image's table and with the table folder made untrusted (live replay): the same
    results.json, byte for byte; the staff log says which replay each used."""
    notebook, bundle = _reference(LAB, HOSTILE_TRACK)
    by_table = emulator.run(images["default"], _upload(tmp_path / "table", notebook, bundle), cpu=2, name="table")
    live_zip = _with_setup_line(images["zip"], tmp_path / "live.zip",  # after the image check built the tables
                                "chmod 777 /root/miniforge3/envs/*/share/mlsys-grader/replay")
    live = emulator.run(emulator.build(live_zip), _upload(tmp_path / "live", notebook, bundle), cpu=2, name="live")
    for run in (by_table, live):
        _valid(run)
    assert _log(by_table)[0].startswith("replay: verified table")
    assert _log(live)[0].startswith("replay: live — the table is not used: ") and "writable by others" in _log(live)[0]
    assert "imported so far: mlsysim yes" in _log(live)[2]
    table_bytes = (by_table.folder / "results" / "results.json").read_bytes()
    assert table_bytes == (live.folder / "results" / "results.json").read_bytes()
    emulator.remove_run(by_table)
    emulator.remove_run(live)


def _one_line_per_part(public: str) -> None:
    lines = public.splitlines()
    parts = [line for line in lines if line.split(":")[0] in PART_TITLES.values()]
    assert [line.split(":")[0] for line in parts] == list(PART_TITLES.values())
    sentences = [s for line in lines for s in re.split(r"(?<=\.) ", line.split(" — ", 1)[-1]) if len(s) > 25]
    assert len(sentences) == len(set(sentences)), public


def test_unanswered_notebook_is_run_in_the_sandbox_and_its_feedback_is_one_line_per_part(images, tmp_path):
    student = emulator.ROOT / "assignments" / f"{LAB}.ipynb"
    run = emulator.run(images["default"], _upload(tmp_path / "up", student, None), cpu=2, name="unanswered")
    _valid(run)
    mlsys = run.results["extra_data"]["mlsys_grader"]
    assert mlsys["notebook_run"]["mode"] == "regenerate" and mlsys["notebook_run"]["started"], mlsys["notebook_run"]
    assert mlsys["notebook_run"]["outlived"] == []
    assert run.results["score"] <= 10 and sum(t.get("max_score", 0) for t in run.results["tests"]) == 100
    public = run.results["tests"][0]["output"]
    _one_line_per_part(public)
    if mlsys["track"] is not None:  # the notebook saved a bundle: its track is named
        assert f"track {mlsys['track']}:" in run.results["output"] and "track none" not in public
        assert public.startswith("Your upload had no saved bundle, so the autograder ran your notebook")
    else:
        assert public.startswith("Your upload has no saved bundle, and running your notebook saved none either")
    log = _log(run)
    assert log.index(next(line for line in log if line.endswith("results.json written"))) < log.index(
        next(line for line in log if line.startswith("running the notebook in the sandbox")))
    emulator.remove_run(run)


def test_complete_notebook_without_its_bundle_gets_the_score_of_its_work(images, tmp_path):
    notebook, bundle = _reference(LAB, HOSTILE_TRACK)
    cleared = json.loads(notebook.read_text())
    for cell in cleared["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / f"{LAB}.ipynb").write_text(json.dumps(cleared))
    run = emulator.run(images["default"], tmp_path / "up", cpu=2, name="cleared")
    _valid(run)
    expected = grade_bundle(bundle.encode())
    assert run.results["score"] == expected.score, run.results["extra_data"]
    mlsys = run.results["extra_data"]["mlsys_grader"]
    assert mlsys["source"] == "the bundle your notebook saved when the autograder ran it"
    assert not {"no_bundle", "kernel_disagrees"} & set(mlsys["flags"]), mlsys["flags"]
    emulator.remove_run(run)


RERUN_FLAGS = {
    "monkeypatch-grader-and-edit-numbers": {"integrity", "kernel_disagrees"},
    "replace-otter-test-runner": {"kernel_disagrees"},
    "forge-bundle-and-results": {"kernel_disagrees", "tamper_results"},
    "pickle-payload-for-runner": {"kernel_results_rejected"},
    "kill-kernel-mid-run": {"kernel_results_rejected", "notebook_incomplete"},
    "never-finishes": {"notebook_incomplete"},
    "detached-process-rewrites-results": {"detached_process", "tamper_results"},
    "edit-autograder-source": {"tamper_source"},
    "edit-run-autograder": {"tamper_run_autograder"},
    "edit-grader-install": {"tamper_grader_install"},
    "signal-grader": {"signal_grader"},
}


def _untouched(run: emulator.Run) -> list[str]:
    """Files of the grader the run changed in the container (its writable layer holds every changed file)."""
    changed = []
    for path in ("/autograder/run_autograder", "/autograder/source", "/root/miniforge3"):
        target = run.upper(path)
        if target.is_file():
            changed.append(path)
        elif target.is_dir():
            changed += [str(p) for p in target.rglob("*") if p.is_file() and p.suffix != ".pyc"]
    return changed


@pytest.mark.parametrize("name", sorted(RERUN_FLAGS))
def test_hostile_notebook_rerun_in_the_sandbox_ends_with_the_score_of_record_and_a_flag(name, images, tmp_path):
    assert set(RERUN_FLAGS) == set(make_hostile.ATTACKS)
    _, reference_bundle = _reference(LAB, HOSTILE_TRACK)
    bundle = make_hostile.submitted_bundle(name, reference_bundle)
    extra = {".OTTER_LOG": pickle.dumps(_MarkerPayload("/tmp/otter-log-payload-ran"))} \
        if name == "pickle-payload-for-runner" else None
    run = emulator.run(images["rerun"], _upload(tmp_path / "up", HOSTILE / f"{name}.ipynb", bundle, extra), cpu=2,
                       name=f"hostile-{name[:20]}")
    print(f"{name}: {run.line}")
    _valid(run)
    assert_reports_record(run.results, bundle)  # what Gradescope read, 1 s after the run, is the score of record
    assert run.results["score"] < 100
    mlsys = run.results["extra_data"]["mlsys_grader"]
    assert RERUN_FLAGS[name] <= set(mlsys["flags"]), (mlsys["flags"], mlsys["notes"])
    assert mlsys["notebook_run"]["started"] and mlsys["notebook_run"]["mode"] == "rerun"
    assert _untouched(run) == []
    for marker in ("otter-log-payload-ran", "mlsys-hostile-pickle-ran"):  # the container's /tmp: no payload ran
        assert not (run.folder / "tmp" / marker).exists(), marker
    staff = next(t for t in run.results["tests"] if t["name"] == "Staff review")
    assert staff["visibility"] == "hidden"
    log = _log(run)
    assert log[1].endswith("results.json written") and "none left" in next(line for line in log if "notebook run ended" in line)
    emulator.remove_run(run)


def test_before_publication_an_edited_upload_shows_gradescope_what_an_honest_one_shows(images, tmp_path):
    """results.json's top level is after_published and only the public checks are visible: an edited number that replay
    catches changes nothing a student reads before grades are published (and the validator's sums still hold)."""
    from conftest import reseal

    notebook, bundle = _reference(LAB, HOSTILE_TRACK)
    data = json.loads(bundle)
    record = data["evidence"]["B"]["result"]
    key = next(k for k, v in record.items() if isinstance(v, float))
    record[key] = round(record[key] * 0.5, 6)
    shown = []
    for name, text in (("honest", bundle), ("edited", json.dumps(reseal(data)))):
        run = emulator.run(images["default"], _upload(tmp_path / name, notebook, text), name=f"visible-{name}")
        _valid(run)
        results = run.results
        assert results["visibility"] == "after_published" and "/ 100" not in results["output"]
        shown.append([t for t in results["tests"] if t.get("visibility", results["visibility"]) == "visible"])
        if name == "edited":
            assert "integrity" in results["extra_data"]["mlsys_grader"]["flags"], "replay caught the edit"
        emulator.remove_run(run)
    assert shown[0] == shown[1] and [t["name"] for t in shown[0]] == ["Public checks"]


@pytest.mark.parametrize("lab", [lab for lab in emulator.LABS if lab != LAB])
def test_each_other_labs_reference_is_graded_at_gradescopes_limits(lab, tmp_path):
    """Every other lab's zip (Lab 08's, Lab 11's) answers its reference as Gradescope would run it: the image its
    ``setup.sh`` builds, the upload at 0.5 CPU / 768 MB, the score of record of its bundle."""
    needs.shared_path("gradescope-emulator", "gradescope-emulator")
    needs.root("the Gradescope emulator uses namespaces, overlayfs and chroot")
    try:
        built = emulator.autograder_zips()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    default, _ = emulator.for_emulator(built.zips[lab], tmp_path / f"{lab}-autograder.zip")
    image = emulator.build(default)
    notebook, bundle = _reference(lab, HOSTILE_TRACK)
    folder = tmp_path / "up"
    folder.mkdir()
    zipfile.ZipFile(io.BytesIO(export_zip(notebook, bundle, lab))).extractall(folder)
    run = emulator.run(image, folder, cpu=0.5, mem="768M", name=f"ref-{lab}")
    print(f"{lab} reference at 0.5 CPU / 768 MB: {run.line}")
    _valid(run)
    assert_reports_record(run.results, bundle)
    assert run.results["extra_data"]["mlsys_grader"]["flags"] == sorted(grade_bundle(bundle.encode()).flags)
    emulator.remove_run(run)
