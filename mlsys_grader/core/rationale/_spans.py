"""Where in a rationale the reader found what it used (:class:`RationaleSpan`), made by the reading itself for the review page's highlighting.

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring).

Spans are character offsets ``[start, end)`` of the rationale as the student wrote it, with a kind and a label.
Kinds: ``quantity`` (label: the evidence value it matches, or that it matches none), ``stance`` (the option and
how it was taken), ``contradiction`` (a firm stance against the student's own choice), ``limitation`` and
``trigger`` (the phrase that named the selected one).  The reader works on normalised text (lower case, American
spelling, punctuation split off); a phrase is found again in the original by its words in order,
case-insensitively, and a word is compared as the reader spells it (American spelling); a phrase that normalising
changed beyond that is left unmarked, never marked in the wrong place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence

from ..report import RationaleSpan
from ._evidence import RecordedQuantity
from ._quantities import DERIVED, ROUNDING_CAP, SIGNIFICANT_ROUNDING_CAP, CitedQuantity
from ._stances import HEDGE, INFERRED, PRONOUN, REC, Stance, _Scanner
from ._text import normalise

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
    """Where ``phrase`` occurs in ``raw`` at or after offset ``start`` (see the module docstring), or None."""
    return _Tokens(raw).locate(phrase, start)


Evidence = Sequence[tuple[str, RecordedQuantity]]
"""(part, recorded quantity) of every usable quantity the bundle's records show, in order."""


def _match(quantity: CitedQuantity, evidence: Evidence, tolerance: float) -> str:
    """The quantity's label: the evidence value it agrees with most closely as the reader allows (the rubric's tolerance
    or the rounding written, capped; then to its last significant digit), or that it agrees with none."""
    tiers = ((quantity.tolerance, ROUNDING_CAP, ""),
             (max(quantity.tolerance, quantity.rounded), SIGNIFICANT_ROUNDING_CAP, " only after rounding"))
    for allowance, cap, how in tiers:
        agreeing = []
        for order, (part, (value, dims, shown, unit)) in enumerate(evidence):
            if dims.removeprefix(DERIVED) not in quantity.dims:
                continue
            recorded = abs(value)
            gap = abs(quantity.value - recorded)
            if gap <= max(tolerance * recorded, min(allowance * 1.000001, cap * recorded)):
                # The closest value names the match (360.3 ms is part B's 360.3, not part A's 358.3 within 1 %); a
                # recorded value before a derived one, then the evidence's order.
                agreeing.append((round(gap / recorded if recorded else gap, 9), dims.startswith(DERIVED), order, part, shown, unit, dims))
        if agreeing:
            _, _, _, part, shown, unit, dims = min(agreeing)
            what = "derived from" if dims.startswith(DERIVED) else "recorded in"
            return f"{quantity.text}: matches{how} {shown:.6g} {unit.removeprefix(DERIVED)} {what} part {part}'s evidence"
    return f"{quantity.text}: matches no value in the evidence"


def _stance_label(stance: Stance, recommended: frozenset[str], rejected: frozenset[str]) -> tuple[str, str]:
    against = stance.strong and not stance.hypothetical and (
        stance.option in rejected if stance.stance == REC else stance.option in recommended)
    how = "recommends" if stance.stance == REC else "rejects"
    notes = [n for n, on in (("hedged", stance.via == HEDGE), ("through a pronoun", stance.via in (PRONOUN, INFERRED)),
                             ("hypothetical", stance.hypothetical), ("firm", stance.strong)) if on]
    label = f"{how} {stance.option}" + (f" ({', '.join(notes)})" if notes else "")
    if against:
        return "contradiction", f"contradiction: {label}, against the submission's own choice"
    return "stance", label


def _phrases(tokens: _Tokens, kind: str, scanner: _Scanner, norm: str, label: str) -> Iterator[RationaleSpan]:
    cursor = 0
    for hit in scanner.pattern.finditer(norm):
        where = tokens.locate(hit.group(), cursor)
        if where is None:
            continue
        cursor = where[1]
        yield RationaleSpan(where[0], where[1], kind, f"{label}: {hit.group()!r}")


def reading_spans(raw: str, *, cited: Iterable[CitedQuantity], evidence: Evidence, tolerance: float,
                  stances: Iterable[Stance], recommended: frozenset[str], rejected: frozenset[str], norm: str,
                  listed: Iterable[tuple[str, str, _Scanner]]) -> tuple[RationaleSpan, ...]:
    """The spans of ``raw`` (the rationale as written) that the reading used, at most :data:`MAX_SPANS`: the
    quantities it cited, the stances it read, and each match in ``norm`` (the normalised text it read) of the
    selected limitation and trigger (``listed``: kind, value, scanner)."""
    if not raw.strip():
        return ()
    spans: list[RationaleSpan] = []
    tokens = _Tokens(raw)
    cursor = 0
    for quantity in cited:
        if quantity.reading:
            continue  # the second reading of an ambiguous comma: same text
        where = tokens.locate(quantity.text, cursor)
        if where is not None:
            cursor = where[1]
            spans.append(RationaleSpan(where[0], where[1], "quantity", _match(quantity, evidence, tolerance)))
    for stance in stances:
        where = tokens.locate(stance.excerpt)
        if where is not None:
            spans.append(RationaleSpan(where[0], where[1], *_stance_label(stance, recommended, rejected)))
    for kind, value, scanner in listed:
        spans.extend(_phrases(tokens, kind, scanner, norm, f"{kind} {value}"))
    spans.sort(key=lambda span: (span.start, -span.end))
    return tuple(spans[:MAX_SPANS])


def span_lists(spans: Iterable[RationaleSpan]) -> list[list[int | str]]:
    """``spans`` as the plain lists ``[start, end, kind, label]`` a stored result keeps."""
    return [list(span) for span in spans]
