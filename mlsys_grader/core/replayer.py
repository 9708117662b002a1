"""What grading asks of replay: the one Protocol between the pure core and :class:`mlsys_grader.replay.Replay`.

Turning a record's inputs into the evaluator's numbers — live or from a verified table, memoised — is a
service whoever grades hands in (a bulk worker, the Gradescope runner, a notebook session, the API).  The
core names only this Protocol, so it keeps no process state: the same arguments give the same grade.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .memos import Memos
    from .values import PartPlan


@runtime_checkable
class Replayer(Protocol):
    """Evaluations and plans of any lab, memoised, and the memos the checks read through.

    ``lab`` is a :class:`mlsys_grader.labs.Lab` (the core names no lab class: it reaches a lab through the Protocols of
    :mod:`.roles`, and the replay service, above the labs, takes the lab itself)."""

    @property
    def memos(self) -> Memos: ...

    def evaluate(self, lab: Any, track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The arm the lab's pinned evaluator gives for JSON-safe ``inputs`` (shared: treat it as read-only)."""
        ...

    def plan(self, lab: Any, track: str, part: str, controls: Mapping[str, Any], upstream: Mapping[str, Any]) -> PartPlan:
        """A part's arms for validated ``controls`` (``upstream``: each dependency's result arm), built by the lab's
        rules through :meth:`evaluate` (shared: a plan is never changed)."""
        ...
