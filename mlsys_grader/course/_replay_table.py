"""The replay table: every evaluation a lab's whole domain runs, computed once and stored.

Every control has a finite set of allowed values, so the evaluations grading can run are
bounded: for each track, part and allowed setting (decisions included, and each result of a
part the part depends on, such as Lab 11 D on every part C setting) the table holds the arms
the pinned mlsysim computes, keyed exactly as :meth:`Lab.evaluate` memoises them.  With a
table attached, grading looks arms up instead of evaluating them; an input the table lacks is
evaluated live, so a table changes speed, never a grade (``tests/test_replay_table.py``).

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
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.context import evaluator_errors
from ..core.jsonio import canonical_dumps
from ..core.labspec import Lab
from ..errors import ReplayTableError

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


def lab_digest(module: str) -> str:
    """SHA-256 over the Python source and rubric files of the lab module's package, and the core lab contract.

    Any edit to how a lab builds its arms (or to the rubric beside it) makes a new key, so a
    table is never used for code it was not built from.  Found without importing the lab.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ReplayTableError(f"cannot find the source of lab module {module!r}")
    package = Path(spec.origin).parent
    contract = Path(sys.modules[Lab.__module__].__file__ or "")
    digest = hashlib.sha256()
    for path in [*sorted(package.glob("*.py")), *sorted(package.glob("*.toml")), contract]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
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


def domain(lab: Lab) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(track, part, controls, upstream) for every plan the lab's domain holds.

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
                        result = lab.plan(track, part, controls, upstream).result
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
    """Evaluation key → arm for the lab's whole domain, evaluated live through the pinned mlsysim."""
    entries: dict[str, dict[str, Any]] = {}
    for track, part, controls, upstream in domain(lab):
        entries.update(lab.evaluations(track, part, controls, upstream))
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
    entries = build_entries(lab)
    with contextlib.suppress(OSError):  # a cache directory we may not write: the table still serves this process
        write_atomic(path, encode(key, entries))
    return entries


def attach(lab: Lab, cache_dir: Path | None = None, *, rebuild: bool = True) -> Lab:
    """Make ``lab`` look its evaluations up in its verified table (built on first use if ``rebuild``)."""
    lab.replay_table = load(lab, cache_dir, rebuild=rebuild)
    return lab


def detach(lab: Lab) -> Lab:
    """Make ``lab`` evaluate live again."""
    lab.replay_table = None
    return lab


# -- the unit file: every unit conversion the reader makes, through pint once ---------------------------

UNITS_FORMAT = 1


def units_digest() -> str:
    """SHA-256 over what a unit conversion depends on: the reader's source (how it asks pint), the registry's
    construction (``_mlsysim.py``) and definitions (mlsysim's unit file), and the pint and mlsysim versions."""
    from .. import _mlsysim
    from ..core import rationale

    digest = hashlib.sha256()
    for module in (rationale, _mlsysim):
        digest.update(Path(module.__file__ or "").read_bytes() + b"\0")
    spec = importlib.util.find_spec("mlsysim")
    if spec is not None and spec.submodule_search_locations:
        definitions = Path(spec.submodule_search_locations[0]) / "core" / _mlsysim.UNITS_FILE
        digest.update(definitions.read_bytes() if definitions.is_file() else b"")
    for distribution in ("pint", "mlsysim"):
        digest.update(f"{distribution}=={metadata.version(distribution)}\0".encode())
    return digest.hexdigest()


def units_path(cache_dir: Path | None = None, digest: str | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"units-{(digest or units_digest())[:16]}.scales"


def _arm_units(value: Any, found: set[str]) -> None:
    """Every unit of a ``{"magnitude", "unit"}`` payload in ``value`` (the evaluators' quantities)."""
    if isinstance(value, dict):
        if isinstance(value.get("unit"), str) and "magnitude" in value:
            found.add(value["unit"])
        for item in value.values():
            _arm_units(item, found)
    elif isinstance(value, list):
        for item in value:
            _arm_units(item, found)


def evidence_units(lab: Lab, entries: Mapping[str, dict[str, Any]], per_model: int = 3) -> set[str]:
    """The units the lab's evidence shows, read from its table: every evaluator quantity's unit, and what
    :meth:`~mlsys_grader.core.labspec.Lab.evidence_quantities` reads of a few arms of each evaluator, as
    each part's arms."""
    from ..core.rationale import DERIVED, _Arms

    found: set[str] = set()
    sampled: dict[str, int] = {}
    for key, text in (entries._texts.items() if isinstance(entries, Entries) else entries.items()):
        arm = json.loads(text) if isinstance(text, str) else text
        _arm_units(arm, found)
        try:
            model = str(json.loads(key)[1])
        except (ValueError, IndexError, TypeError, KeyError):
            model = ""
        if sampled.get(model, 0) < per_model:
            sampled[model] = sampled.get(model, 0) + 1
            for part in lab.part_ids():
                with contextlib.suppress(Exception):  # a lab's reading of an arm outside its part: nothing to add
                    found.update(unit.removeprefix(DERIVED) for _, unit in lab.evidence_quantities(_Arms(part, arm, arm, [arm])))
    return found


def encode_units(digest: str, scales: Mapping[str, tuple[float, str] | None]) -> bytes:
    payload = canonical_dumps({unit: None if scale is None else list(scale) for unit, scale in sorted(scales.items())}).encode()
    header = {"format": UNITS_FORMAT, "kind": "unit scales", "digest": digest, "entries": len(scales),
              "sha256": hashlib.sha256(payload).hexdigest()}
    return canonical_dumps(header).encode() + b"\n" + payload


def decode_units(digest: str, data: bytes) -> dict[str, tuple[float, str] | None]:
    """The unit scales of a unit file, verified (its digest and its payload's SHA-256); :class:`ReplayTableError` says
    why one is refused."""
    head, newline, payload = data.partition(b"\n")
    try:
        header = json.loads(head) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("kind") != "unit scales":
        raise ReplayTableError("unit file has no readable header (truncated or not a unit file)")
    if header.get("format") != UNITS_FORMAT or header.get("digest") != digest:
        raise ReplayTableError(f"unit file is for digest {str(header.get('digest'))[:16]} format {header.get('format')!r}, "
                               f"expected {digest[:16]} format {UNITS_FORMAT}")
    actual = hashlib.sha256(payload).hexdigest()
    if actual != header.get("sha256"):
        raise ReplayTableError(f"unit file payload digest is {actual[:16]}, its header says {str(header.get('sha256'))[:16]} "
                               "(truncated or tampered)")
    raw = json.loads(payload)
    scales: dict[str, tuple[float, str] | None] = {}
    for unit, scale in raw.items() if isinstance(raw, dict) else ():
        if scale is None:
            scales[unit] = None
        elif (isinstance(scale, list) and len(scale) == 2 and isinstance(scale[0], float) and isinstance(scale[1], str)):
            scales[unit] = (scale[0], scale[1])
        else:
            raise ReplayTableError(f"unit file entry {unit!r} is not a scale")
    if len(scales) != header.get("entries"):
        raise ReplayTableError(f"unit file holds {len(scales)} entries, its header says {header.get('entries')}")
    return scales


def build_units(cache_dir: Path | None = None, units: set[str] | None = None) -> Path:
    """Convert every unit the reader asks for (:func:`~mlsys_grader.core.rationale.unit_lookups`) and ``units``
    through pint once, and store the results (loads pint's registry: run before workers fork)."""
    from ..core.rationale import pint_unit_scale, unit_lookups

    digest = units_digest()
    wanted = sorted(set(unit_lookups()) | (units or set()))
    path = units_path(cache_dir, digest)
    write_atomic(path, encode_units(digest, {unit: pint_unit_scale(unit) for unit in wanted}))
    return path


def load_units(cache_dir: Path | None = None) -> dict[str, tuple[float, str] | None] | None:
    """The verified unit scales, or None when the file is missing or refused (units are then converted through pint)."""
    digest = units_digest()
    try:
        return decode_units(digest, units_path(cache_dir, digest).read_bytes())
    except (OSError, ReplayTableError, ValueError):
        return None


def ensure_units(cache_dir: Path | None = None, lab_ids: tuple[str, ...] | None = None) -> None:
    """Build the unit file when it is missing or does not verify, with the units the labs' tables show."""
    from ..labs import get_lab, lab_modules

    if load_units(cache_dir) is not None:
        return
    units: set[str] = set()
    for lab_id in sorted(lab_modules()) if lab_ids is None else lab_ids:
        with contextlib.suppress(ReplayTableError, OSError):  # a lab without a table: its units are converted live
            lab = get_lab(lab_id)
            key = table_key(lab)
            units |= evidence_units(lab, decode(key, ((cache_dir or default_cache_dir()) / key.filename()).read_bytes()))
    with contextlib.suppress(OSError):  # unwritable: units are converted through pint
        build_units(cache_dir, units)


@contextlib.contextmanager
def replay_tables(cache_dir: Path | None = None) -> Iterator[None]:
    """Within the block, every lab this process (and each worker it forks) loads grades through its
    verified table; labs already loaded are attached at once.  Afterwards, labs loaded are live again.

    Nothing is built here (:func:`ensure_tables` builds, once, before workers fork): a table that is
    missing or refused by then leaves its lab on live replay rather than building under a task's
    time limit in every worker."""
    from ..core.rationale import unit_scales_in_use, use_unit_scales
    from ..labs import on_load, remove_on_load

    attached: list[Lab] = []
    scales = None if unit_scales_in_use() else load_units(cache_dir)
    if scales is not None:
        use_unit_scales(scales)  # before any worker forks: no worker loads pint's registry for the reader

    def attach_once(lab: Lab) -> None:
        if lab.replay_table is None:
            with contextlib.suppress(ReplayTableError):  # missing, refused or over the cap: live replay
                attached.append(attach(lab, cache_dir, rebuild=False))

    on_load(attach_once)
    try:
        yield
    finally:
        remove_on_load(attach_once)
        for lab in attached:
            detach(lab)
        if scales is not None:
            use_unit_scales(None)


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
        try:
            verify(key, ((cache_dir or default_cache_dir()) / key.filename()).read_bytes())
        except (FileNotFoundError, ReplayTableError):
            with contextlib.suppress(ReplayTableError, OSError):  # over the cap, or unwritable: graded live
                build(get_lab(lab_id), cache_dir, progress)
                built.append(lab_id)
    ensure_units(cache_dir, lab_ids)
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
            build(lab, cache_dir, progress)
            entries = decode(key, path.read_bytes())
            status = "built" if isinstance(exc, FileNotFoundError) else f"rebuilt ({exc})"
        done.append((lab_id, path, len(entries), status))
    ensure_units(cache_dir)
    return done
