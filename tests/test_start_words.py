"""The words a reader's pattern can start with (:func:`mlsys_grader.core.rationale.start_words`): read by our
own parser of the pattern syntax, complete for every pattern of every shipped lab on the corpus texts (each match a
full scan finds begins with a listed start word), so scanning only there finds what a full scan finds."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from conftest import LABS, TRACKS, reference_answers, solved

from mlsys_grader.core import rationale as R
from mlsys_grader.core.memos import Memos
from mlsys_grader.core.models import load_bundle
from mlsys_grader.labs import get_lab

CORPUS = Path(__file__).parent / "rationale_corpus"
FIELDS = ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk")


def _cases(lab: str) -> list[tuple[dict, str]]:
    """(bundle, rationale) of ``lab``: its corpus texts, its reference answers and each track's seeded bundles."""
    cases = []
    corpus = tomllib.loads((CORPUS / f"{lab}.toml").read_text(encoding="utf-8"))
    for entry in corpus["honest"] + corpus.get("honest_forms", []) + corpus["gaming"]:
        bundle = solved(lab, entry["track"], entry.get("seed"))
        bundle["synthesis"].update({name: entry[name] for name in FIELDS if name in entry})
        cases.append((bundle, entry["rationale"]))
    cases += [(solved(lab, track), entry["rationale"]) for track, entry in reference_answers()[lab].items()]
    for track in TRACKS:
        for seed in (None, 0, 1, 2, 3):
            bundle = solved(lab, track, seed)
            cases.append((bundle, bundle["synthesis"]["rationale"]))
    return cases


def _scanners(lab_id: str) -> tuple[dict[str, R._stances._Scanner], list[str]]:
    """Every distinct pattern of every reader the lab's cases need (and the cues), and every text, normalised."""
    memos, found, texts = Memos(), {R._stances._CUES.source: R._stances._CUES}, []
    lab = get_lab(lab_id)
    for data, text in _cases(lab_id):
        reader = R.reader_for(memos, lab, lab.final_choice_terms(load_bundle(json.dumps(data))))
        for scanner in (reader.names, reader.decisive, *reader.triggers.values(), *reader.limitations.values()):
            if scanner is not None:
                found.setdefault(scanner.source, scanner)
        texts.append(R.normalise(text))
    return found, texts


@pytest.mark.parametrize("lab_id", LABS)
def test_every_pattern_of_every_lab_lists_start_words_that_every_full_scan_match_begins_with(lab_id):
    scanners, texts = _scanners(lab_id)
    assert len(scanners) >= 8 and len(texts) >= 40
    matched = 0
    for source, scanner in scanners.items():
        starts = scanner.starts
        assert starts is not None, source[:80]
        exact, prefixes = starts
        for norm in texts:
            full = list(scanner.pattern.finditer(norm))
            for match in full:
                at = match.start()
                assert at == 0 or norm[at - 1] == " ", (source[:60], match.group())
                word = norm[at:].split(" ", 1)[0]
                assert word in exact or word.startswith(prefixes), (source[:60], word, match.group())
            doc = R._stances._Text(norm)
            assert [m.span() for m in scanner.finditer(doc)] == [m.span() for m in full], source[:60]
            matched += len(full)
    assert matched > 250  # the corpus exercises the patterns


@pytest.mark.parametrize("source, exact, prefixes", [
    (r"(?<![\w])(?:i|we) (?:recommend|choose)", {"i", "we"}, ()),
    (r"rul(?:e|es|ed|ing) out", {"rule", "rules", "ruled", "ruling"}, ()),
    (r"compil\w+ path", set(), ("compil",)),
    (r"(?:the )?eager", {"the", "eager"}, ()),
    (r"x{2,3}y", {"xxy", "xxxy"}, ()),
    (r"(?P<n0>on device)|\$", None, None),
    (r"(?i)eager", None, None),
    (r"(a)\1", None, None),
    (r"(?:not )?", None, None),
])
def test_start_words_follow_the_syntax_the_patterns_are_written_in(source, exact, prefixes):
    """Literal words, groups, alternatives, quantifiers and classes are followed; a start the words cannot tell
    (a symbol, an inline flag, a backreference, an empty match) leaves the pattern scanned everywhere."""
    re.compile(source)
    found = R.start_words(source)
    if exact is None:
        assert found is None
    else:
        assert found == (frozenset(exact), prefixes)
