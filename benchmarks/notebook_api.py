"""Benchmark the notebook API's self-check (prints figures; not a timed test).

    python benchmarks/notebook_api.py [--lab lab07] [--track cloud] [--repeat 20]

Completes every part of a lab in a temporary folder (as ``solve`` would), then times:
grading the saved bundle, ``lab.check(part)`` once loaded (it reuses the session's
report), running part B again and checking it, and an Otter test case
(``assert_item``) on the saved file, first and repeated (it reuses one grading).
The tests assert the reuse itself (tests/test_notebook_api.py, tests/test_notebooks.py).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from _timing import median_seconds, repeated  # beside this script


def _ms(call: Callable[[], object], repeat: int = 1) -> float:
    """The median wall time of ``call`` in milliseconds."""
    return median_seconds(repeated(lambda _: call(), repeat)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", default="lab07", choices=("lab07", "lab11"))
    parser.add_argument("--track", default="cloud", choices=("tinyml", "mobile", "edge", "cloud"))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    from mlsys_grader import api, staff
    from mlsys_grader.student import assert_item, open_lab

    reference = staff.solve(args.lab, args.track)  # loads the evaluators (not timed)
    with tempfile.TemporaryDirectory() as folder:
        lab = open_lab(args.lab, args.track, directory=Path(folder))
        for part in "ABCDE":
            spec, controls = lab.lab.parts[part], reference.controls[part]
            lab.predict(part, reference.evidence[part].prediction)
            lab.run(part, **{c.name: controls[c.name] for c in spec.controls if not c.decision})
            lab.capture(part, **{c.name: controls[c.name] for c in spec.controls if c.decision})
        synthesis = reference.synthesis.model_dump()
        lab.synthesis(**{name: synthesis[name] for name in lab.lab.synthesis_fields})

        figures = {
            "api.grade_bundle of the saved file": _ms(lambda: api.grade_bundle(lab.path.read_bytes()), args.repeat),
            "lab.check(part) once loaded": _ms(lambda: lab.check("C"), args.repeat),
        }
        b = reference.controls["B"]
        figures["lab.run('B') again (saves the bundle)"] = _ms(
            lambda: lab.run("B", **{c.name: b[c.name] for c in lab.lab.parts["B"].controls if not c.decision}))
        figures["lab.check('B') after that run"] = _ms(lambda: lab.check("B"))
        figures["first assert_item on the saved file"] = _ms(lambda: assert_item(args.lab, "A", "captured", directory=folder))
        figures["assert_item again"] = _ms(lambda: assert_item(args.lab, "A", "captured", directory=folder), args.repeat)

    print(f"{args.lab} on {args.track} (median of {args.repeat} where repeated)")
    for name, ms in figures.items():
        print(f"  {name:<42} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
