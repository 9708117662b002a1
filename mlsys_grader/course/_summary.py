"""The course summary as one self-contained HTML page (inline CSS and SVG; no script, no network).

Sections: the outcome (the final gradebook per lab: students, submitted, missing, unreadable, late
and the points charged, decided by staff, the final mean and distribution; uploads of unknown lab);
headline counts of the inputs; per lab the machine's score distribution and the pass rate of every
rubric item; the most common findings with an example message; flagged submissions;
collusion groups; scores that moved since the last run; inputs that could not be graded.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from .._version import __version__
from ..core import flags as flag_names
from ..core.flags import BY_CRITERION
from ..core.report import INTEGRITY_CRITERIA, render_html
from ._files import replace_atomically
from ._formative import FORMATIVE_ITEM, predicted_right
from ._overrides import decisions_by_item
from ._row import NOT_GRADED, Row, Status

BINS = 10
TOP_FINDINGS = 15
MAX_TABLE_ROWS = 500

# Pass-rate bar colours by the share earning the item in full: (lowest rate, colour, words for the legend).
RATE_COLOURS = ((1.0, "#2f9e44", "100 %"), (0.9, "#94d82d", "90–99 %"), (0.75, "#fab005", "75–89 %"),
                (0.5, "#f76707", "50–74 %"), (0.0, "#e03131", "below 50 %"))


@dataclass(frozen=True)
class PathCell:
    """A table cell holding a path (or a list of paths) that may wrap after each separator."""

    text: str
    kind: ClassVar[str] = "path"


@dataclass(frozen=True)
class FlagsCell:
    """A table cell holding ``;``-separated staff flags, each shown as a badge."""

    text: str
    kind: ClassVar[str] = "flags"


def histogram(scores: Sequence[float], max_score: float, label: str) -> dict[str, Any]:
    """The geometry of an SVG bar chart of ``scores`` in :data:`BINS` equal bins from 0 to ``max_score``."""
    width, height, pad = 420, 220, 32
    counts = [0] * BINS
    for score in scores:
        index = min(BINS - 1, int(BINS * score / max_score)) if max_score else 0
        counts[max(index, 0)] += 1
    top = max(counts) or 1
    bar_w = (width - 2 * pad) / BINS
    bars = []
    for i, count in enumerate(counts):
        h = (height - 2 * pad) * count / top
        bars.append({"x": pad + i * bar_w, "y": height - pad - h, "h": h, "count": count,
                     "lo": max_score * i / BINS, "hi": max_score * (i + 1) / BINS})
    return {"label": label, "width": width, "height": height, "pad": pad, "bar_w": bar_w, "bars": bars, "max_score": max_score}


def pass_rates(rates: Sequence[tuple[str, float, int]], label: str) -> dict[str, Any]:
    """The geometry of horizontal SVG bars: the share of graded submissions earning each rubric item in full."""
    row_h, left, width = 16, 270, 600
    bars = [{"item": item, "rate": rate, "n": n, "y": 10 + i * row_h, "w": (width - left - 60) * rate,
             "colour": next(colour for floor, colour, _ in RATE_COLOURS if rate >= floor)}  # 83 % must not look like 100 %
            for i, (item, rate, n) in enumerate(rates)]
    return {"label": label, "row_h": row_h, "left": left, "width": width, "height": row_h * len(rates) + 24, "bars": bars}


def _who(row: Mapping[str, Any]) -> str:
    """The student's name or email when the input says; otherwise the input's path."""
    return row.get("student_name") or row.get("student_email") or row["path"]


def _student(row: Mapping[str, Any]) -> str:
    return row.get("student_name") or row.get("student_email") or "—"


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def common_findings(rows: Sequence[Row], top: int = TOP_FINDINGS) -> list[tuple[int, str, str, str, str]]:
    """(count, part, criterion, rubric item, example message), most frequent first; numbers ignored when grouping."""
    counts: Counter = Counter()
    example: dict[tuple, str] = {}
    for row in rows:
        seen = set()
        for part, criterion, item, message in row.findings:
            key = (part, criterion, item, _NUMBER.sub("#", message))
            if key not in seen:
                seen.add(key)
                counts[key] += 1
                example.setdefault(key, message)
    return [(n, k[0], k[1], k[2], example[k]) for k, n in counts.most_common(top)]


def _is_note(part: str, criterion: str, item: str) -> bool:
    """A finding that costs no points and raises no flag (e.g. the marimo lock-time excuse)."""
    return not item and criterion not in BY_CRITERION and criterion not in INTEGRITY_CRITERIA \
        and not (part == "bundle" and criterion == "format")


def first_reason(row: Row) -> str:
    """The row's reasons with the reason for its flag first and notes (no points, no flag) after."""
    notes = {f"{part}/{criterion}: {message}" for part, criterion, item, message in row.findings
             if _is_note(part, criterion, item)}
    pieces = row.reason_list
    return " | ".join([p for p in pieces if p not in notes] + [p for p in pieces if p in notes])


def _collusion_evidence(group: Any, rows: Sequence[Row]) -> str:
    """What the paired submissions share: the parts with identical times, and the rationale's opening words."""
    shown = []
    if "timestamps" in group.bases:
        shown.append(f"identical capture, lock or shown times in parts {', '.join(group.parts)}")
    if "clock" in group.bases:
        shown.append("the same intervals between lock, result and capture as the other's, part by part, at a person's pace, "
                     "whatever each part's clock said")
    if "rationale" in group.bases:
        text = rows[group.members[0]].rationale
        shown.append(f"rationale: “{text[:200]}{'…' if len(text) > 200 else ''}”")
    return "; ".join(shown)


def _pair_basis(pair: Any) -> str:
    if pair.basis == "timestamps":
        return f"{pair.shared} identical times in {', '.join(pair.parts)}"
    if pair.basis == "clock":
        return f"{pair.shared} intervals a person paced, the same to within seconds in {', '.join(pair.parts)} (each part's clock offset removed)"
    return f"{pair.basis} {pair.similarity:.2f}"


def _formative_columns(columns: Iterable[str], lab_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The formative columns: each a share predicted right, not points."""
    return [c for c in columns if c.endswith(f".{FORMATIVE_ITEM}") and any(isinstance(row.get(c), bool) for row in lab_rows)]


def _item_columns(columns: Iterable[str], formative: Sequence[str], lab_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rubric-item columns (not formative) that some row of the lab fills."""
    return [c for c in columns if "." in c and c not in formative and any(row.get(c, "") != "" for row in lab_rows)]


def _item_rate(item: str, lab_rows: Sequence[Mapping[str, Any]]) -> tuple[str, float, int]:
    """(item, share of the rows filling it that earn its best positive score, how many rows fill it)."""
    have = [row for row in lab_rows if row.get(item, "") != ""]
    best = max(float(row[item]) for row in have)
    return item, sum(1 for row in have if float(row[item]) >= best and best > 0) / len(have), len(have)


def _lab_section(lab: str, lab_rows: Sequence[Mapping[str, Any]], columns: Iterable[str]) -> dict[str, Any]:
    """One lab's section: its counts, mean, share predicted right, score histogram and pass rate per item."""
    scores = [float(row["score"]) for row in lab_rows]
    max_score = max(float(row["max_score"] or 0) for row in lab_rows)
    formative = _formative_columns(columns, lab_rows)
    rates = [_item_rate(item, lab_rows) for item in _item_columns(columns, formative, lab_rows)]
    return {"name": lab, "count": len(lab_rows), "mean": sum(scores) / len(scores), "max_score": max_score,
            "full": sum(1 for s in scores if s >= max_score), "predicted_right": predicted_right(lab_rows, formative),
            "histogram": histogram(scores, max_score, f"{lab}: score distribution"),
            "pass_rates": pass_rates(rates, f"{lab}: pass rate per part and criterion")}


OUTCOME_COLUMNS = ("students", "submitted", "missing", "unreadable", "late", "late_points", "decided", "mean")
"""The final gradebook's counts per lab, in the order the summary's first table shows them."""


def _rows_by_lab(final: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The final gradebook's rows grouped by lab, in the order each lab first appears."""
    labs: dict[str, list[Mapping[str, Any]]] = {}
    for row in final:
        labs.setdefault(str(row["lab"]), []).append(row)
    return labs


def _most_points(rows: Sequence[Mapping[str, Any]]) -> float:
    """The largest maximum score the rows give (0.0 when none gives one)."""
    return max((float(row["max_score"]) for row in rows if row["max_score"] not in ("", None)), default=0.0)


def _unreadable(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many rows the machine could not grade (by the machine's status when the row keeps it), staff not having
    decided that the upload counts as missing."""
    machine = [getattr(row, "machine_status", None) or row["status"] for row in rows if row["status"] != Status.MISSING]
    return sum(1 for status in machine if status in NOT_GRADED)


def _in_roster(row: Mapping[str, Any]) -> bool:
    """False for a row of someone the roster does not list (an unknown student's upload): not one of the lab's students."""
    flags = getattr(row, "flags", None)
    if flags is None:
        flags = row.get("_flags") or ()
    return flag_names.NOT_IN_ROSTER not in flags


def _lab_outcome(lab: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One lab's entry of :func:`outcome`: the counts partition the roster's students (submitted or missing; of the
    submitted, unreadable or not), and a row of someone the roster does not list counts in none of them."""
    rows = [row for row in rows if _in_roster(row)]
    scores = [float(row["score"] or 0) for row in rows]
    most = _most_points(rows)
    penalties = [float(row["late_penalty"] or 0) for row in rows]
    return {"lab": lab, "students": len(rows),
            "submitted": sum(1 for row in rows if row["input_hash"] and row["status"] != Status.MISSING),
            "missing": sum(1 for row in rows if row["status"] == Status.MISSING),
            "unreadable": _unreadable(rows),
            "late": sum(1 for points in penalties if points > 0), "late_points": round(sum(penalties), 6),
            "decided": sum(1 for row in rows if row.get("decision") or row.get("overrides")),
            "mean": sum(scores) / len(scores) if scores else 0.0, "max_score": most,
            "histogram": histogram(scores, most, f"{lab}: final score distribution")}


def outcome(final: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per lab, from the final gradebook (one row per student and lab): how many students, how many handed something
    in, are missing, handed in an upload the machine could not grade (unreadable, timeout, memory, crash), were charged
    a late penalty (and the points it took), have a staff decision or override in force; the mean final score and its
    distribution."""
    return [_lab_outcome(lab, rows) for lab, rows in sorted(_rows_by_lab(final).items())]


def _cards(result: Any, graded: Sequence[Row], flagged: Sequence[Row]) -> list[tuple[str, int, bool]]:
    """The headline counts: (label, count, whether to highlight it)."""
    rows = result.rows
    return [("inputs", len(rows), False), ("graded", len(graded), False),
            ("ungradable", len(rows) - len(graded), len(rows) > len(graded)),
            ("flagged", len(flagged), bool(flagged)), ("collusion groups", len(result.groups), bool(result.groups)),
            ("scores moved", len(result.changes), False)]


def _unplaced_table(result: Any) -> list[tuple[Any, ...]]:
    """(student, path, reasons) of every upload of unknown lab."""
    return [(_student(r), PathCell(r["path"]), r["reasons"][:300]) for r in getattr(result, "unplaced", []) or []]


def _lab_sections(graded: Sequence[Row], columns: Iterable[str]) -> list[dict[str, Any]]:
    """:func:`_lab_section` of every lab with a graded input, by lab."""
    return [_lab_section(lab, [row for row in graded if row["lab"] == lab], columns)
            for lab in sorted({row["lab"] for row in graded})]


def _flagged_table(flagged: Sequence[Row]) -> list[tuple[Any, ...]]:
    """(student, path, lab, track, score, flags, collusion group, reasons) of every flagged input."""
    return [(_student(r), PathCell(r["path"]), r["lab"], r["track"], r["score"], FlagsCell(r["flags"]),
             r["collusion_group"], first_reason(r)[:240]) for r in flagged]


def _collusion_pairs(group: Any, rows: Sequence[Row]) -> PathCell:
    """The group's first ten pairs, each with what pairs them."""
    return PathCell("; ".join(f"{_who(rows[p.left])} ↔ {_who(rows[p.right])} ({_pair_basis(p)})" for p in group.pairs[:10]))


def _collusion_table(result: Any) -> list[tuple[Any, ...]]:
    """(group, lab, bases, members, pairs, evidence) of every collusion group."""
    rows = result.rows
    return [(g.group_id, g.lab, ", ".join(g.bases), PathCell("; ".join(_who(rows[m]) for m in g.members)),
             _collusion_pairs(g, rows), _collusion_evidence(g, rows))
            for g in result.groups]


def _overrides_table(result: Any) -> list[tuple[Any, ...]]:
    """(student, lab, machine score, score, overrides, stale overrides) of every final row with an override."""
    return [(_student(r), r["lab"], r.get("machine_score", ""), r["score"], r.get("overrides", ""),
             r.get("stale_overrides", "")) for r in getattr(result, "final", []) or []
            if r.get("overrides") or r.get("stale_overrides")]


def _agreement_table(result: Any) -> list[tuple[Any, ...]]:
    """(item, why, decided, changed, share changed) of every kind of staff decision."""
    return [(item, why, n, changed, f"{changed / n:.0%}") for item, why, n, changed in getattr(result, "agreement", [])]


def _agreement_items_table(result: Any) -> list[tuple[Any, ...]]:
    """(item, decided, changed, share changed) of every rubric item staff decided."""
    return [(item, n, changed, f"{changed / n:.0%}") for item, n, changed in decisions_by_item(getattr(result, "agreement", []))]


def render_summary(result: Any, *, title: str = "mlsys-grader course summary") -> str:
    """The HTML page for a :class:`~mlsys_grader.course._gradebook.GradebookResult`."""
    rows = result.rows
    graded = [row for row in rows if row["status"] == "graded"]
    flagged = [row for row in rows if row["flags"]]
    bad = [row for row in rows if row["status"] != "graded"]
    return render_html(
        "summary.html", title=title, now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), version=__version__,
        result=result, cards=_cards(result, graded, flagged), max_table_rows=MAX_TABLE_ROWS, rate_colours=RATE_COLOURS,
        outcome=outcome(getattr(result, "final", []) or []),
        unplaced=_unplaced_table(result),
        labs=_lab_sections(graded, result.columns),
        findings=common_findings(graded),
        flagged=_flagged_table(flagged),
        collusion=_collusion_table(result),
        changes=[(PathCell(c.who), c.lab, c.old_score, c.new_score, c.delta, c.cause) for c in result.changes],
        overrides=_overrides_table(result),
        agreement=_agreement_table(result),
        agreement_items=_agreement_items_table(result),
        ungradable=[(PathCell(r["path"]), r["status"], r["reasons"][:300]) for r in bad])


def write_summary(result: Any, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_summary` to ``path`` (UTF-8)."""
    text = render_summary(result)
    with replace_atomically(path) as handle:
        handle.write(text)
