"""The replay service (``replay/``): grading keeps no process state in the core and none in a lab.

What a grade depends on is in its arguments: the memoised evaluations and plans, the tables and the memos the checks
read through all belong to the :class:`Replay` the caller hands in, so grading leaves every module-level container of
``mlsys_grader.core`` and every :class:`Lab` as it found them, and two replays in one process never share a number.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from conftest import reseal, solved

import mlsys_grader.core
from mlsys_grader import grade_bundle, grade_file, read_submission
from mlsys_grader.core.replayer import Replayer
from mlsys_grader.labs import get_lab, lab_ids
from mlsys_grader.replay import Replay

ALLOWED: set[str] = set()
"""``module.name`` of the module-level containers of the core that are constants filled once at import (none so far:
a container listed here must be filled before any grade and never after)."""


def _core_modules() -> list[Any]:
    return [importlib.import_module(info.name)
            for info in pkgutil.walk_packages(mlsys_grader.core.__path__, prefix="mlsys_grader.core.")]


def _containers() -> dict[str, tuple[int, int]]:
    """``module.name`` → (identity, length) of every dict, list and set at module level in the core, and of those an
    object of the package's own at module level holds (a memo object's table is module state too)."""
    found = {}
    for module in _core_modules():
        for name, value in vars(module).items():
            where = f"{module.__name__}.{name}"
            held = [(where, value)]
            if type(value).__module__.startswith("mlsys_grader.") and hasattr(value, "__dict__") and not isinstance(value, type):
                held += [(f"{where}.{attribute}", item) for attribute, item in vars(value).items()]
            found.update({path: (id(item), len(item)) for path, item in held
                          if type(item) in (dict, list, set) and path not in ALLOWED})
    return found


def _lab_state() -> dict[str, dict[str, tuple[int, Any]]]:
    """Per registered lab: each attribute's identity and, for a container, its length."""
    return {lab_id: {name: (id(value), len(value) if isinstance(value, dict | list | set) else None)
                     for name, value in vars(get_lab(lab_id)).items()} for lab_id in lab_ids()}


def test_grading_changes_no_module_level_container_of_the_core_and_no_lab():
    for lab_id in ("lab07", "lab08"):  # every module imported, every lazy constant made
        grade_bundle(solved(lab_id, "mobile", 2), replay=Replay())
    containers, labs = _containers(), _lab_state()
    assert len(containers) > 20  # the snapshot sees the core's module-level tables (a walk that finds none tests nothing)
    replay = Replay()
    edited = solved("lab08", "edge", 3)
    del edited["evidence"]["C"]  # a grade that scores other items than the rest
    reports = [grade_bundle(solved(lab_id, track, seed), replay=replay)
               for lab_id, track, seed in (("lab07", "cloud", 5), ("lab11", "edge", 6), ("lab11", "tinyml", 7))]
    reports.append(grade_bundle(reseal(edited), replay=replay))
    scored = {tuple((item.item, item.points) for part in report.parts.values() for item in part.items) for report in reports}
    assert all(report.score > 0 for report in reports) and len(scored) == 2
    assert _containers() == containers
    assert _lab_state() == labs
    for lab_id in lab_ids():
        assert not {"replay_table", "_cache", "_plans", "_recorded_quantities", "_rationale_readers",
                    "_rationale_evidence"} & set(vars(get_lab(lab_id)))


def test_a_replay_is_what_grading_asks_for():
    assert isinstance(Replay(), Replayer)


def test_two_replays_share_no_evaluation():
    """Each replay memoises its own arms: an arm one replay returns is never another's object."""
    lab = get_lab("lab07")
    controls = lab.parts["B"].defaults()
    first, second = Replay(), Replay()
    a, b = first.plan(lab, "cloud", "B", controls, {}), second.plan(lab, "cloud", "B", controls, {})
    assert a == b and a is not b and a.result is not b.result
    assert first.plan(lab, "cloud", "B", controls, {}) is a  # memoised within one replay


def test_a_replay_answers_from_the_table_it_holds_and_keeps_its_memos_bounded():
    """A table arm stands in for mlsysim's (what grading compares with), and the evaluations it keeps are bounded."""
    lab = get_lab("lab07")
    live = Replay()
    plan = live.plan(lab, "cloud", "B", lab.parts["B"].defaults(), {})
    key = mlsys_grader.core.jsonio.canonical_dumps(["cloud", plan.model_key, plan.result["inputs"]])
    edited = {**plan.result, "compiled_total_ms": plan.result["compiled_total_ms"] + 1.0}
    tabled = Replay({lab: {key: edited}}, cache_size=2)
    assert tabled.plan(lab, "cloud", "B", lab.parts["B"].defaults(), {}).result is edited
    for executions in (10, 20, 30, 40):
        tabled.plan(lab, "cloud", "B", {**lab.parts["B"].defaults(), "executions": executions}, {})
    assert len(tabled._arms) == len(tabled._plans) == 2


@pytest.mark.parametrize("lab_id", ["lab07", "lab11"])
def test_grading_through_one_replay_twice_gives_the_same_report(lab_id):
    replay = Replay()
    data = solved(lab_id, "edge", 9)
    assert grade_bundle(data, replay=replay).model_dump_json() == grade_bundle(data, replay=replay).model_dump_json() \
        == grade_bundle(data, replay=Replay()).model_dump_json()


def test_a_marimo_export_is_read_through_the_callers_replay():
    """Reading a marimo export plans the parts its controls are inferred from (Lab 11 D on each part C setting): through
    the replay the caller hands in, so a batch's worker, a Gradescope runner and a student session each read and grade
    on their own replay (a reader given none builds a live one of its own)."""
    path = Path(__file__).parent / "fixtures" / "marimo" / "lab11-edge.json"
    recorded: dict[str, dict[str, Any]] = {}
    read = read_submission(path, replay=Replay(record=recorded))
    assert read.bundle is not None and read.origin == "marimo-json"
    assert recorded, "the reader planned nothing through the replay it was given"
    assert read_submission(path).bundle == read.bundle  # a reader given no replay reads the same, on a live one of its own
    report = grade_file(path, replay=Replay(record=(graded := {})))
    assert report.score == 100 and set(recorded) <= set(graded)


def test_a_replay_prepared_for_some_labs_holds_only_their_tables_and_loads_the_others_when_first_replayed(
        replay_tables_dir):
    """A batch prepares the labs its course file lists; a bundle of another lab still grades, its table loaded then."""
    replay = Replay.from_tables(replay_tables_dir)
    replay.prepare(["lab07"])
    assert set(replay._tables) == {get_lab("lab07")} and replay._tables[get_lab("lab07")]
    report = grade_bundle(solved("lab02", "edge", 3), replay=replay)
    assert report.score > 0 and replay._tables[get_lab("lab02")]  # loaded on first use, from the same folder
    everything = Replay.from_tables(replay_tables_dir)
    everything.prepare()
    assert set(everything._tables) == {get_lab(lab_id) for lab_id in lab_ids()}


def test_a_prepared_replay_holds_every_tracks_rationale_reader_and_grading_reads_with_it(replay_tables_dir):
    """``prepare`` builds each track's reader, patterns compiled and start words found, before a batch forks; the
    grades then read with those readers (no new one is built) and are the grades of an unprepared replay."""
    lab = get_lab("lab07")
    replay = Replay.from_tables(replay_tables_dir)
    replay.prepare(["lab07"])
    kept = dict(replay.memos.readers)
    assert sorted(key for _, key in kept) == sorted(f"lab07:{track}" for track in lab.tracks)
    assert all("starts" in vars(scanner) for reader in kept.values()
               for scanner in (reader.names, reader.decisive, *reader.triggers.values(), *reader.limitations.values())
               if scanner is not None)
    for track in lab.tracks:
        bundle = solved("lab07", track, 3)
        assert grade_bundle(bundle, replay=replay) == grade_bundle(bundle, replay=Replay())
    assert dict(replay.memos.readers) == kept and all(replay.memos.readers[key] is kept[key] for key in kept)
