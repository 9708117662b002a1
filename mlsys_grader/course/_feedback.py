"""Feedback to hand back: one self-contained HTML page per student and lab with a gradable submission.

Written from the SQLite gradebook (the final row and the stored grade of the submission that
counts) by ``mlsys-grader feedback --db gradebook.sqlite -o DIR [--release]``.  Each page
holds the score, every part and item, the messages, the evidence numbers as recorded, the
late penalty, and the staff's overrides with their comments.  Hidden items (the replay checks and
``prediction_correct``, as on Gradescope) and the final score are withheld until
``--release``.  Pages are named ``<sid>-<lab>.html`` (the gradebook key when there is no sid).

``mlsys-grader feedback --lms canvas|moodle -o FILE.zip`` writes the same pages as the LMS's own bulk
feedback upload takes them back, each named as that LMS's download named the student's file
(:func:`lms_entry_name`); a submission that did not come from that LMS's download is written to the
folder beside the zip and listed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import default_rubric
from ..core.report import HIDDEN_ITEMS, render_html
from ..errors import GraderError
from ._formative import FORMATIVE_ITEM
from ._identity import CANVAS_NAME, MOODLE_NAME
from ._row import NOT_GRADED, FinalRow, ItemKey
from ._store import GradebookDB

_UNSAFE = re.compile(r"[^A-Za-z0-9@._-]+")


@dataclass(frozen=True)
class Feedback:
    """What :func:`write_feedback` wrote."""

    files: tuple[str, ...]
    released: bool
    skipped: int
    """Final rows without a gradable submission (missing, ungradable): no page."""


def feedback_name(row: Mapping[str, Any]) -> str:
    """``<sid>-<lab>.html``, with anything but letters, digits, ``@._-`` replaced (a key may be a path)."""
    return f"{_UNSAFE.sub('_', row['student_id'] or row['student']).strip('_')}-{row['lab']}.html"


def _stored(db: GradebookDB, input_hash: str) -> dict[str, Any] | None:
    found = db.result(input_hash)
    return dict(found) if found is not None else None


def _rubric_points(lab: str) -> dict[str, float]:
    try:
        rubric = default_rubric(lab)
    except GraderError:
        return {}
    return {f"{part}.{item}": points for part, items in rubric.parts.items() for item, points in items.items()} | {
        f"synthesis.{item}": points for item, points in rubric.synthesis.items()}


_DECIMALS = (("_us", 2), ("_ms", 2), ("_s", 2), ("_mb", 3), ("_gb", 3), ("_kb", 3), ("speedup", 2), ("_x", 2))
"""Field-name ending → decimals, as the notebooks' tables show them (times to the hundredth, data sizes to the
thousandth, speedups as 1.23×)."""


def shown_number(key: str, value: Any) -> Any:
    """An evidence number as the notebook shows it (``1234.95`` ms, not ``1234.9525333333333``); anything else as is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}" if abs(value) >= 10_000 else f"{int(value)}"
    name = key.rsplit(".", 1)[-1].lower()
    decimals = next((places for ending, places in _DECIMALS if name.endswith(ending)), None)
    if decimals is not None:
        return f"{value:,.{decimals}f}"
    return f"{value:.4g}"


WITHHELD_REASON = ("points here wait on a check shown when grades are released (the replay of your evidence, or a staff "
                   "decision); they are not lost for a reason shown on this page, and nothing here says the part passed.")
"""What a page says of a part that lost points for a reason it does not show yet (before ``--release``), so it never
says "nothing to do" beside a lost point."""


def _shown_items(row: FinalRow, result: Mapping[str, Any], release: bool
                 ) -> tuple[dict[str, list[tuple[str, Any, Any]]], float, float]:
    """(part → its shown items as (item, points or right/not, maximum), the points shown, their maximum): staff decisions
    in place of the machine's points, hidden items left out before release, a formative item as right or not."""
    findings = result.get("findings", [])
    # A grade stored before item maxima were kept falls back to the shipped rubric's points.
    item_max = result.get("item_max") or _rubric_points(row["lab"])
    parts: dict[str, list[tuple[str, Any, Any]]] = {}
    visible, visible_max = 0.0, 0.0
    overridden = row.overridden  # staff decisions replace the machine's points (course/_overrides.py)
    for column, points in result.get("items", {}).items():
        points = overridden.get(column, points)
        part, item = ItemKey.of(column)
        if item in HIDDEN_ITEMS and not release:
            continue
        most = item_max.get(column, "")
        shown: Any = points
        if item == FORMATIVE_ITEM and most == 0:  # formative: right or not, from the findings
            shown = not any(f[0] == part and f[2] == FORMATIVE_ITEM for f in findings)
        else:
            visible += float(points)
            visible_max += float(most or 0)
        parts.setdefault(part, []).append((item, shown, most))
    return parts, visible, visible_max


def _messages(result: Mapping[str, Any], parts: Mapping[str, list[tuple[str, Any, Any]]], release: bool
              ) -> list[tuple[str, str]]:
    """(part, sentence) of every finding shown, and for a part that lost points for a reason withheld until release,
    :data:`WITHHELD_REASON`."""
    findings = result.get("findings", [])
    hidden_index = set(result.get("hidden", [i for i, f in enumerate(findings) if f[2] in HIDDEN_ITEMS]))
    messages = [(f[0], f[3]) for i, f in enumerate(findings) if release or i not in hidden_index]
    explained = {part for part, _ in messages}
    return messages + [(part, WITHHELD_REASON) for part, items in parts.items() if part not in explained
                       and any(not isinstance(points, bool) and float(points) < float(most or 0) for _, points, most in items)]


def render_feedback(row: FinalRow, result: Mapping[str, Any], *, release: bool) -> str:
    """The page for one final row and its stored grade."""
    parts, visible, visible_max = _shown_items(row, result, release)
    messages = _messages(result, parts, release)
    evidence = [(part, sorted((key, shown_number(key, value)) for key, value in numbers.items()))
                for part, numbers in sorted(result.get("evidence", {}).items())]
    return render_html(
        "feedback.html", lab=row["lab"], student=row["student"], name=row["student_name"], email=row["student_email"],
        sid=row["student_id"], path=os.path.basename(row["path"]), submitted_at=row["submitted_at"], released=release,
        score=row["score"], max_score=row["max_score"], raw_score=row["raw_score"], late_penalty=row["late_penalty"],
        rule=row["rule"], visible_score=round(visible, 6), visible_max=round(visible_max, 6),
        parts=list(parts.items()), messages=messages, evidence=evidence, changes=row.get("changes", ""), comments=row.get("overrides", ""))


def _decided(row: FinalRow) -> dict[str, Any]:
    """What a page shows of an upload the machine could not grade and staff decided: the decision, in one sentence."""
    return {"items": {}, "item_max": {}, "findings": [[
        "bundle", "decision", "", f"The machine could not grade your upload ({os.path.basename(str(row['path']))}); course "
                                  f"staff read it and decided: {row['decision']}."]]}


def _pages(db_path: str | os.PathLike[str], release: bool, lab: str | None = None) -> tuple[list[tuple[FinalRow, str]], int]:
    """(final row, its page) for every final row (of ``lab``, when given) with a gradable submission or a staff decision
    on one the machine could not grade, and how many rows have neither."""
    db = GradebookDB(db_path)
    pages, skipped = [], 0
    try:
        for row in db.final():
            if lab is not None and row["lab"] != lab:
                continue
            decided = row["status"] in NOT_GRADED and bool(row.get("decision"))
            result = (_stored(db, row["input_hash"]) if row["status"] in ("graded", "regrade")
                      else _decided(row) if decided else None)
            if result is None:
                skipped += 1
                continue
            pages.append((row, render_feedback(row, result, release=release)))
    finally:
        db.close()
    return pages, skipped


def write_feedback(db_path: str | os.PathLike[str], out: str | os.PathLike[str], *, release: bool = False,
                   lab: str | None = None) -> Feedback:
    """Write one page per final row with a gradable submission into ``out`` (created)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    pages, skipped = _pages(db_path, release, lab)
    written = []
    for row, page in pages:
        path = folder / feedback_name(row)
        path.write_text(page, encoding="utf-8")
        written.append(str(path))
    return Feedback(tuple(written), release, skipped)


# -- feedback back into the LMS -------------------------------------------------------

LMS_FEEDBACK = ("canvas", "moodle")


def lms_entry_name(row: Mapping[str, Any], lms: str) -> str | None:
    """Where ``row``'s page goes in ``lms``'s bulk feedback upload, named as that LMS's own download named the
    student's file (None: the counting submission did not come from that LMS's download).

    Canvas ("Re-Upload Submissions"): ``lastfirst[_late]_userid_submissionid_<original name>-feedback.html``;
    Moodle ("Upload multiple feedback files in a zip"): ``Full Name_participantid_assignsubmission_file_/<lab>-feedback.html``.
    """
    components = [part for part in re.split(r"[\\/]", str(row["path"])) if part]
    for component in reversed(components):
        if lms == "canvas" and (canvas := CANVAS_NAME.match(component)):
            stem = os.path.splitext(canvas["original"])[0] or row["lab"]
            return (f"{canvas['name']}{canvas['late'] or ''}_{canvas['user']}_{canvas['submission']}_"
                    f"{stem}-feedback.html")
        if lms == "moodle" and (moodle := MOODLE_NAME.match(component)):
            return f"{moodle['name']}_{moodle['participant']}_assignsubmission_file_/{row['lab']}-feedback.html"
    return None


@dataclass(frozen=True)
class LmsFeedback:
    """What :func:`write_lms_feedback` wrote: the zip and its entries, and the pages that went to a folder instead."""

    zip_path: str
    entries: tuple[str, ...]
    elsewhere: tuple[tuple[str, str], ...]
    """(page written, why it is not in the zip) for submissions that did not come from the LMS's download."""
    released: bool
    skipped: int


def write_lms_feedback(db_path: str | os.PathLike[str], out: str | os.PathLike[str], lms: str, *,
                       release: bool = False, lab: str | None = None) -> LmsFeedback:
    """The feedback pages as ``lms``'s bulk feedback upload (a zip at ``out``); a page whose submission did not come
    from that LMS's download cannot be named for it and is written to the folder ``out`` without ``.zip``."""
    import zipfile

    if lms not in LMS_FEEDBACK:
        raise ValueError(f"unknown LMS {lms!r} for feedback; expected one of {', '.join(LMS_FEEDBACK)}")
    target = Path(out)
    if target.suffix.lower() != ".zip":
        raise GraderError(f"feedback --lms {lms} writes a zip: expected -o ending in .zip (got {os.fspath(out)!r})")
    pages, skipped = _pages(db_path, release, lab)
    entries, elsewhere = [], []
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for row, page in pages:
            name = lms_entry_name(row, lms)
            if name is None:
                folder = target.with_suffix("")
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / feedback_name(row)
                path.write_text(page, encoding="utf-8")
                elsewhere.append((str(path), f"{row['student']} {row['lab']}: {os.path.basename(str(row['path']))} did not come "
                                             f"from a {lms.capitalize()} download"))
                continue
            if name in entries:  # one download name per submission: a second page for it would replace the first
                raise GraderError(f"two feedback pages would be named {name!r} in the {lms} zip")
            archive.writestr(name, page)
            entries.append(name)
    os.replace(partial, target)
    return LmsFeedback(str(target), tuple(entries), tuple(elsewhere), release, skipped)
