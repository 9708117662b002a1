"""The check: the six rationale items read once per grade (:func:`read_rationale`), their findings and how sure the reader is of each verdict (:class:`Verdict`).

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..generated import own_text
from ..report import Finding, PartScore
from ..values import ChoiceTerms
from ._evidence import _has_unit, agreement, part_evidence, recorded_quantities
from ._quantities import _UNIT_WORDS as UNIT_WORDS
from ._quantities import DERIVED, CitedQuantity, cited_quantities, trivial_reason
from ._spans import RationaleSpan, reading_spans
from ._stances import (
    _CUES,
    HEDGE,
    LISTED,
    MULTI,
    NAMED,
    NO_CONDITION,
    PRONOUN,
    REC,
    REJ,
    Reader,
    Stance,
    _named,
    _read_stances,
    _Text,
    _which,
    reader_for,
)
from ._text import field_lines, normalise, not_english, partly_english, plain_text, word_count

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
    "cite_compare": "Quantify the rejected alternative with your saved numbers (e.g. 'it needs … ms against … ms'): your "
                    "numbers count, and that earns the other half of this item.",
    "cite_foreign": "Most numbers you cite are not in your saved evidence ({quoted}); cite the numbers your own runs recorded.",
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
    "labels": "Your rationale restates the labels of your choices and cites no number; explain them in your own words "
              "with numbers from your saved evidence.",
    "list": "Your rationale is a list of labels and numbers; write sentences that say which option you recommend and "
            "why, comparing it with the rejected alternative using your saved numbers.",
    "blanks": "Your rationale keeps a template's blanks ('{blank}'); write it in your own words.",
    "not_english": "Write your rationale in English so the grader can read it; until then staff will read this one.",
}


def _finding(item: str, key: str, expected: Any, actual: Any = None, *, words: Mapping[str, Any] | None = None,
             **extra: Any) -> Finding:
    """The finding of :data:`MESSAGES` ``key`` (its code ``rationale.<key>``), the message filled with ``words``."""
    message = MESSAGES[key].format(**words) if words else MESSAGES[key]
    return Finding(part="synthesis", criterion="rationale", rubric_item=item, message=message,
                   expected=expected, actual=actual, code=f"rationale.{key}", **extra)


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
    r"|within|inside|past|beyond|spare|headroom|margin|exceed\w*|under|above|below|instead|whereas|while|more|less|fewer|lower|higher|longer|shorter|larger|smaller|bigger"
    r"|better|worse|times|fold|break ?even|from(?: \S+){1,3} to|→|budgets?|limits?|share|fraction|half|quarter|most|least|only|out of|per)(?![\w])")
_WORDS = re.compile(r"(?<![\w.])[a-z]{3,}(?![\w])")


_UNIT_WORDS = frozenset(UNIT_WORDS) | {"per", "and", "the"}
"""Words that say nothing of a number but its unit: a line of an option's name, numbers and these is a list, not a claim."""
_BLANK = re.compile(r"\[[A-Za-z][A-Za-z ,'-]{2,60}\]")
"""A blank of a fill-in template left as it was ("[key benefit]", "[it performs worse on the key metrics]")."""
_PIECES = re.compile(r"(?<=[.!?;])\s+")
_SUBJECT = re.compile(r"(?<![\w])(?:it|this one|that one|the former|the latter)(?![\w])")
_NAMED = "\u00a7"  # an option's name, once the piece's names are set aside (no cue or comparison word is read inside one)
_FIELD = re.compile(rf"{_NAMED}(?: \( [\w ]{{1,20}} \))? :|: {_NAMED}")  # a field paired with an option ("Arithmetic: 200.4 ms", "Rec: …")
_MATCH_PASSES = ((False, False, ""), (False, True, "quantity matched only after rounding to its last significant digit"),
                 (True, False, "quantity matched only with a decimal comma read as a point"),
                 (True, True, "quantity matched only with a decimal comma read as a point and after rounding"))
HALF = 0.5
"""The share of ``rationale_cites_evidence`` numbers of the evidence earn when they are tied to an option or a limit but
neither quantify the rejected alternative nor compare: the labs ask to "quantify the rejected alternative", so the
other half waits for it."""


@dataclass(frozen=True)
class _Match:
    """How one cited quantity agrees with the submission's evidence: ``reason`` is empty when certain; ``derived``
    when only a value derived from the records (a difference, ratio, change or share) matches it."""

    reason: str
    derived: bool


def _recorded_only(index: Mapping[str, list[float]]) -> dict[str, list[float]]:
    """``index`` without the values derived from the records."""
    return {k: v for k, v in index.items() if not k.startswith(DERIVED)}


def _match(quantity: CitedQuantity, indexes: Sequence[tuple[Mapping[str, list[float]], Mapping[str, list[float]]]],
           tolerance: float) -> _Match | None:
    """How ``quantity`` agrees with one of ``indexes`` (one per captured part: its whole index, and its recorded values
    alone), or None when it agrees with none."""
    for comma, rounded, reason in _MATCH_PASSES:
        if bool(quantity.reading) != comma or (rounded and not (quantity.rounded > quantity.tolerance and _has_unit(quantity))):
            continue
        hits = [recorded for index, recorded in indexes if agreement([quantity], index, tolerance, rounded=rounded) is not None]
        if hits:
            direct = any(agreement([quantity], recorded, tolerance, rounded=rounded) is not None for recorded in hits)
            return _Match(reason, not direct)
    return None


@dataclass(frozen=True)
class _Piece:
    """One sentence or line of a rationale as the evidence item reads it."""

    matched: tuple[CitedQuantity, ...]
    """The quantities it cites that agree with the evidence."""
    derived: bool
    """One of them agrees only with a value derived from the records (the student compared two numbers)."""
    compares: bool
    """It relates a number to something (a comparison, a change, a share, a budget; :data:`COMPARES`), outside the names."""
    claims: bool
    """It takes a stance, pairs a field with an option, compares, or says something of an option it names in words
    ("Eager execution needs 66.17 ms"): a claim a number can belong to.  An option's name beside numbers and units
    alone ("Faster arithmetic 200.4 ms 150.3 s") is a list, not a claim."""
    options: frozenset[str]


_ROLE_REJECTED = re.compile(r"(?<![\w])(?:(?:rejected|losing|other) (?:alternative|option|candidate|design|placement|path|fix|plan"
                            r"|choice)|the alternative(?: candidate| design| option| placement| path| fix)?|(?:candidate|option|alternative|design"
                            r"|placement|path|fix) (?:i|we) (?:turned down|rejected|ruled out|dropped|did not (?:choose|pick|take)))"
                            r"(?![\w])")
"""The rejected alternative named by its role ("the rejected candidate takes 3.631 ms", "the alternative needs …")."""


def _pieces(text: str, matched: Mapping[str, _Match], reader: Reader, terms: ChoiceTerms) -> list[_Piece]:
    found = []
    before: set[str] = set()  # the options the sentence before named, within one line
    for line in text.split("\n"):
        before = set()
        for piece in _PIECES.split(line):
            norm = normalise(piece)
            options: set[str] = set()
            if reader.names is not None:
                for hit in reader.names.pattern.finditer(norm):
                    options.add(reader.name_options[_which(hit)])
                norm = reader.names.pattern.sub(_NAMED, norm)
            if _ROLE_REJECTED.search(norm):
                options |= terms.rejected
            if not options and len(before) == 1 and _SUBJECT.search(norm):
                options = set(before)  # "Rejected: event filter. Yes it is faster (about 23 ms) …"
            before = options
            here = [q for q in cited_quantities(piece) if q.text in matched]
            if here:
                found.append(_piece(here, norm, matched, options))
    return found


def _piece(here: Sequence[CitedQuantity], norm: str, matched: Mapping[str, _Match], options: set[str]) -> _Piece:
    compares = COMPARES.search(norm) is not None
    claims = compares or _CUES.search(norm) or _FIELD.search(norm) is not None or (
        bool(options) and len([w for w in _WORDS.findall(norm) if w not in _UNIT_WORDS]) >= 2)
    return _Piece(tuple(here), any(matched[q.text].derived for q in here), compares, bool(claims), frozenset(options))


def _quantifies(pieces: Sequence[_Piece], terms: ChoiceTerms, rejects: bool) -> bool:
    """True when the rationale does what the labs ask of its numbers, "quantify the rejected alternative": a number
    of the evidence claimed for the rejected alternative ("Prefetch is out: only 16.0 ms", "| rejected | A100, at
    6.195 ms |"), or a comparison in numbers of the evidence — two of one kind related in one sentence ("from 249.6 ms
    to 200.4 ms", "117.3 GB against 85.9 GB") or a number the student derived from two recorded ones put as a
    comparison ("saves 49.2 ms", "3.9x faster").  ``rejects``: the text rejects the rejected alternative somewhere; a number
    beside its name counts for it only then, or in a sentence that compares ("Send raw input: 6426 ms" in a list that
    rejects nothing quantifies an option, not a rejected alternative)."""
    for piece in pieces:
        if piece.compares and (piece.derived or any(
                set(a.dims) & set(b.dims) for i, a in enumerate(piece.matched) for b in piece.matched[i + 1:]
                if a.value != b.value)):
            return True
    return any(piece.claims and (rejects or piece.compares) and piece.options & terms.rejected for piece in pieces)


def _evidence(ctx: GradingContext, cited: Sequence[CitedQuantity], text: str, reader: Reader,
              terms: ChoiceTerms, rejects: bool) -> tuple[Finding | None, Verdict]:
    item = "rationale_cites_evidence"
    settings = _settings(ctx.bundle.controls)
    reasons = [trivial_reason(q, settings) for q in cited]
    excluded = [q for q, reason in zip(cited, reasons, strict=True) if reason and not q.reading]
    candidates = [q for q, reason in zip(cited, reasons, strict=True) if not reason]
    shown = [q for q in candidates if not q.reading]
    if candidates:
        indexes = [(index, _recorded_only(index)) for index in (part_evidence(ctx.replay.memos, ctx.lab, state)
                                                                 for state in ctx.parts.values() if state.record is not None)]
        tolerance = ctx.rubric.quantity_tolerance
        matched: dict[str, _Match] = {}
        for quantity in candidates:
            if quantity.text not in matched and (found := _match(quantity, indexes, tolerance)) is not None:
                matched[quantity.text] = found
        if matched:
            foreign = sorted({q.text for q in shown} - set(matched))
            if len(foreign) >= 2 and len(foreign) >= len(matched):
                return _finding(item, "cite_foreign",
                                "numbers from your own saved evidence", foreign[:8],
                                words={"quoted": _quote(foreign[:4])}), Verdict(
                    item, CERTAIN, "most cited quantities are not in this submission's evidence")
            # certain when any matched quantity matched plainly; else the first one's reason for staff
            reason = "" if any(not m.reason for m in matched.values()) else next(iter(matched.values())).reason
            certainty = UNCERTAIN if reason else CERTAIN
            pieces = _pieces(text, matched, reader, terms)
            if _quantifies(pieces, terms, rejects):
                return None, Verdict(item, certainty, reason or "the rejected alternative quantified with the evidence")
            if any(piece.claims for piece in pieces):
                return _finding(item, "cite_compare", "the rejected alternative quantified with saved numbers",
                                sorted(matched)[:8], keeps=HALF), Verdict(
                    item, certainty, reason or "numbers of the evidence tied to an option, none compared")
            return _finding(item, "cite_untied", "a saved number tied to an option or a comparison",
                            sorted(matched)[:8]), Verdict(item, certainty, reason or "numbers cited without saying what they show")
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
    return _finding(item, "cite", "a quantity from the saved evidence, with its unit",
                    [q.text for q in cited if not q.reading][:8], words={"tail": tail}), verdict


def _support(stances: Sequence[Stance], what: str) -> tuple[str, str]:
    """(certainty, reason) of a naming item earned by ``stances``: certain with a firm cue on the name, or through a
    pronoun that can mean only one option ("The NX trails by 16 µs. I reject it.") or only one of two once the text has
    recommended the other by name; uncertain with a hedge only."""
    if any(not s.via for s in stances):
        return CERTAIN, f"{what} with a stance cue"
    if any(s.via == PRONOUN and not s.tentative for s in stances):
        return CERTAIN, f"{what} through a pronoun for the one option named before it"
    if any(s.via not in (HEDGE, PRONOUN) and not s.tentative for s in stances):
        return CERTAIN, f"{what} through a pronoun for the one of two options the text does not take the other way"
    return UNCERTAIN, f"{what} only with a hedge"


RETRACTS = re.compile(
    r"(?<![\w])(?:(?:withdraw|retract|take back|taking back|took back|walk back|revoke)\w* (?:my|the|this|that|our) "
    r"(?:recommendation|choice|decision|pick)|(?:recommendation|choice|decision) (?:is |as |should be (?:treated|read) as )?"
    r"(?:withdrawn|retracted|void|revoked)|not (?:treat|take|count|read) (?:it|this|that) as (?:my|our) (?:recommendation"
    r"|choice|decision))(?![\w])")
"""A text that withdraws its own recommendation ("treat this recommendation as withdrawn", "I take back my choice")."""


LIST_ITEMS = 5
LIST_ITEM_WORDS = 8
_LIST_SEPARATORS = re.compile(r"\s*(?:\||;|\s/\s|\n)\s*")


def label_list(text: str) -> bool:
    """True when ``text`` is only a list: at least :data:`LIST_ITEMS` items split by "|", ";", " / " or lines, none
    longer than :data:`LIST_ITEM_WORDS` words ("Faster arithmetic | Prefetch input | 200.4 ms | 233.6 ms | … |
    Schedule or cost limit is crossed").  A table beside sentences is not one: a sentence is a longer item."""
    items = [item for item in _LIST_SEPARATORS.split(text.strip()) if item.strip(" -*|:")]
    return len(items) >= LIST_ITEMS and all(word_count(item) <= LIST_ITEM_WORDS for item in items)


LABELS_RESTATED = 2
"""A rationale citing no number that holds this many of its choices' labels as the notebook prints them ("… is the
best choice because it provides the optimal trade-off … A remaining limitation is that Filtering evidence may not
transfer. The decision should be re-evaluated if Observation or power requirement changes.") is a form filled with the
labels, not the student's own text: it loses ``rationale_length``; what it names is still read."""


def _labels_restated(ctx: GradingContext, text: str, terms: ChoiceTerms) -> list[str]:
    """The labels of the submission's choices (options, limitation and trigger) the text holds as the notebook prints
    them, capital and all, inside a sentence ("… is that Filtering evidence may not transfer"): pasted, not written."""
    s = ctx.bundle.synthesis
    chosen = terms.recommended | terms.rejected
    choices = [c for c in terms.options if c.value in chosen]
    choices += [c for c in ctx.lab.limitations if c.value == s.residual_risk]
    choices += [c for c in ctx.lab.triggers if c.value == s.reevaluation_trigger]
    found = []
    for choice in choices:
        label = choice.label.strip()
        if len(label.split()) >= 2 and label[:1].isupper() and re.search(rf"(?<=[a-z,;] ){re.escape(label)}(?![\w])", text):
            found.append(label)
    return found


def _retraction(doc: _Text) -> str | None:
    """The words by which the text withdraws its recommendation, outside a condition ("if …, I would withdraw my
    recommendation" is a trigger), or None."""
    for found in RETRACTS.finditer(doc.norm):
        if not doc.hypothetical(found.start()):
            return found.group()
    return None


def _against(stances: Sequence[Stance], terms: ChoiceTerms, stance: str = REC) -> list[Stance]:
    """The firm, unqualified stances that argue for the rejected alternative (``stance`` :data:`REC`) or against the
    recommendation (:data:`REJ`); none when the choices themselves recommend and reject one option."""
    if terms.recommended & terms.rejected:
        return []
    return [s for s in stances if s.stance == stance and s.strong and not s.hypothetical
            and s.option in (terms.rejected if stance == REC else terms.recommended)]


LOOSE_REFUSAL = re.compile(
    r"(?<![\w])(?:i|we)(?: (?:would|will|should|do|did|could|can|am|are|must))? (?:not|never)(?: \w+)? (?:put|run|keep|use|deploy"
    r"|ship|recommend|choose|pick|go|commit|trust|rely|stand|want|back|place|move|take|adopt|stick|stay|switch|change|touch"
    r"|apply|make|do|bother)(?![\w])|(?<![\w])(?:leave|keep) (?:\w+ ){1,5}(?:as it is|as they are|unchanged|alone|untouched)"
    r"(?![\w])|(?<![\w])hold off(?![\w])")
"""A first-person refusal ("I would not actually put the model on …", "I'd leave the training setup exactly as it is",
"hold off"): when no stance is read in it, it may refuse the recommendation in words the reader does not know."""


def _loose_refusal(doc: _Text, stances: Sequence[Stance]) -> bool:
    """True when the text refuses something (:data:`LOOSE_REFUSAL`) outside a condition and no stance was read there."""
    for found in LOOSE_REFUSAL.finditer(doc.norm):
        if not doc.hypothetical(found.start()) and not any(found.group() in s.excerpt for s in stances):
            return True
    return False


_IMPLIED = {REC: "firmly rejects the alternative", REJ: "firmly recommends its option"}


def _implied(stances: Sequence[Stance], terms: ChoiceTerms, stance: str) -> bool:
    """True when the text takes the other side firmly, so naming this option takes ``stance`` on it: a text that
    rejects the alternative in so many words and names its recommendation with nothing against it recommends it
    ("Local execution takes 8.0 ms … you should not send a feature summary"); one that recommends firmly and names
    the alternative it weighed rejects it (a concession, "it is faster", is no stance for it)."""
    options, others = (terms.recommended, terms.rejected) if stance == REC else (terms.rejected, terms.recommended)
    other = REJ if stance == REC else REC
    decided = [s for s in stances if s.stance == other and s.option in others]
    if not decided or _support(decided, "")[0] != CERTAIN:
        return False
    # nothing against the recommendation, not even hedged or in a concession; a concession for the alternative ("it
    # is faster") is allowed, a firm claim for it is not
    against = [s for s in stances if s.option in options and s.stance == other]
    return not any(stance == REC or (s.strong and not s.hypothetical) for s in against)


def _choices(stances: Sequence[Stance], named: set[str], terms: ChoiceTerms, retracted: str | None = None,
             inferable: Set[str] = frozenset()) -> tuple[list[Finding], list[Verdict]]:
    """The two naming items' findings and verdicts; a stance in ``inferable`` may be read from the other side's
    (:func:`_implied`)."""
    rec_item, rej_item = "rationale_names_recommendation", "rationale_names_rejected"
    if retracted is not None and terms.recommended:
        reason = "the text withdraws its recommendation"
        return [_finding(rec_item, "contradiction", "the rationale recommends what you recommend and rejects what you reject",
                         retracted, words={"what": "withdraws your recommendation", "excerpt": retracted},
                         also_costs=(rej_item,))], [Verdict(rec_item, CERTAIN, reason), Verdict(rej_item, CERTAIN, reason)]
    clash = terms.recommended & terms.rejected
    firm = {id(s) for s in (*_against(stances, terms), *_against(stances, terms, REJ))}
    against = [s for s in stances if id(s) in firm]  # in the text's order
    if against:
        first = against[0]
        what = "argues for the alternative you reject" if first.stance == REC else "rejects the option you recommend"
        reason = f"an unqualified claim that {what.removesuffix(' you reject').removesuffix(' you recommend')}"
        return [_finding(rec_item, "contradiction", "the rationale recommends what you recommend and rejects what you reject",
                         first.excerpt, words={"what": what, "excerpt": first.excerpt},
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
        if stance in inferable and named & options and _implied(stances, terms, stance):
            verdicts.append(Verdict(item, CERTAIN, f"option named where the text {_IMPLIED[stance]}, nothing said against it"))
            continue
        findings.append(_finding(item, key if options else f"{key}_unchosen",
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
    # the rubric asks that the chosen one be stated; naming another beside it (or marking it the main one of a list)
    # states it, and cannot gain anything: the choice is made in the synthesis, not in the text
    MULTI: (CERTAIN, "stated beside another option of the list"),
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
            findings.append(_finding(item, f"{key}_unchosen", "the option you selected, in words"))
            verdicts.append(Verdict(item, CERTAIN, "no option chosen"))
            continue
        how = _named(doc, scanner, scanners, needs_trigger_cue=key == "trigger")
        if how not in (NAMED, MULTI):
            findings.append(_finding(item, key, "the option you selected, in words"))
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
        findings.append(_finding("rationale_length", "empty", f"at least {minimum} words", 0))
    elif words < minimum:
        findings.append(_finding("rationale_length", "short", minimum, words, words={
            "words": words, "plural": "" if words == 1 else "s", "minimum": minimum}))
    blanks = _BLANK.findall(text)
    if len(blanks) >= 2 and not any(f.rubric_item == "rationale_length" for f in findings):
        findings.append(_finding("rationale_length", "blanks", "a rationale in your own words", blanks[:4],
                                 words={"blank": blanks[0]}))
    mixed = bool(words) and not_english(text) and partly_english(text)
    if words and not_english(text) and not mixed:
        items = tuple(item for item in RATIONALE_ITEMS if item in ctx.rubric.synthesis)
        reason = "not read: not English"
        return Reading((_finding(items[0], "not_english", "a rationale in English", also_costs=items[1:]),),
                       tuple(Verdict(item, UNCERTAIN, reason) for item in items))
    if words and label_list(text):
        items = tuple(item for item in RATIONALE_ITEMS if item in ctx.rubric.synthesis)
        return Reading((_finding(items[0], "list", "sentences in your own words", also_costs=items[1:]),),
                       tuple(Verdict(item, CERTAIN, "a list of labels and numbers, no sentence") for item in items))
    verdicts = [Verdict("rationale_length", CERTAIN, "words counted")]
    cited = cited_quantities(text)
    terms = ctx.lab.final_choice_terms(ctx.bundle)
    reader = reader_for(ctx.replay.memos, ctx.lab, terms)
    doc = _Text(text)
    labels = _labels_restated(ctx, text, terms)
    if not cited and len(labels) >= LABELS_RESTATED and not any(f.rubric_item == "rationale_length" for f in findings):
        findings.append(_finding("rationale_length", "labels", "a rationale in your own words, with your saved "
                                 "numbers", labels))
        verdicts = [Verdict("rationale_length", CERTAIN, "the choices' labels restated, no number")]
    stances, named = _read_stances(doc, reader)
    rejects = any(s.stance == REJ and s.option in terms.rejected for s in stances)
    finding, verdict = _evidence(ctx, cited, text, reader, terms, rejects)
    findings += [finding] if finding is not None else []
    verdicts.append(verdict)
    # a stance read from the other side's needs sentences, and a refusal the reader cannot place forbids reading a
    # recommendation ("I would not actually put the model on the microcontroller")
    inferable = set() if words < minimum else {REJ} if _loose_refusal(doc, stances) else {REC, REJ}
    for found, judged in (_choices(stances, named, terms, _retraction(doc), inferable), _listed(ctx, doc, reader)):
        findings += found
        verdicts += judged
    if mixed:  # what the reader did not find may be in the words it cannot read: a person reads it
        lost = {item for f in findings for item in (f.rubric_item, *f.also_costs)}
        verdicts = [Verdict(v.item, UNCERTAIN, f"partly not English: {v.reason}") if v.item in lost else v for v in verdicts]
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
