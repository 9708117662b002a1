"""The check: the six rationale items read once per grade (:func:`read_rationale`), their findings and how sure the reader is of each verdict (:class:`Verdict`).

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..generated import own_text
from ..report import Finding, PartScore
from ..values import ChoiceTerms
from ._evidence import _has_unit, agreement, part_evidence, recorded_quantities
from ._quantities import CitedQuantity, cited_quantities, trivial_reason
from ._spans import RationaleSpan, reading_spans
from ._stances import (
    HEDGE,
    LISTED,
    MULTI,
    NAMED,
    NO_CONDITION,
    REC,
    REJ,
    Reader,
    Stance,
    _named,
    _read_stances,
    _Text,
    reader_for,
)
from ._text import field_lines, normalise, not_english, plain_text, word_count

if TYPE_CHECKING:
    from ..context import GradingContext
    from ..models import PartId


# Every message a student can see, one sentence each; none names an option, a number or a phrasing.
MESSAGES = {
    "empty": "Write a rationale that compares your recommendation with the rejected alternative using saved numbers.",
    "short": "Your rationale has {words} word{plural}; give at least {minimum}, with numbers from your evidence.",
    "cite": "Cite at least one number from your saved evidence with its unit (e.g. '0.42 ms' or '3.7x'); {tail}",
    "cite_trivial": "{quoted} {verb} not evidence (values of 0 or 1 and settings you chose do not count).",
    "cite_unmatched": "none of {quoted} appears in your evidence.",
    "cite_none": "the rationale cites no quantity with a unit.",
    "cite_untied": "Tie your numbers to your decision: say which option a saved number belongs to or what it is compared with "
                   "(e.g. '… ms against … ms').",
    "contradiction": "Your rationale {what} ('{excerpt}'); make it defend your recommendation against your rejected alternative.",
    "recommendation": "Say which option you recommend in a sentence such as 'I recommend …', naming it as the notebook does.",
    "recommendation_unchosen": "Choose your recommendation first, then say in the rationale why you recommend it.",
    "rejected": "Say which alternative you reject in a sentence such as 'I reject … because …', naming it as the notebook does.",
    "rejected_unchosen": "Choose the alternative you reject first, then say in the rationale why you reject it.",
    "limitation": "State the remaining limitation you selected in your own words, in a sentence about what the evidence "
                  "does not capture.",
    "limitation_unchosen": "Choose the remaining limitation first, then state it in the rationale.",
    "trigger": "Say what would make you re-evaluate, in a sentence such as 'I would revisit this if …', naming the trigger "
               "you selected.",
    "trigger_unchosen": "Choose the re-evaluation trigger first, then say in the rationale when you would revisit the decision.",
    "not_english": "Write your rationale in English so the grader can read it; until then staff will read this one.",
}


def _finding(item: str, message: str, expected: Any, actual: Any = None, **extra: Any) -> Finding:
    return Finding(part="synthesis", criterion="rationale", rubric_item=item, message=message,
                   expected=expected, actual=actual, **extra)


def _settings(controls: Mapping[PartId, Mapping[str, Any]]) -> list[float]:
    return [float(v) for values in controls.values() for v in values.values()
            if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _quote(items: Sequence[str]) -> str:
    return ", ".join(repr(item) for item in items)


CERTAIN, UNCERTAIN = "certain", "uncertain"
RATIONALE_ITEMS = ("rationale_length", "rationale_cites_evidence", "rationale_names_recommendation", "rationale_names_rejected",
                   "rationale_names_limitation", "rationale_names_trigger")


@dataclass(frozen=True)
class Verdict:
    """How sure the reader is of its verdict on one rationale item, and why (one phrase for staff)."""

    item: str
    certainty: str
    """:data:`CERTAIN` or :data:`UNCERTAIN`."""
    reason: str


@dataclass(frozen=True)
class Reading:
    """One reading of a rationale: the findings (what the student sees), a :class:`Verdict` per item, and where in
    the text as written it found what it used (:class:`RationaleSpan`, for the review page)."""

    findings: tuple[Finding, ...]
    verdicts: tuple[Verdict, ...]
    spans: tuple[RationaleSpan, ...] = ()


# Words that relate a number to something else: a comparison, a change, a share or a budget ("66 ms against 18 ms",
# "cuts traffic from 50 MB to 25 MB", "3.9x faster", "within every budget").
COMPARES = re.compile(
    r"(?<![\w])(?:vs|versus|than|against|compar\w*|relative|ratio|faster|slower|quicker|cheaper|costlier|speed ?ups?|sav(?:e|es|ed|ing|ings)"
    r"|cuts?|reduc\w*|drops?|dropped|falls?|fell|ris(?:e|es|ing)|rose|grows?|grew|increas\w*|decreas\w*|halv\w*|doubl\w*|over|beats?"
    r"|within|exceed\w*|under|above|below|instead|whereas|while|more|less|fewer|lower|higher|longer|shorter|larger|smaller|bigger"
    r"|better|worse|times|fold|break ?even|from(?: \S+){1,3} to|→|budgets?|limits?|share|fraction|half|quarter|most|least|only|out of|per)(?![\w])")
_PIECES = re.compile(r"(?<=[.!?;])\s+|\n")


def _tied(text: str, cited: Sequence[CitedQuantity], reader: Reader) -> bool:
    """True when some sentence or line that cites one of ``cited`` also names an option or relates the number to
    another (:data:`COMPARES`): a number tied to the decision, not dropped among the sentences that name it."""
    wanted = {q.text for q in cited}
    for piece in _PIECES.split(text):
        if not any(q.text in wanted for q in cited_quantities(piece)):
            continue
        norm = normalise(piece)
        if COMPARES.search(norm) or (reader.names is not None and reader.names.search(norm)):
            return True
    return False


def _evidence(ctx: GradingContext, cited: Sequence[CitedQuantity], text: str, reader: Reader) -> tuple[Finding | None, Verdict]:
    item = "rationale_cites_evidence"
    settings = _settings(ctx.bundle.controls)
    reasons = [trivial_reason(q, settings) for q in cited]
    excluded = [q for q, reason in zip(cited, reasons, strict=True) if reason and not q.reading]
    candidates = [q for q, reason in zip(cited, reasons, strict=True) if not reason]
    if candidates:
        indexes = [part_evidence(ctx.replay.memos, ctx.lab, state) for state in ctx.parts.values() if state.record is not None]
        tolerance = ctx.rubric.quantity_tolerance
        plain = [q for q in candidates if not q.reading]
        others = [q for q in candidates if q.reading]
        for group, rounded, reason in (
                (plain, False, ""),
                (plain, True, "quantity matched only after rounding to its last significant digit"),
                (others, False, "quantity matched only with a decimal comma read as a point"),
                (others, True, "quantity matched only with a decimal comma read as a point and after rounding")):
            if rounded:
                group = [q for q in group if q.rounded > q.tolerance and _has_unit(q)]
            if group and any(agreement(group, index, tolerance, rounded=rounded) is not None for index in indexes):
                if not _tied(text, candidates, reader):
                    return _finding(item, MESSAGES["cite_untied"], "a saved number tied to an option or a comparison",
                                    [q.text for q in cited if not q.reading][:8]), Verdict(
                        item, UNCERTAIN, "numbers cited, none tied to an option or a comparison")
                return None, Verdict(item, UNCERTAIN if reason else CERTAIN, reason or "a cited quantity matches the evidence")
    shown = [q for q in candidates if not q.reading]
    if excluded and not shown:
        tail = MESSAGES["cite_trivial"].format(quoted=_quote([q.text for q in excluded[:4]]),
                                               verb="is" if len(excluded) == 1 else "are")
        verdict = Verdict(item, CERTAIN, "only values of 0 or 1 or the student's own settings are cited")
    elif shown:
        tail = MESSAGES["cite_unmatched"].format(quoted=_quote([q.text for q in shown[:4]]))
        verdict = Verdict(item, CERTAIN, "no cited quantity matches the evidence")
    else:
        tail = MESSAGES["cite_none"]
        verdict = Verdict(item, CERTAIN, "no quantity with a unit")
    return _finding(item, MESSAGES["cite"].format(tail=tail), "a quantity from the saved evidence, with its unit",
                    [q.text for q in cited if not q.reading][:8]), verdict


def _support(stances: Sequence[Stance], what: str) -> tuple[str, str]:
    """(certainty, reason) of a naming item earned by ``stances``."""
    if any(not s.via for s in stances):
        return CERTAIN, f"{what} with a stance cue"
    if any(s.via == HEDGE for s in stances):
        return UNCERTAIN, f"{what} only with a hedge"
    return UNCERTAIN, f"{what} only through a pronoun for an option named before"


def _choices(stances: Sequence[Stance], named: set[str], terms: ChoiceTerms) -> tuple[list[Finding], list[Verdict]]:
    rec_item, rej_item = "rationale_names_recommendation", "rationale_names_rejected"
    clash = terms.recommended & terms.rejected
    against = [s for s in stances if not clash and s.strong and not s.hypothetical
               and (s.option in terms.rejected if s.stance == REC else s.option in terms.recommended)]
    if against:
        first = against[0]
        what = "argues for the alternative you reject" if first.stance == REC else "rejects the option you recommend"
        reason = f"an unqualified claim that {what.removesuffix(' you reject').removesuffix(' you recommend')}"
        return [_finding(rec_item, MESSAGES["contradiction"].format(what=what, excerpt=first.excerpt),
                         "the rationale recommends what you recommend and rejects what you reject", first.excerpt,
                         also_costs=(rej_item,))], [Verdict(rec_item, CERTAIN, reason), Verdict(rej_item, CERTAIN, reason)]
    findings, verdicts = [], []
    for item, stance, options, key, what in ((rec_item, REC, terms.recommended, "recommendation", "recommended"),
                                             (rej_item, REJ, terms.rejected, "rejected", "rejected")):
        if item == rej_item and clash:
            # the choices themselves are invalid (``choices_valid``); the text cannot reject what it recommends
            verdicts.append(Verdict(item, CERTAIN, "the choices recommend and reject the same option"))
            continue
        support = [s for s in stances if s.stance == stance and s.option in options]
        if support:
            verdicts.append(Verdict(item, *_support(support, f"option {what}")))
            continue
        findings.append(_finding(item, MESSAGES[key if options else f"{key}_unchosen"],
                                 "a sentence that recommends your option" if stance == REC
                                 else "a sentence that rejects your rejected alternative"))
        if not options:
            verdicts.append(Verdict(item, CERTAIN, "no option chosen"))
        elif named & options:
            verdicts.append(Verdict(item, UNCERTAIN, "option named, no stance cue found"))
        else:
            verdicts.append(Verdict(item, CERTAIN, "option not named"))
    return findings, verdicts


_LISTED_REASONS = {
    NAMED: (CERTAIN, "stated in a sentence of its own"),
    MULTI: (UNCERTAIN, "matched only in a sentence naming several options of the list"),
    LISTED: (UNCERTAIN, "named only in a sentence listing every option, none marked as the main one"),
    NO_CONDITION: (UNCERTAIN, "named without a condition or a change"),
    None: (CERTAIN, "not stated"),
}


def _listed(ctx: GradingContext, doc: _Text, reader: Reader) -> tuple[list[Finding], list[Verdict]]:
    s = ctx.bundle.synthesis
    findings, verdicts = [], []
    for item, value, scanners, key in (("rationale_names_limitation", s.residual_risk, reader.limitations, "limitation"),
                                       ("rationale_names_trigger", s.reevaluation_trigger, reader.triggers, "trigger")):
        scanner = scanners.get(value) if isinstance(value, str) else None
        if scanner is None:
            findings.append(_finding(item, MESSAGES[f"{key}_unchosen"], "the option you selected, in words"))
            verdicts.append(Verdict(item, CERTAIN, "no option chosen"))
            continue
        how = _named(doc, scanner, scanners, needs_trigger_cue=key == "trigger")
        if how not in (NAMED, MULTI):
            findings.append(_finding(item, MESSAGES[key], "the option you selected, in words"))
        certainty, reason = _LISTED_REASONS[how]
        verdicts.append(Verdict(item, certainty, f"{key} {reason}"))
    return findings, verdicts


def read_rationale(ctx: GradingContext) -> Reading:
    """Read the rationale once: the findings for the six rationale items and how sure each verdict is
    (see the module docstring for the reading rules)."""
    raw = own_text(ctx)  # without the grader's own template sentences
    text = plain_text(field_lines(raw))  # as every reader reads it
    minimum = ctx.rubric.min_rationale_words
    words = word_count(text)
    findings: list[Finding] = []
    if words == 0:
        findings.append(_finding("rationale_length", MESSAGES["empty"], f"at least {minimum} words", 0))
    elif words < minimum:
        findings.append(_finding("rationale_length", MESSAGES["short"].format(
            words=words, plural="" if words == 1 else "s", minimum=minimum), minimum, words))
    if words and not_english(text):
        items = tuple(item for item in RATIONALE_ITEMS if item in ctx.rubric.synthesis)
        reason = "not read: not English"
        return Reading((_finding(items[0], MESSAGES["not_english"], "a rationale in English", also_costs=items[1:]),),
                       tuple(Verdict(item, UNCERTAIN, reason) for item in items))
    verdicts = [Verdict("rationale_length", CERTAIN, "words counted")]
    cited = cited_quantities(text)
    terms = ctx.lab.final_choice_terms(ctx.bundle)
    reader = reader_for(ctx.replay.memos, ctx.lab, terms)
    finding, verdict = _evidence(ctx, cited, text, reader)
    findings += [finding] if finding is not None else []
    verdicts.append(verdict)
    doc = _Text(text)
    stances, named = _read_stances(doc, reader)
    for found, judged in (_choices(stances, named, terms), _listed(ctx, doc, reader)):
        findings += found
        verdicts += judged
    return Reading(tuple(findings), tuple(verdicts), _spans(ctx, raw, cited, stances, terms, doc, reader))


def _spans(ctx: GradingContext, raw: str, cited: Sequence[CitedQuantity], stances: Sequence[Stance], terms: ChoiceTerms,
           doc: _Text, reader: Reader) -> tuple[RationaleSpan, ...]:
    """What this reading used, located in ``raw`` (the rationale the reader read, as written): its quantities
    labelled with the recorded or derived value of the bundle's records each matches."""
    s = ctx.bundle.synthesis
    evidence = [(str(part), quantity) for part, record in (ctx.bundle.evidence or {}).items()
                for quantity in recorded_quantities(ctx.replay.memos, ctx.lab, record)]
    listed = [(kind, value, scanners[value]) for kind, value, scanners in (
        ("limitation", s.residual_risk, reader.limitations), ("trigger", s.reevaluation_trigger, reader.triggers))
        if isinstance(value, str) and value in scanners]
    return reading_spans(raw, cited=cited, evidence=evidence, tolerance=ctx.rubric.quantity_tolerance, stances=stances,
                         recommended=terms.recommended, rejected=terms.rejected, norm=doc.norm, listed=listed)


def rationale_reading(ctx: GradingContext) -> Reading:
    """:func:`read_rationale` of ``ctx``, read on first call and kept on the context (one reading per grade)."""
    if ctx.reading is None:
        ctx.reading = read_rationale(ctx)
    return ctx.reading


def rationale_verdicts(ctx: GradingContext) -> tuple[Verdict, ...]:
    """The verdicts of the reading :func:`check_rationale` made for ``ctx`` (none when it made none, e.g.
    when the check failed and its items are held)."""
    return ctx.reading.verdicts if ctx.reading is not None else ()


def with_verdicts(part: PartScore, verdicts: Sequence[Verdict]) -> PartScore:
    """``part`` (the synthesis) with each judged item's ``certainty`` and ``certainty_reason`` set from
    ``verdicts``; a held item, and every item no verdict names, keeps None."""
    if not verdicts:
        return part
    by_item = {verdict.item: verdict for verdict in verdicts}
    items = [item.model_copy(update={"certainty": by_item[item.item].certainty, "certainty_reason": by_item[item.item].reason})
             if item.item in by_item and not item.held else item for item in part.items]
    return part.model_copy(update={"items": items})


def check_rationale(ctx: GradingContext) -> Iterable[Finding]:
    """Findings for the six rationale items (see the module docstring for the reading rules)."""
    return rationale_reading(ctx).findings
