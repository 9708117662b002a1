"""``mlsys-grader``: the command line.  Thin: parsing, printing, exit codes.

Exit codes:
  0  graded (or the command did what it was asked)
  1  the submission cannot be graded — one line says why, never a traceback
  2  usage error (bad arguments)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from ._version import __version__
from .errors import GraderError

EXIT_OK, EXIT_UNGRADABLE, EXIT_USAGE = 0, 1, 2
LABS = ("lab07", "lab11")
TRACKS = ("tinyml", "mobile", "edge", "cloud")


def format_report(report, *, as_json: bool) -> str:
    """The grade report as text or JSON."""
    return report.model_dump_json(indent=2) if as_json else report.text()


def _cmd_solve(args: argparse.Namespace) -> int:
    from .api import solve

    bundle = solve(args.lab, args.track, args.seed)
    Path(args.output).write_text(bundle.to_json(), encoding="utf-8")
    print(f"wrote {args.output}: {args.lab} on {args.track}" + (f" (seed {args.seed})" if args.seed is not None else ""))
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    from .api import grade_file

    report = grade_file(args.file)
    if not args.all:
        report = report.public()
    print(format_report(report, as_json=args.json))
    return EXIT_OK


def _cmd_grade(args: argparse.Namespace) -> int:
    from .gradebook import grade_row, iter_inputs, write_csv

    count = write_csv((grade_row(path) for path in iter_inputs(args.paths)), args.output)
    print(f"graded {count} submission(s) into {args.output}")
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from .core.models import bundle_json_schema

    print(json.dumps(bundle_json_schema(), indent=2))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlsys-grader", description="Replay-based grading for MLSysBook Lab 07 and Lab 11.")
    parser.add_argument("--version", action="version", version=f"mlsys-grader {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    solve = sub.add_parser("solve", help="write a complete, full-marks bundle as a diligent student would")
    solve.add_argument("--lab", required=True, choices=LABS)
    solve.add_argument("--track", required=True, choices=TRACKS)
    solve.add_argument("--seed", type=int, default=None, help="draw valid control settings at random (deterministic per seed)")
    solve.add_argument("-o", "--output", required=True, help="bundle file to write")
    solve.set_defaults(func=_cmd_solve)

    check = sub.add_parser("check", help="self-check one bundle as a student would")
    check.add_argument("file", help="submission bundle (JSON)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--all", action="store_true", help="include hidden checks (staff view)")
    check.set_defaults(func=_cmd_check)

    grade = sub.add_parser("grade", help="grade many submissions into a CSV gradebook")
    grade.add_argument("paths", nargs="+", help="bundle files or folders (searched recursively)")
    grade.add_argument("-o", "--output", default="grades.csv", help="CSV file to write (default grades.csv)")
    grade.set_defaults(func=_cmd_grade)

    schema = sub.add_parser("schema", help="print the bundle's JSON Schema")
    schema.set_defaults(func=_cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return args.func(args)
    except (GraderError, OSError) as exc:
        print(f"mlsys-grader: cannot grade: {exc}", file=sys.stderr)
        return EXIT_UNGRADABLE


if __name__ == "__main__":
    sys.exit(main())
