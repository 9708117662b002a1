"""The replay table: every evaluation a lab's whole domain runs, computed once and stored.

Every control has a finite set of allowed values, so the evaluations grading can run are
bounded: for each track, part and allowed setting (decisions included, and each result of a
part the part depends on, such as Lab 11 D on every part C setting) the table holds the arms
the pinned mlsysim computes, keyed exactly as :meth:`~._replay.Replay.evaluate` memoises them.  A
:class:`~._replay.Replay` given a table looks arms up instead of evaluating them; an input the table
lacks is evaluated live, so a table changes speed, never a grade (``tests/test_replay_table.py``).

A table file is named by its key — the lab id, a digest of the lab package's source and
rubric, and the mlsysim version — and holds one header line (format, key, the SHA-256 of the
payload) and the payload: canonical JSON of the entries, each arm as its own canonical JSON text,
parsed when grading first looks it up (:class:`Entries`).  A batch looks up a few hundred of a
table's thousands of arms, and parsing the strings alone is a quarter of the time of parsing the
nested arms (measured on Lab 11's table: about 0.13 s against 0.55 s in every worker that starts).  It is verified against that digest
before use; a missing, truncated, tampered or stale file is rebuilt, never trusted.  Files are
written to a temporary name and moved into place (``os.replace``), so concurrent builders
never leave a half-written table.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.context import evaluator_errors
from ..core.jsonio import canonical_dumps
from ..core.replayer import Replayer
from ..errors import ReplayTableError
from ..labs import Lab
from ._replay import Replay

FORMAT = 2
"""2: each entry's arm is stored as its canonical JSON text (1 stored the arms as nested JSON)."""
MAX_ENTRIES = 50_000
"""A lab whose domain runs more evaluations than this grades by live replay (no table)."""


@dataclass(frozen=True)
class TableKey:
    """What a table is valid for: the lab, its source and rubric (digested), the mlsysim version."""

    lab_id: str
    lab_digest: str
    mlsysim: str

    def filename(self) -> str:
        return f"{self.lab_id}-{self.lab_digest[:16]}-mlsysim{self.mlsysim}.replay"

    def header(self) -> dict[str, Any]:
        return {"format": FORMAT, "lab": self.lab_id, "lab_digest": self.lab_digest, "mlsysim": self.mlsysim}


def default_cache_dir() -> Path:
    """Where tables live: the user's cache directory (platformdirs), ``mlsys-grader/replay``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("mlsys-grader")) / "replay"


PLANNING_MODULES = ("mlsys_grader.labs", "mlsys_grader.labs.declared", "mlsys_grader.labs.spec", "mlsys_grader._mlsysim", "mlsys_grader.core.labspec", "mlsys_grader.core.values",
                    "mlsys_grader.core.roles", "mlsys_grader.core.replayer", "mlsys_grader.core.jsonio",
                    "mlsys_grader.replay._replay", "mlsys_grader.replay._table")
"""The shared modules every lab's plans and evaluations go through (the lab contract, the registry that loads
evaluators, the declared lab's planner and the spec it reads, the replay and its keys, this module's domain walk):
part of every table's key."""


def _source(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ReplayTableError(f"cannot find the source of module {module!r}")
    return Path(spec.origin)


def lab_digest(module: str) -> str:
    """SHA-256 over the Python source and rubric files of the lab module's package and the shared modules a plan or
    an evaluation goes through (:data:`PLANNING_MODULES`).

    Any edit to how a lab builds its arms (or to the rubric beside it), or to the shared planning code, makes a new
    key, so a table is never used for code it was not built from.  Found without importing the lab.
    """
    package = _source(module).parent
    digest = hashlib.sha256()
    for path in [*sorted(package.glob("*.py")), *sorted(package.glob("*.toml"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in PLANNING_MODULES:
        digest.update(name.encode() + b"\0" + _source(name).read_bytes() + b"\0")
    return digest.hexdigest()


def table_key(lab: Lab) -> TableKey:
    return key_for(lab.lab_id, lab.module)


def key_for(lab_id: str, module: str) -> TableKey:
    return TableKey(lab_id, lab_digest(module), metadata.version("mlsysim"))


def _settings(lab: Lab, part: str) -> Iterator[dict[str, Any]]:
    """Every control setting a plan is built for: allowed values, and decisions also None
    (the grader builds an out-of-choices decision's plan without it)."""
    controls = lab.parts[part].controls
    values = [(*control.values(), None) if control.decision else control.values() for control in controls]
    for combination in itertools.product(*values):
        yield dict(zip((control.name for control in controls), combination, strict=True))


def domain(lab: Lab, replay: Replayer) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(track, part, controls, upstream) for every plan the lab's domain holds, each planned through ``replay``.

    A part's upstream is every combination of the results of the parts it depends on, each
    over that part's whole domain (Lab 11 D runs on each of part C's results).
    """
    for track in lab.tracks:
        results: dict[str, list[dict[str, Any]]] = {}
        for part in lab.part_ids():
            deps = lab.parts[part].depends_on
            upstreams = [dict(zip(deps, combo, strict=True)) for combo in itertools.product(*(results[d] for d in deps))]
            seen: dict[str, dict[str, Any]] = {}
            for controls in _settings(lab, part):
                for upstream in upstreams:
                    try:
                        result = lab.plan(replay, track, part, controls, upstream).result
                    except evaluator_errors():  # a setting the evaluator refuses is graded live (as a finding)
                        continue
                    yield track, part, controls, upstream
                    seen.setdefault(canonical_dumps(result), result)
            results[part] = list(seen.values())


class Entries(Mapping[str, dict[str, Any]]):
    """A verified table's entries: evaluation key → arm, each arm parsed from its JSON text on first
    lookup and kept (the same object on every later lookup, as a live evaluation's memoised arm is)."""

    def __init__(self, texts: Mapping[str, str]):
        self._texts = texts
        self._arms: dict[str, dict[str, Any]] = {}

    def __getitem__(self, key: str) -> dict[str, Any]:
        arm = self._arms.get(key)
        if arm is None:
            arm = self._arms[key] = json.loads(self._texts[key])
        return arm

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


Progress = Callable[[str, int], None]
"""Told (lab id, evaluations so far) as a table builds, for a progress bar (a build takes seconds to tens of seconds)."""


def build_entries(lab: Lab, progress: Progress | None = None) -> dict[str, dict[str, Any]]:
    """Evaluation key → arm for the lab's whole domain, evaluated live through the pinned mlsysim (a live
    :class:`~._replay.Replay` that records every evaluation it serves)."""
    entries: dict[str, dict[str, Any]] = {}
    for _ in domain(lab, Replay(record=entries)):
        if len(entries) > MAX_ENTRIES:
            raise ReplayTableError(f"{lab.lab_id}: the domain runs over {MAX_ENTRIES} evaluations; grade it by live replay")
        if progress is not None:
            progress(lab.lab_id, len(entries))
    return entries


def encode(key: TableKey, entries: Mapping[str, Any]) -> bytes:
    """The table file: a header line (with the payload's SHA-256), then the payload (each arm as its JSON text)."""
    payload = canonical_dumps({key: canonical_dumps(arm) for key, arm in sorted(entries.items())}).encode()
    header = {**key.header(), "entries": len(entries), "sha256": hashlib.sha256(payload).hexdigest()}
    return canonical_dumps(header).encode() + b"\n" + payload


def decode(key: TableKey, data: bytes) -> Entries:
    """The entries of a table file, verified; :class:`ReplayTableError` says why one is refused."""
    header, payload = verify(key, data)
    texts = json.loads(payload)
    if not isinstance(texts, dict) or len(texts) != header.get("entries"):
        raise ReplayTableError(f"{key.lab_id}: replay table holds {len(texts)} entries, its header says {header.get('entries')}")
    if not all(isinstance(text, str) for text in texts.values()):
        raise ReplayTableError(f"{key.lab_id}: replay table entries are not arm texts (format {FORMAT} expected)")
    return Entries(texts)


def verify(key: TableKey, data: bytes) -> tuple[dict[str, Any], bytes]:
    """(header, payload) of a table file whose key and payload digest check out (without parsing the payload)."""
    head, newline, payload = data.partition(b"\n")
    try:
        header = json.loads(head) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise ReplayTableError(f"{key.lab_id}: replay table has no readable header (truncated or not a table)")
    if {k: header.get(k) for k in key.header()} != key.header():
        raise ReplayTableError(f"{key.lab_id}: replay table is for {header.get('lab')!r} digest "
                               f"{str(header.get('lab_digest'))[:16]} mlsysim {header.get('mlsysim')!r} format "
                               f"{header.get('format')!r}, expected digest {key.lab_digest[:16]} mlsysim {key.mlsysim!r} "
                               f"format {FORMAT}")
    actual = hashlib.sha256(payload).hexdigest()
    if actual != header.get("sha256"):
        raise ReplayTableError(f"{key.lab_id}: replay table payload digest is {actual[:16]}, its header says "
                               f"{str(header.get('sha256'))[:16]} (truncated or tampered)")
    return header, payload


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def building(path: Path) -> Iterator[None]:
    """Hold the build lock of the table at ``path`` (a ``.lock`` file beside it, locked with ``flock``): two processes
    that find one table missing (two ``grade`` runs, the test suite's workers) build it once, the second waiting and
    then finding it built.  Where the folder cannot hold the lock (unwritable, or no ``fcntl``: Windows) the build goes
    on unlocked: atomic writes keep it correct, the work is only done twice."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks through this module
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(path.name + ".lock"), "a+b")  # noqa: SIM115 (held across the yield)
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _verifies(key: TableKey, path: Path) -> bool:
    try:
        verify(key, path.read_bytes())
    except (FileNotFoundError, ReplayTableError):
        return False
    return True


def build(lab: Lab, cache_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """Build the lab's table and store it (replacing any file of the same key)."""
    key = table_key(lab)
    path = (cache_dir or default_cache_dir()) / key.filename()
    write_atomic(path, encode(key, build_entries(lab, progress)))
    return path


def load(lab: Lab, cache_dir: Path | None = None, *, rebuild: bool = True) -> Mapping[str, dict[str, Any]]:
    """The lab's verified table, built (or rebuilt, when the stored one is refused) if ``rebuild``."""
    key = table_key(lab)
    path = (cache_dir or default_cache_dir()) / key.filename()
    try:
        return decode(key, path.read_bytes())
    except FileNotFoundError:
        if not rebuild:
            raise ReplayTableError(f"{lab.lab_id}: no replay table at {path}; run `mlsys-grader warm`") from None
    except ReplayTableError:
        if not rebuild:
            raise
    with building(path):
        with contextlib.suppress(FileNotFoundError, ReplayTableError):  # built by another process while this one waited
            return decode(key, path.read_bytes())
        entries = build_entries(lab)
        with contextlib.suppress(OSError):  # a cache directory we may not write: the table still serves this process
            write_atomic(path, encode(key, entries))
    return entries


def ensure_tables(cache_dir: Path | None = None, lab_ids: tuple[str, ...] | None = None,
                  progress: Progress | None = None) -> list[str]:
    """Build, before any worker forks, each registered lab's table that is missing or does not verify; the labs whose
    table was built (``progress`` is told as each builds).

    Workers then only load verified files (a build inside a worker would run under its time limit,
    once per worker).  A verified file is not parsed here, so a batch that grades nothing stays fast.
    """
    from ..labs import get_lab, lab_modules

    modules = lab_modules()
    built = []
    for lab_id in sorted(modules) if lab_ids is None else lab_ids:
        key = key_for(lab_id, modules[lab_id])
        path = (cache_dir or default_cache_dir()) / key.filename()
        if _verifies(key, path):
            continue
        with building(path):
            if _verifies(key, path):  # built by another process while this one waited for the lock
                continue
            with contextlib.suppress(ReplayTableError, OSError):  # over the cap, or unwritable: graded live
                build(get_lab(lab_id), cache_dir, progress)
                built.append(lab_id)
    return built


def warm(lab_ids: list[str], cache_dir: Path | None = None,
         progress: Progress | None = None) -> list[tuple[str, Path, int, str]]:
    """(lab, path, entries, what was done) for each lab: its table verified, or built when missing or refused."""
    from ..labs import get_lab

    done = []
    for lab_id in lab_ids:
        lab = get_lab(lab_id)
        key = table_key(lab)
        path = (cache_dir or default_cache_dir()) / key.filename()
        try:
            entries, status = decode(key, path.read_bytes()), "verified"
        except (FileNotFoundError, ReplayTableError) as exc:
            with building(path):
                if _verifies(key, path):  # another process built it while this one waited for the lock
                    status = "built by another process"
                else:
                    build(lab, cache_dir, progress)
                    status = "built" if isinstance(exc, FileNotFoundError) else f"rebuilt ({exc})"
            entries = decode(key, path.read_bytes())
        done.append((lab_id, path, len(entries), status))
    return done
