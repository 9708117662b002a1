"""Is the rationale the grader's own template?  (``solve`` writes one; it is not the student's work.)

The lab re-renders the template ``solve`` would write for this bundle
(:meth:`ReferenceAnswers.reference_rationale`) from the bundle's own replayed plans, with the
bundle's trigger and limitation (every combination of the lab's lists when the bundle's
answer is not one of them).  Both texts are reduced to word 3-grams: lower case, every
number replaced by one placeholder (so "28.49 ms" and "31 ms" are the same words),
n-grams taken within a sentence only (so reordering sentences changes nothing).

Measure and threshold (chosen from data, see ``tests/test_generated.py``):

* ``containment`` — the share of the student's distinct 3-grams found in the template;
* ``coverage`` — the share of the template's distinct 3-grams found in the student's text.

A rationale is the template when ``coverage >= 0.55`` (more than half of the template is
reproduced, whatever was added around it), or when ``containment >= 0.6`` and
``coverage >= 0.35`` (the text is mostly template, and more than its opening sentence).
Measured on both labs, every track and several seeds: ``solve``'s own rationales score
1.0 / 1.0; the template with its numbers changed, five words swapped, its sentences
reordered, a sentence added, a sentence dropped, fifty words of padding added, or another
seed's template, scores at least 0.63 containment and 0.68 coverage.  Genuine rationales
(the book's marimo exports and hand-written ones, some reusing the lab's own phrases)
score at most 0.30 containment and 0.35 coverage; the template's opening sentence alone
("I recommend compiled with fusion and reject eager execution.") covers at most 0.26.

Both texts are first read as every reader reads them (:func:`.text.visible`): a zero-width
character inside each word changes nothing here.

**Partly the template.** A rationale below those lines may still hold some of the template's
sentences; the rationale items are judged on the others only (:func:`own_text`, which the
rationale check reads, the word count included), and one finding tells the student which
sentences were not read and what share of the points is withheld (the ``generated`` flag goes to
staff too; see the slope below).  A sentence of the
rationale is a *template sentence* when it reproduces at least :data:`SENTENCE_COVERAGE` of the
3-grams of one sentence of a template that has at least :data:`MIN_SENTENCE_WORDS` words besides
the option names (labels, keywords, device names) and numbers.  The lines, measured
(``tests/test_generated.py``): the template's openings, limitation and trigger lines have at most
6 such words — they only state choices in the lab's words, as any student does, and stay the
student's — while its evidence sentences have at least 8.  An evidence sentence keeps at least
58 % of its 3-grams with two words changed (still the template's); with four changed, Lab 11's
two longest (22 3-grams) keep 50–55 % and every other one 23–44 %; no sentence of the genuine rationales (exports, corpus, reference answers) reproduces more than
33 % of a template sentence.  A text that is mostly template keeps the rule above: flagged, and
nothing is read.

**Flagged means unpaid; below the flag, a slope.**  A flagged text — mostly the template by its words and keeping
at least :data:`TEMPLATE_THIRDS` of its evidence sentences (all of them, for a shorter template), or the template with
its words swapped (:data:`SHAPE_GENERATED`) — earns no rationale point.  A text mostly the template by its words that
keeps fewer of its sentences is on the slope below, so rewriting one sentence never moves more than a third; one that
keeps the notebook's synthesis prompt has two thirds withheld.  Below the flag, a text that keeps template sentences, or the template's
limitation and trigger lines word for word, is paid what its own sentences earn less a share taken as the
template's (:attr:`TemplateUse.thirds`): a third of the rationale points per template sentence kept, and a third
per level of :data:`SHARE_LEVELS` the whole text's containment reaches, at most two thirds.  The withheld items are
the ones the template supplies first (:data:`SHARE_ITEMS`: its evidence, then its stance on each option).  Rewriting
the template one sentence at a time, in its order or last sentence first, the points climb in steps of at most 4
and never fall (``benchmarks/template_slope.py``).
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .capture import plan_all
from .models import EvidenceRecord, part_key
from .report import Finding, TemplateMatch
from .text import CACHED_CHARS, visible
from .values import Choice, PartPlan

if TYPE_CHECKING:
    from .context import GradingContext

NGRAM = 3
PASTED_COVERAGE = 0.55
MOSTLY_CONTAINMENT = 0.6
MOSTLY_COVERAGE = 0.35
SENTENCE_COVERAGE = 0.5
MIN_SENTENCE_WORDS = 7
LINE_COVERAGE = 1.0
SHARE_LEVELS = (0.29, 0.36)
"""Containment of the whole text in the template from which a text below the flag that keeps a line of the template
is a third (then two thirds) the template's.  Measured (``benchmarks/template_slope.py``, ``tests/test_generated.py``):
the paraphrase ladder's texts keeping the limitation and trigger lines reach 0.30–0.35 with every other sentence
rewritten, 0.42–0.49 with one template sentence left; the hand-written rationales with those two lines added at most
0.28, the rationale corpus at most 0.15.  The lower line is narrow: it is what lets the slope climb in steps of a third."""
TEMPLATE_THIRDS = 3
MESSAGE = ("Your rationale is mostly the example text the grader generates; write it in your own words, "
           "explaining your decision with the numbers you saved.")
PARTLY_MESSAGE = ("{count} of your rationale's sentences {verb} the example text the grader generates, so only your other "
                  "sentences were read and {share} of its rationale points are withheld; say {pronoun} in your own words to "
                  "have {pronoun} count.")
SHARE_MESSAGE = ("About {share} of your rationale still follows the example text the grader generates, so {share} of its "
                 "rationale points are withheld; rewrite it in your own words, with the numbers you saved.")
# The items a template share costs, first to last: what the template's sentences supply (its evidence and its
# stance on each option) before what any student writes (length, the limitation and trigger lines).
SHARE_ITEMS = ("rationale_cites_evidence", "rationale_names_recommendation", "rationale_names_rejected", "rationale_length",
               "rationale_names_limitation", "rationale_names_trigger")

# What rendering from a record's own arms can raise when the record was shaped by hand
# (a field missing, a list where a mapping belongs); the lab's default settings stand in then.
_RECORD_SHAPE_ERRORS = (KeyError, TypeError, IndexError, AttributeError, ValueError)

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")  # on lower-cased text
_SENTENCE_END = re.compile(r"[.!?;:\n]+")
# Where one sentence ends for the per-sentence comparison: a full stop, "!" or "?" before a space
# (so "93.210 ms" stays whole), a semicolon or a line break.  Colons stay inside: the template's
# "Evidence from part B: …" is one sentence.
_SENTENCE_CUT = re.compile(r"[.!?]+(?=\s|$)|[;\n]")
_PLACEHOLDER = "#"
_WORD = re.compile(r"[a-z#%$×µμ]+(?:['’][a-z]+)?")


def skeleton(text: str) -> str:
    """``text`` in lower case with every number replaced by ``#``."""
    return _NUMBER.sub(" # ", text.lower())


def _skeleton_ngrams(text: str, n: int) -> frozenset[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for sentence in _SENTENCE_END.split(text):
        words = _WORD.findall(sentence)
        grams.update(zip(*(words[i:] for i in range(n)), strict=False))  # n-grams: the shorter tails end it
    return frozenset(grams)


def word_ngrams(text: str, n: int = NGRAM) -> frozenset[tuple[str, ...]]:
    """Distinct word ``n``-grams of ``text``, within sentences, numbers normalised."""
    return _skeleton_ngrams(skeleton(text), n)


@lru_cache(maxsize=1024)
def _template_ngrams(template_skeleton: str) -> frozenset[tuple[str, ...]]:
    return _skeleton_ngrams(template_skeleton, NGRAM)


def template_ngrams(template: str) -> frozenset[tuple[str, ...]]:
    """:func:`word_ngrams` of a template, cached on its skeleton.

    The skeleton depends only on the lab, track, trigger, limitation and the few words a
    plan puts in (a policy, a path, a candidate), so a batch renders the same few again and again.
    """
    return _template_ngrams(skeleton(template))


@dataclass(frozen=True)
class Similarity:
    """How much of a rationale is a template's wording."""

    shared: int
    containment: float
    coverage: float

    @property
    def generated(self) -> bool:
        """True when the rationale is mostly the template (see the module docstring)."""
        return self.coverage >= PASTED_COVERAGE or (self.containment >= MOSTLY_CONTAINMENT and self.coverage >= MOSTLY_COVERAGE)


def _similarity(own: frozenset[tuple[str, ...]], reference: frozenset[tuple[str, ...]]) -> Similarity:
    shared = len(own & reference)
    return Similarity(shared, shared / len(own) if own else 0.0, shared / len(reference) if reference else 0.0)


def similarity(text: str, template: str) -> Similarity:
    """:class:`Similarity` of a student's ``text`` to a ``template``."""
    return _similarity(word_ngrams(text), template_ngrams(template))


def _recorded_plan(record: EvidenceRecord) -> PartPlan | None:
    """The plan a record states, read without evaluating anything (for a part that does not replay);
    None when the record has no result to show.  A missing baseline reads as an empty arm: a template
    that needs it fails like any hand-shaped record, and the lab's default settings stand in."""
    if record.result is None:
        return None
    return PartPlan(part=record.part, model_key=record.model_key, upstream=dict(record.inputs), baseline=record.baseline or {},
                    result=record.result, alternatives=list(record.alternatives), decision=record.decision,
                    chosen_result=record.chosen_result, result_role=record.result_role)


def _default_plans(ctx: GradingContext) -> dict[str, PartPlan]:
    lab = ctx.lab
    return plan_all(lab, ctx.replay, ctx.track, {part: lab.sample_controls(ctx.replay, ctx.track, part, None)
                                                 for part in lab.part_ids()})


def _plans(ctx: GradingContext) -> tuple[dict[str, PartPlan], set[str]]:
    """Each part's plan for the template, and the parts whose plan was read from the record.

    In order: the replayed plan, the final-settings plan, the record's own arms (a part
    that does not replay still shows what the student saw), the lab's default settings.
    """
    plans: dict[str, PartPlan] = {}
    recorded: set[str] = set()
    for part in ctx.lab.part_ids():
        state = ctx.parts.get(part_key(part))
        plan = state.plan or state.final_plan if state is not None else None
        if plan is None and state is not None and state.record is not None:
            plan = _recorded_plan(state.record)
            if plan is not None:
                recorded.add(part)
        if plan is not None:
            plans[part] = plan
    if len(plans) < len(ctx.lab.parts):
        plans = {**_default_plans(ctx), **plans}
    return plans, recorded


def _answers(value: str | None, options: Iterable[str]) -> tuple[str, ...]:
    options = tuple(options)
    return (value,) if value in options else options


def _templates(ctx: GradingContext) -> Iterator[str]:
    """The templates ``solve`` would write for this bundle: its trigger and limitation, or every
    combination of the lab's lists for an answer outside them (none when the lab writes none); then the notebook's
    synthesis prompt, which a rationale that restates the question reproduces."""
    lab, synthesis = ctx.lab, ctx.bundle.synthesis
    combinations = list(itertools.product(
        _answers(synthesis.reevaluation_trigger, (choice.value for choice in lab.triggers)),
        _answers(synthesis.residual_risk, (choice.value for choice in lab.limitations))))
    plans, recorded = _plans(ctx)
    try:
        first = lab.reference_rationale(ctx.track, plans, *combinations[0])
    except _RECORD_SHAPE_ERRORS:
        if not recorded:
            raise
        plans = {**plans, **{part: plan for part, plan in _default_plans(ctx).items() if part in recorded}}
        first = lab.reference_rationale(ctx.track, plans, *combinations[0])
    if first is not None:
        yield first
        for trigger, limitation in combinations[1:]:
            template = lab.reference_rationale(ctx.track, plans, trigger, limitation)
            if template is not None:
                yield template
    prompt = _prompt(lab)
    if prompt:  # the notebook's own question, restated, is not an answer to it
        yield prompt


def _prompt(lab: object) -> str:
    """The notebook's synthesis prompt ("" when the lab has none): a text mostly made of it is flagged whole."""
    notebook = getattr(lab, "notebook", None)
    return " ".join(notebook.synthesis[1:]) if notebook is not None and notebook.synthesis else ""


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of ``text`` (see ``_SENTENCE_CUT``), its end mark included."""
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in _SENTENCE_CUT.finditer(text):
        spans.append((start, cut.end()))
        start = cut.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


@lru_cache(maxsize=64)
def _name_words(options: tuple[Choice, ...], slots: tuple[tuple[str, tuple[str, ...]], ...]) -> frozenset[str]:
    """Every word (as the comparison reads words) of the options' labels, names and device names."""
    names = [text for choice in options for text in (choice.label, *choice.keywords)]
    names += [name for _, values in slots for name in values]
    return frozenset(word for name in names for word in _WORD.findall(skeleton(name))) | {_PLACEHOLDER}


@lru_cache(maxsize=1024)
def _template_lines(template_skeleton: str, names: frozenset[str]) -> tuple[frozenset[tuple[str, ...]], ...]:
    """The 3-grams of each short line of a template after its opening (fewer than :data:`MIN_SENTENCE_WORDS` words
    besides the option names and numbers: its limitation and trigger lines, label and answer).  The opening only says
    what is recommended and rejected, as every student does."""
    found = []
    for start, end in sentence_spans(template_skeleton)[1:]:
        sentence = template_skeleton[start:end]
        if sum(word not in names for word in _WORD.findall(sentence)) < MIN_SENTENCE_WORDS:
            grams = _line_ngrams(sentence)
            if grams:
                found.append(grams)
    return tuple(found)


def _line_ngrams(text_skeleton: str) -> frozenset[tuple[str, ...]]:
    """The 3-grams of one line across its colons ("Remaining limitation: …" keeps its label words with the answer)."""
    words = _WORD.findall(text_skeleton)
    return frozenset(zip(*(words[i:] for i in range(NGRAM)), strict=False))


@lru_cache(maxsize=1024)
def _template_sentences(template_skeleton: str, names: frozenset[str]) -> tuple[frozenset[tuple[str, ...]], ...]:
    """The 3-grams of each sentence of a template long enough to count: at least
    :data:`MIN_SENTENCE_WORDS` words besides the option names and numbers.  A sentence that only
    states choices in the lab's words ("I recommend compiled with fusion and reject eager
    execution.", "Remaining limitation: …") is what any student writes, so it is never the template's."""
    found = []
    for start, end in sentence_spans(template_skeleton):
        sentence = template_skeleton[start:end]
        if sum(word not in names for word in _WORD.findall(sentence)) >= MIN_SENTENCE_WORDS:
            grams = _skeleton_ngrams(sentence, NGRAM)
            if grams:
                found.append(grams)
    return tuple(found)


@dataclass(frozen=True)
class TemplateUse:
    """How much of a rationale is the template: the whole text's :class:`Similarity` to the closest
    template (None when the lab writes none), the sentences that are a template's own, and the rest."""

    similarity: Similarity | None
    template_sentences: tuple[str, ...]
    own: str
    template_lines: int = 0
    """The template's limitation and trigger lines (label and answer) the text reproduces word for word."""
    template: str = ""
    """The closest template as rendered for the bundle ("" when the lab writes none)."""
    mapped: bool = False
    """The text is a template with its words swapped (:data:`SHAPE_GENERATED`)."""
    whole: bool = False
    """The text is mostly the template, with fewer than :data:`TEMPLATE_THIRDS` sentences of its own beside it."""
    restated: bool = False
    """The template it keeps sentences of is the notebook's own synthesis prompt: restating the question earns two
    thirds less, whatever else the text says."""
    own_containment: float = 0.0
    """The containment in the template of the text without the template's sentences it keeps (its own sentences): how
    closely those follow the template's words."""

    @property
    def generated(self) -> bool:
        """True when the rationale is the template with its words swapped, or mostly the template with fewer than
        :data:`TEMPLATE_THIRDS` of its own sentences beside the template's: it earns no rationale point."""
        return self.mapped or self.whole

    @property
    def partly(self) -> bool:
        """True when some sentences are the template's but not most of the text: only the others are read."""
        return not self.generated and bool(self.template_sentences)

    @property
    def thirds(self) -> int:
        r"""How many thirds of the rationale points a text below the flag leaves unpaid as the template's (0–2):
        for a text that keeps a template sentence or a limitation or trigger line word for word: one per template
        sentence it keeps, and one per level of :data:`SHARE_LEVELS` its whole text's containment reaches."""
        if self.similarity is None or self.generated:
            return 0
        if not (self.template_sentences or self.template_lines):
            return 0  # sharing words is not copying: only a text that keeps the template's own lines is measured
        if self.similarity.generated:  # mostly template by its words, but with its own sentences: a third per kept one
            return min(TEMPLATE_THIRDS - 1, len(self.template_sentences) or TEMPLATE_THIRDS - 1)
        if self.restated and self.template_sentences:
            return TEMPLATE_THIRDS - 1
        by_text = sum(self.own_containment >= level for level in SHARE_LEVELS)
        return min(TEMPLATE_THIRDS - 1, max(len(self.template_sentences), by_text))


def _best(own: frozenset[tuple[str, ...]], templates: tuple[str, ...]) -> tuple[Similarity | None, str]:
    """The closest template to a text's 3-grams, and its :class:`Similarity` (the first one that is the template's)."""
    best: Similarity | None = None
    closest = ""
    for template in templates:
        found = _similarity(own, template_ngrams(template))
        if found.generated:
            return found, template
        if best is None or (found.containment, found.coverage) > (best.containment, best.coverage):
            best, closest = found, template
    return best, closest


def matched_runs(template: str, text: str) -> tuple[tuple[int, int], ...]:
    """The character runs ``[start, end)`` of ``template`` whose words, three in a row within a sentence and numbers
    alike, ``text`` repeats (what the comparison counted), merged where they touch: what staff see marked."""
    wanted = word_ngrams(text)
    runs: list[list[int]] = []
    for start, end in sentence_spans(template):
        words = [(m.group(), start + m.start(), start + m.end()) for m in _WORD.finditer(skeleton_spans(template[start:end]))]
        for i in range(len(words) - NGRAM + 1):
            window = words[i:i + NGRAM]
            if tuple(word for word, _, _ in window) in wanted:
                low, high = window[0][1], window[-1][2]
                if runs and low <= runs[-1][1] + 1:
                    runs[-1][1] = max(runs[-1][1], high)
                else:
                    runs.append([low, high])
    return tuple((low, high) for low, high in runs)


def skeleton_spans(text: str) -> str:
    """:func:`skeleton` that keeps every character where it was: each number becomes ``#`` padded with spaces to its
    length, so offsets into the result are offsets into ``text``."""
    return _NUMBER.sub(lambda m: "#".ljust(len(m.group())), text.lower())


_SHAPE_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|[^\w\s]")
SHAPE_GENERATED = 0.95
"""How closely a text's shape — its numbers and punctuation in order, every word alike — may follow a template's before
it is that template with its words swapped.  Measured (``tests/test_generated.py``): a template with a synonym for every
word a map knows scores 0.98–0.99 on every lab; rewriting one of its sentences in other words brings it to 0.93–0.98
(the 3-gram rule above already flags those), all of them 0.72–0.84; the honest rationales of the corpora and the
held-out sets at most 0.66."""
MIN_SHAPE_TOKENS = 20


def _shape(text: str) -> tuple[str, ...]:
    return tuple(token if not token[0].isalpha() else "w" for token in _SHAPE_TOKEN.findall(text))


def shape_ratio(text: str, template: str) -> float:
    """How closely ``text`` follows ``template``'s shape (:data:`SHAPE_GENERATED`), 0 for a template too short to tell."""
    mine, theirs = _shape(text), _shape(template)
    if len(theirs) < MIN_SHAPE_TOKENS or not mine:
        return 0.0
    return difflib.SequenceMatcher(None, mine, theirs, autojunk=False).ratio()


@lru_cache(maxsize=256)
def _template_use(text: str, templates: tuple[str, ...], names: frozenset[str], prompt: str = "") -> TemplateUse:
    grams = word_ngrams(text)
    best, closest = _best(grams, templates)
    if best is not None and not best.generated:
        mapped = next((template for template in templates if shape_ratio(text, template) >= SHAPE_GENERATED), None)
        if mapped is not None:
            return TemplateUse(best, (), text, template=mapped, mapped=True)
    if best is None or not best.shared:
        return TemplateUse(best, (), text, template=closest)
    use = _sentences_used(text, templates, names, best, closest)
    everything = max(1, len(_template_sentences(skeleton(closest), names)))  # a short template: all of its sentences
    if best.generated and (closest == prompt or len(use.template_sentences) >= min(TEMPLATE_THIRDS, everything)
                           or not use.own.strip()):
        return TemplateUse(best, (), text, template=closest, whole=True)  # flagged: nothing of it is read
    return dataclasses.replace(use, restated=bool(prompt) and closest == prompt)


def _sentences_used(text: str, templates: tuple[str, ...], names: frozenset[str], best: Similarity,
                    closest: str) -> TemplateUse:
    """The template's sentences and lines ``text`` keeps, and the rest of it (its own sentences)."""
    reference = frozenset().union(*(template_ngrams(template) for template in templates))
    sentences = {sentence for template in templates for sentence in _template_sentences(skeleton(template), names)}
    lines = {line for template in templates for line in _template_lines(skeleton(template), names)}
    pasted: list[tuple[int, int]] = []
    copied_lines = 0
    for start, end in sentence_spans(text):
        own = word_ngrams(text[start:end])
        if len(own & reference) < 2:  # cheap filter: no template sentence shares fewer than two 3-grams with it
            continue
        if any(len(own & sentence) >= SENTENCE_COVERAGE * len(sentence) for sentence in sentences):
            pasted.append((start, end))
        elif lines and any(len(line_grams & line) >= LINE_COVERAGE * len(line)
                           for line_grams in (_line_ngrams(skeleton(text[start:end])),) for line in lines):
            copied_lines += 1
    if not pasted:
        return TemplateUse(best, (), text, copied_lines, closest, own_containment=best.containment)
    kept, last = [], 0
    for start, end in pasted:  # a pasted sentence becomes a paragraph break, so its neighbours stay apart
        kept += [text[last:start], "\n\n"]
        last = end
    kept.append(text[last:])
    remainder = "".join(kept).strip()
    rest, _ = _best(word_ngrams(remainder), templates)
    return TemplateUse(best, tuple(text[start:end].strip() for start, end in pasted), remainder, copied_lines, closest,
                       own_containment=rest.containment if rest is not None else 0.0)


def template_use(ctx: GradingContext) -> TemplateUse:
    """:class:`TemplateUse` of the bundle's rationale (as every reader reads it: :func:`.text.visible`).

    Computed once per grading context (both this check and the rationale check ask), and once per
    rationale and set of templates.
    """
    if ctx.template_use is None:
        ctx.template_use = _context_template_use(ctx)
    return ctx.template_use


def _context_template_use(ctx: GradingContext) -> TemplateUse:
    text = visible(ctx.bundle.synthesis.rationale or "").text
    if not text.strip():
        return TemplateUse(None, (), text)
    templates = tuple(visible(template).text for template in _templates(ctx))
    if not templates:
        return TemplateUse(None, (), text)
    terms = ctx.lab.final_choice_terms(ctx.bundle)
    options = (*terms.options, *ctx.lab.triggers, *ctx.lab.limitations)
    use = _template_use if len(text) <= CACHED_CHARS else _template_use.__wrapped__  # a hostile wall of text is never kept
    return use(text, templates, _name_words(options, terms.slots), visible(_prompt(ctx.lab)).text)


def template_match(ctx: GradingContext) -> TemplateMatch | None:
    """What staff see of the template a rationale was matched against (:class:`~.report.TemplateMatch`), when it is
    flagged ``generated`` or keeps some of the template's sentences or lines; None otherwise (or before the check ran)."""
    use = ctx.template_use
    if use is None or not use.template or not (use.generated or use.template_sentences or use.template_lines):
        return None
    return TemplateMatch(use.template, use.template_sentences)


def own_text(ctx: GradingContext) -> str:
    """The rationale the reader judges: as every reader reads it, without the template's sentences."""
    return template_use(ctx).own


def _rationale_items(synthesis: Mapping[str, float]) -> tuple[str, ...]:
    return tuple(item for item in synthesis if item.startswith("rationale_") and item != "rationale_length")


CHAT = re.compile(
    r"(?<![\w])(?:(?:great|good|excellent|interesting|fantastic) question|what a (?:great|fantastic|fun|wonderful|interesting)"
    r" (?:question|scenario|problem|lab|exercise)|i hope (?:this|that|it) helps|hope (?:this|that) helps"
    r"|i hope (?:this|that|my) (?:\w+ )?(?:is|was|proves) (?:useful|helpful|clear)"
    r"|let me know if|feel free to (?:ask|reach|let)|(?:i am|i'm|i'd be|i would be) (?:happy|glad) to help|happy to help"
    r"|as an ai|as a (?:large )?language model|here(?:'s| is) (?:a|an|the|my|your) (?:\w+ )?(?:rationale|answer|response|draft"
    r"|summary|explanation|write ?up)|in summary, (?:both|each) options? (?:has|have) (?:its|their) (?:merits|trade ?offs)"
    r"|(?:^|\n)\s*(?:certainly|absolutely|of course|sure thing)[!,.])(?![\w])", re.IGNORECASE)
"""The words of a chat assistant's reply (a greeting, "I hope this helps", "Here is a rationale"): pasted chat, not a
student's reasoning about the evidence.  No rationale of the corpora, the book's exports or the held-out texts has one."""
CHAT_MESSAGE = ("Your rationale reads as a chat assistant's reply ({excerpt!r}); write your own, comparing your "
                "recommendation with the rejected alternative using your saved numbers.")


def chat_reply(text: str) -> str | None:
    """The first words of ``text`` that belong to a chat assistant's reply (:data:`CHAT`), or None."""
    found = CHAT.search(text)
    return found.group().strip() if found else None


def check_generated(ctx: GradingContext) -> Iterable[Finding]:
    """Flag a rationale that is mostly the template ``solve`` writes for this bundle, or a chat assistant's reply;
    say which sentences were not read when only some are the template's."""
    chat = chat_reply(visible(ctx.bundle.synthesis.rationale or "").text)
    if chat is not None:
        items = ("rationale_length", *_rationale_items(ctx.rubric.synthesis))
        yield Finding(part="synthesis", criterion="generated", rubric_item=items[0], also_costs=items[1:], hidden=False,
                      message=CHAT_MESSAGE.format(excerpt=chat), expected="a rationale in your own words", actual=chat,
                      code="generated.chat")
        return
    use = template_use(ctx)
    found = use.similarity
    if found is not None and use.generated:
        yield Finding(
            part="synthesis", criterion="generated", rubric_item="rationale_length",
            also_costs=_rationale_items(ctx.rubric.synthesis), hidden=False, message=MESSAGE, code="generated.template",
            expected="a rationale in your own words",
            actual="the generated text with its words swapped: its numbers and punctuation follow it in order" if use.mapped
            else f"{found.containment:.0%} of its word sequences are the generated text's, covering {found.coverage:.0%} of it",
        )
    elif use.thirds:  # every partly-template text keeps a template sentence, so it is paid a share
        share = "a third" if use.thirds == 1 else "two thirds"
        items = _share_items(ctx.rubric.synthesis, use.thirds)
        count = len(use.template_sentences)
        message = PARTLY_MESSAGE.format(count=count, verb="is" if count == 1 else "are", share=share,
                                        pronoun="it" if count == 1 else "them") if count else SHARE_MESSAGE.format(share=share)
        yield Finding(
            part="synthesis", criterion="generated", rubric_item=items[0], also_costs=items[1:], hidden=False,
            message=message, expected="a rationale in your own words", code="generated.partly",
            actual=list(use.template_sentences) or (
                f"{found.containment:.0%} of its word sequences are the generated text's" if found is not None else None),
        )


def _share_items(synthesis: Mapping[str, float], thirds: int) -> tuple[str, ...]:
    """The rationale items, in :data:`SHARE_ITEMS` order, whose points first reach ``thirds`` thirds of the rationale points."""
    order = [item for item in SHARE_ITEMS if item in synthesis] + [item for item in _rationale_items(synthesis)
                                                                   if item not in SHARE_ITEMS]
    total = sum(synthesis[item] for item in order)
    chosen: list[str] = []
    for item in order:
        if sum(synthesis[name] for name in chosen) >= total * thirds / TEMPLATE_THIRDS - 1e-9:
            break
        chosen.append(item)
    return tuple(chosen)
