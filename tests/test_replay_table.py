"""The replay table (``replay/_table.py``): the whole domain evaluated once equals live
replay entry by entry, grading through a :class:`Replay` on it gives byte-identical reports, and a stored table
is used only after it verifies (missing, truncated, tampered or stale files are rebuilt)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LABS, sweep

from mlsys_grader import grade_bundle
from mlsys_grader.errors import GraderError
from mlsys_grader.labs import get_lab, lab_modules
from mlsys_grader.replay import Replay
from mlsys_grader.replay import _table as table

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = sorted([*(ROOT / "examples" / "submissions").glob("*.json"), *(ROOT / "tests" / "fixtures" / "scenarios").glob("*.json"),
                  *(ROOT / "examples" / "submissions").glob("lab*-*.json")])


@pytest.fixture
def cache_dir(replay_tables_dir) -> Path:
    """Both labs' tables (built once per session, read only here)."""
    return replay_tables_dir


def _copied(cache_dir: Path, lab_id: str, into: Path) -> Path:
    """A copy of the lab's stored table in ``into`` (for a test that damages it)."""
    return Path(shutil.copy(_stored(cache_dir, lab_id), into))


def _live(lab_id: str, key: str) -> dict:
    """The arm ``key`` names, evaluated live through mlsysim (the same normalisation as ``evaluate``)."""
    track, model_key, inputs = json.loads(key)
    return json.loads(json.dumps(get_lab(lab_id).evaluate_arm(track, model_key, inputs), sort_keys=True))


DOMAIN_SIZES = {"lab02": 2420, "lab07": 1604, "lab08": 96, "lab11": 1624}
"""Each shipped lab's table, in evaluations: what the sweeps cover (every track, part, setting, and each part C result
for Lab 11 D), pinned so a domain that shrinks is noticed."""


LIVE_SWEEP_LIMIT = 2_500
"""At most this many of a lab's table entries are evaluated live again per run (evenly spread over the sorted keys):
every entry of each shipped lab (the largest, Lab 02, has 2,420), a sample of a lab whose domain is larger (Labs 12, 09,
01: docs/development.md, "Heavy domains").  The table itself is exact either way: built by live evaluation, keyed by
the code it was built from, verified by its digest."""


def sweep_stride(entries: int, requested: int = 1) -> int:
    """The stride that keeps a live sweep of ``entries`` within :data:`LIVE_SWEEP_LIMIT` (at least ``requested``)."""
    return max(requested, -(-entries // LIVE_SWEEP_LIMIT))


def test_a_sweep_is_whole_up_to_the_limit_and_evenly_sampled_beyond_it():
    assert [sweep_stride(n) for n in (96, 2_420, 2_500, 2_501, 9_000)] == [1, 1, 1, 2, 4]
    assert sweep_stride(1_604, 13) == 13
    assert max(DOMAIN_SIZES.values()) <= LIVE_SWEEP_LIMIT  # every shipped lab's table is swept whole in the full run


@pytest.mark.parametrize("lab_id, stride", sweep([*((lab_id, 1) for lab_id in LABS), ("lab07", 13), ("lab11", 37)],
                                                 fast=[("lab07", 13), ("lab08", 1), ("lab11", 37)]))
def test_every_table_entry_equals_live_replay(cache_dir, lab_id, stride):
    """Each lab's table against live evaluation, every entry in the full run (a sample beyond :data:`LIVE_SWEEP_LIMIT`):
    the session's table may have been built by an earlier run (kept by content key), and this proves it still answers
    as mlsysim does."""
    lab = get_lab(lab_id)
    entries = table.load(lab, cache_dir, rebuild=False)
    if lab_id in DOMAIN_SIZES:
        assert len(entries) == DOMAIN_SIZES[lab_id]
    assert {json.loads(key)[0] for key in entries} == set(lab.tracks)
    for key in sorted(entries)[::sweep_stride(len(entries), stride)]:
        assert entries[key] == _live(lab_id, key), key


def test_an_edit_to_a_shared_planning_module_changes_every_labs_table_key(monkeypatch):
    """A table answers for the code it was built from: an edit to a module every plan goes through (the replay) makes
    a new key for every lab, as an edit to one lab's package does for that lab alone."""
    import importlib.util

    before = {lab_id: table.key_for(lab_id, module) for lab_id, module in lab_modules().items()}
    original = Path.read_bytes

    def edited(target: Path):
        return lambda self: original(self) + (b"\n# edited\n" if self == target else b"")

    for module in ("mlsys_grader.labs.declared", "mlsys_grader.labs.spec", "mlsys_grader.replay._replay"):
        shared = Path(importlib.util.find_spec(module).origin)
        monkeypatch.setattr(Path, "read_bytes", edited(shared))
        after = {lab_id: table.key_for(lab_id, module) for lab_id, module in lab_modules().items()}
        assert all(after[lab_id].filename() != before[lab_id].filename() for lab_id in before), (module, before, after)
    own = Path(importlib.util.find_spec("mlsys_grader.labs.lab07.judge").origin)
    monkeypatch.setattr(Path, "read_bytes", edited(own))
    changed = {lab_id for lab_id, module in lab_modules().items() if table.key_for(lab_id, module) != before[lab_id]}
    assert changed == {"lab07"}


def _report(path: Path, replay: Replay) -> str:
    try:
        return grade_bundle(path.read_bytes(), replay=replay).model_dump_json()
    except GraderError as exc:
        return f"{type(exc).__name__}: {exc}"


def test_grades_through_the_table_are_byte_identical_to_live_replay(cache_dir):
    assert len(BUNDLES) >= 40
    live = {path.name: _report(path, Replay()) for path in BUNDLES}
    through_tables = Replay.from_tables(cache_dir)
    looked_up = {path.name: _report(path, through_tables) for path in BUNDLES}
    assert all(through_tables.table(get_lab(lab_id)) is not None for lab_id in LABS)
    assert looked_up == live
    assert sum('"score"' in text for text in live.values()) >= 30  # most of them really are graded


def test_grading_reads_its_arms_from_the_table(cache_dir, solved_bundle):
    """A table arm differing from mlsysim's shows as a replay mismatch: the lookup is what grading compares with
    (which is why a stored table is used only after its digest verifies)."""
    lab = get_lab("lab07")
    bundle = solved_bundle("lab07", "cloud", 1)
    arm = bundle["evidence"]["B"]["result"]
    key = table.canonical_dumps(["cloud", bundle["evidence"]["B"]["model_key"], arm["inputs"]])
    entries = table.load(lab, cache_dir, rebuild=False)
    assert entries[key] == arm
    report = grade_bundle(bundle, replay=Replay({lab: {**entries, key: {**arm, "compiled_total_ms": arm["compiled_total_ms"] + 1.0}}}))
    assert ("B", "replay") in {(f.part, f.criterion) for f in report.findings}, [f.message for f in report.findings]


def _stored(cache_dir: Path, lab_id: str) -> Path:
    return cache_dir / table.table_key(get_lab(lab_id)).filename()


def _one_digit_changed(data: bytes) -> bytes:
    """The table with one number of one arm edited (a digit in the payload, not the header)."""
    start = data.index(b"\n") + 1
    at = next(i for i in range(len(data) - 1, start, -1) if data[i:i + 1].isdigit())
    return data[:at] + (b"1" if data[at:at + 1] != b"1" else b"2") + data[at + 1:]


@pytest.mark.parametrize("damage, reason", [
    (lambda data: data[: len(data) // 2], "truncated or tampered"),
    (lambda data: _one_digit_changed(data), "truncated or tampered"),
    (lambda data: data.replace(b'"mlsysim":"', b'"mlsysim":"9', 1), "expected digest"),
    (lambda data: b"", "no readable header"),
])
def test_a_damaged_table_is_refused_with_its_reason(cache_dir, tmp_path, damage, reason):
    lab = get_lab("lab07")
    path = _copied(cache_dir, "lab07", tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(table.ReplayTableError, match=reason):
        table.load(lab, tmp_path, rebuild=False)
    assert Replay.from_tables(tmp_path).table(lab) is None  # grading leaves it on live replay (``load`` of a refused
    # table rebuilds it: the previous format's test and the missing table's below; ``ensure_tables``: the last test)


def test_an_arm_is_stored_as_its_json_text_and_parsed_once_on_first_lookup(cache_dir):
    """Format 2: the payload maps each key to its arm's canonical JSON; a lookup parses it and keeps
    the same object, as the live evaluation's memo does (the rationale reader caches on arm identity)."""
    lab = get_lab("lab07")
    data = _stored(cache_dir, "lab07").read_bytes()
    header, payload = table.verify(table.table_key(lab), data)
    assert header["format"] == table.FORMAT == 2
    texts = json.loads(payload)
    key = sorted(texts)[len(texts) // 2]
    assert isinstance(texts[key], str) and json.loads(texts[key]) == _live("lab07", key)
    entries = table.decode(table.table_key(lab), data)
    first = entries[key]
    assert first == _live("lab07", key) and entries[key] is first
    assert entries.get("not a key") is None and len(entries) == len(texts) == 1604


def test_a_table_of_the_previous_format_is_refused(cache_dir, tmp_path):
    """A format-1 file (nested arms, a header that verifies otherwise) is never read as a table of this format."""
    lab = get_lab("lab07")
    path = _copied(cache_dir, "lab07", tmp_path)
    good = path.read_bytes()
    key = table.table_key(lab)
    header, payload = table.verify(key, good)
    nested = table.canonical_dumps({k: json.loads(v) for k, v in json.loads(payload).items()}).encode()
    old = {**header, "format": 1, "sha256": hashlib.sha256(nested).hexdigest()}
    path.write_bytes(table.canonical_dumps(old).encode() + b"\n" + nested)
    with pytest.raises(table.ReplayTableError, match=r"format 1, expected digest .* format 2"):
        table.load(lab, tmp_path, rebuild=False)
    assert Replay.from_tables(tmp_path).table(lab) is None  # live replay; ``ensure_tables`` rebuilds it (below)


@pytest.mark.slow  # builds a lab's table
def test_a_missing_table_is_refused_without_rebuild_and_built_on_first_use(tmp_path):
    lab = get_lab("lab07")
    with pytest.raises(table.ReplayTableError, match=r"no replay table at .*; run `mlsys-grader warm`"):
        table.load(lab, tmp_path, rebuild=False)
    assert len(table.load(lab, tmp_path)) == 1604
    assert _stored(tmp_path, "lab07").exists()


def test_the_key_names_the_lab_its_source_digest_and_mlsysim():
    key = table.table_key(get_lab("lab11"))
    assert key.filename().startswith("lab11-") and key.filename().endswith(f"-mlsysim{key.mlsysim}.replay")
    assert len(key.lab_digest) == 64


@pytest.mark.slow  # builds a lab's table
def test_warm_builds_then_verifies(tmp_path, capsys):
    """``mlsys-grader warm``, called in-process (the concurrent builders below run it in processes of their own)."""
    from mlsys_grader.cli import main

    assert main(["warm", "lab07", "--replay-cache", str(tmp_path)]) == 0
    first = capsys.readouterr().out
    assert main(["warm", "lab07", "--replay-cache", str(tmp_path)]) == 0
    second = capsys.readouterr().out
    assert first.startswith("lab07: built, 1604 evaluations, ") and second.startswith("lab07: verified, 1604 evaluations, ")


@pytest.mark.slow
def test_concurrent_builders_never_leave_a_half_written_table(tmp_path):
    """Three staff processes build the same tables at once (``warm`` on an empty cache) while this one reads the
    lab's table the whole time: the file is either absent or whole (its header and payload digest verify), never
    half written, and no temporary file is left.  (Written in place instead, the file is caught half written.)  The
    table is built once: the others wait on its lock and find it built (the test suite's workers rely on it)."""
    lab = get_lab("lab07")
    key = table.table_key(lab)
    path = tmp_path / key.filename()
    command = [sys.executable, "-m", "mlsys_grader", "warm", "lab07", "--replay-cache", str(tmp_path)]
    builders = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    reads, problems = 0, []
    while any(builder.poll() is None for builder in builders):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        reads += 1
        try:
            table.verify(key, data)
        except table.ReplayTableError as exc:
            problems.append(str(exc))
    outputs = [builder.communicate() for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0, 0], outputs
    statuses = sorted(out.split(",", 1)[0] for out, _ in outputs)
    assert statuses[0] == "lab07: built" and all(status in ("lab07: built by another process", "lab07: verified")
                                                  for status in statuses[1:]), outputs
    assert all(", 1604 evaluations, " in out for out, _ in outputs), outputs
    assert problems == [] and reads > 0, (reads, problems[:3])
    assert len(table.decode(key, path.read_bytes())) == 1604
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([path.name, path.name + ".lock"]), left


def test_a_lab_over_the_table_cap_is_refused_a_table_and_graded_by_live_replay(tmp_path, monkeypatch, solved_bundle):
    """A domain over :data:`MAX_ENTRIES` evaluations gets no table (building says why, writing nothing), and the batch's
    ``ensure_tables`` / :meth:`Replay.from_tables` leave that lab on live replay, with the grades live replay gives."""
    monkeypatch.setattr(table, "MAX_ENTRIES", 50)  # every lab's domain (1,604, 96 and 1,624 evaluations) runs over it
    lab = get_lab("lab07")
    with pytest.raises(table.ReplayTableError, match=r"lab07: the domain runs over 50 evaluations; grade it by live replay"):
        table.build(lab, tmp_path)
    with pytest.raises(table.ReplayTableError, match="runs over 50 evaluations"):
        table.warm(["lab07"], tmp_path)
    table.ensure_tables(tmp_path)
    assert not list(tmp_path.glob("*.replay")) and not list(tmp_path.glob("*.tmp"))
    bundle = solved_bundle("lab07", "cloud", 2)
    live = grade_bundle(bundle, replay=Replay()).model_dump_json()
    replay = Replay.from_tables(tmp_path)
    assert grade_bundle(bundle, replay=replay).model_dump_json() == live
    assert replay.table(lab) is None


def test_a_replay_on_the_tables_holds_them_and_a_live_one_does_not(cache_dir):
    """``grade`` hands its workers a replay on the tables: that replay answers from the lab's table, another replay in
    the same process stays live, and the lab itself holds no table."""
    lab = get_lab("lab07")
    through_tables, live = Replay.from_tables(cache_dir), Replay()
    assert len(through_tables.table(lab) or ()) == 1604
    assert live.table(lab) is None
    assert not hasattr(lab, "replay_table")
    assert table.key_for("lab07", "mlsys_grader.labs.lab07") == table.table_key(lab)


def test_a_table_refused_while_grading_leaves_its_lab_on_live_replay(cache_dir, tmp_path):
    """Workers never build (nor trust): a table damaged after ``ensure_tables`` means live replay for that lab."""
    path = _copied(cache_dir, "lab07", tmp_path)
    path.write_bytes(path.read_bytes()[:-10])
    assert Replay.from_tables(tmp_path).table(get_lab("lab07")) is None
    assert path.stat().st_size > 0 and [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.slow  # builds a lab's table
def test_ensure_tables_rebuilds_a_damaged_table_before_grading(cache_dir, tmp_path):
    path = _copied(cache_dir, "lab07", tmp_path)
    good = path.read_bytes()
    path.write_bytes(_one_digit_changed(good))
    table.ensure_tables(tmp_path, ("lab07",))
    assert path.read_bytes() == good
    assert Replay.from_tables(tmp_path).table(get_lab("lab07")) == table.decode(table.table_key(get_lab("lab07")), good)
