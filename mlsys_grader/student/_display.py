"""What a notebook cell shows: notices, part results, progress, self-checks, options and book text.

Every object has ``__repr__`` (plain text, for a console or a test) and an HTML or
Markdown rendering for Jupyter, so a student sees a card or a table, never a dict.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from ..core.report import GradeReport, render_html
from ._todo import ITEM_WORDS, notes, to_do


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
        return render_html("notice.html", notice=self)


@dataclass
class PartResult:
    """A part's result as the seed shows it: observation, table (:class:`Table`) and chart (matplotlib)."""

    part: str
    title: str
    prediction: str
    observation: str
    kind: str
    table: Table
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
                 f"Observed analytically: {self.observation}", self.table.to_string()]
        lines += [f"WARNING: {warning}" for warning in self.warnings]
        lines += [repr(notice) for notice in self.notices]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return render_html("part_result.html", result=self, picture=base64.b64encode(self.png()).decode("ascii"),
                           table=self.table.to_html())


@dataclass
class Progress:
    """The student's own progress: one row per part (captured, fresh, contrasting)."""

    table: Table
    ready: bool

    def __repr__(self) -> str:
        return self.table.to_string()

    def _repr_html_(self) -> str:
        return render_html("progress.html", ready=self.ready, table=self.table.to_html())


@dataclass
class PartCheck:
    """The public self-check for one part (or the synthesis)."""

    part: str
    score: float
    max_score: float
    items: list[tuple[str, float, float]]  # (rubric item, points, maximum)
    messages: list[str]

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score

    @property
    def rows(self) -> list[tuple[str, float, float]]:
        """The items as the notebook names them (:data:`ITEM_WORDS`), with their points."""
        return [(ITEM_WORDS.get(item, item), points, maximum) for item, points, maximum in self.items]

    @property
    def heading(self) -> str:
        where = "Synthesis" if self.part == "synthesis" else f"Part {self.part}"
        return f"{where}: {self.score:g} / {self.max_score:g} on the public checks"

    def __repr__(self) -> str:
        # one line per item, then each thing to do once (a skipped part's one reason costs every item)
        lines = [self.heading]
        lines += [f"  {points:g} / {maximum:g}  {words}" for words, points, maximum in self.rows]
        lines += ["To do:", *(f"  - {message}" for message in self.messages)] if self.messages else []
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return render_html("part_check.html", check=self)


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

    @property
    def held_points(self) -> float:
        """Points waiting for staff review because the grader itself failed (neither earned nor lost)."""
        return sum(item.max_points for part in self.parts.values() for item in part.items if item.held)

    def headline(self) -> str:
        held, open_points = self.held_points, self.max_score - self.score - self.held_points
        verdicts = [f"{points(open_points)} still to earn"] if open_points > 0 else []
        if held:
            verdicts.append(f"{points(held)} held for staff review: the grader failed, not you, and nothing is lost")
        verdict = "; ".join(verdicts) or "all pass"
        return (f"Public checks: {self.score:g} of {points(self.max_score)} ({verdict}). This is not your grade: "
                f"hidden checks worth {points(self.hidden_points)} (every number must replay) run after the deadline.")

    def to_do(self, part: str) -> list[str]:
        """What to do for ``part`` (or ``"bundle"``), each thing once (:func:`~._todo.to_do`)."""
        return to_do(self.findings_for(part))

    def text(self, *, staff: bool = False) -> str:
        """The self-check in words; ``staff`` is the base report's switch and changes nothing here: a student's
        self-check never lists staff flags."""
        lines = [f"{self.lab} · track {self.track}", self.headline()]
        for name, part in self.parts.items():
            lines.append(f"  {name:<9} {part.score:>5g} / {part.max_score:<5g} public" + ("  held for staff review" if part.held else ""))
        todo = [f"  [{where}] {message}" for where in dict.fromkeys([*self.parts, *(f.part for f in self.findings)]) for message in self.to_do(where)]
        lines += ["What to do:", *todo] if todo else ["Nothing to do: every public check passes."]
        noted = notes(self.findings)
        lines += ["Notes:", *(f"  {note}" for note in noted)] if noted else []
        return "\n".join(lines)

    __str__ = text

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return render_html("self_check.html", check=self)


class Options(dict):
    """Allowed values (value → label) for each closed answer; a dict that renders as the notebook's option list."""

    def __repr__(self) -> str:
        return "\n".join(f"{name}: " + "; ".join(f'"{value}" ({label})' for value, label in options.items())
                         for name, options in self.items())

    def _repr_html_(self) -> str:
        return render_html("options.html", options=self)


@dataclass(frozen=True)
class BookText:
    """A passage of the lab's text filled in for the track, shown as Markdown."""

    markdown: str

    def __repr__(self) -> str:
        return self.markdown.replace("**", "")

    def _repr_markdown_(self) -> str:
        return self.markdown


@dataclass(frozen=True)
class Table:
    """A small table of a cell's result: named columns, one tuple per row (the kit installs no pandas for this)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``, top to bottom."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def row(self, column: str, value: Any) -> dict[str, Any]:
        """The first row whose ``column`` holds ``value``, by column name (:class:`KeyError` when there is none)."""
        index = self.columns.index(column)
        found = next((row for row in self.rows if row[index] == value), None)
        if found is None:
            raise KeyError(f"no row with {column} = {value!r}")
        return dict(zip(self.columns, found, strict=True))

    def to_string(self) -> str:
        """Plain text: a header, then the rows, columns padded (numbers to the right)."""
        cells = [list(self.columns), *([str(value) for value in row] for row in self.rows)]
        widths = [max(len(line[i]) for line in cells) for i in range(len(self.columns))]
        numeric = [bool(self.rows) and all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in self.rows)
                   for i in range(len(self.columns))]
        return "\n".join("  ".join(cell.rjust(width) if right else cell.ljust(width)
                                   for cell, width, right in zip(line, widths, numeric, strict=True)).rstrip()
                         for line in cells)

    def to_html(self) -> Markup:
        """An HTML table (``mlsys-table``), every cell escaped by the template."""
        return Markup(_TABLE.render(table=self))


_TABLE = Environment(autoescape=True).from_string(
    '<table class="mlsys-table"><thead><tr>{% for name in table.columns %}<th>{{ name }}</th>{% endfor %}</tr></thead>'
    "<tbody>{% for row in table.rows %}<tr>{% for value in row %}<td>{{ value }}</td>{% endfor %}</tr>{% endfor %}</tbody>"
    "</table>")


def frame(rows: list[Mapping[str, Any]]) -> Table:
    """The rows (dicts with the same keys, in order) as a :class:`Table`."""
    columns = tuple(rows[0]) if rows else ()
    return Table(columns, tuple(tuple(row[name] for name in columns) for row in rows))
