"""Rationale completeness, read the way a person reads a rationale.

Six rubric items grade the synthesis rationale: ``rationale_length``,
``rationale_cites_evidence``, ``rationale_names_recommendation``,
``rationale_names_rejected``, ``rationale_names_limitation`` and
``rationale_names_trigger``.  Their findings are public (a self-check shows them):
each message says, in one sentence, what is missing, without naming an answer.

Text
----
Before any name is looked for, the text is normalised (:func:`normalise`): Unicode
compatibility forms, lower case, hyphens, underscores and slashes as spaces, "+" and
"&" as "and", contractions spelled out ("don't" → "do not"), British spellings as
American ones ("unmodelled", "behaviour", "optimise").  Every name matches whole words
only: "threshold" does not name *hold*, "Nonetheless" does not name *none*.  Length
counts words as written (:func:`word_count`).  Both readers read :func:`plain_text`: a
``$…$`` (or ``\\(…\\)``) span is LaTeX only when it holds markup (a backslash command,
``^``, ``_`` or braces) and is then read as what it typesets ("$39.09\\,\\text{ms}$" is
39.09 ms); "$2.50 vs $4.10" has none and stays money.

Quantities (``rationale_cites_evidence``)
-----------------------------------------
A cited quantity (:func:`cited_quantities`) is a number with a unit: time (s, ms,
µs/us/μs, ns, min, h), data (B, kB/KB, KiB, MB, MiB, GB, GiB), work and rates (FLOP,
FLOPs, MFLOP(S), GFLOP/s, TFLOPS, FLOP/B, "per byte"), energy and power (J, mJ, µJ,
kJ, Wh, W, mW), money ($, US$, USD, dollars; "per hour"), a percentage (%, percent,
per cent, percentage points) or a multiplier (x, ×, X, times, -fold, "a factor of");
"1.7e-7", "1.7 × 10^-7" and "10⁻⁷" are read.  A bare number never counts.  Units are
converted with pint through mlsysim's registry, so "0.42 ms" matches a recorded
420 µs.  A percentage matches fractions, shares, changes and ratios; a multiplier
matches ratios only; "FLOPS" may be a count or a rate.

Not evidence (:func:`trivial_reason`): a written 0 or 1 in any unit ("1x", "0 ms",
"1 ms"), a percentage or multiplier equal to 1 ("100 %"), and a percentage or
multiplier equal to a setting the student chose in ``bundle.controls`` (Lab 11 D's
kernel speedup "10x", A's factor "4x", Lab 07's "50 times" for 50 executions).

Evidence is every quantity the captured records show (a recorded 0 or dimensionless 1
excepted), plus what a student derives from them where the derivation is one a
student makes; each lab module declares which fields, and the derivations are defined
here once: :func:`compared` — one quantity seen twice within one record (baseline vs
result; or two paths shown side by side, such as eager vs compiled totals or the two
candidates): ratio both ways, difference, change relative to the baseline (to either,
for two paths); :func:`share` — a part of its total within one record (dispatch share
of total time, kernel share of the path, scratchpad use).  Never arbitrary pairs: with
some 45 recorded values a bundle has about 2,000 pairwise ratios, and a random "2.7x"
would match most bundles; with these derivations it matches under one in ten.

Decimal commas (:func:`_decimal_commas`): "24,28 ms" and "0,5 %" cannot group thousands, so
their comma is a decimal point; "4,096 ms" could, and is 4.096 ms when the text writes its
other decimals with commas and never with points, 4096 ms when it writes points.  Where the
text does not tell, both readings are tried and the evidence decides (an uncertain verdict).

Agreement (:func:`_close`): a recorded value within the rubric's relative tolerance or
the rounding the student wrote ("340 ms" covers 339.5–340.5 ms), that rounding
allowance capped at :data:`ROUNDING_CAP` of the value; a derived value within that
rounding plus :data:`DERIVED_TOLERANCE` (a change: plus :data:`CHANGE_TOLERANCE` of
1 + the change), since the student computed it from rounded displays.  A whole number
ending in zeros may also be rounded to its last significant digit ("about 130 ms" for
132.34 ms, "40 ms" for 39.09 ms): read that way it matches recorded quantities with a unit
only, within :data:`SIGNIFICANT_ROUNDING_CAP` (an uncertain verdict).  A number written with
one significant digit ("4x", "3 ms", "5 %") is capped there too: its rounding is the coarsest.  Percentages and
multipliers, and every derived value, keep the digits as written: they meet a derived ratio,
share or change in every record, and read more widely random ones matched more often
(``benchmarks/chance_match.py``, which measures every widening: 26.15 % of random
four-number rationales earned the item before these readings, 25.05 % after).

Recommendation and rejected alternative
---------------------------------------
An option counts as named only where the text takes a stance on it
(:func:`read_stances`), read clause by clause and deterministically:

1. Sentences end at ``. ! ? ;``, at a blank line, before a bullet and at a line break
   before a capital letter; clauses also end at :data:`CLAUSE_BREAKS` ("because",
   "so", "but", "if", "which"…).
2. Option names (``Choice.keywords`` and ``Choice.phrasings``, longest first; for
   Lab 11 the role and the hardware as people write it, e.g. "Jetson AGX Orin",
   "Orin NX", "Apple M2") are found; a name inside a cue ("the rejected alternative
   is …") belongs to the cue.
3. A cue (:data:`CUES`) precedes its name ("I recommend X", "choose X", "go with X",
   "keep X", "reject Y", "rule out Y", "not Y", "instead of Y", "over Y", "rather than
   Y") or follows it ("X is the better choice", "X wins", "Y loses", "Y is rejected",
   "Y fails the latency budget"; object first: "Eager execution I reject", "Compiled with
   fusion we recommend."; passive: "Y was ruled out by us", "Y is dropped"; short verdicts:
   "So X it is", "X (my pick)"; hedges, which name but never contradict: "I'd lean towards
   X", "Y probably isn't the way to go").  It applies to the nearest name within its reach, in
   the same clause, never across a name of another option — so "I recommend X over Y"
   recommends X and rejects Y, and "I recommend X, Y and Z" recommends X only.  When a
   preceding and a following cue both reach a name, the nearer wins.  A negation just
   before a recommending verb makes it a rejection ("I would not choose Y").
   A pronoun ("it", "this option", "the former", "the latter") stands for the option named
   before it in its sentence, or else in the previous one, when that names exactly one
   option (the first or the last of two for "former" / "latter"); one that could mean two
   options stands for none.  A stance reached through a pronoun never contradicts.
4. Decisive phrasings (``Choice.decisive``) state hold or none by themselves: "no change
   for now", "hold the current path", "keep the native baseline", "stay with the
   baseline", "no feasible target path", "neither candidate is feasible".
5. The recommendation is named when an option standing for it is recommended (Lab 11's
   hold also accepts keeping the primary); the rejected alternative when it is rejected.
6. A contradiction — a strong cue (:attr:`Cue.strong`) recommending the rejected option
   or rejecting the recommended one, unqualified: in a sentence with no condition or
   concession (:data:`HYPOTHETICAL`: "if", "although", "only"…) and a clause with no
   scoping word (:data:`QUALIFIERS`: "for", "at", "with", "last"…, outside the names) —
   is one finding that costs both naming items.  "Eager is the better choice" contradicts
   a rejected eager; "eager is the better choice at one execution" does not.

Limitation and trigger
----------------------
Each option of both labs lists natural phrasings in its lab module (synonyms, negations
such as "not measured on the phone", device names).  The chosen limitation must be
stated somewhere; the chosen trigger in a sentence that says when to look again ("if",
"when", "once", "revisit", "re-evaluate"…) or as a change ("the execution count
changes"); a bare label ("Trigger: energy budget.") is not enough.  A sentence that
names :data:`LIST_SIZE` or more options of the same list is a keyword list and names
none of them, except the one a clause of its own marks as the main one (:data:`MAIN_MARKERS`:
"…, but the main limitation is that the T4 numbers are not measured"; not "the main ones
are …").  A limitation about measuring on the target is stated by measurement negated on a
named device or "the real" target (:data:`UNMEASURED_ON`: "nobody ran it on the Jetson",
"nothing here was run on an actual phone", "the T4 numbers are not measured").

How sure the reader is
----------------------
:func:`read_rationale` reads the text once per grade and returns the findings and a
:class:`Verdict` per item, ``certain`` or ``uncertain`` with a reason for staff.  Uncertain:
a quantity that matched only after rounding to its last significant digit or only with an
open decimal comma read as a point; an option recommended or rejected only with a hedge or
through a pronoun, or named with no stance cue found (the item is lost); a limitation or
trigger matched only in a sentence naming several options of its list, named only in a
keyword list, or a trigger named without a condition.  The points follow the verdict either
way, the student's messages are the same, and :func:`with_verdicts` puts the verdicts into
the synthesis item scores (``ItemScore.certainty`` / ``certainty_reason``), where
``GradeReport.uncertain_items`` lists the uncertain ones for staff review.

Speed
-----
Patterns are compiled once per lab and track (:func:`reader_for`) and tried only at
the tokens a match can start with; the derived evidence of a replayed part is kept by
the identity of its memoised arms (:func:`part_evidence`).  Both are kept in the
:class:`~.memos.Memos` of the replay service that grades, never in a lab or a module.
Units are converted from the checked-in scales (:func:`unit_scales`), pint only for a
unit they lack.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._mlsysim import unit_registry
from .generated import own_text
from .jsonio import exact_key
from .report import Finding, PartScore
from .roles import RationaleWords
from .text import readable
from .values import Choice, ChoiceTerms, RecordedArms

if TYPE_CHECKING:
    # typeshed describes the standard library's private regular-expression parser under its
    # pre-3.11 public names; at run time the private modules are imported (see below).
    import sre_compile as _sre_compiler
    import sre_constants as _sre_constants
    import sre_parse as _sre_parser

    from .context import GradingContext, PartState
    from .memos import Memos
    from .models import PartId
else:
    from re import _compiler as _sre_compiler
    from re import _constants as _sre_constants
    from re import _parser as _sre_parser

RATIO = "ratio"        # dimensionless evidence cited as a multiplier ("3.7x") or a percentage
FRACTION = "fraction"  # dimensionless evidence cited as a percentage only ("88 %")
CHANGE = "change"      # a relative change, cited as a percentage ("72 % less")
ROUNDING_CAP = 0.05    # the rounding a student wrote covers at most 5 % of the recorded value
SIGNIFICANT_ROUNDING_CAP = 0.03  # … 3 % for a number of one significant digit ("4x") or read to its last one ("130 ms")
DERIVED = "derived:"   # unit prefix of a value derived from the records (see ``compared`` and ``share``)
DERIVED_TOLERANCE = 0.002  # a derived value agrees within the rounding written plus 0.2 % (its inputs were shown rounded)
CHANGE_TOLERANCE = 0.001   # … and a relative change c within that rounding plus 0.1 % of 1 + c
MAX_CITED = 200        # quantities considered per rationale, so a wall of numbers costs bounded time
DOCUMENT_CACHE_SIZE = 8  # texts whose reading is kept: the rationale check and the review page's spans read one text per grade
CACHED_TEXT_CHARS = 20_000  # … when they are no longer than this (a hostile wall of text is read afresh, never kept)

# -- text normalisation -----------------------------------------------------------------

_BRITISH = {
    "behaviour": "behavior", "behaviours": "behaviors", "behavioural": "behavioral",
    "favour": "favor", "favours": "favors", "favoured": "favored", "favouring": "favoring",
    "favourable": "favorable", "colour": "color", "honour": "honor", "labour": "labor",
    "neighbour": "neighbor", "flavour": "flavor", "endeavour": "endeavor", "rumour": "rumor",
    "analyse": "analyze", "analysed": "analyzed", "analysing": "analyzing", "catalyse": "catalyze",
    "centre": "center", "centres": "centers", "metre": "meter", "litre": "liter", "fibre": "fiber",
    "catalogue": "catalog", "analogue": "analog", "dialogue": "dialog",
    "defence": "defense", "licence": "license", "offence": "offense",
    "programme": "program", "programmes": "programs", "grey": "gray", "judgement": "judgment",
    "amongst": "among", "whilst": "while", "towards": "toward",
}
for _stem in ("model", "unmodel", "remodel", "label", "travel", "cancel", "signal", "fuel", "level", "total",
              "tunnel", "channel"):
    for _ending in ("led", "ling"):
        _BRITISH[_stem + _ending] = _stem + _ending[1:]
for _stem in ("optim", "util", "minim", "maxim", "amort", "real", "special", "normal", "recogn", "character",
              "parallel", "serial", "initial", "priorit", "summar", "emphas", "stabil", "penal", "standard",
              "general", "organ", "categor", "quant", "vector", "token", "memor", "custom", "visual", "local",
              "central", "synchron", "linear", "final", "rational", "capital", "modern", "econom", "critic",
              "author", "subsid", "harmon", "familiar", "energ", "digit", "idol", "material"):
    for _brit, _amer in (("ise", "ize"), ("ised", "ized"), ("ises", "izes"), ("ising", "izing"),
                         ("isation", "ization"), ("isations", "izations"), ("iser", "izer"), ("isers", "izers")):
        _BRITISH[_stem + _brit] = _stem + _amer
del _stem, _ending, _brit, _amer
_BRITISH["cannot"] = "can not"
_CONTRACTION = re.compile(r"\b(?:can'?t|won'?t|i'm)\b|n't\b|'(?:d|ll|re|ve|s)\b")
_CONTRACTED = {"can't": "can not", "cant": "can not", "won't": "will not", "wont": "will not", "i'm": "i am",
               "n't": " not", "'d": " would", "'ll": " will", "'re": " are", "'ve": " have", "'s": ""}
_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|vs|etc|approx|cf|incl|resp)\.")
_BULLET_BREAK = re.compile(r"\n[ \t]*(?:[-*•·‣▪◦]|\d{1,2}[.)])[ \t]+|\n[ \t]*\n|\n[ \t]*(?=[A-Z])")
# Punctuation: sentence ends become " . ", ", : ( )" stay tokens of their own, a dash between
# words is a pause, joiners inside words become spaces and the rest (quotes, markup) goes.
_PUNCTUATION = {
    **{mark: " . " for mark in "!?;"}, **{mark: f" {mark} " for mark in ",:()"}, "[": " ( ", "]": " ) ", "{": " ( ",
    "}": " ) ", "–": " , ", "—": " , ", **{mark: " " for mark in "-_/\\\"'`*#|<>=~^"},
}
_PUNCTUATION_RE = re.compile("[" + re.escape("".join(_PUNCTUATION)) + "]")
_PERIOD = re.compile(r"\.")


def _period(match: re.Match[str]) -> str:
    """A decimal point stays; any other period ends a sentence."""
    text, i = match.string, match.start()
    return "." if 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit() else " . "


def normalise(text: str) -> str:
    """The text as the reader sees it: compatibility forms, lower case, American spelling,
    contractions spelled out, sentence ends as ``" . "`` and ``, : ( )`` as their own tokens.

    A line break ends a sentence before a bullet, a blank line or a capital letter.
    """
    text = unicodedata.normalize("NFKC", readable(text))
    if "\n" in text:
        text = _BULLET_BREAK.sub(" . ", text)
    text = text.lower()
    if "'" in text or "’" in text or "‘" in text:
        text = _CONTRACTION.sub(lambda m: _CONTRACTED.get(m.group(), " "), text.replace("’", "'").replace("‘", "'"))
    if "." in text:
        text = _PERIOD.sub(_period, _ABBREVIATIONS.sub(lambda m: m.group(1).replace(".", ""), text))
    text = text.replace(" - ", " , ").replace(" -- ", " , ").replace("+", " and ").replace("&", " and ")
    text = _PUNCTUATION_RE.sub(lambda m: _PUNCTUATION[m.group()], text)
    return " ".join(_BRITISH.get(word, word) for word in text.split())


_WORD = re.compile(r"[A-Za-z0-9µμ%$]+(?:[.'’-][A-Za-z0-9]+)*")


def word_count(text: str) -> int:
    """Words as written (numbers count; punctuation does not)."""
    return len(_WORD.findall(text))


# -- quantities -------------------------------------------------------------------------

_PERCENT, _TIMES = "%", "x"
_UNIT_WORDS: dict[str, tuple[str, ...]] = {}


def _units(names: str, *pint_units: str) -> None:
    for name in names.split():
        _UNIT_WORDS[name] = pint_units


_units("% percent pct", _PERCENT)
_units("x × times fold", _TIMES)
_units("s sec secs second seconds", "second")
_units("ms msec msecs millisecond milliseconds", "millisecond")
_units("us µs μs usec usecs microsecond microseconds", "microsecond")
_units("ns nanosecond nanoseconds", "nanosecond")
_units("min mins minute minutes", "minute")
_units("h hr hrs hour hours", "hour")
_units("b byte bytes", "B")
_units("kb kilobyte kilobytes", "kB")
_units("kib kibibyte kibibytes", "KiB")
_units("mb megabyte megabytes", "MB")
_units("mib mebibyte mebibytes", "MiB")
_units("gb gigabyte gigabytes", "GB")
_units("gib gibibyte gibibytes", "GiB")
_units("tb terabyte terabytes", "TB")
_units("flop", "flop")
_units("flops ops", "flop", "flop/s")  # "FLOPs" is a count, "FLOPS" a rate: people write both ways
_units("kflop", "kiloflop")
_units("kflops", "kiloflop", "kiloflop/s")
_units("mflop mop", "MFLOP")
_units("mflops mops", "MFLOP", "MFLOP/s")
_units("gflop gop", "GFLOP")
_units("gflops gops", "GFLOP", "GFLOP/s")
_units("tflop", "TFLOP")
_units("tflops tops", "TFLOP", "TFLOP/s")
_units("pflop", "PFLOP")
_units("pflops", "PFLOP", "PFLOP/s")
_units("j joule joules", "joule")
_units("mj millijoule millijoules", "millijoule")
_units("uj µj μj microjoule microjoules", "microjoule")
_units("kj kilojoule kilojoules", "kilojoule")
_units("wh", "watt_hour")
_units("mwh", "milliwatt_hour")
_units("kwh", "kilowatt_hour")
_units("w watt watts", "watt")
_units("mw milliwatt milliwatts", "milliwatt")
_units("kw kilowatt kilowatts", "kilowatt")
_units("usd dollar dollars", "dollar")
# "per X" where X counts events, not a unit: "36.9 mJ per inference" is an energy.
_PER_EVENT = frozenset(["inference", "inferences", "run", "runs", "query", "queries", "request", "requests", "token", "tokens", "call", "calls", "execution", "executions", "step", "steps", "batch", "image", "images", "sample", "samples"])

_NUMBER = r"10\^[-+−]?\d+|[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+"
_EXPONENT = r"(?:[eE](?P<e1>[-+−]?\d+)|\s?[×x*·]\s?10\s?(?:\^|\*\*)\s?(?P<e2>[-+−]?\d+))?"
_UNIT = r"(?P<unit>%|×|per\s?cent\b|percentage\s+points?\b|[a-zµμ]+(?:\s?(?:/|\bper\s)\s?[a-zµμ]+)?)"
_QUANTITY = re.compile(
    rf"(?P<dollar>(?<![\w$])(?:us)?\$)\s?(?P<dnum>{_NUMBER}){_EXPONENT.replace('e1', 'de1').replace('e2', 'de2')}"
    rf"(?:\s?(?:/|\bper\s)\s?(?P<dper>h|hr|hour)\b)?"
    rf"|\bfactor\s+of\s+(?:about\s+|around\s+|roughly\s+|nearly\s+|almost\s+|~|≈)?(?P<fnum>{_NUMBER})(?![\w.])"
    rf"|(?<![\w.,$^])(?P<num>{_NUMBER}){_EXPONENT}(?:[ \t]?-?[ \t]?){_UNIT}",
    re.IGNORECASE,  # matched on lower-cased text; the flag covers the rare text lower() cannot keep aligned
)
_QUANTITY_START = re.compile(r"\d+|\$|factor", re.IGNORECASE)


def _quantities(text: str) -> Iterator[re.Match[str]]:
    """:data:`_QUANTITY` matches, tried only where one can start: a number that is not part of a
    word or of another number, a "$" (or "US$"), or "factor"."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lower-cased
        lowered = text
    end = 0
    for hit in _QUANTITY_START.finditer(lowered):
        start = hit.start()
        if start < end:
            continue
        if hit.group()[0].isdigit():
            if start and lowered[start - 1] in "-+−.":
                start -= 1
            before = lowered[start - 1] if start else " "
            if before.isalnum() or before in "_.,$^":
                continue
        elif hit.group() == "$" and lowered[max(0, start - 2):start] == "us":
            start -= 2
        match = _QUANTITY.match(lowered, start)
        if match is not None:
            end = match.end()
            yield match


_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_POWER = re.compile(r"10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


@dataclass(frozen=True)
class CitedQuantity:
    """A number the student wrote with its unit: ``value`` and ``tolerance`` in base units.

    ``dims`` lists the dimensionalities it may mean ("FLOPS" is a count or a rate; "%"
    a fraction or a ratio); ``written`` is the number as written, before the unit.
    ``tolerance`` is half a unit in the last digit written; ``rounded`` half a unit in the
    last significant digit, wider for a whole number ending in zeros ("130 ms": 5 ms).
    ``reading`` is :data:`COMMA_AMBIGUOUS` for the decimal reading of a comma the text leaves
    open, empty otherwise.  ``coarse``: written with one significant digit ("4x", "0.5 ms"),
    so its rounding is capped at :data:`SIGNIFICANT_ROUNDING_CAP`.
    """

    text: str
    value: float
    tolerance: float
    dims: tuple[str, ...]
    written: float
    rounded: float = 0.0
    coarse: bool = False
    reading: str = ""


@lru_cache(maxsize=512)
def _unit_scale(unit: str) -> tuple[float, str] | None:
    """(factor to base units, dimensionality key) for a pint unit or a pseudo-unit, or None.

    A derived quantity's unit carries the :data:`DERIVED` prefix, kept in its key.
    """
    if unit.startswith(DERIVED):
        inner = _unit_scale(unit[len(DERIVED):])
        return None if inner is None else (inner[0], DERIVED + inner[1])
    if unit in (RATIO, FRACTION, CHANGE):
        return 1.0, unit
    if unit in ("dimensionless", ""):
        return 1.0, RATIO
    scales = unit_scales()
    if unit in scales:  # what pint gives for it, checked in (``tests/test_unit_scales.py`` compares the two)
        return scales[unit]
    return pint_unit_scale(unit)


UNIT_SCALES_FILE = "unit_scales.json"


@cache
def unit_scales() -> Mapping[str, tuple[float, str] | None]:
    """The checked-in unit conversions (:data:`UNIT_SCALES_FILE` beside this module): what :func:`pint_unit_scale`
    gives for every unit the reader converts a written unit to (:func:`unit_lookups`) and every unit the labs'
    evidence shows.  With it grading never loads pint's registry (about half a second per process) for the units
    it knows, converting each exactly as pint would; a unit it lacks is converted through pint."""
    raw = json.loads(resources.files(__package__).joinpath(UNIT_SCALES_FILE).read_text(encoding="utf-8"))["scales"]
    return MappingProxyType({unit: None if scale is None else (float(scale[0]), str(scale[1])) for unit, scale in raw.items()})


def pint_unit_scale(unit: str) -> tuple[float, str] | None:
    """:func:`_unit_scale` of a pint unit, through pint: (factor to base units, dimensionality key), or None."""
    ureg = unit_registry()  # the evaluators' own registry (defines flop, dollar…), without importing mlsysim

    try:
        quantity = ureg.Quantity(1.0, unit).to_base_units()
    except Exception:  # pint raises many types for unknown or malformed units
        return None
    if not isinstance(quantity.magnitude, (int, float)) or not math.isfinite(quantity.magnitude):
        return None
    # mlsysim's registry makes bytes (bits) and dollars (counts) dimensionless, so the
    # base unit joins the dimensionality: "1.2 MB" must not match a plain ratio.
    return float(quantity.magnitude), f"{quantity.dimensionality}|{quantity.units}"


def unit_lookups() -> list[str]:
    """Every pint unit the reader converts a written unit to (:func:`_unit_meanings`): each meaning of each
    unit word, each "X per Y" it reads (the first meaning of X over the one meaning of Y), a dollar and a
    dollar an hour; sorted."""
    tops = {next((u for u in meanings if "/" not in u and u not in (_PERCENT, _TIMES)), None)
            for meanings in _UNIT_WORDS.values()}
    bottoms = {meanings[0] for meanings in _UNIT_WORDS.values()
               if len(meanings) == 1 and meanings[0] not in (_PERCENT, _TIMES) and "/" not in meanings[0]}
    found = {u for meanings in _UNIT_WORDS.values() for u in meanings if u not in (_PERCENT, _TIMES)}
    found |= {f"{top}/{bottom}" for top in tops if top for bottom in bottoms} | {"dollar", "dollar/hour"}
    return sorted(found)


@lru_cache(maxsize=1024)
def _unit_meanings(raw: str) -> tuple[str, ...]:
    """The pint units a written unit may mean, or () when it is not a unit ("executions")."""
    unit = " ".join(raw.lower().replace("μ", "µ").split())
    if unit.startswith("per") and unit.replace(" ", "") == "percent":
        return (_PERCENT,)
    if unit.startswith("percentage point"):
        return (_PERCENT,)
    if unit in _UNIT_WORDS:
        return _UNIT_WORDS[unit]
    parts = re.split(r"\s?/\s?|\s?\bper\s", unit, maxsplit=1)
    if len(parts) != 2:
        return ()
    top, bottom = _UNIT_WORDS.get(parts[0].strip(), ()), parts[1].strip()
    top = tuple(u for u in top if "/" not in u and u not in (_PERCENT, _TIMES))[:1]
    if not top:
        return ()
    if bottom in _PER_EVENT:
        return top
    below = _UNIT_WORDS.get(bottom, ())
    if len(below) != 1 or below[0] in (_PERCENT, _TIMES) or "/" in below[0]:
        return ()
    return (f"{top[0]}/{below[0]}",)


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _trailing_zeros(number: str) -> int:
    """Zeros ending a whole number as written ("130" → 1, "4000" → 3): the rounding a student wrote."""
    digits = number.lstrip("+-")
    if "." in digits or not digits.strip("0"):
        return 0
    return len(digits) - len(digits.rstrip("0"))


def _parse_number(number: str, exponent: str | None) -> tuple[float, float, float] | None:
    """(value, half a unit in the last written digit, half a unit in the last significant digit) or None.

    The two differ for a whole number ending in zeros: "130" is 130 ± 0.5 read digit by digit,
    and 130 ± 5 read as rounded to the tens, as people write "about 130 ms" for 132.34 ms.
    """
    number = number.replace(",", "").replace("−", "-")
    if number.startswith("10^"):  # "10⁻⁷ s" written as a power of ten alone
        number, exponent = "1", number[3:]
    try:
        value = float(number)
        power = int(exponent.replace("−", "-")) if exponent else 0
    except ValueError:
        return None
    if abs(power) > 300:
        return None
    value *= 10.0 ** power
    if not math.isfinite(value):
        return None
    digit = 0.5 * 10.0 ** (power - _decimals(number))
    return value, digit, digit * 10.0 ** _trailing_zeros(number)


# -- numbers as people type them: decimal commas and LaTeX ------------------------------------

# A number with one comma inside: "24,28", "4,096", "0,5".  Grouped thousands ("1,308.623",
# "12,345,678") are other matches of _NUMBER and never this one.
_COMMA_NUMBER = re.compile(r"(?<![\w.,])(\d+),(\d+)(?![\d]|[.,]\d)")
_POINT_NUMBER = re.compile(r"\d\.\d|\d,\d{3},\d{3}(?!\d)|\d,\d{3}\.\d")
COMMA_AMBIGUOUS = "decimal comma"  # CitedQuantity.reading of "4,096" read as 4.096 (its other reading is 4096)


def _comma_is_ambiguous(whole: str, fraction: str) -> bool:
    """True when "whole,fraction" may be a thousands group ("4,096"); "24,28", "0,5" and "1234,5" may not."""
    return len(fraction) == 3 and len(whole) <= 3 and not whole.startswith("0")


def _decimal_commas(text: str) -> tuple[str, frozenset[int]]:
    """``text`` with every decimal comma written as a point, and where a comma may be either.

    A comma is a decimal comma when it cannot group thousands ("24,28 ms", "0,5 %"), or when it
    could ("4,096 ms") and the text writes decimals with commas and never with points.  Where the
    text does not tell, the comma is left as written (thousands) and its start is returned: the
    reader then tries the decimal reading too, and the evidence decides (an uncertain verdict).
    """
    if "," not in text:
        return text, frozenset()
    matches = list(_COMMA_NUMBER.finditer(text))
    if not matches:
        return text, frozenset()
    commas = any(not _comma_is_ambiguous(m.group(1), m.group(2)) for m in matches)
    points = _POINT_NUMBER.search(text) is not None
    chars, ambiguous = list(text), set()
    for match in matches:
        if not _comma_is_ambiguous(match.group(1), match.group(2)) or (commas and not points):
            chars[match.end(1)] = "."  # same length: offsets still point into the text as written
        else:
            ambiguous.add(match.start())
    return "".join(chars), frozenset(ambiguous)


_MATH = re.compile(r"\$\$?((?:[^$\n\\]|\\.){1,200}?)\$\$?|\\\((.{1,200}?)\\\)")
_MARKUP = re.compile(r"\\[A-Za-z,;:! %$]|[\^_{}]")
_LATEX_WRAPPERS = re.compile(r"\\(?:text|mathrm|textrm|mathit|textit|mathsf|mathbf|textbf|operatorname|mbox|unit|si)\s*\{([^{}]*)\}")
_LATEX_COMMANDS = {
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " ", "times": "×", "cdot": "·", "%": "%",
    "$": "$", "mu": "µ", "micro": "µ", "approx": "≈", "sim": "~", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "to": "→",
    "rightarrow": "→", "left": "", "right": "",
}
# Known command words first, longest first, so "\\mu\\text{s}" (read as "\\mus") is µ then s; TeX swallows the
# space after a command word.
_LATEX_COMMAND = re.compile(r"\\(?:(" + "|".join(sorted((k for k in _LATEX_COMMANDS if k.isalpha()), key=len, reverse=True))
                            + r"|[A-Za-z]+) ?|([,;:! %$]))")


_SPACES = re.compile(r" {2,}")


def _math_span(match: re.Match[str]) -> str:
    """A ``$…$`` (or ``\\(…\\)``) span as plain text when it holds LaTeX markup; money ("$2.50 vs $4.10") as written."""
    body = match.group(1) if match.group(1) is not None else match.group(2)
    if not _MARKUP.search(body):
        return match.group()
    body = _LATEX_WRAPPERS.sub(lambda m: m.group(1), body)
    body = _LATEX_COMMAND.sub(lambda m: _LATEX_COMMANDS.get(m.group(1) or m.group(2), " "), body)
    body = re.sub(r"\^\s*\{([^{}]*)\}", r"^\1", body)
    body = body.replace("{", "").replace("}", "").replace("_", " ").replace("~", " ")
    return " " + body.strip() + " "


def plain_text(text: str) -> str:
    """``text`` with LaTeX math spans read as the words and numbers they typeset ("$39.09\\,\\text{ms}$" →
    "39.09 ms"); a span without markup is money or prose and stays.  Both readers read this text."""
    if "$" not in text and "\\(" not in text:
        return text
    read = _MATH.sub(_math_span, text)
    return read if read == text else _SPACES.sub(" ", read)  # "$\\approx 130$ ms": one space before the unit


def cited_quantities(text: str) -> list[CitedQuantity]:
    """Every quantity with a unit, percentage, multiplier or dollar sign in ``text`` (read by
    :func:`plain_text`), in order; a number whose comma the text leaves open ("4,096 ms") is followed
    by its decimal reading, marked :data:`COMMA_AMBIGUOUS`."""
    text = plain_text(text)
    return list(_kept_cited_in(text) if len(text) <= CACHED_TEXT_CHARS else _cited_in(text))


def _cited_in(text: str) -> tuple[CitedQuantity, ...]:
    """:func:`cited_quantities` of a :func:`plain_text`."""
    text = text.replace("\u00a0", " ").replace("\u2009", " ").replace("\u202f", " ")
    if "⁰" in text or any(ch in text for ch in "¹²³⁴⁵⁶⁷⁸⁹"):
        text = _SUPERSCRIPT_POWER.sub(lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), text)
    shown = text
    text, ambiguous = _decimal_commas(text)
    found: list[CitedQuantity] = []
    for match in _quantities(text):
        if match.group("dollar"):
            group, exponent = "dnum", match.group("de1") or match.group("de2")
            meanings: tuple[str, ...] = ("dollar/hour",) if match.group("dper") else ("dollar",)
        elif match.group("fnum"):
            group, exponent, meanings = "fnum", None, (_TIMES,)
        else:
            group, exponent = "num", match.group("e1") or match.group("e2")
            meanings = _unit_meanings(match.group("unit"))
        if not meanings:
            continue
        number = match.group(group)
        readings = [(number, "")]
        if ambiguous and match.start(group) in ambiguous:
            readings.append((number.replace(",", "."), COMMA_AMBIGUOUS))
        for written_number, reading in readings:
            quantity = _quantity(shown[match.start():match.end()].strip(), written_number, exponent, meanings, reading)
            if quantity is not None:
                found.append(quantity)
        if len(found) >= MAX_CITED:
            break
    return tuple(found[:MAX_CITED])


_kept_cited_in = lru_cache(maxsize=DOCUMENT_CACHE_SIZE)(_cited_in)
""":func:`_cited_in`, kept for a few texts (read once per text: the check and the review page ask)."""


def _quantity(shown: str, number: str, exponent: str | None, meanings: tuple[str, ...], reading: str) -> CitedQuantity | None:
    parsed = _parse_number(number, exponent)
    if parsed is None:
        return None
    written, rounding, rounded = parsed
    value, scale = abs(written), 1.0
    dims: tuple[str, ...]
    if meanings[0] == _PERCENT:
        scale, dims = 0.01, (FRACTION, CHANGE, RATIO)
    elif meanings[0] == _TIMES:
        dims = (RATIO,)
    else:
        scales = [found for found in map(_unit_scale, meanings) if found is not None]
        if not scales:
            return None
        scale = scales[0][0]
        dims = (scales[0][1],) if len(scales) == 1 else tuple(dict.fromkeys(found[1] for found in scales))
    coarse = len(number.replace(",", "").lstrip("+-−").replace(".", "").lstrip("0")) <= 1
    return CitedQuantity(shown, value * scale, abs(rounding * scale), dims, written, rounded=abs(rounded * scale), coarse=coarse,
                         reading=reading)


def _close(cited: CitedQuantity, recorded: float, rel_tol: float, *, derived: bool | str = False,
           rounded: bool = False) -> bool:
    """True when ``cited`` agrees with ``recorded`` (base units).

    A recorded value allows the rubric's relative tolerance or the rounding the student wrote
    (capped at :data:`ROUNDING_CAP`); a derived value allows that rounding plus
    :data:`DERIVED_TOLERANCE` (:data:`CHANGE_TOLERANCE` for a change), since the student
    computed it from numbers displayed rounded.  ``rounded``: the rounding is read to the last
    significant digit ("130 ms" as rounded to the tens), otherwise to the last digit written.
    """
    allowance = max(cited.rounded, cited.tolerance) if rounded else cited.tolerance
    cap = SIGNIFICANT_ROUNDING_CAP if rounded or cited.coarse else ROUNDING_CAP
    written = min(allowance * 1.000001, cap * abs(recorded))
    if not derived:
        return abs(cited.value - recorded) <= max(rel_tol * abs(recorded), written)
    if derived == CHANGE:  # c = |b - a| / a comes from the ratio b / a = 1 ± c, so its error scales with 1 + c
        return abs(cited.value - recorded) <= written + CHANGE_TOLERANCE * (1 + abs(recorded))
    return abs(cited.value - recorded) <= written + DERIVED_TOLERANCE * abs(recorded)


def trivial_reason(cited: CitedQuantity, settings: Iterable[float] = ()) -> str | None:
    """Why a cited quantity is not evidence ("0 or 1", "a setting you chose"), or None."""
    if cited.written in (0.0, 1.0) or cited.value == 0:
        return "0 or 1"
    dimensionless = set(cited.dims) <= {RATIO, FRACTION, CHANGE}
    if dimensionless and _close(cited, 1.0, 1e-9):
        return "0 or 1"
    if dimensionless and any(_close(cited, float(s), 1e-9) for s in settings):
        return "a setting you chose"
    return None


# -- evidence ---------------------------------------------------------------------------

def usable(quantities: Iterable[tuple[float, str]]) -> Iterator[tuple[float, str, float]]:
    """(base value, dimensionality, magnitude) for each recorded quantity that can be evidence:
    finite, not 0, and not a dimensionless 1 (one dispatch, reuse 1.0)."""
    for magnitude, unit in quantities:
        if not isinstance(magnitude, (int, float)) or isinstance(magnitude, bool):
            continue
        if not math.isfinite(magnitude) or magnitude == 0:
            continue
        scale = _evidence_unit(unit)
        if scale is None:
            continue
        if scale[2] and math.isclose(magnitude, 1.0, rel_tol=1e-12):
            continue
        yield magnitude * scale[0], scale[1], magnitude


@lru_cache(maxsize=512)
def _evidence_unit(unit: str) -> tuple[float, str, bool] | None:
    """:func:`_unit_scale` of ``unit`` and whether it is dimensionless (a recorded 1 is then no evidence)."""
    scale = _unit_scale(unit)
    return None if scale is None else (*scale, scale[1].removeprefix(DERIVED) in (RATIO, FRACTION, CHANGE))


@dataclass(frozen=True)
class _Arms:
    """A replayed plan's arms, shaped as a record holds them (a :class:`RecordedArms`)."""

    part: str
    baseline: Mapping[str, Any] | None
    result: Mapping[str, Any] | None
    alternatives: Sequence[Mapping[str, Any]]


RecordedQuantity = tuple[float, str, float, str]
"""(base value, dimensionality, magnitude, unit) of one usable quantity a record's arms show."""


def recorded_quantities(memos: Memos, lab: RationaleWords, arms: RecordedArms) -> tuple[RecordedQuantity, ...]:
    """Every usable quantity ``arms`` show (:meth:`RationaleWords.evidence_quantities`, then :func:`usable`), in
    their order, with the unit each was recorded in.

    The lab reads nothing of a record but its part and arms (:class:`RecordedArms`), so the result is kept in
    ``memos`` by the lab and their exact content (:func:`~mlsys_grader.core.jsonio.exact_key`: values, types and key order): the
    rationale check, which reads a replayed part's arms, and the review page's spans, which read the record's
    own, share one reading whenever the record is what the lab replays, and submissions with the same settings
    share it too.
    """
    alternatives = list(arms.alternatives)
    try:
        key: bytes | None = exact_key((arms.part, arms.baseline, arms.result, alternatives))
    except ValueError:  # not JSON values: read afresh, never kept
        key = None
    found: tuple[RecordedQuantity, ...] | None = memos.recorded_quantities.get((lab, key)) if key is not None else None
    if found is None:
        found = tuple((value, dims, shown, unit) for magnitude, unit in lab.evidence_quantities(arms)
                      for value, dims, shown in usable([(magnitude, unit)]))
        if key is not None:
            memos.recorded_quantities[(lab, key)] = found
    return found


def _indexed(quantities: Iterable[tuple[float, str]]) -> dict[str, list[float]]:
    """Usable recorded values by dimensionality, as sorted absolute base values (for bisecting)."""
    return _index_of((value, dims, shown, "") for value, dims, shown in usable(quantities))


def _index_of(recorded: Iterable[RecordedQuantity]) -> dict[str, list[float]]:
    """:func:`_indexed` of quantities already read (:func:`recorded_quantities`)."""
    index: dict[str, list[float]] = {}
    for value, dims, _, _ in recorded:
        index.setdefault(dims, []).append(abs(value))
    for values in index.values():
        values.sort()
    return index


def part_evidence(memos: Memos, lab: RationaleWords, state: PartState) -> dict[str, list[float]]:
    """One captured part's usable evidence, indexed by :func:`_indexed`.

    When the record replays, its arms are the replay's memoised ones (the same objects every
    time those settings are graded), so the index is kept in ``memos`` by arm identity;
    otherwise it is read from the record itself (a part without one has no evidence).
    """
    plan = state.plan
    if plan is None:
        return _index_of(recorded_quantities(memos, lab, state.record)) if state.record is not None else {}
    arms = (plan.baseline, plan.result, *plan.alternatives)
    key = (lab, state.part, *map(id, arms))
    hit = memos.part_evidence.get(key)
    if hit is None or any(held is not arm for held, arm in zip(hit[0], arms, strict=True)):  # same key: same length
        recorded = recorded_quantities(memos, lab, _Arms(state.part, plan.baseline, plan.result, list(plan.alternatives)))
        hit = memos.part_evidence[key] = (arms, _index_of(recorded))
    index: dict[str, list[float]] = hit[1]
    return index


def _has_unit(quantity: CitedQuantity) -> bool:
    """True for a quantity with a unit (time, data, energy, money…); False for a percentage or multiplier."""
    return not set(quantity.dims) <= {RATIO, FRACTION, CHANGE}


def agreement(cited: Sequence[CitedQuantity], index: Mapping[str, list[float]], rel_tol: float, *,
              rounded: bool = False) -> CitedQuantity | None:
    """The first cited quantity that agrees with a value in ``index``, or None (only values within
    the widest allowance :func:`_close` can give are looked at).  ``rounded``: read each number to
    its last significant digit (see :func:`_close`), which only a quantity with a unit is, and only
    against recorded values: a percentage or a multiplier meets a derived ratio, share or change in
    every record, and read that widely random ones matched measurably more often
    (``benchmarks/chance_match.py``: one random percentage 18.8 % → 20.6 % of bundles)."""
    widest = max(rel_tol, ROUNDING_CAP + DERIVED_TOLERANCE)
    for quantity in cited:
        if rounded and (quantity.rounded <= quantity.tolerance or not _has_unit(quantity)):
            continue  # nothing wider to try (it was tried digit by digit), or a percentage or multiplier
        allowance = max(quantity.rounded, quantity.tolerance) if rounded else quantity.tolerance
        for dims in quantity.dims:
            for key, derived in ((dims, False), (DERIVED + dims, CHANGE if dims == CHANGE else True)):
                values = index.get(key)
                if not values or (rounded and derived):
                    continue  # read to its last significant digit, a number matches recorded values only
                reach = max(quantity.value * widest / (1 - widest) if widest < 1 else math.inf,
                            allowance + CHANGE_TOLERANCE * (2 + quantity.value))
                low = bisect.bisect_left(values, quantity.value - reach)
                high = bisect.bisect_right(values, quantity.value + reach)
                if any(_close(quantity, recorded, rel_tol, derived=derived, rounded=rounded) for recorded in values[low:high]):
                    return quantity
    return None


def _agrees(cited: Sequence[CitedQuantity], index: Mapping[str, list[float]], rel_tol: float) -> bool:
    """True when a cited quantity agrees with a value in ``index``, its rounding read either way."""
    return agreement(cited, index, rel_tol) is not None or agreement(cited, index, rel_tol, rounded=True) is not None


def compared(a: Any, b: Any, unit: str | None, *, both: bool = False) -> list[tuple[float, str]]:
    """What a student derives from one quantity seen twice in one record (``a``, the baseline,
    then ``b``): the ratio both ways, the difference (in ``unit``; percentage points for a
    fraction; none for a count, ``unit=None``) and the change relative to the baseline
    ("72 % less").  ``both``: two paths side by side, neither a baseline ("eager costs 21 %
    more", "compiled saves 18 %"), so the change relative to either."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (a, b)) or a == b:
        return []
    derived: list[tuple[float, str]] = []
    if a and b:
        derived += [(a / b, DERIVED + RATIO), (b / a, DERIVED + RATIO)]
    if unit is not None:
        derived.append((abs(a - b), DERIVED + unit))
    derived += [(abs(a - b) / abs(v), DERIVED + CHANGE) for v in ((a, b) if both else (a,)) if v]
    return derived


def share(part: Any, total: Any) -> list[tuple[float, str]]:
    """A part's share of its total within one record, cited as a percentage."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (part, total)):
        return []
    return [(part / total, DERIVED + FRACTION)] if total and part else []


def magnitude_in(payload: Any, unit: str) -> float | None:
    """The magnitude of a recorded ``{"magnitude", "unit"}`` payload in ``unit``, or None when it
    is not one or the dimensions differ (so two recorded quantities can be :func:`compared`)."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("unit"), str):
        return None
    magnitude = payload.get("magnitude")
    if not isinstance(magnitude, (int, float)) or isinstance(magnitude, bool):
        return None
    have, want = _unit_scale(payload["unit"]), _unit_scale(unit)
    if have is None or want is None or have[1] != want[1]:
        return None
    return float(magnitude) * have[0] / want[0]


_VENDORS = frozenset({"nvidia", "google", "apple", "nordic", "espressif", "qualcomm", "intel", "amd", "arm", "samsung"})
_TOO_GENERIC = frozenset({"ai", "pro", "max", "cpu", "gpu", "reference"})


def device_names(name: str, *nicknames: str) -> tuple[str, ...]:
    """Ways people write a registered device: as registered, without the vendor, without the
    part in parentheses and that part alone ("Nordic nRF52840 (Cortex-M4F)" → "nRF52840",
    "Cortex-M4F"), plus ``nicknames``."""
    forms = [name.strip(), re.sub(r"\s*\([^)]*\)\s*", " ", name).strip(), *re.findall(r"\(([^)]*)\)", name)]
    for form in list(forms):
        words = form.split()
        if len(words) > 1 and words[0].lower() in _VENDORS:
            forms.append(" ".join(words[1:]))
    forms += nicknames
    return tuple(dict.fromkeys(f for f in forms if normalise(f) and normalise(f) not in _TOO_GENERIC))


# -- choices: what the lab tells the reader ----------------------------------------------

_MEASURED = (r"(measur(e|ed)|profil(e|ed)|benchmark(ed)?|test(ed)?|validat(e|ed)|verif(y|ied)|tim(e|ed)|check(ed)?|confirm(ed)?"
             r"|run|ran|tr(y|ied)|deploy(ed)?|execut(e|ed))")
_ON_TARGET = r"(on|with|against|for) (a |an |the |our |any |this |that )?(real |actual |physical |target |deployed |production )?{device}"
UNMEASURED_ON = (
    # "nobody ran it on the Jetson", "we never profiled anything on the phone", "we have yet to test it on the board"
    r"(nobody|no one|never|we (have |had |did |could )?(not|never)|i (have |had |did |could )?(not|never)|(we|i) (have|had) yet to)"
    r"( actually| yet| really| even)? " + _MEASURED + r"( (it|this|them|these|that|anything|any of (it|this|them)|the \w+( \w+)?))? "
    + _ON_TARGET,
    # "nothing here was run on an actual phone", "none of these numbers were measured on the T4"
    r"(nothing|none)( here| of (this|it|these|those|them|the \w+))?( \w+)? (was|were|is|are|has been|have been|got)( actually| yet"
    r"| ever)? " + _MEASURED + " " + _ON_TARGET,
    # "the T4 numbers are not measured", "the phone timings remain unverified"
    r"(the |our )?{device} (numbers|timings?|results|figures|latencies|times|behavior|performance|measurements|costs)( \w+)? (are|is"
    r"|were|was|remain|remains|stay|stays|have been|has been)( still)? (not (yet )?" + _MEASURED + r"|never " + _MEASURED
    + r"|unmeasured|untested|unverified|unvalidated|unconfirmed)",
    # "actual on-device behaviour has not been measured"
    r"((actual|real|physical|target|on device|on target|device|hardware) )+(behavior|performance|timings?|latency|latencies|numbers"
    r"|results)( \w+)? (has|have|was|were|is|are)( never| not)( yet)?( been)? " + _MEASURED,
    # "the real target was never measured", "the actual phone has not been tested"
    r"(the |our )?(real|actual|physical) {device}( itself)? (was|is|were|has|have|had)( never| not)( been| yet)* " + _MEASURED,
)
"""The general rule for a limitation about measurement on the target: measurement negated on a named device or
"the real" target.  A lab lists these among the phrasings of its measurement limitation, with ``{device}``
standing for its track's target as people write it."""

# -- choices: the clause reader ----------------------------------------------------------

REC, REJ = "recommend", "reject"
HEDGE, PRONOUN = "hedge", "pronoun"  # Stance.via: a tentative cue, or an option reached through a pronoun


@dataclass(frozen=True)
class Cue:
    """Words that take a stance on the option they point at.

    ``before``: the cue precedes the name ("reject Y") rather than follows it ("Y loses").
    ``strong`` cues can make a contradiction; weak ones only name.  ``reach``: most tokens
    between cue and name; ``filler_only``: those tokens must be :data:`FILLER` words.
    ``hedge``: a tentative stance ("I'd lean towards X", "X probably isn't the way to go"): it
    names the option, never contradicts, and its verdict is uncertain.
    """

    pattern: str
    before: bool
    stance: str
    strong: bool
    reach: int
    filler_only: bool = False
    hedge: bool = False


_NOT_PASSIVE = r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bbe )(?<!\bbeen )(?<!\bnot )(?<!\bnever )"
_FIRST_PERSON = (r"(?:i|we)(?: (?:would|will|should|must|can|do|therefore|thus|hence|so|still|also|now|then|clearly|definitely"
                 r"|strongly|instead|firmly|ultimately|finally))*")
_DECIDE = (r"choose|chose|pick|picked|select|selected|opt for|opted for|go with|went with|adopt|adopted|settle on|settled on"
           r"|recommend")
_REC_VERBS = (r"recommend(?:s|ed|ing)?|choos(?:e|es|ing)|chose|chosen|pick(?:s|ed|ing)?|select(?:s|ing)?|opt(?:s|ed|ing)? for"
              r"|go(?:es|ing)? with|went with|prefer(?:s|red|ring)?|favor(?:s|ed|ing)?|adopt(?:s|ed|ing)?|settl(?:e|ed|ing) on")
_USE_VERBS = (r"use|deploy|ship|run with|keep(?! in mind)|kept|retain|stay with|stick with|stay on|remain on|switch to|move to"
              r"|migrate to|standardize on|commit to|prefer|favor")
_ADVERB = r"(?: (?:clearly|still|therefore|thus|also|simply|then|now|overall|definitely|really|hence|so))?"
_QUALITY = (r"best|better|right|clear|recommended|preferred|winning|sensible|safer|safe|obvious|strongest|correct|superior"
            r"|natural")
_WORSE = r"worse|wrong|weaker|poorer|losing|poor|bad|worst"
_ROLE = r"choice|option|pick|path|plan|call|answer|winner|candidate|design|fit|bet|route|deployment"
_BUDGETS = r"budgets?|limits?|constraints?|deadline|requirements?|target|contract|cap|slo"
_OBJECT_FIRST_REJ = (r"reject(?:ed)?|rule out|ruled out|discard(?:ed)?|drop(?:ped)?|dismiss(?:ed)?|avoid(?:ed)?|exclude(?:d)?"
                     r"|turn down|turned down|pass over|passed over|rule against|ruled against"
                     r"|set aside|pass on|passed on|(?:would|will|do|did|can|should) not (?:recommend|choose|pick|use|keep|adopt"
                     r"|want|take|ship|deploy|go with)")
_OBJECT_FIRST_REC = (r"recommend(?:ed)?|choose|chose|pick(?:ed)?|select(?:ed)?|prefer(?:red)?|favor(?:ed)?|keep|kept"
                     r"|adopt(?:ed)?|go with|went with|take|took|back|endorse|ship|deploy")
# What may follow a verb that has no object: the end of a clause or a scoping word.
_NO_OBJECT = (r"(?= (?:[.,:()]|because|since|as|given|for|due|here|now|too|also|outright|entirely|instead|then|so|but|and"
              r"|while|whereas|which|without|at|on|in|after|today|for now)(?: |$)|$)")
_HEDGE_ADVERBS = r"probably|likely|arguably|perhaps|maybe|really|just|still|honestly|personally|tentatively|cautiously|rather"
_SOFT_GOOD = r"good|solid|safe|sound|reasonable|sensible|decent|fine|wise|smart"
_SOFT_ROLES = r"bet|fit|choice|option|call|pick|move|idea|path|route|answer"
CUES: tuple[Cue, ...] = (
    # -- object first ("Eager execution I reject", "compiled with fusion we recommend."): the verb
    #    has no object of its own, so it points back; listed first so that it wins over "I reject …"
    Cue(rf"{_FIRST_PERSON} (?:{_OBJECT_FIRST_REJ}){_NO_OBJECT}", False, REJ, False, 3),
    Cue(rf"{_FIRST_PERSON} (?:{_OBJECT_FIRST_REC}){_NO_OBJECT}", False, REC, False, 3),
    # -- a recommending verb negated: listed first so that "would not choose" wins over "choose"
    Cue(rf"(?:do|does|did|would|should|could|will|can|must|shall) not (?:\w+ )?(?:{_REC_VERBS}|{_USE_VERBS})", True, REJ, True, 6),
    Cue(rf"(?:not|never) (?:{_REC_VERBS})", True, REJ, True, 6),
    Cue(rf"(?:wrong|mistake|unwise|no reason|little reason|hard to justify) (?:to |for )(?:{_REC_VERBS}|{_USE_VERBS})?",
        True, REJ, True, 6),
    # -- preceding cues that reject
    Cue(r"rejected (?:alternative|option|candidate|plan|path|design)(?: is| was| would be)?", True, REJ, True, 4),
    Cue(_NOT_PASSIVE + r"(?:reject(?:s|ed|ing)?|rul(?:e|es|ed|ing) out|discard(?:s|ed|ing)?)", True, REJ, True, 6),
    # "we rule it out": the pronoun between verb and particle is the option
    Cue(r"(?:rul(?:e|es|ed|ing)|count(?:s|ed)?|cross(?:es|ed)?|leave|leaves|left)(?= (?:it|this|that|them) out(?: |$))", True, REJ,
        False, 1),
    Cue(r"(?:dismiss|drop|abandon|decline|forgo|skip|avoid)(?:s|ed|ing|ped|ping)?|steer(?:s|ed|ing)? clear of"
        r"|(?:switch|move|migrat)(?:e|es|ed|ing)? away from", True, REJ, False, 4),
    Cue(r"instead of|rather than|in place of|in preference to", True, REJ, False, 3),
    Cue(r"not|over|neither|nor|(?:better|faster|cheaper|preferable|superior|more efficient) (?:than|to)|beats?|outperforms?|dominates",
        True, REJ, False, 2, filler_only=True),
    # -- preceding cues that recommend
    Cue(r"(?:final )?(?:recommendation|choice|pick|decision|verdict|proposal|answer) (?:is|would be|here is)(?: to)?"
        r"(?: (?:use|go with|keep|adopt|deploy|choose|pick|stay with|stick with|select))?", True, REC, True, 5),
    Cue(r"(?:recommendation|recommended|choice|chosen|pick|decision|verdict|winner|selected|preferred)"
        r"(?: option| plan| path| candidate| design)? :", True, REC, True, 4),
    Cue(rf"(?:{_QUALITY}) (?:{_ROLE}) (?:is|remains|would be|here is)", True, REC, True, 4),
    Cue(rf"{_FIRST_PERSON} (?:{_DECIDE})", True, REC, True, 6),
    Cue(_NOT_PASSIVE + r"recommend(?:s|ed|ing)?", True, REC, True, 6),
    Cue(_NOT_PASSIVE + rf"(?:{_REC_VERBS})", True, REC, False, 6),
    Cue(rf"(?:i|we|you|they|team|should|would|will|must|to|us|can|shall)(?: \w+)? (?:{_USE_VERBS})|(?:^|(?<=\. )|(?<=: ))(?:{_USE_VERBS})",
        True, REC, False, 4),
    Cue(r"in favor of|loses to|lost to|beaten by|outperformed by|(?:worse|slower|costlier|more expensive) than", True, REC, False, 3),
    # -- hedged cues (weak, uncertain): "I'd lean towards X", "my vote goes to X", "I'd steer away from Y"
    Cue(rf"{_FIRST_PERSON}(?: (?:{_HEDGE_ADVERBS}))* (?:lean(?:ing|s)? (?:toward|to)|am inclined (?:toward|to(?: go with| pick"
        r"| choose| use| recommend)?)|(?:would )?(?:suggest|propose|advise|go for|vote for|side with|argue for|put my money on))",
        True, REC, False, 5, hedge=True),
    Cue(r"(?:leaning|inclined|lean) (?:toward|to)|my (?:inclination|instinct|gut|preference|vote|money|bet)(?: is| would be"
        r"| goes| lies)?(?: on| with| for| to| toward)?(?: (?:go with|pick|choose|use))?", True, REC, False, 4, hedge=True),
    Cue(rf"{_FIRST_PERSON}(?: (?:{_HEDGE_ADVERBS}))* (?:steer away from|stay away from|pass on|be wary of|am wary of|not bother"
        r" with|hesitate to (?:use|adopt|recommend|choose)|not (?:convinced|sold) (?:by|on)|doubt)|(?:i am|we are) not"
        r" (?:convinced|sold) (?:by|on)|hard to (?:recommend|justify)", True, REJ, False, 5, hedge=True),
    # -- following cues that reject (negated forms first, so "is not the best choice" is not read as "is … the best choice")
    Cue(r"(?:is|are|was|were|gets|got|should be|must be|has been|have been|had been|will be|would be|is being)" + _ADVERB
        + r" (?:rejected|ruled out|discarded|not recommended|dismissed|dropped|abandoned|set aside|shelved|eliminated|excluded"
          r"|vetoed|turned down|passed over|crossed off|not pursued|not chosen|not selected|not adopted|off the table"
          r"|out of the running)"
        rf"|(?:is|are|would be) (?:the|a) (?:{_WORSE}) (?:{_ROLE})|(?:is|are) not (?:the |my |our )?(?:{_QUALITY}|recommended|preferred)"
        r"|should not be (?:used|deployed|chosen|kept|adopted)", False, REJ, True, 6),
    # -- following cues that recommend
    Cue(rf"(?:is|are|remains|stays|becomes|would be|will be|should be){_ADVERB} (?:the|my|our) (?:{_QUALITY}) (?:{_ROLE})",
        False, REC, True, 6),
    Cue(r"(?:is|are)" + _ADVERB + r" (?:recommended|preferred|chosen|selected|the way to go|my (?:choice|pick|recommendation))"
        r"|(?:gets|has) my (?:vote|recommendation)|should be (?:used|deployed|chosen|kept|adopted|preferred|shipped)"
        r"|(?:is|are) what (?:i|we) (?:recommend|choose|pick|would choose|would pick)", False, REC, True, 6),
    # -- hedged following cues (weak, uncertain) and short verdicts ("So the H100 it is", "(my pick)")
    Cue(rf"(?:(?:{_HEDGE_ADVERBS}) )?(?:is|are|seems|looks|sounds)(?: (?:{_HEDGE_ADVERBS}))? (?:not|never|hardly) (?:the way to go"
        rf"|worth (?:it|the \w+)|a (?:{_SOFT_GOOD}|great) (?:{_SOFT_ROLES})|ideal|advisable|recommended|the answer"
        rf"|(?:the|my|our) (?:right|best|better|{_QUALITY}) (?:{_SOFT_ROLES}|{_ROLE})|(?:my|our) (?:pick|choice|recommendation"
        rf"|preference|favorite))|(?:does|do) not (?:seem|look|sound) (?:like )?(?:the way to go|worth (?:it|the \w+)|a (?:{_SOFT_GOOD}"
        rf") (?:{_SOFT_ROLES}))|(?:seems|looks|sounds) (?:like )?(?:a |the )?(?:poor|bad|weak|risky|worse|wrong|questionable)"
        rf" (?:{_SOFT_ROLES})", False, REJ, False, 5, hedge=True),
    Cue(rf"(?:(?:{_HEDGE_ADVERBS}) )?(?:is|are|seems|looks|sounds)(?: (?:{_HEDGE_ADVERBS}))* (?:like )?(?:the way to go|the way forward"
        rf"|a (?:{_SOFT_GOOD}) (?:{_SOFT_ROLES})|(?:the|a) (?:safer|better|best|right|{_SOFT_GOOD}) (?:{_SOFT_ROLES}|{_ROLE}))",
        False, REC, False, 5, hedge=True),
    Cue(r"(?:was|were|has been|have been|gets|got|will be)" + _ADVERB + r" (?:recommended|preferred|chosen|selected|picked|adopted"
        r"|kept|retained|favored)|(?:is|are|remains|stays|was|becomes|would be|will be)" + _ADVERB + r" (?:my|our) (?:choice|pick|recommendation"
        r"|preference|favorite|winner)", False, REC, False, 6),
    Cue(r"(?:sticking|staying|remaining) (?:with|on)|retaining", True, REC, False, 4),
    Cue(r"(?:should|would|will|must) (?:be|become|stay|remain) (?:the|our) (?:default|standard|go to)", False, REC, False, 5),
    Cue(r"(?:is|are|seems|would be|looks) (?:hard|difficult) to (?:justify|recommend|defend)", False, REJ, False, 6, hedge=True),
    Cue(r"it is(?= (?:[.,:!)]|$)|$)|(?:my|our) (?:pick|choice|recommendation|vote|preference|favorite|winner|call|bet)"
        r"(?= (?:[.,:)]|and|for)(?: |$)|$)|gets the nod|gets my nod|takes it|(?:is|are) the one(?: to (?:pick|choose|use|go with))?"
        r"|hands down|for the win|all the way|wins out", False, REC, False, 1),
    Cue(r"(?:is|are|was|were)(?: \w+)? (?:a )?(?:non starter|nonstarter|no go|dead end|dead on arrival|dealbreaker|deal breaker)"
        r"|(?:does|do|did) not make sense|makes? no sense", False, REJ, False, 5),
    Cue(r"wins|won|comes out ahead|comes out on top|is the winner|pays off|repays (?:its|the) setup|beats|outperforms|dominates"
        r"|(?:is|are)(?: \S+)? (?:faster|cheaper|better|more efficient|leaner)", False, REC, False, 5),
    Cue(r"loses|lost|falls? short|falls? behind|is out|drops out|is not worth(?: it| the \w+)?|(?:does|did) not (?:pay off|repay)"
        rf"|never (?:pays off|repays)|(?:fails|failed|misses|missed|violates|violated|exceeds|exceeded|breaks|blows)"
        rf"(?: the| its| our| every| both| all)?(?: \w+)? (?:{_BUDGETS})"
        r"|fails to \w+|(?:is|are|was|were|becomes|remains)(?: \S+)? (?:infeasible|not feasible|unsupported|too slow|too expensive"
        r"|too costly|slower|costlier|more expensive|worse|less efficient|over budget|out of budget|not viable|unviable)"
        r"|(?:can|could|does|did|will) not (?:run|execute|fit|meet|pass|survive|win|compete|keep up|deliver)", False, REJ, False, 6),
)
NEGATORS = frozenset({"not", "never", "nor", "hardly"})
FILLER = frozenset(["the", "a", "an", "our", "my", "this", "that", "its", "their", "plain", "pure", "just", "only", "simple", "simply", "current", "existing", "native", "whole", "full", "fully", "tested", "selected", "candidate", "option", "(", ")", "using", "keeping", "choosing", "picking"])
CLAUSE_BREAKS = frozenset(["because", "since", "so", "therefore", "thus", "hence", "whereas", "while", "although", "though", "but", "however", "yet", "which", "when", "whenever", "if", "unless", "once", "until"])
HYPOTHETICAL = frozenset(["if", "unless", "whenever", "once", "until", "assuming", "provided", "otherwise", "although", "though", "whereas", "while", "despite", "could", "might", "only", "below", "above", "beyond", "single", "fewer"])
# Words that scope a claim ("the better choice at one execution", "for debugging", "last year"):
# a stance whose clause holds one, outside the names and cues, is qualified and never a contradiction.
QUALIFIERS = frozenset(["for", "at", "in", "on", "during", "under", "with", "without", "by", "below", "above", "beyond", "until", "when", "whenever", "only", "last", "previously", "before", "earlier", "later", "except", "unless", "if", "once", "given", "assuming"])
_PAUSES = frozenset({".", ",", ":", "(", ")"})
# A trigger is said as a condition ("if", "revisit when") or as a change ("the execution count changes");
# the bare label "trigger:" before a name is not enough.
TRIGGER_CUE = re.compile(
    r"(?<!\w)(?:if|when|whenever|once|unless|until|should|as soon as|in case|re ?evaluat\w*|revisit\w*|reconsider\w*"
    r"|reopen\w*|re ?(?:check|run|test|assess|examine|measure|do|benchmark|profile|visit|open)\w*|monitor\w*|watch\w*)(?!\w)")
CHANGE_WORDS = re.compile(
    r"(?<!\w)(?:chang|grow|grew|drop|fall|fell|ris|rose|shrink|shrank|tighten|increas|decreas|doubl|halv|shift|mov|vari|vary"
    r"|differ|improv|arriv|appear|fir|trip|break|broke|exceed|relax)\w*(?!\w)")
LIST_SIZE = 3  # a sentence naming this many options of one list is a keyword list
_BREAKS = CLAUSE_BREAKS | {"."}


# -- scanning only where a match can start (with the standard library's parser) -------------

_REPEATS = tuple(getattr(_sre_constants, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
                 if hasattr(_sre_constants, name))
_ZERO_WIDTH = (_sre_constants.AT, _sre_constants.ASSERT, _sre_constants.ASSERT_NOT)


class _Unknown(Exception):
    """A pattern may start in a way :func:`_first_words` does not follow."""


Starts = tuple[frozenset[str], tuple[str, ...]] | None
"""The words a match can start with: (whole words, prefixes of longer words), or None when that cannot be told."""


@lru_cache(maxsize=256)
def _compiled(source: str) -> tuple[re.Pattern[str], Starts]:
    """``source`` compiled, and the words a match of it can start with (:func:`_first_words`), from one parse.

    Kept per pattern text: the readers of a lab's tracks share most of their patterns (30 distinct
    of 69 across both labs' eight tracks), and parsing one again costs as much as the first time.
    ``re.compile`` would parse the text a second time; here the parsed pattern is compiled as
    ``re.compile`` compiles it (the same code), so the compiled pattern's ``pattern`` is None.
    A malformed pattern raises :class:`re.error`, as ``re.compile`` does.
    """
    parsed = _sre_parser.parse(source)
    starts = _starts_of(parsed)  # first: compiling reads the parsed pattern, walking it changes nothing
    return _sre_compiler.compile(parsed), starts


def _first_words(pattern: str) -> Starts:
    """The words a match of ``pattern`` can start with: (whole words, prefixes of longer words),
    or None when that cannot be told (then the whole text is scanned)."""
    try:
        return _starts_of(_sre_parser.parse(pattern))
    except re.error:
        return None


def _starts_of(parsed: Any) -> Starts:
    """:func:`_first_words` of a parsed pattern."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    steps = [0]

    def walk(items: list, prefix: str) -> None:
        steps[0] += 1
        if steps[0] > 20_000:
            raise _Unknown
        if not items:
            if not prefix:
                raise _Unknown
            exact.add(prefix)
            return
        (op, av), rest = items[0], items[1:]
        if op is _sre_constants.LITERAL:
            char = chr(av)
            if char.isalnum():
                walk(rest, prefix + char)
            elif prefix:
                exact.add(prefix)
            else:
                raise _Unknown
        elif op in _ZERO_WIDTH:
            walk(rest, prefix)
        elif op is _sre_constants.SUBPATTERN:
            walk(list(av[-1]) + rest, prefix)
        elif op is _sre_constants.BRANCH:
            for alternative in av[1]:
                walk(list(alternative) + rest, prefix)
        elif op in _REPEATS:
            low, high, sub = av
            if low == 0:
                walk(rest, prefix)
            if high != 0:
                again = [(op, (0, high if high == _sre_constants.MAXREPEAT else high - 1, sub))] if high != 1 else []
                walk(list(sub) + again + rest, prefix)
        elif prefix:  # a character class continues the word: any longer word with this prefix
            prefixes.add(prefix)
        else:
            raise _Unknown

    try:
        walk(list(parsed.data), "")
    except (_Unknown, RecursionError):
        return None
    return frozenset(exact), tuple(sorted(prefixes))


class _Scanner:
    """A pattern tried only at the tokens a match can start with.

    It is compiled on first use: the cues' scanner costs tens of milliseconds, kept out of
    ``import mlsys_grader``, and a reader's scanners are compiled only when a rationale needs them.
    """

    def __init__(self, source: str):
        self.source = source

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.source)[0]

    @cached_property
    def starts(self) -> Starts:
        """:func:`_first_words` of the pattern, which is compiled first: a malformed pattern fails here."""
        return _compiled(self.source)[1]

    def finditer(self, doc: _Text) -> Iterator[re.Match[str]]:
        if self.starts is None:
            yield from self.pattern.finditer(doc.norm)
            return
        exact, prefixes = self.starts
        hits = doc.words & exact
        if prefixes:
            hits |= {word for word in doc.words if word.startswith(prefixes)}
        end = 0
        for start in sorted(position for word in hits for position in doc.offsets(word)):
            if start >= end and (match := self.pattern.match(doc.norm, start)):
                end = match.end()
                yield match

    def search(self, text: str) -> bool:
        return self.pattern.search(text) is not None


def _alternatives(prefix: str, sources: Sequence[str]) -> str:
    """One pattern trying ``sources`` in order as whole words, each in group ``{prefix}{i}``."""
    return r"(?<![\w])(?:" + "|".join(f"(?P<{prefix}{i}>{source})" for i, source in enumerate(sources)) + r")(?![\w])"


_CUES = _Scanner(_alternatives("c", [cue.pattern for cue in CUES]))


def _which(match: re.Match[str]) -> int:
    """Which source of an :func:`_alternatives` pattern matched (its group is named ``<prefix><index>``)."""
    name = match.lastgroup
    if name is None:  # every alternative is a named group, so a match always names one
        raise LookupError(f"no alternative is named in the match {match.group()!r}")
    return int(name[1:])


@dataclass(frozen=True)
class Stance:
    """One option the text recommends or rejects, where, and how firmly.

    ``hypothetical``: said in a conditional, concessive or scoped sentence or clause ("if …",
    "although …", "… at one execution"), so it names the option but is never a contradiction.
    """

    option: str
    stance: str
    strong: bool
    hypothetical: bool
    excerpt: str
    via: str = ""
    """How the option was reached when not by its name and a firm cue: :data:`HEDGE` or :data:`PRONOUN`."""


def _fill(pattern: str, slots: Mapping[str, str]) -> str:
    """``pattern`` with ``{slot}`` placeholders filled and its groups made non-capturing."""
    pattern = re.sub(r"(?<!\\)\((?!\?)", "(?:", pattern)
    return re.sub(r"\{([a-z_]\w*)\}", lambda m: slots.get(m.group(1), r"(?!x)x"), pattern)


class Reader:
    """The compiled patterns for one lab and track: option names, decisive phrasings,
    limitation and trigger phrasings."""

    def __init__(self, terms: ChoiceTerms, triggers: Sequence[Choice], limitations: Sequence[Choice]):
        slots = {name: "(?:" + "|".join(sorted({re.escape(normalise(a)) for a in aliases if normalise(a)}, key=len,
                                               reverse=True)) + ")"
                 for name, aliases in terms.slots}
        names: list[tuple[bool, int, str, str]] = []
        decisive: list[tuple[str, str]] = []
        for option in terms.options:
            names += [(True, -len(normalise(k)), re.escape(normalise(k)), option.value)
                      for k in option.keywords if normalise(k)]
            names += [(False, 0, _fill(p, slots), option.value) for p in option.phrasings]
            decisive += [(_fill(p, slots), option.value) for p in option.decisive]
        names.sort(key=lambda item: (item[0], item[1]))  # phrasings first, then the longest keyword first
        self.name_options = [value for *_, value in names]
        self.names = _Scanner(_alternatives("n", [source for _, _, source, _ in names])) if names else None
        self.decisive_options = [value for _, value in decisive]
        self.decisive = _Scanner(_alternatives("d", [source for source, _ in decisive])) if decisive else None
        self.triggers = {c.value: self._choice(c, slots) for c in triggers}
        self.limitations = {c.value: self._choice(c, slots) for c in limitations}

    @staticmethod
    def _choice(choice: Choice, slots: Mapping[str, str]) -> _Scanner:
        sources = [re.escape(normalise(k)) for k in choice.keywords if normalise(k)]
        sources += [_fill(p, slots) for p in choice.phrasings]
        return _Scanner(r"(?<![\w])(?:" + "|".join(sources) + r")(?![\w])")


def reader_for(memos: Memos, lab: RationaleWords, terms: ChoiceTerms) -> Reader:
    """The compiled :class:`Reader` for ``terms.key``, built once per lab object and kept in ``memos``."""
    reader: Reader | None = memos.readers.get((lab, terms.key))
    if reader is None:
        reader = memos.readers[(lab, terms.key)] = Reader(terms, lab.triggers, lab.limitations)
    return reader


class _Text:
    """A normalised text split into tokens (one space between tokens, so a character offset
    gives its token by counting spaces)."""

    def __init__(self, text: str):
        self.norm = normalise(text)
        self.tokens = self.norm.split(" ") if self.norm else []
        self.words = frozenset(self.tokens)
        # NOTE: every scanner (names, cues, decisive phrasings, each limitation and trigger) asks where
        # its start words occur, so the offsets of every token are found once, in one pass.
        self._offsets: dict[str, list[int]] = {}
        offset = 0
        for token in self.tokens:
            self._offsets.setdefault(token, []).append(offset)
            offset += len(token) + 1
        self._hypothetical: dict[int, bool] = {}
        self.stances: dict[Reader, tuple[tuple[Stance, ...], frozenset[str]]] = {}
        """What :func:`_read_stances` read in this text with each reader."""

    def offsets(self, word: str) -> Sequence[int]:
        """Character offsets of every occurrence of ``word`` as a token, in order."""
        return self._offsets.get(word, ())

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        """Token indices [start, end) of a match."""
        return self.norm.count(" ", 0, match.start()), self.norm.count(" ", 0, match.end()) + 1

    def bounds(self, position: int) -> tuple[int, int]:
        """Character offsets [low, high) of the sentence holding ``position``."""
        low = self.norm.rfind(" . ", 0, position + 1)
        high = self.norm.find(" . ", position)
        return (low + 3 if low >= 0 else 0), (high if high >= 0 else len(self.norm))

    def hypothetical(self, position: int) -> bool:
        """True when the sentence at ``position`` is conditional or concessive ("if", "although"…)."""
        low, high = self.bounds(position)
        if low not in self._hypothetical:
            self._hypothetical[low] = not HYPOTHETICAL.isdisjoint(self.norm[low:high].split(" "))
        return self._hypothetical[low]

    def one_clause(self, low: int, high: int) -> bool:
        """True when tokens [low, high) hold no sentence end or clause break."""
        return _BREAKS.isdisjoint(self.tokens[low:high])


def _document(text: str) -> _Text:
    """``_Text(text)``, normalised and tokenised once per text of up to :data:`CACHED_TEXT_CHARS` (a ``_Text`` is
    never changed but for its memo)."""
    return _kept_document(text) if len(text) <= CACHED_TEXT_CHARS else _Text(text)


_kept_document = lru_cache(maxsize=DOCUMENT_CACHE_SIZE)(_Text)


def normalised(text: str) -> str:
    """:func:`normalise` of ``text``, from the reading the rationale check already made of it when there is one."""
    return _document(text).norm


_REACH = max(cue.reach for cue in CUES) + 12  # tokens around a mention where a cue can sit (reach and cue length)


def read_stances(text: str | _Text, reader: Reader) -> list[Stance]:
    """Every stance the text takes on an option (see the module docstring, steps 1–4)."""
    return _read_stances(text if isinstance(text, _Text) else _document(text), reader)[0]


# Words that stand for an option named just before ("… I reject it", "the latter loses").
_PRONOUNS = re.compile(r"(?<![\w])(?:it|(?:this|that) (?:one|option|path|choice|candidate|plan|design|approach|alternative)"
                       r"|the (?:former|latter))(?![\w])")


def _pronoun_mentions(doc: _Text, mentions: Sequence[tuple[int, int, str, int]], taken: set[int]
                      ) -> list[tuple[int, int, str, int]]:
    """Mentions made by a pronoun, resolved to the option named before it in the same sentence, or
    else in the previous sentence, when that names exactly one option ("the former" / "the latter":
    the first / the last of two or more).  A pronoun that could mean two options stands for none."""
    if not mentions or ("it" not in doc.words and "this" not in doc.words and "that" not in doc.words
                        and "former" not in doc.words and "latter" not in doc.words):
        return []
    found = []
    starts = [m[0] for m in mentions]
    for match in _PRONOUNS.finditer(doc.norm):
        start, end = doc.span(match)
        if start in taken:
            continue
        low, _ = doc.bounds(match.start())
        before = [m for m in mentions[:bisect.bisect_left(starts, start)]]
        sentence_start = doc.norm.count(" ", 0, low) if low else 0
        window = [m for m in before if m[0] >= sentence_start]
        if not window and low >= 3:
            previous_low, _ = doc.bounds(low - 3)
            previous_start = doc.norm.count(" ", 0, previous_low) if previous_low else 0
            window = [m for m in before if previous_start <= m[0] < sentence_start]
        options = list(dict.fromkeys(m[2] for m in window))
        word = match.group()
        if word in ("the former", "the latter"):
            option = (options[0] if word == "the former" else options[-1]) if len(options) >= 2 else None
        else:
            option = options[0] if len(options) == 1 else None
        if option is not None:
            found.append((start, end, option, match.start()))
    return found


def _read_stances(doc: _Text, reader: Reader) -> tuple[list[Stance], set[str]]:
    """(every stance, every option mentioned by name) — see :func:`read_stances`; read once per text and reader."""
    read = doc.stances.get(reader)
    if read is None:
        stances, named = _stances_in(doc, reader)
        read = doc.stances[reader] = (tuple(stances), frozenset(named))
    return list(read[0]), set(read[1])


def _stances_in(doc: _Text, reader: Reader) -> tuple[list[Stance], set[str]]:
    if not doc.tokens or reader.names is None:
        return [], set()
    mentions = [(*doc.span(m), reader.name_options[_which(m)], m.start()) for m in reader.names.finditer(doc)]
    named = {mention[2] for mention in mentions}
    stances: list[Stance] = []
    if mentions:
        cues = [(*doc.span(m), CUES[_which(m)]) for m in _CUES.finditer(doc)]
        cue_starts = [cue[0] for cue in cues]
        inside = [False] * len(mentions)
        for i, (start, end, _, _) in enumerate(mentions):
            j = bisect.bisect_right(cue_starts, start) - 1
            inside[i] = j >= 0 and cues[j][1] >= end
        mentions = [mention for mention, covered in zip(mentions, inside, strict=True) if not covered]
        taken = {i for s, e, _, _ in mentions for i in range(s, e)} | {i for s, e, _ in cues for i in range(s, e)}
        pronouns = _pronoun_mentions(doc, mentions, taken)
        by_pronoun = {p[0] for p in pronouns}
        if pronouns:
            mentions = sorted(mentions + pronouns)
        mention_starts = [mention[0] for mention in mentions]
        covered = {i for s, e, _, _ in mentions for i in range(s, e)} | {i for s, e, _ in cues for i in range(s, e)}
        for index, (start, end, option, position) in enumerate(mentions):
            low, high = bisect.bisect_left(cue_starts, start - _REACH), bisect.bisect_right(cue_starts, end + _REACH)
            found = _nearest_cue(doc, cues[low:high], mentions, mention_starts, index)
            if found is not None:
                strong, stance, cue_start, cue_end, hedge = found
                lo, hi = min(start, cue_start), max(end, cue_end)
                hedged = doc.hypothetical(position) or _qualified(doc, lo, hi, covered)
                via = PRONOUN if start in by_pronoun else HEDGE if hedge else ""
                stances.append(Stance(option, stance, strong and not via, hedged, " ".join(doc.tokens[lo:hi]), via))
    if reader.decisive is not None:
        for match in reader.decisive.finditer(doc):
            start, end = doc.span(match)
            if NEGATORS.isdisjoint(doc.tokens[max(0, start - 2):start]):
                option = reader.decisive_options[_which(match)]
                named.add(option)
                stances.append(Stance(option, REC, True, doc.hypothetical(match.start()), " ".join(doc.tokens[start:end])))
    return stances, named


def _qualified(doc: _Text, lo: int, hi: int, covered: set[int]) -> bool:
    """True when the clause around tokens [lo, hi) (up to a pause: , : ( ) or a clause break)
    holds a :data:`QUALIFIERS` word that is not part of a name or a cue."""
    while lo > 0 and doc.tokens[lo - 1] not in _PAUSES and doc.tokens[lo - 1] not in _BREAKS:
        lo -= 1
    while hi < len(doc.tokens) and doc.tokens[hi] not in _PAUSES and doc.tokens[hi] not in _BREAKS:
        hi += 1
    return any(doc.tokens[i] in QUALIFIERS and i not in covered for i in range(lo, hi))


def _nearest_cue(doc: _Text, cues: Sequence[tuple[int, int, Cue]], mentions: Sequence[tuple[int, int, str, int]],
                 mention_starts: Sequence[int], index: int) -> tuple[bool, str, int, int, bool] | None:
    """The cue among ``cues`` that applies to mention ``index`` — (strong, stance, start, end, hedge) — or None."""
    start, end, option, _ = mentions[index]
    best = None
    for c_start, c_end, cue in cues:
        if cue.before:
            if c_end > start:
                continue
            lo, hi = c_end, start
        else:
            if c_start < end:
                continue
            lo, hi = end, c_start
        if hi - lo > cue.reach:
            continue
        between = range(bisect.bisect_left(mention_starts, lo), bisect.bisect_left(mention_starts, hi))
        if any(mentions[i][2] != option for i in between):
            continue  # a cue never reaches across a mention of another option
        if cue.filler_only and not FILLER.issuperset(doc.tokens[lo:hi]):
            continue
        if not doc.one_clause(lo, hi):  # the gap; a cue's own words ("is therefore rejected") never split it
            continue
        stance, strong = cue.stance, cue.strong
        if cue.before and stance == REC:
            words = doc.tokens[max(0, c_start - 4):c_start]
            while words and not _BREAKS.isdisjoint(words):
                words = words[1:]
            if not NEGATORS.isdisjoint(words):
                stance, strong = REJ, False  # "I do not think we should choose Y"
        candidate = (hi - lo, 0 if cue.before else 1, strong, stance, c_start, c_end, cue.hedge)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return None if best is None else best[2:]


MAX_NAMED_TRIES = 50  # matches of one limitation or trigger examined, so a repeated phrase costs bounded time
# Words that mark one option of a caveat sentence as the main one ("… but the main one is …").
MAIN_MARKERS = frozenset(["main", "mainly", "chief", "chiefly", "primary", "primarily", "principal", "biggest", "largest",
                          "greatest", "foremost", "especially", "particularly", "mostly", "major", "key", "central",
                          "worst", "overriding", "dominant", "important", "serious"])
_PLURAL_MARKED = frozenset(["ones", "limitations", "risks", "caveats", "concerns", "issues", "weaknesses", "gaps", "problems"])
NAMED, MULTI, LISTED, NO_CONDITION = "named", "multi", "listed", "no condition"  # how a limitation or trigger was found


def _named(doc: _Text, scanner: _Scanner, others: Mapping[str, _Scanner], *, needs_trigger_cue: bool = False) -> str | None:
    """How ``scanner`` is stated: :data:`NAMED` in a sentence that is not a keyword list (and, for a
    trigger, says when to look again); :data:`MULTI` in a sentence naming :data:`LIST_SIZE` or more
    options of the list where this one is marked as the main one, or next to another option; else
    None, or why it did not count (:data:`LISTED` only in keyword lists, :data:`NO_CONDITION` a trigger
    without a condition)."""
    best: str | None = None
    for tries, match in enumerate(scanner.finditer(doc)):
        if tries >= MAX_NAMED_TRIES:
            break
        low, high = doc.bounds(match.start())
        sentence = doc.norm[low:high]
        if needs_trigger_cue and not (TRIGGER_CUE.search(sentence) or CHANGE_WORDS.search(
                doc.norm, max(low, match.start() - 24), min(match.end() + 40, high))):  # "a drop in the run count"
            best = best or NO_CONDITION
            continue
        count = sum(1 for other in others.values() if other.search(sentence))
        if count >= LIST_SIZE:
            if _marked_main(doc, match, scanner, others):
                best = MULTI
            elif best is None or best == NO_CONDITION:
                best = LISTED
            continue
        if count <= 1:
            return NAMED
        best = MULTI
    return best


def _marked_main(doc: _Text, match: re.Match[str], scanner: _Scanner, others: Mapping[str, _Scanner]) -> bool:
    """True when ``match`` sits in a clause (up to a pause or a clause break) that holds a
    :data:`MAIN_MARKERS` word, no plural ("the main ones are …") and no other option of the list."""
    lo, hi = doc.span(match)
    while lo > 0 and doc.tokens[lo - 1] not in _PAUSES and doc.tokens[lo - 1] not in _BREAKS:
        lo -= 1
    while hi < len(doc.tokens) and doc.tokens[hi] not in _PAUSES and doc.tokens[hi] not in _BREAKS:
        hi += 1
    words = doc.tokens[lo:hi]
    if MAIN_MARKERS.isdisjoint(words) or not _PLURAL_MARKED.isdisjoint(words):
        return False
    clause = " ".join(words)
    start = match.start() - sum(len(word) + 1 for word in doc.tokens[:lo])  # the match, in the clause's offsets
    end = start + len(match.group())
    # another option counts only outside this match ("the T4 numbers are not measured" also reads as unmeasured numbers)
    return not any(m.start() < start or m.end() > end for other in others.values() if other is not scanner
                   for m in other.pattern.finditer(clause))


# -- the check ----------------------------------------------------------------------------

# Every message a student can see, one sentence each; none names an option, a number or a phrasing.
MESSAGES = {
    "empty": "Write a rationale that compares your recommendation with the rejected alternative using saved numbers.",
    "short": "Your rationale has {words} word{plural}; give at least {minimum}, with numbers from your evidence.",
    "cite": "Cite at least one number from your saved evidence with its unit (e.g. '0.42 ms' or '3.7x'); {tail}",
    "cite_trivial": "{quoted} {verb} not evidence (values of 0 or 1 and settings you chose do not count).",
    "cite_unmatched": "none of {quoted} appears in your evidence.",
    "cite_none": "the rationale cites no quantity with a unit.",
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


@dataclass(frozen=True)
class Verdict:
    """How sure the reader is of its verdict on one rationale item, and why (one phrase for staff)."""

    item: str
    certainty: str
    """:data:`CERTAIN` or :data:`UNCERTAIN`."""
    reason: str


@dataclass(frozen=True)
class Reading:
    """One reading of a rationale: the findings (what the student sees) and a :class:`Verdict` per item."""

    findings: tuple[Finding, ...]
    verdicts: tuple[Verdict, ...]


def _evidence(ctx: GradingContext, text: str) -> tuple[Finding | None, Verdict]:
    item = "rationale_cites_evidence"
    cited = cited_quantities(text)
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


def _choices(doc: _Text, terms: ChoiceTerms, reader: Reader) -> tuple[list[Finding], list[Verdict]]:
    stances, named = _read_stances(doc, reader)
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
    text = plain_text(own_text(ctx))  # as every reader reads it, without the grader's own template sentences
    minimum = ctx.rubric.min_rationale_words
    words = word_count(text)
    findings: list[Finding] = []
    if words == 0:
        findings.append(_finding("rationale_length", MESSAGES["empty"], f"at least {minimum} words", 0))
    elif words < minimum:
        findings.append(_finding("rationale_length", MESSAGES["short"].format(
            words=words, plural="" if words == 1 else "s", minimum=minimum), minimum, words))
    verdicts = [Verdict("rationale_length", CERTAIN, "words counted")]
    finding, verdict = _evidence(ctx, text)
    findings += [finding] if finding is not None else []
    verdicts.append(verdict)
    terms = ctx.lab.final_choice_terms(ctx.bundle)
    reader = reader_for(ctx.replay.memos, ctx.lab, terms)
    doc = _document(text)
    for found, judged in (_choices(doc, terms, reader), _listed(ctx, doc, reader)):
        findings += found
        verdicts += judged
    return Reading(tuple(findings), tuple(verdicts))


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
