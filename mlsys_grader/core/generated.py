"""Is the rationale the grader's own template?  (``solve`` writes one; it is not the student's work.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .report import Finding

if TYPE_CHECKING:
    from .context import GradingContext


def check_generated(ctx: "GradingContext") -> Iterable[Finding]:
    """Flag a rationale that is mostly the template ``solve`` writes for this bundle."""
    return ()
