"""The SQLite gradebook's schema and its forward migrations.

A gradebook written by an earlier release is upgraded in place, never refused and never
regraded from scratch for that: the file is first copied to ``<gradebook>.v<N>.bak``
(SQLite's online backup, so the copy is consistent), then every migration from its
version to :data:`SCHEMA_VERSION` runs in one transaction.  A gradebook from a *later*
release is refused (this release cannot know what its tables mean).

Version 1 (releases up to 0.x of November 2026): ``meta``, ``results`` (stored grades by
input hash, grader version, rubric key), ``latest`` (last score per student and lab).
Version 2 adds ``final`` (one row per student and lab), ``change_log`` (regrade events;
staff overrides join it in a later release) and ``evidence`` (each graded input's evidence
numbers, for its feedback page; kept apart so that a rerun does not read them).
Version 3 adds ``overrides`` (staff decisions per student, lab, submission hash and rubric
item; :mod:`._overrides`) and ``regrade_requests`` (what students asked staff to look at).
Version 4 adds ``decisions`` (staff decisions on a whole submission: a score, or "counts as
missing", keyed by student and upload hash; :mod:`._decisions`) and ``unplaced`` (this run's
unreadable uploads whose lab could not be told, for the review queue).
Version 5 turns each "confirm the machine's verdict" that earlier releases stored as one
override per rubric item (staff points equal to the machine's, one submission hash, one time,
and no other override made with them) into one ``confirm`` decision on the submission (who,
when, the hash), as this release stores it; the change log keeps what was logged.
Version 6 writes every stored final row's flags as a list (``_flags``), as this release stores them: rows kept by
releases before the list existed held them only as the CSV cell (``"collusion;generated"``), which the reader then had
to split; and it gives every override the code of the reason it was queued for (``overrides.code``, read once from the
reason as stored), which the agreement table groups by.

Every change to the schema is one numbered step of this one sequence.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable

from ..core.codes import verdict_code
from ..errors import GraderError

SCHEMA_VERSION = 6

_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    input_hash TEXT NOT NULL, grader_version TEXT NOT NULL, rubric_key TEXT NOT NULL,
    graded_at TEXT NOT NULL, result TEXT NOT NULL,
    PRIMARY KEY (input_hash, grader_version, rubric_key));
CREATE TABLE IF NOT EXISTS latest (
    who TEXT NOT NULL, lab TEXT NOT NULL, path TEXT NOT NULL, input_hash TEXT NOT NULL,
    score REAL NOT NULL, grader_version TEXT NOT NULL, rubric_key TEXT NOT NULL, run_at TEXT NOT NULL,
    PRIMARY KEY (who, lab));
"""
_V2 = """
CREATE TABLE IF NOT EXISTS final (
    student TEXT NOT NULL, lab TEXT NOT NULL, status TEXT NOT NULL,
    raw_score REAL NOT NULL, late_penalty REAL NOT NULL, score REAL NOT NULL,
    input_hash TEXT NOT NULL, row TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (student, lab));
CREATE TABLE IF NOT EXISTS change_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, kind TEXT NOT NULL,
    student TEXT NOT NULL, lab TEXT NOT NULL, input_hash TEXT NOT NULL DEFAULT '',
    old_score REAL, new_score REAL, reason TEXT NOT NULL DEFAULT '', by TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS change_log_student ON change_log (student, lab);
CREATE TABLE IF NOT EXISTS evidence (input_hash TEXT PRIMARY KEY, numbers TEXT NOT NULL);
"""
_V3 = """
CREATE TABLE IF NOT EXISTS overrides (
    student TEXT NOT NULL, lab TEXT NOT NULL, input_hash TEXT NOT NULL, item TEXT NOT NULL,
    old_points REAL NOT NULL, new_points REAL NOT NULL, max_points REAL NOT NULL,
    comment TEXT NOT NULL DEFAULT '', by TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (student, lab, input_hash, item));
CREATE TABLE IF NOT EXISTS regrade_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, student TEXT NOT NULL, lab TEXT NOT NULL,
    item TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL, by TEXT NOT NULL DEFAULT '', input_hash TEXT NOT NULL DEFAULT '');
"""
_V4 = """
CREATE TABLE IF NOT EXISTS decisions (
    student TEXT NOT NULL, lab TEXT NOT NULL, input_hash TEXT NOT NULL, verdict TEXT NOT NULL, points REAL,
    reason TEXT NOT NULL, by TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, path TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (student, input_hash));
CREATE TABLE IF NOT EXISTS unplaced (
    student TEXT NOT NULL, input_hash TEXT NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL, row TEXT NOT NULL,
    PRIMARY KEY (student, input_hash, path));
"""


_V6 = """
ALTER TABLE overrides ADD COLUMN code TEXT NOT NULL DEFAULT '';
"""


def _statements(script: str) -> list[str]:
    return [statement.strip() for statement in script.split(";") if statement.strip()]


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    for statement in _statements(_V2):
        conn.execute(statement)


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    for statement in _statements(_V3):
        conn.execute(statement)


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    for statement in _statements(_V4):
        conn.execute(statement)


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    groups: dict[tuple[str, str, str, str], list[tuple[int, float, float, str, str, str]]] = {}
    for rowid, student, lab, input_hash, at, old, new, by, comment, reason in conn.execute(
            "SELECT rowid, student, lab, input_hash, at, old_points, new_points, by, comment, reason FROM overrides"):
        groups.setdefault((student, lab, input_hash, at), []).append((rowid, old, new, by, comment, reason))
    for (student, lab, input_hash, at), made in groups.items():
        if len(made) < 2 or any(abs(old - new) > 1e-9 for _, old, new, *_ in made):
            continue  # a single item confirmed, or staff changed points in the same save: item decisions, as stored
        by = made[0][3]
        comment = next((c for *_, c, _ in made if c), "")
        conn.execute("INSERT OR REPLACE INTO decisions (student, lab, input_hash, verdict, points, reason, by, at, path) "
                     "VALUES (?, ?, ?, 'confirm', NULL, ?, ?, ?, '')", (student, lab, input_hash, comment, by, at))
        conn.executemany("DELETE FROM overrides WHERE rowid = ?", [(rowid,) for rowid, *_ in made])


def _why_code(why: str) -> str:
    """The code of a queue reason as releases before codes stored it with an override (``uncertain: option named, …``,
    ``flag collusion: …``, ``grader_error: …``, ``regrade request: …``, ``stale override: …``); "" for none."""
    kind, _, rest = why.partition(":")
    kind = kind.strip()
    if kind == "uncertain":
        return verdict_code(rest.strip())
    if kind.startswith("flag "):
        return "flag." + kind.removeprefix("flag ").strip()
    return {"grader_error": "grader.error", "regrade request": "request.regrade", "stale override": "stale.override"}.get(
        kind, "")


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    if "code" not in {column for _, column, *_ in conn.execute("PRAGMA table_info(overrides)")}:
        for statement in _statements(_V6):
            conn.execute(statement)
    for rowid, reason in conn.execute("SELECT rowid, reason FROM overrides").fetchall():
        conn.execute("UPDATE overrides SET code = ? WHERE rowid = ?", (_why_code(str(reason)), rowid))
    for table in ("final", "unplaced"):
        rows = conn.execute(f"SELECT rowid, row FROM {table}").fetchall()
        for rowid, text in rows:
            row = json.loads(text)
            if isinstance(row, dict) and "_flags" not in row:
                row["_flags"] = [flag for flag in str(row.get("flags") or "").split(";") if flag]
                conn.execute(f"UPDATE {table} SET row = ? WHERE rowid = ?", (json.dumps(row), rowid))


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5,
                                                               5: _v5_to_v6}
"""Version N → the step that makes it N + 1."""


def _version(conn: sqlite3.Connection) -> int | None:
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        return None
    found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(found[0]) if found else None


def backup_path(path: str, version: int) -> str:
    return f"{path}.v{version}.bak"


def open_gradebook(path: str | os.PathLike[str]) -> tuple[sqlite3.Connection, int | None]:
    """The gradebook's connection at :data:`SCHEMA_VERSION`, and the version it was migrated from (None: none)."""
    path = os.fspath(path)
    conn = sqlite3.connect(path)
    try:
        try:
            found = _version(conn)
        except sqlite3.DatabaseError as exc:  # not SQLite at all, or a damaged file
            raise GraderError(f"{path} is not a readable mlsys-grader gradebook (SQLite: {exc}); restore it from a "
                              "backup or grade into a new --db") from exc
        if found is None:
            conn.executescript(_V1 + _V2 + _V3 + _V4 + _V6)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.commit()
            return conn, None
        if found > SCHEMA_VERSION:
            raise GraderError(f"gradebook {path} has schema_version {found}, written by a later release; this release reads "
                              f"versions 1 to {SCHEMA_VERSION} (upgrade mlsys-grader)")
        if found == SCHEMA_VERSION:
            return conn, None
        with sqlite3.connect(backup_path(path, found)) as copy:
            conn.backup(copy)
        copy.close()
        # NOTE: one explicit transaction, DDL included (sqlite3 would otherwise commit each CREATE on its
        # own): a failed step leaves the gradebook exactly as it was.
        previous = conn.isolation_level
        conn.isolation_level = None
        conn.execute("BEGIN")
        try:
            for version in range(found, SCHEMA_VERSION):
                MIGRATIONS[version](conn)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            conn.isolation_level = previous
        return conn, found
    except BaseException:
        conn.close()
        raise
