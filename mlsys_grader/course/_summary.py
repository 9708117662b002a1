"""The course summary as one self-contained HTML page (inline CSS and SVG; no script, no network).

Sections: headline counts; per lab the score distribution and the pass rate of every
rubric item; the most common findings with an example message; flagged submissions;
collusion groups; scores that moved since the last run; inputs that could not be graded.
"""

from __future__ import annotations

import html
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .._version import __version__

BINS = 10
TOP_FINDINGS = 15
MAX_TABLE_ROWS = 500
_esc = html.escape

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1f2933;max-width:1200px}
h1{font-size:1.6em;margin-bottom:4px} h2{margin-top:32px;border-bottom:2px solid #d9e2ec;padding-bottom:4px}
.meta{color:#52606d} .cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #d9e2ec;border-radius:8px;padding:10px 16px;min-width:110px}
.card b{display:block;font-size:1.6em} .card.warn b{color:#c0392b}
table{border-collapse:collapse;margin:8px 0;font-size:.9em;width:100%}
th,td{border:1px solid #d9e2ec;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f0f4f8} td.num{text-align:right;font-variant-numeric:tabular-nums}
.flag{display:inline-block;white-space:nowrap;background:#fdecea;color:#a61b1b;border-radius:4px;padding:0 5px;margin:1px;font-size:.85em}
.charts{display:flex;gap:24px;flex-wrap:wrap} figure{margin:0} figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px;fill:#334e68}
"""


def _histogram(scores: Sequence[float], max_score: float, label: str) -> str:
    """An SVG bar chart of ``scores`` in :data:`BINS` equal bins from 0 to ``max_score``."""
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
        x, y = pad + i * bar_w, height - pad - h
        lo, hi = max_score * i / BINS, max_score * (i + 1) / BINS
        bars.append(f'<rect class="bar" x="{x + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" fill="#3e7cb1">'
                    f'<title>{lo:g}–{hi:g}: {count}</title></rect>')
        if count:
            bars.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>')
        bars.append(f'<text x="{x:.1f}" y="{height - pad + 14}" text-anchor="middle">{lo:g}</text>')  # at the bin's left edge
    bars.append(f'<text x="{width - pad}" y="{height - pad + 14}" text-anchor="middle">{max_score:g}</text>')
    axis = f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#334e68"/>'
    return (f'<figure><figcaption>{_esc(label)}</figcaption><svg class="chart histogram" role="img" '
            f'aria-label="{_esc(label)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'{axis}{"".join(bars)}<text x="{width / 2}" y="{height - 4}" text-anchor="middle">score</text></svg></figure>')


# Pass-rate bar colours by the share earning the item in full: (lowest rate, colour, words for the legend).
RATE_COLOURS = ((1.0, "#2f9e44", "100 %"), (0.9, "#94d82d", "90–99 %"), (0.75, "#fab005", "75–89 %"),
                (0.5, "#f76707", "50–74 %"), (0.0, "#e03131", "below 50 %"))


def _pass_rates(rates: Sequence[tuple[str, float, int]], label: str) -> str:
    """Horizontal SVG bars: the share of graded submissions earning each rubric item in full."""
    row_h, left, width = 16, 270, 600
    height = row_h * len(rates) + 24
    parts = []
    for i, (item, rate, n) in enumerate(rates):
        y = 10 + i * row_h
        w = (width - left - 60) * rate
        color = next(colour for floor, colour, _ in RATE_COLOURS if rate >= floor)  # 83 % must not look like 100 %
        parts.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{_esc(item)}</text>'
                     f'<rect class="bar" x="{left}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" fill="{color}">'
                     f'<title>{_esc(item)}: {rate:.0%} of {n}</title></rect>'
                     f'<text x="{left + w + 4:.1f}" y="{y + 11}">{rate:.0%}</text>')
    legend = " ".join(f'<span class="swatch" style="display:inline-block;width:10px;height:10px;background:{colour}"></span> '
                      f'{_esc(words)}' for _, colour, words in RATE_COLOURS)
    return (f'<figure><figcaption>{_esc(label)}</figcaption><svg class="chart passrate" role="img" aria-label="{_esc(label)}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">{"".join(parts)}</svg>'
            f'<div class="legend">{legend}</div></figure>')


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    body = []
    for count, row in enumerate(rows):
        if count >= MAX_TABLE_ROWS:
            body.append(f'<tr><td colspan="{len(headers)}">… more rows in the CSV gradebook</td></tr>')
            break
        cells = []
        for value in row:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                cells.append(f'<td class="num">{value:g}</td>')
            elif isinstance(value, _Raw):
                cells.append(f"<td>{value}</td>")
            else:
                cells.append(f"<td>{_esc(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


class _Raw(str):
    """Already-escaped HTML for a table cell."""


def _flags(text: str) -> _Raw:
    return _Raw("".join(f'<span class="flag">{_esc(flag)}</span>' for flag in text.split(";") if flag))


def _who(row: Mapping[str, Any]) -> str:
    """The student's name or email when the input says; otherwise the input's path."""
    return row.get("student_name") or row.get("student_email") or row["path"]


def _path(text: str) -> _Raw:
    """A path that may wrap after each separator."""
    return _Raw(_esc(text).replace("/", "/<wbr>"))


def _student(row: Mapping[str, Any]) -> str:
    return row.get("student_name") or row.get("student_email") or "—"


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def common_findings(rows: Sequence[Mapping[str, Any]], top: int = TOP_FINDINGS) -> list[tuple[int, str, str, str, str]]:
    """(count, part, criterion, rubric item, example message), most frequent first; numbers ignored when grouping."""
    counts: Counter = Counter()
    example: dict[tuple, str] = {}
    for row in rows:
        seen = set()
        for part, criterion, item, message in row.get("_findings", []):
            key = (part, criterion, item, _NUMBER.sub("#", message))
            if key not in seen:
                seen.add(key)
                counts[key] += 1
                example.setdefault(key, message)
    return [(n, k[0], k[1], k[2], example[k]) for k, n in counts.most_common(top)]


def _collusion_evidence(group: Any, rows: Sequence[Mapping[str, Any]]) -> str:
    """What the paired submissions share: the parts with identical times, and the rationale's opening words."""
    shown = []
    if "timestamps" in group.bases:
        shown.append(f"identical capture, lock or shown times in parts {', '.join(group.parts)}")
    if "rationale" in group.bases:
        text = rows[group.members[0]].get("_rationale", "")
        shown.append(f"rationale: “{text[:200]}{'…' if len(text) > 200 else ''}”")
    return "; ".join(shown)


def _pair_basis(pair: Any) -> str:
    if pair.basis == "timestamps":
        return f"{pair.shared} identical times in {', '.join(pair.parts)}"
    return f"{pair.basis} {pair.similarity:.2f}"


def render_summary(result: Any, *, title: str = "mlsys-grader course summary") -> str:
    """The HTML page for a :class:`~mlsys_grader.course._gradebook.GradebookResult`."""
    rows = result.rows
    graded = [row for row in rows if row["status"] == "graded"]
    flagged = [row for row in rows if row["flags"]]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cards = [("inputs", len(rows), False), ("graded", len(graded), False),
             ("ungradable", len(rows) - len(graded), len(rows) > len(graded)),
             ("flagged", len(flagged), bool(flagged)), ("collusion groups", len(result.groups), bool(result.groups)),
             ("scores moved", len(result.changes), False)]
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
           f"<style>{CSS}</style></head><body><h1>{_esc(title)}</h1>"
           f"<p class='meta'>Generated {now} by mlsys-grader {__version__} · {result.graded} graded now, "
           f"{result.reused} reused from the gradebook · {result.seconds:.1f} s</p><div class='cards'>"]
    out += [f"<div class='card{' warn' if warn else ''}'><b>{value}</b>{_esc(name)}</div>" for name, value, warn in cards]
    out.append("</div>")
    for lab in sorted({row["lab"] for row in graded}):
        lab_rows = [row for row in graded if row["lab"] == lab]
        scores = [float(row["score"]) for row in lab_rows]
        max_score = max(float(row["max_score"] or 0) for row in lab_rows)
        mean = sum(scores) / len(scores)
        full = sum(1 for s in scores if s >= max_score)
        items = [c for c in result.columns if "." in c and any(row.get(c, "") != "" for row in lab_rows)]
        rates = []
        for item in items:
            have = [row for row in lab_rows if row.get(item, "") != ""]
            best = max(float(row[item]) for row in have)
            rates.append((item, sum(1 for row in have if float(row[item]) >= best and best > 0) / len(have), len(have)))
        out.append(f"<section class='lab' id='{_esc(lab)}'><h2>{_esc(lab)}</h2>"
                   f"<p>{len(lab_rows)} graded · mean {mean:.1f} / {max_score:g} · {full} with full marks</p><div class='charts'>"
                   + _histogram(scores, max_score, f"{lab}: score distribution")
                   + _pass_rates(rates, f"{lab}: pass rate per part and criterion") + "</div></section>")
    findings = common_findings(graded)
    out.append("<h2>Most common findings</h2>")
    out.append(_table(["submissions", "part", "criterion", "rubric item", "example message"], findings, "findings")
               if findings else "<p>No findings: every graded submission passed every check.</p>")
    out.append("<h2>Flagged submissions</h2>")
    out.append(_table(["student", "path", "lab", "track", "score", "flags", "group", "first reason"],
                      [(_student(r), _path(r["path"]), r["lab"], r["track"], r["score"], _flags(r["flags"]), r["collusion_group"],
                        r["reasons"].split(" | ")[0][:240]) for r in flagged], "flagged")
               if flagged else "<p>No submission is flagged.</p>")
    out.append("<h2>Possible collusion</h2>")
    out.append(_table(["group", "lab", "basis", "members", "pairs", "evidence"],
                      [(g.group_id, g.lab, ", ".join(g.bases), _path("; ".join(_who(rows[m]) for m in g.members)),
                        _path("; ".join(f"{_who(rows[p.left])} ↔ {_who(rows[p.right])} ({_pair_basis(p)})"
                                        for p in g.pairs[:10])), _collusion_evidence(g, rows))
                       for g in result.groups], "collusion")
               if result.groups else "<p>No shared capture times or near-identical rationales found.</p>")
    if result.changes:
        out.append("<h2>Scores moved since the last run</h2>")
        out.append(_table(["who", "lab", "before", "after", "change", "cause"],
                          [(_path(c.who), c.lab, c.old_score, c.new_score, c.delta, c.cause) for c in result.changes], "changes"))
    bad = [row for row in rows if row["status"] != "graded"]
    if bad:
        out.append("<h2>Inputs that could not be graded</h2>")
        out.append(_table(["path", "status", "reason"], [(_path(r["path"]), r["status"], r["reasons"][:300]) for r in bad], "ungradable"))
    out.append("</body></html>")
    return "".join(out)


def write_summary(result: Any, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_summary` to ``path`` (UTF-8)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_summary(result))
