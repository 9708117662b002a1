"""Shared fixtures: real bundles made by ``solve`` with the pinned mlsysim.

Nothing here imports mlsysim at collection: ``solve`` loads the evaluators on first use,
so ``pytest --collect-only`` and a ``-k`` selection stay quick.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import hypothesis
import pytest

from mlsys_grader import solve
from mlsys_grader.api import default_replay
from mlsys_grader.core.jsonio import sha256_of
from mlsys_grader.core.seal import legacy_fingerprint
from mlsys_grader.labs import lab_ids

# NOTE: a loaded machine (two colleagues' test runs on two cores) must not fail a property test by the clock: no
# example has a deadline and slow data generation is no failure, in every property test unless it says otherwise.
hypothesis.settings.register_profile("suite", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("suite")

QUICK_LOOP_SHARE = 4
"""In the quick loop a property test draws a quarter of its examples (:func:`examples`); the full run draws them all."""
_quick_loop = False


def pytest_configure(config: pytest.Config) -> None:
    """The quick loop is a run whose marker expression leaves the slow tests out (``pytest -m "not slow"``)."""
    global _quick_loop
    _quick_loop = "not slow" in (config.getoption("markexpr") or "")


def examples(full: int) -> int:
    """A property test's ``max_examples`` (every property test names its count through this): ``full`` in the full run
    (CI), a quarter of it (at least 10) in the quick loop, which a developer reruns many times an hour."""
    return max(10, full // QUICK_LOOP_SHARE) if _quick_loop else full


FIXTURES = Path(__file__).parent / "fixtures"
SCENARIOS = FIXTURES / "scenarios"
LABS = lab_ids()
"""Every registered lab (shipped, installed entry points): the tests that hold for any lab run on each."""
TRACKS = ("tinyml", "mobile", "edge", "cloud")
LAB_TRACKS = tuple(itertools.product(LABS, TRACKS))


@cache
def _solved_json(lab: str, track: str, seed: int | None) -> str:
    return solve(lab, track, seed).to_json()


def solved(lab: str, track: str, seed: int | None = None) -> dict:
    """A fresh, mutable JSON copy of a full-marks bundle."""
    return json.loads(_solved_json(lab, track, seed))


def reseal(data: dict) -> dict:
    """Recompute the content hash, as a tamperer who knows the format would (on a copy: a JSON round trip, which is
    what a tamperer's file holds and a tenth of a deep copy's cost)."""
    data = json.loads(json.dumps(data))
    data.pop("content_hash", None)
    data["content_hash"] = sha256_of(data)
    return data


def as_schema_2(data: dict) -> dict:
    """A schema-3 bundle as schema 2 wrote the same session: each record sealed with that schema's fingerprint of lab,
    track, part and inputs, ``result_role`` empty where the part has no decision, sealed over that content."""
    data = copy.deepcopy(data)
    data["schema_version"] = 2
    for part, record in data["evidence"].items():
        record["upstream_fingerprint"] = legacy_fingerprint(data["lab"], record["track"], part, record["inputs"])
        if record["decision"] is None:
            record["result_role"] = None
    return reseal(data)


def to_bytes(data: dict) -> bytes:
    return json.dumps(data).encode()


QUICK_LABS_VARIABLE = "MLSYS_GRADER_QUICK_LABS"
QUICK_LABS_DEFAULT = ("lab07", "lab02")
"""The labs a lab-parametrised test runs on in the quick loop (``pytest -m "not slow"``): Lab 07, the lab most
hand-written tests use, and Lab 02, the contract's sparest (parts with only decision controls, arms with no inputs, a
seal across parts).  Lab 11's and Lab 08's own tests (``tests/labs/``) and every test written for one of them stay in
the quick loop, and the plain ``pytest`` run (CI) runs every lab everywhere."""


def executed_tracks(lab_id: str, count: int) -> tuple[str, ...]:
    """The ``count`` tracks a lab's notebook is executed on in a kernel (each execution takes seconds), rotated by the
    lab's place among the registered labs, so the labs together execute every track.

    One notebook serves every track: the track is one assignment in its first cell, and what differs by track is the
    data flowing through the same session code, which every track runs in process
    (``test_notebook_api.py::test_a_complete_session_earns_full_marks`` and the lab-parametrised tests).  A kernel run
    adds what no track changes (nbclient, the kernel, display and export), so a run per track would add cost per lab,
    not coverage."""
    start = (LABS.index(lab_id) * count) % len(TRACKS)
    return tuple(TRACKS[(start + offset) % len(TRACKS)] for offset in range(count))


def auditable(lab_id: str) -> bool:
    """Whether the book's ``audit_ledger`` (mlsysim 0.3.0) can replay ``lab_id``'s ledger, as its declaration says
    (not Labs 04, 10, 13: the ledger tests leave those out); a lab written as code is asked."""
    from mlsys_grader.labs import get_lab

    spec = get_lab(lab_id).spec
    return spec is None or spec.book_auditor_replays


def quick_labs() -> frozenset[str]:
    """The quick loop's labs: ``MLSYS_GRADER_QUICK_LABS`` (comma-separated lab ids, or ``all``) when set, so a lab's
    author runs the contract tests on that lab in the quick loop, else :data:`QUICK_LABS_DEFAULT`."""
    wanted = os.environ.get(QUICK_LABS_VARIABLE, "").strip()
    if not wanted:
        return frozenset(QUICK_LABS_DEFAULT)
    if wanted == "all":
        return frozenset(LABS)
    chosen = frozenset(part.strip() for part in wanted.split(",") if part.strip())
    unknown = sorted(chosen - set(LABS))
    if unknown:
        raise pytest.UsageError(f"{QUICK_LABS_VARIABLE} names {', '.join(unknown)}, which no installed lab is "
                                f"(expected lab ids from {', '.join(LABS)}, or 'all')")
    return chosen


def labs_of(item: pytest.Item) -> set[str]:
    """The lab ids among a parametrised test's parameters (a lab id, or a tuple or list holding one)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return set()
    found = set()
    for value in callspec.params.values():
        values = value if isinstance(value, tuple | list) else (value,)
        found |= {v for v in values if isinstance(v, str) and v in LABS}
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test parametrised over labs runs in the quick loop on :func:`quick_labs` only: its cases of the other labs
    are marked ``slow``.  A test whose cases already choose their representatives (:func:`sweep`) keeps those of the
    quick loop's labs, or all of them when none is of those labs (so every test keeps a case in the quick loop)."""
    quick = quick_labs()
    tests: dict[tuple[str, str], list[pytest.Function]] = {}
    for item in items:
        if isinstance(item, pytest.Function) and item.get_closest_marker("slow") is None and labs_of(item):
            tests.setdefault((item.module.__name__ if item.module else "", item.originalname), []).append(item)
    for cases in tests.values():
        others = [item for item in cases if not labs_of(item) & quick]
        if len(others) < len(cases):  # a case of a quick-loop lab stays: the others leave the quick loop
            for item in others:
                item.add_marker(pytest.mark.slow)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--write-unit-scales", action="store_true",
                     help="write mlsys_grader/core/unit_scales.json anew from pint (tests/test_unit_scales.py)")
    parser.addoption("--write-rationale-spans", action="store_true",
                     help="write tests/fixtures/rationale_spans.json anew from the reader (tests/test_rationale_spans.py)")


@pytest.fixture
def solved_bundle():
    return solved


TEST_CACHE_VARIABLE = "MLSYS_GRADER_TEST_CACHE"
"""A folder kept across runs for what the suite builds once per content (the replay tables, the wheels): CI sets it
outside its fresh clone, so a run on the same machine reuses what an earlier run built.  Unset: pytest's cache folder
(``.pytest_cache``, kept across a developer's runs).  Everything there is keyed by content and verified before use."""


def kept_folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder ``name`` of the kept cache (:data:`TEST_CACHE_VARIABLE`, else pytest's cache; a temporary folder under
    ``-p no:cacheprovider``)."""
    kept = os.environ.get(TEST_CACHE_VARIABLE, "").strip()
    if kept:
        folder = Path(kept).expanduser() / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    cache = getattr(request.config, "cache", None)
    return Path(cache.mkdir(name)) if cache is not None else tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def built_wheel(request, tmp_path_factory):
    """``built_wheel(spec)``: this tree's wheel of build ``spec`` (:mod:`mlsys_grader.staff._packaging`), built once per
    content and kept across sessions (:func:`kept_folder`).

    The key digests what a build copies (``pyproject.toml``, the package's files but bytecode, the build's name and
    what it leaves out), so any edit builds anew and an unchanged tree reuses the wheel (a build takes 14-17 s)."""
    import hashlib

    from mlsys_grader.replay._table import building
    from mlsys_grader.staff._packaging import FULL, SOURCE_FILES, build_wheel

    root = Path(__file__).resolve().parents[1]
    base = kept_folder(request, tmp_path_factory, "wheels")

    def build(spec=FULL) -> Path:
        kind = hashlib.sha256(repr((spec.name, spec.leave_out, spec.dependencies)).encode()).hexdigest()[:12]
        digest = hashlib.sha256(kind.encode())
        files = [root / name for name in SOURCE_FILES if (root / name).is_file()]
        files += sorted(path for path in (root / "mlsys_grader").rglob("*")
                        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc")
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        where = base / f"{kind}-{digest.hexdigest()[:24]}"
        with building(base / kind):  # pytest-xdist's workers share the folder: one builds, the others wait
            found = sorted(where.glob(spec.wheel_glob)) if where.is_dir() else []
            if len(found) == 1:
                return found[0]
            for stale in base.glob(f"{kind}-*"):  # this build of an earlier tree: never asked for again
                shutil.rmtree(stale, ignore_errors=True)
            return build_wheel(root, where, spec)

    return build


@pytest.fixture(scope="session", autouse=True)
def _user_cache(request, tmp_path_factory) -> Iterator[Path]:
    """The user cache directory every ``grade`` and ``warm`` of the session uses by default (``XDG_CACHE_HOME``, which
    platformdirs reads, for this process and the commands it starts): the kept folder (:func:`kept_folder`), so the tests never
    write to the real user's cache and the replay tables there are built once per content (see
    :func:`replay_tables_dir`), not once per session."""
    root = kept_folder(request, tmp_path_factory, "user-cache")
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(root)
    yield root
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture(scope="session")
def replay_tables_dir(_user_cache) -> Path:
    """Every registered lab's verified replay table, in the session's user cache directory (the one ``grade`` uses by
    default), kept across sessions (:func:`kept_folder`).

    A table file is named by its key (the lab package's source and rubric digested, the shared planning modules, the mlsysim
    version) and verified by its payload digest, so an edit to a lab or to the contract builds a new one and a stale
    or damaged file is rebuilt (:func:`mlsys_grader.replay.ensure_tables`); an unchanged tree reuses the files
    (building both labs' takes about 14 s).  Tests must not write into this folder: one that damages or builds tables
    uses its own ``tmp_path``.
    """
    from mlsys_grader.labs import lab_modules
    from mlsys_grader.replay import ensure_tables, table_dir
    from mlsys_grader.replay._table import key_for

    where = table_dir()
    ensure_tables(where)
    current = {key_for(lab_id, module).filename() for lab_id, module in lab_modules().items()}
    for stale in where.glob("*.replay"):  # an earlier tree's tables: never asked for again
        if stale.name not in current:
            stale.unlink()
    return where


def sweep(cases: Iterable[Any], fast: Sequence[Any]) -> list[Any]:
    """``cases`` as parameters, every one not in ``fast`` marked ``slow``.

    An exhaustive sweep still runs in full under ``pytest`` (and CI), while
    ``pytest -m "not slow"`` keeps the representatives in ``fast``.  A tuple case
    becomes that many arguments.
    """
    def param(case: Any, *marks: pytest.MarkDecorator) -> Any:
        return pytest.param(*case, marks=marks) if isinstance(case, tuple) else pytest.param(case, marks=marks)

    cases = list(cases)
    missing = [case for case in fast if case not in cases]
    if missing:
        raise ValueError(f"representatives {missing} are not among the cases {cases}")
    return [param(case) if case in fast else param(case, pytest.mark.slow) for case in cases]


def assert_scenario(name: str, part: str, criterion: str, fragment: str, lost: int | None) -> None:
    """The scenario fixture ``name`` (``tests/fixtures/scenarios``, made by ``tests/make_fixtures.py``) produces
    a ``criterion`` finding on ``part`` whose message holds ``fragment``, every message a sentence, and loses
    ``lost`` points (None: not pinned)."""
    from mlsys_grader import grade_file

    report = grade_file(SCENARIOS / f"{name}.json")
    matching = [f for f in report.findings if f.part == part and f.criterion == criterion]
    assert matching, [(f.part, f.criterion, f.message) for f in report.findings]
    assert any(fragment in f.message for f in matching), [f.message for f in matching]
    assert all(f.message.endswith((".", ")")) for f in report.findings)
    if lost is not None:
        assert report.score == report.max_score - lost, [(f.part, f.message) for f in report.findings]


# -- a part's settings and the plans the notebook builds for them ---------------------------------------------
def grid(lab, part: str) -> list[dict]:
    """Every combination of the part's non-decision controls (their ``Control.values()``)."""
    controls = [control for control in lab.parts[part].controls if not control.decision]
    return [dict(zip((c.name for c in controls), values, strict=True)) for values in itertools.product(*(c.values() for c in controls))]


def plan_for(lab_id: str, track: str, part: str, controls: dict, upstream_settings: dict | None = None):
    """The plan the notebook builds for ``controls`` (decisions completed as the lab's rules accept);
    ``upstream_settings`` maps each part this one builds on to that part's controls."""
    from mlsys_grader.labs import get_lab

    lab = get_lab(lab_id)
    controls = {**{c.name: None for c in lab.parts[part].controls if c.decision}, **controls}
    controls = lab.complete_decision(default_replay(), track, part, controls, None)
    upstream = {dep: lab.plan(default_replay(), track, dep, setting, {}).result for dep, setting in (upstream_settings or {}).items()}
    return lab.plan(default_replay(), track, part, controls, upstream)


def shown(lab_id: str, track: str, part: str, plan):
    """(view, accepted set): the view is exactly what ``lab.run`` renders."""
    from mlsys_grader.labs import get_lab
    from mlsys_grader.student._views import VIEWS

    return VIEWS[(lab_id, part)](plan, track), get_lab(lab_id).accepted_predictions(track, part, plan)


def assert_shown_verdict_is_accepted(lab_id: str, track: str, part: str, plan, where: str) -> None:
    from mlsys_grader.labs import get_lab

    lab = get_lab(lab_id)
    view, accepted = shown(lab_id, track, part, plan)
    label = lab.parts[part].predictions[view.verdict]
    assert view.verdict == lab.displayed_prediction(track, part, plan), where
    assert view.observation.startswith(label), f"{where}: {view.observation!r} does not open with {label!r}"
    assert view.verdict in accepted, f"{where}: shows {label!r} but the grader accepts {sorted(accepted)}"


def every_setting(lab_id: str):
    """(part, controls, upstream settings or None) for every allowed setting of every part of the lab.

    A part that builds on others (Lab 11 D on part C) runs on top of every setting of each.
    """
    from mlsys_grader.labs import get_lab

    lab = get_lab(lab_id)
    for part in lab.parts:
        dependencies = lab.parts[part].depends_on
        for controls in grid(lab, part):
            if not dependencies:
                yield part, controls, None
                continue
            for settings in itertools.product(*(grid(lab, dep) for dep in dependencies)):
                yield part, controls, dict(zip(dependencies, settings, strict=True))


def reference_answers() -> dict[str, dict[str, dict[str, Any]]]:
    """Lab → track → the lab's hand-written synthesis answers (``Lab.reference_answers``), for every
    registered lab and track that has them (a fresh copy each call)."""
    from mlsys_grader.labs import get_lab

    found: dict[str, dict[str, dict[str, Any]]] = {}
    for lab_id in LABS:
        lab = get_lab(lab_id)
        for track in lab.tracks:
            try:
                found.setdefault(lab_id, {})[track] = dict(lab.reference_answers(track))
            except LookupError:
                continue
    return {lab_id: tracks for lab_id, tracks in found.items() if tracks}



@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course term graded into a gradebook (tests/test_review.py's: Eve's Lab 07 rationale leaves the reader unsure)."""
    from test_course_term import options
    from test_review import build_review_term

    from mlsys_grader.course import grade_paths

    root = tmp_path_factory.mktemp("review")
    paths = build_review_term(root)
    db = root / "gradebook.sqlite"
    grade_paths([paths["down"]], options(root, db))
    return root, paths, db


@pytest.fixture
def term(graded, tmp_path):
    """A private copy of the graded term's gradebook (the folder is shared, read only)."""
    import shutil

    root, paths, db = graded
    mine = tmp_path / "gradebook.sqlite"
    shutil.copyfile(db, mine)
    return root, paths, mine
