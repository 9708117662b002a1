"""Rationale quantities are parsed by pint and matched against evidence unit-aware."""

from __future__ import annotations

import pytest

from mlsys_grader.core.rationale import EvidenceIndex, cited_quantities, names_any, word_count


def _match(text: str, evidence: list[tuple[float, str]], tol: float = 0.01):
    index = EvidenceIndex(evidence)
    return [index.match(q, tol) is not None for q in cited_quantities(text)]


@pytest.mark.parametrize("text", ["0.42 ms", "420 µs", "420 μs", "420 us", "4.2e-4 s", "0.00042 s"])
def test_time_matches_in_any_unit(text):
    assert _match(text, [(420.3, "microsecond")]) == [True]


def test_percent_multiplier_bytes_and_dollars():
    evidence = [(0.8799, "dimensionless"), (3.7485, "dimensionless"), (1.2, "megabyte"), (0.003, "dollar")]
    assert _match("88% then 3.75x and 3.7× then 1.2 MB and 1200 kB and $0.003", evidence) == [True] * 6


def test_bytes_do_not_match_plain_ratios():
    """mlsysim's registry makes bytes dimensionless; the base unit keeps them apart."""
    assert _match("8 bit", [(8.0, "dimensionless")]) == [False]


def test_numbers_without_units_and_far_values_do_not_count():
    assert cited_quantities("I chose 50 executions and 3 launches") == []
    assert _match("0.5 ms", [(420.3, "microsecond")]) == [False]
    assert _match("0 ms", [(0.0, "millisecond")]) == [False]


def test_written_rounding_is_respected():
    assert _match("340 ms", [(340.96, "millisecond")]) == [True]
    assert _match("341.9 ms", [(340.96, "millisecond")]) == [True]  # within 1 %
    assert _match("345.0 ms", [(340.96, "millisecond")]) == [False]


def test_names_and_word_count():
    assert names_any("We keep the Compiled-with-Fusion path", ["compiled with fusion"])
    assert not names_any("eager only", ["fusion"])
    assert word_count("Three short words.") == 3
