"""Rationale completeness: length, cited quantities (unit-aware, via pint) and named choices.

A cited quantity is a number with a unit ("0.42 ms", "1.2 MB"), a percentage
("88%") or a multiplier ("3.7x", "3.7×").  It matches the evidence when pint says
both have the same dimensionality and the values agree within the rubric's
relative tolerance or the rounding the student wrote (so "0.42 ms" matches a
recorded 420.3 µs).  Bare numbers do not count: "50" could be anything.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

from .._mlsysim import import_mlsysim
from .report import Finding

if TYPE_CHECKING:
    from .context import GradingContext

_QUANTITY = re.compile(
    r"(?P<dollar>\$\s?)?(?P<number>(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"(?:\s?(?P<unit>%|×|[A-Za-zµμ][A-Za-z0-9µμ]*(?:/[A-Za-zµμ][A-Za-z0-9µμ]*)?))?"
)
_MULTIPLIERS = {"x", "×", "X"}
_WORD = re.compile(r"[A-Za-z0-9µμ%$]+(?:[.'’-][A-Za-z0-9]+)*")


@dataclass(frozen=True)
class CitedQuantity:
    """A number the student wrote, in base units."""

    text: str
    value: float
    tolerance: float
    dimensionality: str


@lru_cache(maxsize=512)
def _unit_scale(unit: str) -> tuple[float, str] | None:
    """(factor to base units, dimensionality) for a pint unit string, or None if pint cannot parse it."""
    if unit in ("dimensionless", ""):
        return 1.0, "dimensionless|dimensionless"
    import_mlsysim()
    from mlsysim.core.units import ureg  # the evaluators' own registry (defines flop, dollar…)

    try:
        quantity = ureg.Quantity(1.0, unit).to_base_units()
    except Exception:  # pint raises many types for unknown or malformed units
        return None
    if not isinstance(quantity.magnitude, (int, float)) or not math.isfinite(quantity.magnitude):
        return None
    # mlsysim's registry makes bytes (bits) and dollars (counts) dimensionless, so the
    # base unit joins the dimensionality: "1.2 MB" must not match a plain ratio.
    return float(quantity.magnitude), f"{quantity.dimensionality}|{quantity.units}"


def _decimals(number: str) -> int:
    mantissa = number.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def cited_quantities(text: str) -> list[CitedQuantity]:
    """Every quantity with a unit, %, × or $ in ``text``."""
    found = []
    for match in _QUANTITY.finditer(text):
        number, unit = match.group("number"), match.group("unit")
        try:
            value = float(number.replace(",", ""))
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        exponent = int(number.lower().split("e")[1]) if "e" in number.lower() else 0
        rounding = 0.5 * 10.0 ** (exponent - _decimals(number))
        if match.group("dollar"):
            unit_text = "dollar"
        elif unit is None:
            continue
        elif unit == "%":
            value, rounding, unit_text = value / 100, rounding / 100, "dimensionless"
        elif unit in _MULTIPLIERS:
            unit_text = "dimensionless"
        else:
            unit_text = unit.replace("μ", "µ")
        scale = _unit_scale(unit_text)
        if scale is None and "/" in unit_text:
            unit_text = unit_text.split("/")[0]
            scale = _unit_scale(unit_text)
        if scale is None:
            continue
        factor, dims = scale
        found.append(CitedQuantity(match.group(0).strip(), value * factor, abs(rounding * factor), dims))
    return found


class EvidenceIndex:
    """Recorded quantities grouped by dimensionality, in base units."""

    def __init__(self, quantities: Iterable[tuple[float, str]]):
        self._by_dims: dict[str, list[float]] = {}
        for magnitude, unit in quantities:
            scale = _unit_scale(unit)
            if scale is None or not math.isfinite(magnitude) or magnitude == 0:
                continue
            self._by_dims.setdefault(scale[1], []).append(magnitude * scale[0])

    def __len__(self) -> int:
        return sum(len(values) for values in self._by_dims.values())

    @staticmethod
    def first_match(cited: list[CitedQuantity], quantities: Iterable[tuple[float, str]], rel_tol: float) -> tuple[CitedQuantity, float] | None:
        """The first (cited, recorded) pair that matches, reading ``quantities`` lazily.

        Stops at the first hit, so a rationale that quotes an early number never pays
        for walking the rest of the evidence.
        """
        wanted: dict[str, list[CitedQuantity]] = {}
        for quantity in cited:
            wanted.setdefault(quantity.dimensionality, []).append(quantity)
        for magnitude, unit in quantities:
            scale = _unit_scale(unit)
            if scale is None or scale[1] not in wanted or not math.isfinite(magnitude) or magnitude == 0:
                continue
            recorded = magnitude * scale[0]
            for quantity in wanted[scale[1]]:
                if abs(quantity.value - recorded) <= max(rel_tol * abs(recorded), quantity.tolerance * 1.000001):
                    return quantity, recorded
        return None

    def match(self, cited: CitedQuantity, rel_tol: float) -> float | None:
        """The recorded value (base units) that ``cited`` matches, or None."""
        for recorded in self._by_dims.get(cited.dimensionality, ()):
            allowed = max(rel_tol * abs(recorded), cited.tolerance * 1.000001)
            if abs(cited.value - recorded) <= allowed:
                return recorded
        return None


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def normalise(text: str) -> str:
    """Lower case, with ``-``/``_`` as spaces and whitespace collapsed, for keyword search."""
    return " ".join(re.sub(r"[-_]", " ", text.lower()).split())


def names_any(text: str, keywords: Iterable[str]) -> bool:
    """True when the normalised ``text`` contains any of ``keywords``."""
    haystack = normalise(text)
    return any(normalise(keyword) in haystack for keyword in keywords if keyword)


MAX_CITED = 200  # quantities considered per rationale, so a wall of numbers costs bounded time


def check_rationale(ctx: "GradingContext") -> Iterable[Finding]:
    text = ctx.bundle.synthesis.rationale or ""
    lab, rubric = ctx.lab, ctx.rubric
    words = word_count(text)
    if words == 0:
        yield Finding(part="synthesis", criterion="rationale", rubric_item="rationale_length",
                      message="Write a rationale that compares your recommendation with the rejected alternative using saved numbers.",
                      expected=f"at least {rubric.min_rationale_words} words", actual=0)
    elif words < rubric.min_rationale_words:
        yield Finding(part="synthesis", criterion="rationale", rubric_item="rationale_length",
                      message=f"Your rationale has {words} words; give at least {rubric.min_rationale_words}, with numbers from your evidence.",
                      expected=rubric.min_rationale_words, actual=words)
    cited = cited_quantities(text)[:MAX_CITED]
    matched = bool(cited) and EvidenceIndex.first_match(
        cited,
        (q for state in ctx.parts.values() if state.record is not None for q in lab.evidence_quantities(state.record)),
        rubric.quantity_tolerance,
    ) is not None
    if not matched:
        yield Finding(part="synthesis", criterion="rationale", rubric_item="rationale_cites_evidence", hidden=True,
                      message=("Cite at least one number with its unit exactly as your saved evidence shows it (e.g. '0.42 ms', '3.7x'); "
                               + ("none of " + ", ".join(repr(q.text) for q in cited[:4]) + " appears in your evidence."
                                  if cited else "the rationale cites no quantity with a unit.")),
                      expected="a quantity from the saved evidence", actual=[q.text for q in cited[:8]])
    rec_terms, rej_terms = lab.final_choice_terms(ctx.bundle)
    s = ctx.bundle.synthesis
    for item, terms, what in (
        ("rationale_names_recommendation", rec_terms, "your recommendation"),
        ("rationale_names_rejected", rej_terms, "the rejected alternative"),
        ("rationale_names_limitation", next((c.keywords for c in lab.limitations if c.value == s.residual_risk), ()), "the remaining limitation"),
        ("rationale_names_trigger", next((c.keywords for c in lab.triggers if c.value == s.reevaluation_trigger), ()), "the re-evaluation trigger"),
    ):
        if not terms or not names_any(text, terms):
            yield Finding(part="synthesis", criterion="rationale", rubric_item=item, hidden=True,
                          message=f"Name {what} in the rationale" + (f" (for example '{terms[0]}')." if terms else "; choose it first."),
                          expected=list(terms[:3]), actual=None)
