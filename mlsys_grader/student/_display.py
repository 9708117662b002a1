"""What a notebook cell shows: notices, part results, progress, self-checks, options and book text.

Every object has ``__repr__`` (plain text, for a console or a test) and an HTML or
Markdown rendering for Jupyter, so a student sees a card or a table, never a dict.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.report import GradeReport

_KIND_COLOURS = {"info": ("#eff6ff", "#2563eb"), "success": ("#f0fdf4", "#2ca02c"),
                 "warn": ("#fffbeb", "#d97706"), "danger": ("#fef2f2", "#dc2626")}


def box(kind: str, body: str) -> str:
    """A coloured card (``body`` is HTML)."""
    background, border = _KIND_COLOURS.get(kind, _KIND_COLOURS["info"])
    return (f"<div style='border-left:4px solid {border};background:{background};padding:8px 12px;"
            f"border-radius:6px;margin:6px 0;color:#111827'>{body}</div>")


@dataclass
class Notice:
    """A message for the student (refusal, confirmation or warning), shown as a coloured box."""

    kind: str
    title: str
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """False for refusals and warnings."""
        return self.kind in ("info", "success")

    def __repr__(self) -> str:
        return "\n".join([f"[{self.kind}] {self.title}", *(f"  - {line}" for line in self.lines)])

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines)
        return box(self.kind, f"<b>{html.escape(self.title)}</b>" + (f"<ul style='margin:4px 0'>{items}</ul>" if items else ""))


@dataclass
class PartResult:
    """A part's result as the seed shows it: observation, table (pandas) and chart (matplotlib)."""

    part: str
    title: str
    prediction: str
    observation: str
    kind: str
    table: Any
    figure: Any
    warnings: list[str] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()

    def __repr__(self) -> str:
        lines = [f"Part {self.part} · {self.title}", f"Your prediction: {self.prediction}",
                 f"Observed analytically: {self.observation}", self.table.to_string(index=False)]
        lines += [f"WARNING: {warning}" for warning in self.warnings]
        lines += [repr(notice) for notice in self.notices]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        warnings = "".join(box("danger", html.escape(w)) for w in self.warnings)
        warnings += "".join(notice._repr_html_() for notice in self.notices)
        picture = base64.b64encode(self.png()).decode("ascii")
        return (
            f"<div class='mlsys-part'><h4>Part {html.escape(self.part)} · {html.escape(self.title)}</h4>{warnings}"
            + box(self.kind, f"<b>Your prediction:</b> {html.escape(self.prediction)}. "
                             f"<b>Observed analytically:</b> {html.escape(self.observation)}")
            + self.table.to_html(index=False, classes="mlsys-table", border=0)
            + f"<img alt='Part {html.escape(self.part)} chart' src='data:image/png;base64,{picture}'/></div>"
        )


@dataclass
class Progress:
    """The student's own progress: one row per part (captured, fresh, contrasting)."""

    table: Any
    ready: bool

    def __repr__(self) -> str:
        return self.table.to_string(index=False)

    def _repr_html_(self) -> str:
        status = ("All five parts are captured, fresh and contrasting." if self.ready
                  else "Capture five fresh, contrasting parts; recapture any part marked STALE.")
        return self.table.to_html(index=False, classes="mlsys-table", border=0) + box("success" if self.ready else "warn", html.escape(status))


@dataclass
class PartCheck:
    """The public self-check for one part (or the synthesis)."""

    part: str
    score: float
    max_score: float
    items: list[tuple[str, float, float]]
    messages: list[str]

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score

    def __repr__(self) -> str:
        lines = [f"{self.part}: {self.score:g} / {self.max_score:g} (public checks)"]
        lines += [f"  {item}: {points:g} / {maximum:g}" for item, points, maximum in self.items]
        lines += [f"  what to do: {message}" for message in self.messages]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(item)}</td><td>{points:g} / {maximum:g}</td></tr>"
                       for item, points, maximum in self.items)
        todo = "".join(f"<li>{html.escape(message)}</li>" for message in self.messages)
        body = (f"<b>{html.escape(self.part)} · {self.score:g} / {self.max_score:g}</b> (public checks; hidden checks run after the deadline)"
                f"<table>{rows}</table>" + (f"<ul>{todo}</ul>" if todo else ""))
        return box("success" if self.passed else "warn", body)


def points(value: float) -> str:
    """``1 point``, ``45 points``."""
    return f"{value:g} point" + ("" if value == 1 else "s")


class SelfCheck(GradeReport):
    """The public self-check of the saved bundle: the grader's report without its hidden items.

    It is labelled as the public checks, never as a grade: ``hidden_points`` more are
    decided by checks that run after the deadline (every number replays; formative
    prediction feedback).
    """

    hidden_points: float = 0.0

    def headline(self) -> str:
        verdict = "all pass" if self.score >= self.max_score else f"{points(self.max_score - self.score)} still to earn"
        return (f"Public checks: {self.score:g} of {points(self.max_score)} ({verdict}). This is not your grade: "
                f"hidden checks worth {points(self.hidden_points)} (every number must replay) run after the deadline.")

    def text(self) -> str:
        lines = [f"{self.lab} · track {self.track}", self.headline()]
        for name, part in self.parts.items():
            lines.append(f"  {name:<9} {part.score:>5g} / {part.max_score:<5g} public")
        lines += ["What to do:", *(f"  [{f.part}] {f.message}" for f in self.findings)] if self.findings else \
            ["Nothing to do: every public check passes."]
        return "\n".join(lines)

    __str__ = text

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{part.score:g} / {part.max_score:g}</td><td>"
            + "<br>".join(esc(f.message) for f in self.findings_for(name)) + "</td></tr>"
            for name, part in self.parts.items())
        bundle = "".join(f"<li>{esc(f.message)}</li>" for f in self.findings_for("bundle"))
        table = (f"<table class='mlsys-table'><thead><tr><th>Part</th><th>Public checks</th><th>What to do</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>" + (f"<ul>{bundle}</ul>" if bundle else ""))
        return box("success" if self.score >= self.max_score else "warn", f"<b>{esc(self.headline())}</b>") + table


class Options(dict):
    """Allowed values (value → label) for each closed answer; a dict that renders as the notebook's option list."""

    def __repr__(self) -> str:
        return "\n".join(f"{name}: " + "; ".join(f'"{value}" ({label})' for value, label in options.items())
                         for name, options in self.items())

    def _repr_html_(self) -> str:
        items = "".join(f"<li><code>{html.escape(name)}</code>: "
                        + "; ".join(f"<code>\"{html.escape(str(value))}\"</code> ({html.escape(label)})"
                                    for value, label in options.items()) + "</li>"
                        for name, options in self.items())
        return f"<ul>{items}</ul>"


@dataclass(frozen=True)
class BookText:
    """A passage of the lab's text filled in for the track, shown as Markdown."""

    markdown: str

    def __repr__(self) -> str:
        return self.markdown.replace("**", "")

    def _repr_markdown_(self) -> str:
        return self.markdown


def frame(rows: list[Mapping[str, Any]]):
    import pandas as pd

    return pd.DataFrame(rows)
