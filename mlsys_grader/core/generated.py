"""Is the rationale the grader's own template?  (``solve`` writes one; it is not the student's work.)

The lab re-renders the template ``solve`` would write for this bundle
(:meth:`LabSpec.reference_rationale`) from the bundle's own replayed plans, with the
bundle's trigger and limitation (every combination of the lab's lists when the bundle's
answer is not one of them).  Both texts are reduced to word 3-grams: lower case, every
number replaced by one placeholder (so "28.49 ms" and "31 ms" are the same words),
n-grams taken within a sentence only (so reordering sentences changes nothing).

Measure and threshold (chosen from data, see ``tests/test_generated.py``):

* ``containment`` — the share of the student's distinct 3-grams found in the template;
* ``coverage`` — the share of the template's distinct 3-grams found in the student's text.

A rationale is the template when ``containment >= 0.5`` and ``coverage >= 0.3`` (it is
mostly template, and more than one shared sentence of it), or when ``coverage >= 0.6``
whatever else was added (most of the template pasted, then padded).  Measured: ``solve``'s
own rationales score 1.0 / 1.0; the template with its numbers changed, five words
swapped, sentences reordered, a sentence added or one sentence dropped scores at least
0.58 / 0.55; genuine rationales (the marimo exports, hand-written ones) at most 0.37
containment and 0.37 coverage, even when they reuse the lab's own phrases ("I recommend
compiled with fusion and reject eager execution", "the remaining limitation is …").
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Mapping

from .labspec import PartPlan
from .models import PARTS
from .report import Finding

if TYPE_CHECKING:
    from .context import GradingContext

NGRAM = 3
MIN_CONTAINMENT = 0.5
MIN_COVERAGE = 0.3
PASTED_COVERAGE = 0.6
MESSAGE = ("Your rationale is mostly the example text the grader generates; write it in your own words, "
           "explaining your decision with the numbers you saved.")

_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_SENTENCE_END = re.compile(r"[.!?;:\n]+")
_WORD = re.compile(r"[a-z#%$×µμ]+(?:['’][a-z]+)?")


def sentences_of_words(text: str) -> list[list[str]]:
    """``text`` as sentences of lower-case words, every number replaced by ``#``."""
    normalised = _NUMBER.sub(" # ", text.lower())
    return [words for sentence in _SENTENCE_END.split(normalised) if (words := _WORD.findall(sentence))]


def word_ngrams(text: str, n: int = NGRAM) -> frozenset[tuple[str, ...]]:
    """Distinct word ``n``-grams of ``text``, within sentences, numbers normalised."""
    grams = set()
    for words in sentences_of_words(text):
        grams.update(zip(*(words[i:] for i in range(n))))
    return frozenset(grams)


@lru_cache(maxsize=1024)
def _template_ngrams(skeleton: str) -> frozenset[tuple[str, ...]]:
    return word_ngrams(skeleton)


def template_ngrams(template: str) -> frozenset[tuple[str, ...]]:
    """:func:`word_ngrams` of a template, cached on its skeleton (the text with numbers normalised).

    The skeleton depends only on the lab, track, trigger, limitation and the few words a
    plan puts in (a policy, a path, a candidate), so a batch renders the same few again and again.
    """
    return _template_ngrams(_NUMBER.sub("#", template))


@dataclass(frozen=True)
class Similarity:
    """How much of a rationale is a template's wording."""

    shared: int
    containment: float
    coverage: float

    @property
    def generated(self) -> bool:
        """True when the rationale is mostly the template (see the module docstring)."""
        return (self.containment >= MIN_CONTAINMENT and self.coverage >= MIN_COVERAGE) or self.coverage >= PASTED_COVERAGE


def similarity(text: str, template: str) -> Similarity:
    """:class:`Similarity` of a student's ``text`` to a ``template``."""
    own, reference = word_ngrams(text), template_ngrams(template)
    shared = len(own & reference)
    return Similarity(shared, shared / len(own) if own else 0.0, shared / len(reference) if reference else 0.0)


def _plans(ctx: "GradingContext") -> dict[str, PartPlan]:
    """Each part's replayed plan, else its final-settings plan, else the lab's default settings."""
    plans: dict[str, PartPlan] = {}
    for part in PARTS:
        state = ctx.parts.get(part)
        plan = state and (state.plan or state.final_plan)
        if plan is None:
            upstream = {dep: plans[dep].result for dep in ctx.lab.parts[part].depends_on}
            plan = ctx.lab.plan(ctx.track, part, ctx.lab.sample_controls(ctx.track, part, None), upstream)
        plans[part] = plan
    return plans


def _answers(value: str | None, options: Iterable[str]) -> tuple[str, ...]:
    options = tuple(options)
    return (value,) if value in options else options


def best_similarity(ctx: "GradingContext") -> Similarity | None:
    """The rationale's similarity to the closest template for this bundle, or None when the lab writes none."""
    lab, synthesis = ctx.lab, ctx.bundle.synthesis
    plans = _plans(ctx)
    best: Similarity | None = None
    for trigger, limitation in itertools.product(
            _answers(synthesis.reevaluation_trigger, (choice.value for choice in lab.triggers)),
            _answers(synthesis.residual_risk, (choice.value for choice in lab.limitations))):
        template = lab.reference_rationale(ctx.track, plans, trigger, limitation)
        if template is None:
            return None
        found = similarity(synthesis.rationale, template)
        if found.generated:
            return found
        if best is None or (found.containment, found.coverage) > (best.containment, best.coverage):
            best = found
    return best


def _rationale_items(synthesis: Mapping[str, float]) -> tuple[str, ...]:
    return tuple(item for item in synthesis if item.startswith("rationale_") and item != "rationale_length")


def check_generated(ctx: "GradingContext") -> Iterable[Finding]:
    """Flag a rationale that is mostly the template ``solve`` writes for this bundle."""
    if not ctx.bundle.synthesis.rationale.strip():
        return
    found = best_similarity(ctx)
    if found is None or not found.generated:
        return
    yield Finding(
        part="synthesis", criterion="generated", rubric_item="rationale_length",
        also_costs=_rationale_items(ctx.rubric.synthesis), hidden=False, message=MESSAGE,
        expected="a rationale in your own words",
        actual=f"{found.containment:.0%} of its word sequences are the generated text's, covering {found.coverage:.0%} of it",
    )
