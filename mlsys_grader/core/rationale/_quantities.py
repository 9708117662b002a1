"""Quantities and units: the numbers a rationale cites with their units (:func:`cited_quantities`), how people write them (decimal commas, rounding, exponents), unit conversions (the checked-in scales, :func:`unit_scales`, pint for the rest) and when a cited number is no evidence (:func:`trivial_reason`).

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from types import MappingProxyType

from ..._mlsysim import unit_registry
from ._text import plain_text

RATIO = "ratio"        # dimensionless evidence cited as a multiplier ("3.7x") or a percentage
FRACTION = "fraction"  # dimensionless evidence cited as a percentage only ("88 %")
CHANGE = "change"      # a relative change, cited as a percentage ("72 % less")
ROUNDING_CAP = 0.05    # the rounding a student wrote covers at most 5 % of the recorded value
SIGNIFICANT_ROUNDING_CAP = 0.03  # … 3 % for a number of one significant digit ("4x") or read to its last one ("130 ms")
DERIVED = "derived:"   # unit prefix of a value derived from the records (see ``compared`` and ``share``)
DERIVED_TOLERANCE = 0.002  # a derived value agrees within the rounding written plus 0.2 % (its inputs were shown rounded)
CHANGE_TOLERANCE = 0.001   # … and a relative change c within that rounding plus 0.1 % of 1 + c
MAX_CITED = 200        # quantities considered per rationale, so a wall of numbers costs bounded time


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
_units("bit bits", "bit")
_units("kbit kbits kilobit kilobits", "kilobit")
_units("mbit mbits megabit megabits", "megabit")
_units("gbit gbits gigabit gigabits", "gigabit")
_units("kbps", "kilobit/second")
_units("mbps", "megabit/second")
_units("gbps", "gigabit/second")
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
_PER_EVENT = frozenset(["inference", "inferences", "run", "runs", "query", "queries", "request", "requests", "token", "tokens", "call", "calls", "execution", "executions", "step", "steps", "batch", "image", "images", "sample", "samples", "frame", "frames", "iteration", "iterations", "input", "inputs", "prediction", "predictions", "pass", "passes", "invocation", "invocations", "launch", "launches", "update", "updates", "epoch", "epochs", "record", "records", "example", "examples", "packet", "packets", "message", "messages", "upload", "uploads", "transfer", "transfers", "item", "items"])

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


def cited_quantities(text: str) -> list[CitedQuantity]:
    """Every quantity with a unit, percentage, multiplier or dollar sign in ``text`` (read by
    :func:`plain_text`), in order; a number whose comma the text leaves open ("4,096 ms") is followed
    by its decimal reading, marked :data:`COMMA_AMBIGUOUS`."""
    text = plain_text(text)
    return list(_cited_in(text))


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
            meanings = _unit_meanings(_bits_as_written(shown[match.start("unit"):match.end("unit")]))
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



_BITS = re.compile(r"([kKmMgG])b(?=\s?(?:/|per\s)\s?s)")


def _bits_as_written(unit: str) -> str:
    """``unit`` with a bit rate spelled out where its case says bits: "Mb/s", "kb/s" and "Gb per second" are bits per
    second (a capital prefix and a small "b" over time), as a link rate is written; "MB/s" and "mb/s" stay bytes, and
    so does "Mb" alone (people write it for megabytes)."""
    if not unit[:1].isupper():
        return unit
    return _BITS.sub(lambda found: found.group(1) + "bit", unit, count=1)


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
        # the rubric's tolerance, but never wider than a unit of the last digit written (of the last significant one for a
        # whole number ending in zeros): "96.0 %" is not 96.9 %, "249 ms" is 249.6 ms, "about 360 ms" is 362.9 ms
        digit = 2 * max(cited.tolerance, cited.rounded) * 1.000001
        return abs(cited.value - recorded) <= max(min(rel_tol * abs(recorded), digit), written)
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
