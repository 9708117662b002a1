"""The one text normalisation (``mlsys_grader.core.text``): invisible characters removed, confusable
spaces folded, compatibility forms folded where that keeps a number's meaning — and no verdict of the
rationale reader, the generated-text detector or the collusion shingles changes when invisible
characters are inserted anywhere into a text."""

from __future__ import annotations

import json
import sys
import tomllib
import unicodedata
from pathlib import Path

import pytest
from conftest import examples, reference_answers, reseal, solved
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsys_grader import grade_bundle
from mlsys_grader.core import rationale
from mlsys_grader.core.rationale._text import not_english
from mlsys_grader.core.text import CACHED_CHARS, Visible, readable, visible
from mlsys_grader.course import _collusion
from mlsys_grader.student._session import INVISIBLE_NOTE, open_lab

ROOT = Path(__file__).resolve().parents[1]
SYNTHESIS_FIELDS = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale")

# Default-ignorable code points outside category Cf that render as nothing.
OTHER_INVISIBLE = ("\u034f", "\u115f", "\u1160", "\u17b4", "\u17b5", "\u180b", "\u180c", "\u180d", "\u180f", "\u3164",
                   "\ufe00", "\ufe0f", "\uffa0", "\U000e0100", "\U000e01ef")
FORMAT_CHARACTERS = tuple(chr(c) for c in range(sys.maxunicode + 1)
                          if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) == "Cf")
INVISIBLE = FORMAT_CHARACTERS + OTHER_INVISIBLE


def _cases() -> list[tuple[str, str, int | None, dict]]:
    """(lab, track, seed, synthesis fields) of every corpus text and reference answer."""
    cases = []
    for path in sorted((ROOT / "tests" / "rationale_corpus").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for entry in data["honest"] + data["gaming"]:
            cases.append((path.stem, entry["track"], entry.get("seed"),
                          {name: entry[name] for name in SYNTHESIS_FIELDS if name in entry}))
    cases += [(lab, track, None, dict(entry)) for lab, tracks in reference_answers().items() for track, entry in tracks.items()]
    return cases


CASES = _cases()


def _verdict(lab: str, track: str, seed: int | None, fields: dict) -> tuple:
    """What grading says about the synthesis: each item's points, each finding, the staff flags."""
    data = solved(lab, track, seed)
    data["synthesis"].update(fields)
    report = grade_bundle(reseal(data))
    return (tuple((item.item, item.points) for item in report.parts["synthesis"].items),
            tuple((f.criterion, f.rubric_item, f.also_costs, f.message) for f in report.findings if f.part == "synthesis"),
            tuple(report.flags))


def _insert(text: str, insertions: list[tuple[int, str]]) -> str:
    for position, char in sorted(insertions, reverse=True):
        index = position % (len(text) + 1)
        text = text[:index] + char + text[index:]
    return text


# -- what is removed, folded and kept ---------------------------------------------------------------

def test_every_format_character_of_this_pythons_unicode_database_is_removed():
    """The removal list is written out by range; a newer Unicode's Cf character must not slip past."""
    for char in INVISIBLE:
        assert visible(f"ab{char}cd") == Visible("abcd", 1), hex(ord(char))


def test_the_characters_of_the_measured_attack_are_removed_and_counted():
    typed = "Evi\u200bdence fr\u200com pa\u2060rt B: 50 exec\u00adutions"
    assert visible(typed) == Visible("Evidence from part B: 50 executions", 4)
    assert visible(typed).had_invisible and not visible("plain text").had_invisible


def test_confusable_spaces_become_plain_spaces_and_separators_newlines():
    for space in "\u00a0\u202f\u2007\u2009\u200a\u2002\u2003\u3000\u205f\u1680\u2800":
        assert readable(f"28.49{space}ms") == "28.49 ms", hex(ord(space))
    assert readable("one.\u2028Two.") == "one.\nTwo."
    assert readable("one.\u2029Two.") == "one.\n\nTwo."
    assert readable("one.\r\nTwo.\rThree.") == "one.\nTwo.\nThree."
    assert visible("a\u00a0b").removed == 0  # a folded space is not an invisible character


def test_exponents_minus_signs_and_fractions_keep_their_meaning():
    for text in ("1.2 × 10⁻⁷ s", "10² µs", "−3.5 ms", "½ of the time", "x₂ = 4"):
        assert readable(text) == text
    assert [q.value for q in rationale.cited_quantities(readable("takes 4 × 10⁻³ s"))] == pytest.approx([0.004])


def test_compatibility_forms_are_folded_elsewhere():
    assert readable("ｃｏｍｐｉｌｅｄ with ﬁxed 𝐞𝐚𝐠𝐞𝐫 at １２ ㎳") == "compiled with fixed eager at 12 ms"


def test_plain_text_is_returned_unchanged():
    text = "I recommend compiled with fusion.\n- It takes 8.99 ms\tin total."
    assert visible(text) == Visible(text, 0)


def test_the_corpus_reads_exactly_as_before():
    """Every corpus text and reference answer is unchanged, so the reader's inputs are what they were."""
    for _, _, _, fields in CASES:
        assert readable(fields["rationale"]) == fields["rationale"]


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=60))
def test_normalising_twice_is_normalising_once(text):
    once = visible(text)
    assert visible(once.text) == Visible(once.text, 0)


# -- no verdict changes -----------------------------------------------------------------------------

@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES),
       insertions=st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(INVISIBLE)), min_size=1, max_size=40))
def test_inserting_invisible_characters_anywhere_changes_no_verdict(case, insertions):
    """Rationale items, findings (their messages too) and the staff flags are those of the text as written."""
    lab, track, seed, fields = case
    typed = _insert(fields["rationale"], insertions)
    assert visible(typed).removed == len(insertions)
    assert _verdict(lab, track, seed, {**fields, "rationale": typed}) == _verdict(lab, track, seed, fields)


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(min_value=0, max_value=20), lab=st.sampled_from(("lab07", "lab11")),
       insertions=st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(INVISIBLE)), min_size=1, max_size=80))
def test_invisible_characters_in_the_template_change_no_verdict(seed, lab, insertions):
    data = solved(lab, "edge", seed)
    text = data["synthesis"]["rationale"]
    typed = _insert(text, insertions)
    assert _verdict(lab, "edge", seed, {"rationale": typed}) == _verdict(lab, "edge", seed, {"rationale": text})


@settings(max_examples=examples(100), deadline=None)
@given(case=st.sampled_from(CASES),
       insertions=st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(INVISIBLE)), min_size=1, max_size=40))
def test_collusion_shingles_are_the_same_with_and_without_invisible_characters(case, insertions):
    text = case[3]["rationale"]
    assert _collusion.shingles(_insert(text, insertions)) == _collusion.shingles(text)


# -- the notebook -------------------------------------------------------------------------------------

def test_the_notebook_keeps_what_was_typed_and_says_once_that_invisible_characters_are_ignored(tmp_path):
    lab = open_lab("lab07", "cloud", directory=tmp_path)
    typed = "I recommend compiled\u200b with fusion and reject eager execution; it is faster\u00a0overall."
    first = lab.synthesis(recommendation="compiled_fused", rejected_alternative="eager", rationale=typed)
    assert first.lines.count(INVISIBLE_NOTE) == 1
    assert json.loads((tmp_path / "lab07-submission.json").read_text(encoding="utf-8"))["synthesis"]["rationale"] == typed
    again = lab.synthesis(recommendation="compiled_fused", rejected_alternative="eager", rationale=typed + "\u2060")
    assert INVISIBLE_NOTE not in again.lines
    clean = open_lab("lab11", "edge", directory=tmp_path).synthesis(rationale="I choose the primary and reject the alternative.")
    assert INVISIBLE_NOTE not in clean.lines


def test_a_short_text_is_folded_once_and_a_wall_of_text_is_never_kept():
    """Every reader asks for the same rationale, so a text is kept once folded; one longer than
    ``CACHED_CHARS`` (a hostile submission) is folded afresh, equal each time, and never held by the cache."""
    short = "I recommend compiled\u200b execution over eager."
    assert visible(short) is visible(short) and visible(short).removed == 1
    wall = ("word\u200b " * (CACHED_CHARS // 5 + 1))
    first, again = visible(wall), visible(wall)
    assert first == again and first.removed == CACHED_CHARS // 5 + 1
    assert first is not again


# -- another language ---------------------------------------------------------------------------------------
def _mostly_another_script(text: str) -> bool:
    """The script half of the rule, stated letter by letter: at least 20 letters, fewer than half of them Latin."""
    letters = [ch for ch in text if unicodedata.category(ch).startswith("L")]
    latin = [ch for ch in letters if ch.isascii() or "LATIN" in unicodedata.name(ch, "")]
    return len(letters) >= 20 and len(latin) < len(letters) / 2


@pytest.mark.parametrize("text", [
    "Компилятор быстрее, потому что он объединяет ядра и уменьшает число обращений к памяти.",
    "编译器在这个模型上更快因为它融合了很多算子并且减少了内存访问的次数所以我们选择它",
    "Компилятор × быстрее × ядра × памяти × объединяет × 3.4× ÷ 2 × 10 ×× ÷÷ ××××××××××××××××××",
    "Der Compiler ist für das Modell nicht die beste Wahl, und wir sind sicher, dass es mit der GPU besser ist.",
    "Elegimos el modelo compilado porque es más rápido que el eager y la memoria no es un problema para la GPU.",
])
def test_a_rationale_in_another_language_is_not_read_however_many_signs_it_holds(text):
    assert not_english(text)


@pytest.mark.parametrize("text", [
    "Compiled with fusion: 3.4× faster than eager (12.1 ms → 3.6 ms); I reject eager ÷ its dispatch overhead.",
    "Naïve café-style résumé: the déjà vu of Ångström-scale kernels; compiled wins at 2.1× on the GPU.",
    "Rec: compiled. Rej: eager. Die-to-die bandwidth is the risk, not the der of a function.",
    "We keep eager because the model changes every week; el compilador is not worth the 40 s compile.",
])
def test_english_with_signs_accents_and_a_foreign_word_is_read(text):
    assert not not_english(text)


@given(st.text(alphabet=st.sampled_from("abcXYZ éüßÅ×÷·ŁžПрдж中文字αβγ0123 .,"), max_size=80))
@settings(max_examples=examples(300), deadline=None)
def test_the_script_rule_is_the_share_of_latin_letters(text):
    """However it is computed, a text is another script exactly when fewer than half of its (at least 20) letters are
    Latin; × and ÷ sit among the Latin letters' code points but are no letters."""
    if _mostly_another_script(text):
        assert not_english(text)
    elif not any(word in text.lower().split() for word in ("de", "la", "que", "und", "der")):
        assert not not_english(text)
