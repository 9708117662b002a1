"""The replay service: one object that turns a record's inputs into the evaluator's numbers.

Whoever grades holds one :class:`Replay` and hands it to grading (a bulk worker, the Gradescope runner, the Otter
plugin, a notebook session, the API's default): the memoised evaluations and plans, the verified replay tables it
may answer from, and the memos the core's checks read through (:class:`~mlsys_grader.core.memos.Memos`) all live
here, so nothing about how a number is replayed depends on what ran before in the process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cachetools import LRUCache

from ..core.jsonio import canonical_dumps
from ..core.labspec import PartPlan
from ..core.memos import Memos
from ..core.models import SCHEMA_VERSION, bundle_from_mapping
from ..core.rationale import ready_reader
from ..errors import GraderError
from ..labs import Lab

CACHE_SIZE = 8192
"""Evaluations (and, apart, plans) a replay keeps, least recently used first out."""

Table = Mapping[str, dict[str, Any]]
"""Evaluation key (the canonical JSON of ``[track, model_key, inputs]``) → arm: a lab's verified replay table."""


class Replay:
    """Evaluations and plans of every lab, memoised, optionally answered from verified replay tables.

    ``tables`` maps a lab to its verified table (:func:`Replay.from_tables` loads them); a lab without one, and any
    input its table lacks, is evaluated live through the lab's pinned evaluator, so a table changes speed, never a
    grade.  ``table_dir``: where the tables of labs not in ``tables`` are looked for when first needed (verified,
    never built; missing or refused: live).  ``record``: a dict that receives every evaluation served (key → arm),
    which is how a table is built.  The arms and plans a replay returns are shared by every caller: read-only.
    """

    def __init__(self, tables: Mapping[Lab, Table] | None = None, *, table_dir: Path | None = None,
                 record: dict[str, dict[str, Any]] | None = None, cache_size: int = CACHE_SIZE) -> None:
        self._tables: dict[Lab, Table | None] = dict(tables or {})
        self._table_dir = table_dir
        self._record = record
        self._arms: LRUCache[tuple[Lab, str], dict[str, Any]] = LRUCache(cache_size)
        self._plans: LRUCache[tuple[Any, ...], PartPlan] = LRUCache(cache_size)
        self._memos = Memos()

    @classmethod
    def from_tables(cls, directory: Path | None = None) -> Replay:
        """A replay whose labs answer from their verified tables in ``directory`` (default: the user's cache directory,
        :func:`~._table.default_cache_dir`), each loaded when the lab is first replayed (or by :meth:`prepare`)."""
        from ._table import default_cache_dir

        return cls(table_dir=directory or default_cache_dir())

    def __repr__(self) -> str:
        tables = {lab.lab_id: len(table) for lab, table in self._tables.items() if table is not None}
        return f"<Replay tables={tables} evaluations kept={len(self._arms)} plans kept={len(self._plans)}>"

    @property
    def memos(self) -> Memos:
        """The memos the core's checks read through (per replay: they go with its plans)."""
        return self._memos

    # -- tables --------------------------------------------------------------------------------------------------
    def table(self, lab: Lab) -> Table | None:
        """The verified table ``lab`` answers from, or None (live): looked for in ``table_dir`` on first use."""
        if lab not in self._tables:
            self._tables[lab] = self._load_table(lab) if self._table_dir is not None else None
        return self._tables[lab]

    def _load_table(self, lab: Lab) -> Table | None:
        from ._table import load

        try:
            return load(lab, self._table_dir, rebuild=False)
        except (GraderError, OSError):  # missing, refused, over the cap or unreadable: live replay, same grades
            return None

    def use_table(self, lab: Lab, table: Table | None) -> None:
        """Answer ``lab``'s evaluations from ``table`` (None: live) from now on; what is already kept stays."""
        self._tables[lab] = table

    def prepare(self, labs: Iterable[str] | None = None) -> None:
        """Ready this replay before its first grade (a batch's start, outside every task's time limit): each of
        ``labs`` (default: every registered lab) loaded with its table, its rationale readers built for every track
        (:func:`~mlsys_grader.core.rationale.ready_reader`), and the evaluators loaded only of a lab left to replay
        live (:func:`~mlsys_grader.labs.load_evaluators`, which loads just the mlsysim modules they import).  A batch
        the tables answer then pays for neither mlsysim's import nor pint's; a lab not prepared is loaded when first
        replayed.  A lab that does not load (its module fails to import, or is gone) is skipped: raising here
        would stop every submission of any lab from being graded; its own submissions fail in their tasks, each row
        saying why."""
        from ..labs import get_lab, lab_ids, load_evaluators

        for lab_id in lab_ids() if labs is None else labs:
            try:
                lab = get_lab(lab_id)
            except Exception:  # reported by the task of each submission of this lab
                continue
            if self.table(lab) is None:  # mlsysim missing raises here: every task then names the worker's environment
                load_evaluators(lab)
            for track in lab.tracks:  # the rationale readers of each track (a reader depends on the lab and track only)
                ready_reader(self._memos, lab, lab.final_choice_terms(bundle_from_mapping(
                    {"schema_version": SCHEMA_VERSION, "lab": lab_id, "track": track})))

    # -- replay --------------------------------------------------------------------------------------------------
    def evaluate(self, lab: Lab, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The lab's pinned evaluator on JSON-safe ``inputs``, memoised on the canonical JSON of its arguments.

        The evaluators are deterministic, so a batch that replays the same inputs many times (every student's baseline
        arm) computes each once.  The returned arm is shared with later callers: treat it as read-only.
        """
        key = canonical_dumps([track, model_key, inputs])
        table = self.table(lab)
        # A table keeps each arm it parsed (the same object on every lookup), so only live evaluations are kept here.
        arm = table.get(key) if table is not None else None
        if arm is None:
            arm = self._arms.get((lab, key))
            if arm is None:
                # One JSON round trip normalises the arm to exactly what a bundle holds.
                arm = json.loads(canonical_dumps(lab.evaluate_arm(track, model_key, inputs)))
                self._arms[(lab, key)] = arm
        if self._record is not None:
            self._record[key] = arm
        return arm

    def plan(self, lab: Lab, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        """A part's arms for validated ``controls`` (``upstream``: each dependency's result arm), built by the lab's
        rules through :meth:`evaluate`; calls with the same arguments share one frozen :class:`PartPlan`."""
        key = (lab, track, part, tuple(sorted(controls.items())), canonical_dumps(upstream) if upstream else "")
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = lab.build_plan(self, track, part, controls, upstream)
        return plan
