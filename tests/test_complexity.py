"""The course layer is where the project's complexity grows: every function in ``mlsys_grader/course`` stays at radon's
grade C or better (cyclomatic complexity at most 20), so a step of the batch or of the review stays one a test can call
alone and a reader can hold in mind."""

from __future__ import annotations

from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity")

COURSE = Path(__file__).resolve().parents[1] / "mlsys_grader" / "course"
MOST = 20
"""radon's grade C ends at 20."""


def test_no_function_of_the_course_layer_is_worse_than_c():
    worse = []
    for path in sorted(COURSE.glob("*.py")):
        for block in radon_complexity.cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > MOST:
                worse.append(f"{path.name}:{block.lineno} {block.name} {radon_complexity.cc_rank(block.complexity)} "
                             f"({block.complexity})")
    assert worse == [], worse


def test_the_check_can_fail():
    assert radon_complexity.cc_rank(21) == "D" and radon_complexity.cc_rank(MOST) == "C"
    branchy = "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(MOST + 1)) + "    return -1\n"
    assert max(block.complexity for block in radon_complexity.cc_visit(branchy)) > MOST
