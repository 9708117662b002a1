"""Where in a rationale the reader found what it used, for the review page's highlighting.

Computed when a submission is graded (the bundle is at hand then, not at review time) from
the reader's public functions (:func:`~mlsys_grader.core.rationale.cited_quantities`,
:func:`~mlsys_grader.core.rationale.read_stances`, the :class:`~mlsys_grader.core.rationale.Reader`'s
limitation and trigger patterns) and stored with the result as plain data:
``[start, end, kind, label]`` in character offsets of the rationale as the student wrote it.

Kinds: ``quantity`` (label: the evidence value it matches, or that it matches none),
``stance`` (the option and how it was taken), ``contradiction`` (a firm stance against the
student's own choice), ``limitation`` and ``trigger`` (the phrase that named the selected one).
The reader works on normalised text (lower case, American spelling, punctuation split off);
a phrase is found again in the original by its words in order, case-insensitively, and a
word is compared as the reader spells it (American spelling); a phrase that normalising
changed beyond that is left unmarked, never marked in the wrong place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from ..core.memos import Memos
from ..core.rationale import (
    DERIVED,
    REC,
    ROUNDING_CAP,
    SIGNIFICANT_ROUNDING_CAP,
    CitedQuantity,
    Stance,
    cited_quantities,
    normalise,
    normalised,
    plain_text,
    read_stances,
    reader_for,
    recorded_quantities,
)

MAX_SPANS = 60
_TOKEN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+", re.UNICODE)


@functools.lru_cache(maxsize=4096)
def _spelled(word: str) -> str:
    read = normalise(word)
    return read if read and " " not in read else word.lower()


class _Tokens:
    """The words and numbers of the rationale as written, lower-cased, with their offsets (tokenised once)."""

    def __init__(self, raw: str) -> None:
        found = list(_TOKEN.finditer(raw))
        # Each word as the reader spells it ("behaviour" → "behavior"), so a phrase it matched is found again.
        self.words = [_spelled(m.group()) for m in found]
        self.bounds = [(m.start(), m.end()) for m in found]

    def locate(self, phrase: str, start: int = 0) -> tuple[int, int] | None:
        """Where ``phrase`` (as written or as normalised) occurs at or after offset ``start``: its words in order,
        anything but letters and digits between them, any case; None when it cannot be found."""
        words = [_spelled(word) for word in _TOKEN.findall(phrase)]
        if not words:
            return None
        count = len(words)
        for index in range(len(self.words) - count + 1):
            if self.bounds[index][0] >= start and self.words[index:index + count] == words:
                return self.bounds[index][0], self.bounds[index + count - 1][1]
        return None


def locate(raw: str, phrase: str, start: int = 0) -> tuple[int, int] | None:
    """:meth:`_Tokens.locate` in ``raw``."""
    return _Tokens(raw).locate(phrase, start)


def _evidence(memos: Memos, lab: Any, bundle: Any) -> list[tuple[str, float, str, float, str]]:
    """(part, base value, dimensionality, magnitude, unit) of every usable quantity the bundle's records show
    (read once per distinct record: :func:`~mlsys_grader.core.rationale.recorded_quantities`)."""
    return [(str(part), value, dims, shown, unit)
            for part, record in (getattr(bundle, "evidence", None) or {}).items()
            for value, dims, shown, unit in recorded_quantities(memos, lab, record)]


def _match(quantity: CitedQuantity, evidence: list[tuple[str, float, str, float, str]], tolerance: float) -> str:
    """The quantity's label: the first evidence value it agrees with as the reader allows (the rubric's tolerance or
    the rounding written, capped; then to its last significant digit), or that it agrees with none."""
    tiers = ((quantity.tolerance, ROUNDING_CAP, ""),
             (max(quantity.tolerance, quantity.rounded), SIGNIFICANT_ROUNDING_CAP, " only after rounding"))
    for allowance, cap, how in tiers:
        for part, value, dims, shown, unit in evidence:
            if dims.removeprefix(DERIVED) not in quantity.dims:
                continue
            recorded = abs(value)
            if abs(quantity.value - recorded) <= max(tolerance * recorded, min(allowance * 1.000001, cap * recorded)):
                what = "derived from" if dims.startswith(DERIVED) else "recorded in"
                return f"{quantity.text}: matches{how} {shown:.6g} {unit.removeprefix(DERIVED)} {what} part {part}'s evidence"
    return f"{quantity.text}: matches no value in the evidence"


def _stance_label(stance: Stance, recommended: frozenset[str], rejected: frozenset[str]) -> tuple[str, str]:
    against = stance.strong and not stance.hypothetical and (
        stance.option in rejected if stance.stance == REC else stance.option in recommended)
    how = "recommends" if stance.stance == REC else "rejects"
    notes = [n for n, on in (("hedged", stance.via == "hedge"), ("through a pronoun", stance.via == "pronoun"),
                             ("hypothetical", stance.hypothetical), ("firm", stance.strong)) if on]
    label = f"{how} {stance.option}" + (f" ({', '.join(notes)})" if notes else "")
    if against:
        return "contradiction", f"contradiction: {label}, against the submission's own choice"
    return "stance", label


def _phrases(tokens: _Tokens, kind: str, scanner: Any, norm: str, label: str) -> Iterator[list[Any]]:
    cursor = 0
    for hit in scanner.pattern.finditer(norm):
        where = tokens.locate(hit.group(), cursor)
        if where is None:
            continue
        cursor = where[1]
        yield [where[0], where[1], kind, f"{label}: {hit.group()!r}"]


def rationale_spans(memos: Memos, lab: Any, bundle: Any, tolerance: float) -> list[list[Any]]:
    """The spans of ``bundle``'s rationale the reader used (see the module docstring), at most :data:`MAX_SPANS`."""
    synthesis = bundle.synthesis
    raw = synthesis.rationale or ""
    if not raw.strip():
        return []
    spans: list[list[Any]] = []
    tokens = _Tokens(raw)
    evidence = _evidence(memos, lab, bundle)
    cursor = 0
    for quantity in cited_quantities(raw):
        if quantity.reading:
            continue  # the second reading of an ambiguous comma: same text
        where = tokens.locate(quantity.text, cursor)
        if where is not None:
            cursor = where[1]
            spans.append([where[0], where[1], "quantity", _match(quantity, evidence, tolerance)])
    text = plain_text(raw)
    terms = lab.final_choice_terms(bundle)
    reader = reader_for(memos, lab, terms)
    for stance in read_stances(text, reader):
        where = tokens.locate(stance.excerpt)
        if where is not None:
            kind, label = _stance_label(stance, terms.recommended, terms.rejected)
            spans.append([where[0], where[1], kind, label])
    norm = normalised(text)  # the rationale check's own reading of the same text
    for kind, value, scanners in (("limitation", synthesis.residual_risk, reader.limitations),
                                  ("trigger", synthesis.reevaluation_trigger, reader.triggers)):
        scanner = scanners.get(value) if isinstance(value, str) else None
        if scanner is not None:
            spans.extend(_phrases(tokens, kind, scanner, norm, f"{kind} {value}"))
    spans.sort(key=lambda span: (span[0], -span[1]))
    return spans[:MAX_SPANS]
