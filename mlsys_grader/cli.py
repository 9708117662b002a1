"""``mlsys-grader``: the command line.  Thin: parsing, printing, exit codes.

Exit codes:
  0  graded (or the command did what it was asked)
  1  the submission cannot be graded — one line says why, never a traceback
  2  usage error (bad arguments)
  130  interrupted (Ctrl-C): one line, nothing half written; run the same command again to finish

Output into a closed pipe (``mlsys-grader review --list | head -1``) ends the command quietly with 0.

Staff commands (:data:`STAFF_COMMANDS`: ``solve``, the gradebook's, Otter's) exist only where
:mod:`mlsys_grader.staff` is installed: the student kit's build leaves it out, so a student's
``mlsys-grader`` has ``check``, ``rubric`` and ``schema``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .api import grade_file
from .core.labspec import DEFAULT_TRACKS
from .core.models import bundle_json_schema
from .core.report import GradeReport
from .core.rubric import rubric_markdown
from .errors import GraderError
from .labs import lab_ids

if TYPE_CHECKING:
    from .course import Entry, GradebookResult
    from .replay import Replay

# Kept in the commands that need them, so ``mlsys-grader --help`` stays quick: rich's progress
# bar (about 100 ms to import, only drawn on a terminal) and the Otter/Gradescope glue
# (``staff._autograder``, ``_lock``, ``_assign``: zip, subprocess and Otter's configuration);
# and so the student build, which has no ``staff`` and no autograder builder, imports this module.
# The course modules (bulk grading, the gradebook) load only for staff commands: ``check`` never needs them.
# mlsysim loads only when a command grades or solves (through ``mlsys_grader.labs``).

EXIT_OK, EXIT_UNGRADABLE, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a command stopped by Ctrl-C."""
STUDENT_COMMANDS = ("check", "schema", "rubric", "ledger")
STAFF_COMMANDS = ("solve", "grade", "warm", "export", "feedback", "review", "assign", "autograder", "kit", "generate")
TRACKS = DEFAULT_TRACKS  # the shipped labs' tracks (``solve`` checks a plugin lab's own)


def format_report(report: GradeReport, *, as_json: bool, staff: bool = False) -> str:
    """The grade report as text or JSON (staff flags in the text only for ``staff``)."""
    return report.model_dump_json(indent=2) if as_json else report.text(staff=staff)


def staff_installed() -> bool:
    """Whether this install has staff's tools (``mlsys_grader.staff``): not in the student kit's build."""
    return importlib.util.find_spec(f"{__package__}.staff") is not None


def _cmd_solve(args: argparse.Namespace) -> int:
    from .staff import solve

    bundle = solve(args.lab, args.track, args.seed)
    Path(args.output).write_text(bundle.to_json(), encoding="utf-8")
    print(f"wrote {args.output}: {args.lab} on {args.track}" + (f" (seed {args.seed})" if args.seed is not None else ""))
    return EXIT_OK


def format_error(exc: BaseException) -> str:
    """An error as one plain sentence (an OSError's own words, without its errno prefix)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def _check_replay() -> Replay:
    """The replay ``check`` uses: the user cache's verified tables where the build has them, live otherwise."""
    from .replay import Replay

    try:
        return Replay.from_tables()
    except ImportError:  # the student kit's build leaves the tables out
        return Replay()


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        # every form: bundle, Otter zip, notebook, Gradescope folder, marimo export; answered from the verified replay
        # tables `warm` or `grade` left in the user cache when they are there (a table changes speed, never a grade),
        # live through mlsysim otherwise (and always in the student kit, whose build has no tables)
        report = grade_file(args.file, replay=_check_replay())
    except (GraderError, OSError) as exc:
        if not args.json:
            raise
        # --json answers in JSON even when the file cannot be graded: the sentence and, apart, the kind.
        print(json.dumps({"error": format_error(exc), "error_kind": type(exc).__name__, "file": str(args.file)}, indent=2))
        return EXIT_UNGRADABLE
    later = "" if args.all else format_checked_later(report)
    if not args.all:
        report = report.public()
    print(format_report(report, as_json=args.json, staff=args.all))
    if later and not args.json:
        print(later)
    return EXIT_OK


def format_checked_later(report: GradeReport) -> str:
    """What ``check`` did not check, from the lab's rubric: ``70 of 100 points checked now; replay, 30 points, is
    checked after the deadline`` ("" when every point is checked now)."""
    from .core.report import HIDDEN_ITEMS

    later: dict[str, float] = {}
    for part in report.parts.values():
        for item in part.items:
            if item.item in HIDDEN_ITEMS and item.max_points > 0:
                later[item.item] = later.get(item.item, 0.0) + item.max_points
    if not later:
        return ""
    checked = report.max_score - sum(later.values())
    names = [f"{name.replace('_', ' ')}, {points:g} points" for name, points in sorted(later.items())]
    return (f"{checked:g} of {report.max_score:g} points checked now; {' and '.join(names)}, "
            f"{'is' if len(names) == 1 else 'are'} checked after the deadline.")


class _TableProgress:
    """A progress bar on stderr while replay tables build (a terminal only; nothing is drawn otherwise): evaluations
    counted per lab, as a build's total is known only once it ends."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self.bar: Any = None
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _TableProgress:
        if self.show:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(SpinnerColumn(), TextColumn("building the {task.fields[lab]} replay table (once per machine)"),
                                TextColumn("{task.completed:,} evaluations"), TimeElapsedColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.__enter__()
        return self

    def __call__(self, lab_id: str, evaluations: int) -> None:
        if self.bar is None:
            return
        if lab_id not in self.tasks:
            self.tasks[lab_id] = self.bar.add_task("table", total=None, lab=lab_id)
        self.bar.update(self.tasks[lab_id], completed=evaluations)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _cmd_warm(args: argparse.Namespace) -> int:
    from .labs import lab_ids
    from .replay import warm

    with _TableProgress(sys.stderr.isatty()) as progress:
        done = warm(args.labs or list(lab_ids()), Path(args.replay_cache) if args.replay_cache else None, progress)
    for lab_id, path, entries, status in done:
        print(f"{lab_id}: {status}, {entries} evaluations, {path}")
    return EXIT_OK


def _cmd_grade(args: argparse.Namespace) -> int:
    from .course import labs_to_grade
    from .replay import Replay, ensure_tables

    args.started = time.perf_counter()  # the summary's time is the whole run's, a table build included
    args.table_note = ""
    if args.live_replay:
        return _grade(args, Replay())
    cache = Path(args.replay_cache) if args.replay_cache else None
    # built once, before any worker forks, for the labs the inputs name (every lab when one names none); each worker
    # loads the verified files
    labs = labs_to_grade(args.paths, args.roster, args.manifest, args.course)
    with _TableProgress(sys.stderr.isatty() and not args.quiet) as progress:
        built = ensure_tables(cache, None if labs is None else tuple(labs), progress=progress)
    if built:
        args.table_note = (f"built the replay table of {', '.join(built)} in {time.perf_counter() - args.started:.1f} s "
                           "(once per machine; `mlsys-grader warm` builds it ahead)")
    return _grade(args, Replay.from_tables(cache))


def _grade(args: argparse.Namespace, replay: Replay) -> int:
    from .course import BatchOptions, default_final_path, grade_paths, write_summary

    rubrics = {}
    for spec in args.rubric:
        lab, sep, path = spec.partition("=")
        if not sep or not path:
            print(f"mlsys-grader: --rubric expects LAB=PATH, e.g. lab07=my-rubric.toml (got {spec!r})", file=sys.stderr)
            return EXIT_USAGE
        rubrics[lab] = path
    formats = tuple(name.strip() for name in args.formats.split(",") if name.strip())
    final_path = args.final or default_final_path(args.output)
    outputs = tuple(str(path) for path in (args.output, final_path, args.html) if path)  # never read back as inputs
    try:
        options = BatchOptions(jobs=args.jobs, timeout_s=args.timeout, memory_mb=args.memory_mb or None,
                               db=None if args.no_db else args.db, roster=args.roster, rubrics=rubrics, formats=formats,
                               manifest=args.manifest, course=args.course, only=tuple(args.only), reason=args.reason or "",
                               outputs=outputs)
    except ValueError as exc:  # pydantic's ValidationError names the option and the value
        print(f"mlsys-grader: invalid grade options: {exc}", file=sys.stderr)
        return EXIT_USAGE
    show = sys.stderr.isatty() and not args.quiet
    if show:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("grading", total=None, rate="")
            began = time.perf_counter()

            def progress(done: int, total: int) -> None:
                rate = done / max(time.perf_counter() - began, 1e-9)
                bar.update(task, completed=done, total=total, rate=f"{rate:,.0f}/s")

            result = grade_paths(args.paths, options, progress=progress, replay=replay)
    else:
        result = grade_paths(args.paths, options, replay=replay)
    result.seconds = time.perf_counter() - getattr(args, "started", time.perf_counter() - result.seconds)
    result.write_csv(args.output)
    result.write_final(final_path)
    if args.html:
        write_summary(result, args.html)
    if not args.quiet:
        print(format_grade_summary(result, args.output, args.html, options.db))
        if getattr(args, "table_note", ""):
            print(args.table_note)
        print(f"final gradebook ({len(result.final)} rows, one per student and lab) written to {final_path}")
    if options.only and not result.only_matched:
        print(f"mlsys-grader: --only {', '.join(options.only)} matched no input (by student key, email, sid or input hash); "
              "nothing was regraded", file=sys.stderr)
        return EXIT_USAGE
    if not any(row["status"] in ("graded", "regrade") for row in result.rows):
        print(f"mlsys-grader: no input could be graded ({len(result.rows)} row(s) in {args.output} say why)", file=sys.stderr)
        return EXIT_UNGRADABLE
    return EXIT_OK


def format_grade_summary(result: GradebookResult, csv_path: str, html_path: str | None, db_path: str | None) -> str:
    """What ``mlsys-grader grade`` prints after a run."""
    rows = result.rows
    ungradable = sum(1 for row in rows if row["status"] != "graded")
    flagged = sum(1 for row in rows if row["flags"])
    lines = [f"graded {len(rows)} input(s) into {csv_path} in {result.seconds:.1f} s: "
             f"{result.graded} graded now, {result.reused} reused from {db_path or 'no database'}; "
             f"{ungradable} ungradable, {flagged} flagged; {len(result.ignored)} file(s) ignored by rule"]
    lines.extend(result.notes)
    if result.migrated_from is not None:
        lines.append(f"gradebook {db_path} upgraded from schema version {result.migrated_from} "
                     f"(backup: {db_path}.v{result.migrated_from}.bak)")
    for group in result.groups:
        members = ", ".join(str(rows[i]["student_email"] or rows[i]["path"]) for i in group.members[:6])
        lines.append(f"possible collusion {group.group_id} ({group.lab}; {', '.join(group.bases)}): {members}")
    for change in result.changes:
        lines.append(f"score moved: {change.who} {change.lab} {change.old_score:g} -> {change.new_score:g} "
                     f"({change.delta:+g}, {change.cause})")
    if html_path:
        lines.append(f"summary written to {html_path}")
    return "\n".join(lines)


def _cmd_export(args: argparse.Namespace) -> int:
    from .course import export_lms

    if not Path(args.db).is_file():
        print(f"mlsys-grader export: no gradebook at {args.db}; run `mlsys-grader grade` first", file=sys.stderr)
        return EXIT_USAGE
    done = export_lms(args.db, args.lms, args.output)
    print(f"wrote {done.path}: {args.lms} import file, {done.students} student(s)")
    for line in done.unmatched:
        print(f"  {line}")
    return EXIT_OK


def _cmd_feedback(args: argparse.Namespace) -> int:
    from .course import write_feedback

    if not Path(args.db).is_file():
        print(f"mlsys-grader feedback: no gradebook at {args.db}; run `mlsys-grader grade` first", file=sys.stderr)
        return EXIT_USAGE
    if args.lms:
        from .course import write_lms_feedback

        zipped = write_lms_feedback(args.db, args.output, args.lms, release=args.release, lab=args.lab)
        print(f"wrote {zipped.zip_path}: {len(zipped.entries)} feedback page(s) named as {args.lms.capitalize()}'s download "
              f"named the submissions ({'released' if zipped.released else 'hidden items withheld until --release'}); "
              f"{zipped.skipped} student-lab row(s) without a gradable submission")
        if zipped.elsewhere:  # listed once: a mixed term delivers most pages another way (Gradescope)
            folder = Path(zipped.elsewhere[0][0]).parent
            print(f"  not in the zip: {len(zipped.elsewhere)} page(s) whose submission did not come from a "
                  f"{args.lms.capitalize()} download, written to {folder} (hand those back where they came from)")
        return EXIT_OK
    done = write_feedback(args.db, args.output, release=args.release, lab=args.lab)
    print(f"wrote {len(done.files)} feedback page(s) into {args.output} "
          f"({'released: every item and the final score' if done.released else 'hidden items withheld until --release'}); "
          f"{done.skipped} student-lab row(s) without a gradable submission")
    return EXIT_OK


def format_queue(entries: Sequence[Entry]) -> str:
    """The review queue as lines: points at stake, student, lab, why."""
    lines = [f"{len(entries)} submission(s) to review, most points at stake first"]
    for entry in entries:
        lines.append(f"  {entry.at_stake:6g}  {entry.student} {entry.lab or '(lab unknown)'}: {' | '.join(entry.reasons)}"
                     f"  [{' '.join(entry.codes)}]")
    return "\n".join(lines)


def _cmd_review(args: argparse.Namespace) -> int:
    import os

    from .course import GradebookDB, add_request, build_queue, export_queue, import_decisions
    from .errors import DecisionError

    if not Path(args.db).is_file():
        print(f"mlsys-grader review: no gradebook at {args.db}; run `mlsys-grader grade` first", file=sys.stderr)
        return EXIT_USAGE
    by = args.by or os.environ.get("USER", "")
    try:
        db = GradebookDB(args.db)
    except GraderError as exc:
        print(f"mlsys-grader review: {exc}", file=sys.stderr)
        return EXIT_UNGRADABLE
    try:
        if args.request:
            if not args.lab or not args.reason:
                print("mlsys-grader review: --request needs --lab and --reason", file=sys.stderr)
                return EXIT_USAGE
            add_request(db, args.request, args.lab, args.reason, args.item or "", by)
            print(f"recorded a regrade request for {args.request} {args.lab}{' ' + args.item if args.item else ''}")
            return EXIT_OK
        if args.decide:
            chosen = [name for name, given in (("--points", args.points is not None), ("--missing", args.missing),
                                                ("--confirm", args.confirm)) if given]
            if len(chosen) != 1:
                print(f"mlsys-grader review: --decide needs one of --points N, --missing or --confirm (got "
                      f"{', '.join(chosen) or 'none'})", file=sys.stderr)
                return EXIT_USAGE
            from .course import WholeDecision, decide

            verdict = "confirm" if args.confirm else "missing" if args.missing else "score"
            decided = decide(db, WholeDecision(args.decide, args.lab or "", verdict, args.points, args.reason or "",
                                               args.upload or ""), by)
            print(f"decided {decided.student} {decided.lab or '(lab unknown)'} {decided.path or decided.input_hash[:12]}: "
                  f"{decided.words()}; the final gradebook is updated")
            return EXIT_OK
        if args.decide_code:
            chosen = [name for name, given in (("--points", args.points is not None or args.full), ("--confirm", args.confirm))
                      if given]
            if len(chosen) != 1 or args.missing:
                print("mlsys-grader review: --decide-code needs one of --points N (or --full) and --confirm, with "
                      f"--reason (got {', '.join(chosen) or 'none'}{', --missing' if args.missing else ''})", file=sys.stderr)
                return EXIT_USAGE
            from .course import decide_code

            points = None if args.confirm else "full" if args.full else args.points
            overridden = decide_code(db, args.decide_code, points, args.reason or "", by, args.lab or "")
            students = len({(o.student, o.lab) for o in overridden})
            print(f"decided {len(overridden)} item(s) of {args.decide_code} for {students} submission(s)"
                  f"{' in ' + args.lab if args.lab else ''}; the final gradebook is updated")
            return EXIT_OK
        if args.codes:
            from .course import queue_codes

            rows = queue_codes([e for e in build_queue(db) if not args.lab or e.lab == args.lab])
            print(f"{len(rows)} kind(s) of open review entries (code: entries, items, points at stake)")
            for code, entries, items, stake in rows:
                print(f"  {code}: {entries} entr{'y' if entries == 1 else 'ies'}, {items} item(s), {stake:g} point(s)")
            return EXIT_OK
        if args.export:
            lines = export_queue(db, args.export)
            print(f"wrote {args.export}: {lines} item line(s) to decide (fill new_points and comment, then --import)")
            return EXIT_OK
        if args.import_:
            made = import_decisions(db, args.import_, by)
            print(f"imported {len(made)} decision(s) from {args.import_}; the final gradebook is updated "
                  "(run `mlsys-grader export` for the LMS file)")
            return EXIT_OK
        if args.list:
            print(format_queue([e for e in build_queue(db) if (not args.code or args.code in e.codes)
                                and (not args.lab or e.lab == args.lab)]))
            return EXIT_OK
    except DecisionError as exc:
        print(f"mlsys-grader review: {exc}", file=sys.stderr)
        return EXIT_UNGRADABLE
    finally:
        db.close()
    try:
        from .course import serve_review as serve
    except ImportError as exc:
        print(f"mlsys-grader review: the review page needs the review extra (pip install \"mlsys-grader[review]\"): {exc}",
              file=sys.stderr)
        return EXIT_USAGE
    serve(args.db, by=by, port=args.port, open_browser=not args.no_browser)
    return EXIT_OK


def _cmd_ledger(args: argparse.Namespace) -> int:
    from .api import read_submission
    from .ledger import ledger_history

    history = ledger_history(read_submission(args.file).raise_for_error())
    text = json.dumps(history, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    if args.output is None:
        print(text, end="")
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote the book's design-ledger payload for chapter {', '.join(history)} to {args.output}")
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(bundle_json_schema(), indent=2))
    return EXIT_OK


# -- autograder (built on a staff machine: mlsys_grader/staff) --------------------------
def _cmd_autograder(args: argparse.Namespace) -> int:
    from .errors import AutograderBuildError, LockError
    from .staff import LOCK_NAME, build_autograders

    masters: dict[str, Path] = {}
    for spec in args.master or []:
        lab, sep, path = spec.partition("=")
        if not sep or lab not in lab_ids():
            print(f"mlsys-grader: --master expects LAB=PATH with LAB in {', '.join(lab_ids())} (got {spec!r})", file=sys.stderr)
            return EXIT_USAGE
        masters[lab] = Path(path)
    options: dict[str, bool | float] = {"rerun_notebook": args.rerun_notebook}
    if args.notebook_budget is not None:
        options["notebook_budget_s"] = args.notebook_budget
    try:
        built = build_autograders(args.output, masters or None, run_tests=not args.no_run_tests, root=args.root,
                                  options=options, course=args.course)
    except (AutograderBuildError, LockError, ValueError) as exc:  # ValueError: options out of range (pydantic)
        print(f"mlsys-grader autograder: {exc}", file=sys.stderr)
        return EXIT_UNGRADABLE
    for item in built:
        print(f"wrote {item.path} ({item.lab}; ships {' and '.join((item.wheel, *item.lab_wheels))}; "
              f"otter assign {item.assign_seconds:.1f} s)")
    if built:
        print(f"wrote {Path(args.output) / LOCK_NAME} ({built[0].pins} packages pinned from this environment; "
              f"notebook re-run {'on' if args.rerun_notebook else 'off'})")
    return EXIT_OK


def _cmd_assign(args: argparse.Namespace) -> int:
    from .staff import drift, regenerate

    labs = args.lab or list(lab_ids())
    if args.check:
        found = drift(args.root, labs)
        for lab_id, difference in found.items():
            print(f"{lab_id}: assignments/{lab_id}.ipynb drifted from its master ({difference}); run `mlsys-grader assign`")
        if found:
            return EXIT_UNGRADABLE
        print("student notebooks match their masters")
        return EXIT_OK
    for path in regenerate(args.root, labs, run_tests=args.run_tests):
        print(f"wrote {path}")
    return EXIT_OK


def _cmd_generate(args: argparse.Namespace) -> int:
    from .staff import generate

    result = generate(args.kind, args.root, args.lab, tracks=args.track, check=args.check, log=print)
    if args.check:
        for path, what in result.differs:
            print(f"{path}: {what}; run `mlsys-grader generate {args.kind}`")
        if result.differs:
            return EXIT_UNGRADABLE
        print(f"committed {args.kind} are what `mlsys-grader generate {args.kind}` writes")
        return EXIT_OK
    if args.kind != "references":  # references log each file as it is executed
        for path in result.written:
            print(f"wrote {path}")
    return EXIT_OK


def _cmd_rubric(args: argparse.Namespace) -> int:
    from .course import resolve_rubrics

    if args.codes:
        from .core.codes import codes_table
        from .labs import lab_codes

        print(codes_table(lab_codes()))
        return EXIT_OK
    overrides = dict(item.split("=", 1) for item in args.rubric if "=" in item)
    rubrics = resolve_rubrics(overrides)
    print(rubric_markdown([rubrics[lab] for lab in lab_ids()]))
    return EXIT_OK


def _cmd_kit(args: argparse.Namespace) -> int:
    from .errors import KitError, KitRootError
    from .staff import INSTALL_COMMAND, build_kit

    try:
        kit = build_kit(args.output, args.root)
    except KitRootError as exc:
        print(f"mlsys-grader kit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KitError as exc:
        print(f"mlsys-grader kit: {exc}", file=sys.stderr)
        return EXIT_UNGRADABLE
    files = ", ".join(path.name for path in (*kit.notebooks, kit.wheel, *kit.lab_wheels, kit.requirements, kit.readme))
    print(f"wrote {kit.directory}: {files} ({len(kit.pins)} pinned packages)")
    print(f"students run, inside that folder: {INSTALL_COMMAND}")
    return EXIT_OK


def command_reference(*, staff: bool = True, width: int = 100) -> str:
    """The command line's reference in Markdown: one section per command with its one-line help and its full
    ``--help`` text at a fixed width, generated from :func:`build_parser` (docs/cli.md holds it; a test compares)."""
    import functools

    parser = build_parser(staff=staff)
    choices = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    helps = {action.dest: action.help or "" for action in choices._choices_actions}
    sections = []
    for name, command in choices.choices.items():
        command.formatter_class = functools.partial(argparse.HelpFormatter, width=width)
        text = command.format_help().rstrip()
        sections.append(f"### `mlsys-grader {name}`\n\n{helps.get(name, '')}\n\n```text\n{text}\n```")
    return "\n\n".join(sections)


def build_parser(*, staff: bool | None = None) -> argparse.ArgumentParser:
    """The command line: :data:`STUDENT_COMMANDS`, and with ``staff`` (default: :func:`staff_installed`) :data:`STAFF_COMMANDS`."""
    parser = argparse.ArgumentParser(prog="mlsys-grader", description="Replay-based grading for the labs of the MLSysBook.")
    parser.add_argument("--version", action="version", version=f"mlsys-grader {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="self-check one submission as a student would (graded as `grade` grades it)")
    check.add_argument("file", help="submission bundle (JSON), Otter export zip, notebook (its bundle beside it or saved in "
                                    "its outputs), Gradescope upload folder, or the book's marimo export (JSON snapshot or "
                                    "Markdown report)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--all", action="store_true", help="include hidden checks (staff view)")
    check.set_defaults(func=_cmd_check)

    schema = sub.add_parser("schema", help="print the bundle's JSON Schema")
    schema.set_defaults(func=_cmd_schema)

    rubric = sub.add_parser("rubric", help="print the rubric table (Markdown) generated from the rubric files")
    rubric.add_argument("--rubric", action="append", default=[], metavar="LAB=PATH", help="use this rubric for LAB (repeatable)")
    rubric.add_argument("--codes", action="store_true", help="print the table of finding codes (Markdown) instead: what "
                                                             "each code a finding carries means")
    rubric.set_defaults(func=_cmd_rubric)

    ledger = sub.add_parser("ledger", help="write a submission as the book's design-ledger payload for its chapter "
                                           "({chapter: payload}, what the book's capstone auditor reads)")
    ledger.add_argument("file", help="a submission in any form `check` reads")
    ledger.add_argument("-o", "--output", help="write the JSON here (default: print it)")
    ledger.set_defaults(func=_cmd_ledger)

    if staff is None:
        staff = staff_installed()
    if staff:
        _add_staff_commands(sub)
    return parser


def _add_staff_commands(sub: argparse._SubParsersAction) -> None:
    """The commands of :data:`STAFF_COMMANDS`, in that order."""
    from .course import BatchOptions  # its defaults are the options' (a student command never loads course/)

    solve = sub.add_parser("solve", help="write a complete, full-marks bundle as a diligent student would")
    solve.add_argument("--lab", required=True, choices=lab_ids())
    solve.add_argument("--track", required=True, choices=TRACKS)
    solve.add_argument("--seed", type=int, default=None, help="draw valid control settings at random (deterministic per seed)")
    solve.add_argument("-o", "--output", required=True, help="bundle file to write")
    solve.set_defaults(func=_cmd_solve)

    defaults = BatchOptions()
    grade = sub.add_parser("grade", help="grade many submissions into a gradebook (CSV, SQLite, HTML summary)")
    grade.add_argument("paths", nargs="+", help="bundles, Otter export zips, notebooks, marimo exports or folders (recursive)")
    grade.add_argument("--formats", default=",".join(defaults.formats), metavar="LIST",
                       help=f"input formats the course accepts, comma-separated from {', '.join(defaults.formats)} "
                            f"(default: all); any other input is a row saying why it was refused")
    grade.add_argument("-o", "--output", default="grades.csv", help="CSV file to write (default grades.csv)")
    grade.add_argument("--db", default=defaults.db, help=f"SQLite gradebook to reuse and update (default {defaults.db})")
    grade.add_argument("--no-db", action="store_true", help="grade everything, keep no database")
    grade.add_argument("--jobs", type=int, default=defaults.jobs, help="worker processes (default: all cores)")
    grade.add_argument("--timeout", type=float, default=defaults.timeout_s, help=f"seconds per submission (default {defaults.timeout_s:g})")
    grade.add_argument("--memory-mb", type=int, default=defaults.memory_mb, help=f"MiB a worker may add per submission (default {defaults.memory_mb}; 0: no limit)")
    grade.add_argument("--roster", help="roster as the LMS exports it (Canvas gradebook export, Moodle participants or grades "
                                        "export, Gradescope roster) or mlsys-grader's CSV (name, email or sid; optional "
                                        "first_name, last_name, sis_id, canvas_id, moodle_id, section, track, lab)")
    grade.add_argument("--manifest", help="staff manifest CSV (path, student; optional submitted_at with offset, lab)")
    grade.add_argument("--course", help="course file (TOML): deadlines, late policy, extensions, LMS assignment ids")
    grade.add_argument("--final", help="final gradebook CSV, one row per student and lab (default final.csv beside -o)")
    grade.add_argument("--only", action="append", default=[], metavar="STUDENT",
                       help="grade this student (email, sid) or input hash afresh (repeatable); recorded in the change log")
    grade.add_argument("--reason", help="why --only regrades (recorded in the change log)")
    grade.add_argument("--rubric", action="append", default=[], metavar="LAB=PATH", help="replace a lab's rubric (repeatable)")
    grade.add_argument("--live-replay", action="store_true",
                       help="evaluate every record through mlsysim instead of looking it up in the replay table")
    grade.add_argument("--replay-cache", metavar="DIR", help="replay table directory (default: the user cache directory)")
    grade.add_argument("--html", help="write a self-contained HTML summary here")
    grade.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    grade.set_defaults(func=_cmd_grade)

    warm_cmd = sub.add_parser("warm", help="build (or verify) each lab's replay table: its whole domain evaluated once")
    warm_cmd.add_argument("labs", nargs="*", help="lab ids (default: every registered lab)")
    warm_cmd.add_argument("--replay-cache", metavar="DIR", help="replay table directory (default: the user cache directory)")
    warm_cmd.set_defaults(func=_cmd_warm)

    export = sub.add_parser("export", help="write the final gradebook as an LMS import file (Canvas, Moodle or generic CSV)")
    export.add_argument("--lms", required=True, choices=("canvas", "moodle", "generic"), help="the import format")
    export.add_argument("--db", default=BatchOptions().db, help=f"the SQLite gradebook (default {BatchOptions().db})")
    export.add_argument("-o", "--output", required=True, help="CSV file to write")
    export.set_defaults(func=_cmd_export)

    feedback = sub.add_parser("feedback", help="write one HTML feedback page per student and lab to hand back")
    feedback.add_argument("--db", default=BatchOptions().db, help=f"the SQLite gradebook (default {BatchOptions().db})")
    feedback.add_argument("-o", "--output", required=True,
                          help="folder for the pages (<sid>-<lab>.html); with --lms, the zip to upload (FILE.zip)")
    feedback.add_argument("--lms", choices=("canvas", "moodle"),
                          help="write the pages as that LMS's bulk feedback upload: Canvas's Re-Upload Submissions, "
                               "Moodle's Upload multiple feedback files in a zip")
    feedback.add_argument("--release", action="store_true", help="include hidden items and the final score (grades released)")
    feedback.add_argument("--lab", help="only this lab's pages (an LMS takes feedback per assignment)")
    feedback.set_defaults(func=_cmd_feedback)

    review = sub.add_parser("review", help="the staff review queue: a local page, or a CSV round trip, and regrade requests")
    review.add_argument("--db", default=BatchOptions().db, help=f"the SQLite gradebook (default {BatchOptions().db})")
    review.add_argument("--by", help="staff name recorded with each decision (default $USER)")
    review.add_argument("--export", metavar="queue.csv", help="write the queue as a CSV to fill in (new_points, comment)")
    review.add_argument("--import", dest="import_", metavar="decisions.csv",
                        help="import a filled CSV: every line checked, nothing imported if any is wrong")
    review.add_argument("--list", action="store_true", help="print the queue and exit (with --code: its entries of that "
                                                             "kind; with --lab: of that lab)")
    review.add_argument("--codes", action="store_true", help="print the kinds of open entries with their counts and exit")
    review.add_argument("--code", help="--list: only entries of this kind (a code `--codes` prints)")
    review.add_argument("--decide-code", metavar="CODE",
                        help="decide every open item of this kind at once (of --lab, or the whole course): --points N, "
                             "--full or --confirm, with --reason; stored per submission, stale on a resubmission")
    review.add_argument("--full", action="store_true", help="--decide-code: each item gets its maximum")
    review.add_argument("--request", metavar="STUDENT", help="enter a regrade request for this student (key, email or sid)")
    review.add_argument("--decide", metavar="STUDENT",
                        help="decide a whole submission the machine could not grade (unreadable, timeout, memory, crash): "
                             "--points N or --missing, with --lab and --reason")
    review.add_argument("--points", type=float, help="the lab score --decide gives, or each item's points --decide-code "
                                                      "gives (capped at the item's maximum)")
    review.add_argument("--missing", action="store_true", help="--decide: the upload counts as no submission")
    review.add_argument("--confirm", action="store_true",
                        help="--decide: the machine's verdict on the whole submission stands (one decision for every item); "
                             "--decide-code: the machine's points stand on every item of the kind")
    review.add_argument("--upload", metavar="HASH|PATH",
                        help="--decide: the upload (hash, 8+ characters of it, or path) when its lab is unknown")
    review.add_argument("--lab", help="the lab of --request or --decide; the lab --decide-code, --codes and --list keep to")
    review.add_argument("--item", help="the rubric item of --request (part.item; default: the whole submission)")
    review.add_argument("--reason", help="what the student asks (--request), or why staff decide so (--decide)")
    review.add_argument("--port", type=int, default=0, help="port of the review page on 127.0.0.1 (default: a free one)")
    review.add_argument("--no-browser", action="store_true", help="print the page's URL without opening a browser")
    review.set_defaults(func=_cmd_review)

    assign = sub.add_parser("assign", help="regenerate the student notebooks in assignments/ from the Otter masters")
    assign.add_argument("--root", default=".", help="project root holding solutions/ and assignments/ (default: .)")
    assign.add_argument("--lab", action="append", choices=lab_ids(), help="only this lab (repeatable; default: all)")
    assign.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed notebook drifted")
    assign.add_argument("--run-tests", action="store_true", help="let otter assign execute the master and run its tests")
    assign.set_defaults(func=_cmd_assign)

    autograder = sub.add_parser("autograder", help="build the Gradescope autograder zips from the Otter masters")
    autograder.add_argument("-o", "--output", required=True, help="folder for one <lab>-autograder.zip per registered lab and requirements-lock.txt")
    autograder.add_argument("--master", action="append", metavar="LAB=PATH",
                            help="build LAB from this master instead of solutions/LAB/LAB-master.ipynb (repeatable)")
    autograder.add_argument("--no-run-tests", action="store_true", help="skip otter assign's check of the tests against the solutions")
    autograder.add_argument("--root", default=None, help="the repository root (default: the working directory)")
    autograder.add_argument("--rerun-notebook", action="store_true",
                            help="also run each student's notebook in the sandbox on Gradescope (staff flags only; slower)")
    autograder.add_argument("--notebook-budget", type=float, default=None, metavar="SECONDS",
                            help="seconds a notebook may run in the sandbox (default 120)")
    autograder.add_argument("--course", default=None, metavar="course.toml",
                            help="ship this course file (late policy) and its extensions CSV in every zip")
    autograder.set_defaults(func=_cmd_autograder)

    kit = sub.add_parser("kit", help="write the student kit: every lab's notebook, the student build's wheel, a pinned requirements.txt, a README")
    kit.add_argument("-o", "--output", required=True, help="folder to write the kit into (created if needed)")
    kit.add_argument("--root", default=".", help="the repository root holding pyproject.toml and assignments/ (default: .)")
    kit.set_defaults(func=_cmd_kit)

    generate_cmd = sub.add_parser("generate", help="write the Otter masters, student notebooks or reference submissions from the labs")
    generate_cmd.add_argument("kind", choices=("masters", "notebooks", "references"),
                              help="masters: from each lab's words; notebooks: otter assign of the masters; "
                                   "references: each track's student notebook filled in and executed")
    generate_cmd.add_argument("--lab", action="append", choices=lab_ids(), help="only this lab (repeatable; default: all)")
    generate_cmd.add_argument("--track", action="append", help="references: only this track (repeatable; default: the lab's)")
    generate_cmd.add_argument("--root", default=".", help="project root holding solutions/ and assignments/ (default: .)")
    generate_cmd.add_argument("--check", action="store_true",
                              help="write nothing; exit 1 naming each committed file that differs from what would be written")
    generate_cmd.set_defaults(func=_cmd_generate)


def format_staff_only(command: str) -> str:
    """What a student's ``mlsys-grader`` says to a staff command it does not have."""
    return (f"mlsys-grader: `{command}` is a course-staff command, not part of the student kit; "
            f"this install has {', '.join(STUDENT_COMMANDS)}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # A student command (``check`` in a fresh process is what a student waits for) needs no staff command's parser,
    # whose defaults load the course modules; every other invocation, ``--help`` included, gets the whole parser.
    parser = build_parser(staff=False if argv and argv[0] in STUDENT_COMMANDS else None)
    if argv and argv[0] in STAFF_COMMANDS and not staff_installed():
        print(format_staff_only(argv[0]), file=sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        # Every store is one transaction and every file is written whole (a temporary file, then renamed),
        # so a rerun of the same command completes what this one began.
        print(f"mlsys-grader: interrupted; nothing was half written — run `mlsys-grader {argv[0]}` again to finish",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except (GraderError, OSError) as exc:
        print(f"mlsys-grader: cannot grade: {format_error(exc)}", file=sys.stderr)
        return EXIT_UNGRADABLE


def _quiet_stdout() -> None:
    """The reader of our output went away (``| head``): later writes and the interpreter's final flush go nowhere,
    instead of raising again at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's capture): nothing will flush into the pipe
        pass


if __name__ == "__main__":
    sys.exit(main())
