"""Strict, safe JSON: parse untrusted bytes and write canonical bytes.

A submission is read as plain JSON and nothing else: no pickle, no import, no
``eval``.  The reader bounds size and nesting depth *before* parsing (Python's
parser recurses, so a 10,000-deep document would otherwise raise RecursionError),
rejects NaN/Infinity, numbers no float can hold and duplicate keys, and names what it expected.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
import re
import sys
from typing import Any

from ..errors import BundleFormatError, BundleTooLargeError

MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64


# The largest float has 309 digits, so only an integer of 309 digits or more can be out of a float's
# range.  Looking for such a run of digits in the JSON text keeps the walk below off every ordinary
# bundle; it is done with bytes.translate (every digit to "0", anything else to " ") and one substring
# search, because a regex over a 40 kB bundle costs more than parsing it (measured: 0.4-0.7 ms vs 0.02 ms).
_DIGITS_ONLY = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_LONG_RUN = b"0" * 309
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
# The shape of every number in the text, for the same kind of search: digits as "0", an exponent
# mark as "e", a sign as "s", the rest blank.  A float overflows only with a long run of digits or an
# exponent of three digits or more, so a text with neither is parsed by the C float parser alone.
_NUMBER_SHAPE = bytes(48 if 48 <= byte <= 57 else 101 if byte in b"eE" else 115 if byte in b"+-" else 32
                      for byte in range(256))
_FLOAT_RUN = b"0" * 100  # 10^100 mantissa times a two-digit exponent is still a finite float
_BIG_EXPONENTS = (b"e000", b"es000")


def _outside_strings(text: str) -> bytes:
    """The JSON text with every string cut out, as UTF-8: its brackets, numbers, literals and punctuation.

    Strings are cut out by a regex, or where no string holds an escape by splitting at the quotes, so
    what follows walks only what lies outside them (linear and cheap for ordinary bundles).
    """
    if "\\" in text:
        outside = _STRING.sub("", text)
    else:  # no escapes: every other quote-delimited piece is outside a string
        outside = "".join(text.split('"')[::2])
    return outside.encode("utf-8", "surrogatepass")


def _check_depth(text: str | bytes, max_depth: int) -> None:
    """Raise when brackets outside strings nest deeper than ``max_depth`` (``text``: the JSON text, or
    :func:`_outside_strings` of it)."""
    outside = _outside_strings(text) if isinstance(text, str) else text
    # bytes.translate deletes every other byte at C speed (a bracket is one byte in UTF-8, never part of another character)
    brackets = outside.translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= max_depth:
        return  # too few openers to nest deeper
    depth = 0
    for char in brackets:
        if char in b"[{":
            depth += 1
            if depth > max_depth:
                raise BundleTooLargeError(
                    f"JSON nests deeper than {max_depth} levels; a bundle is at most {max_depth} deep"
                )
        else:
            depth -= 1


def _reject_constant(name: str) -> Any:
    raise BundleFormatError(f"JSON must not contain {name}; every number must be finite")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)  # at C speed; only an object that lost a key to a repeat is walked, for the first repeated key
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise BundleFormatError(f"JSON object repeats the key {key!r}; keys must be unique")
            seen.add(key)
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BundleFormatError(f"JSON number {text[:40]} overflows a finite float")
    return value


def _digits(value: int) -> str:
    try:
        return f"{len(str(abs(value)))} digits"
    except ValueError:  # longer than Python converts to text
        return f"more than {sys.get_int_max_str_digits()} digits"


def _huge_integer(value: Any, path: str) -> str | None:
    """The path of the first integer in ``value`` that no float can hold, with its size; None when there is none."""
    if isinstance(value, dict):
        for key, item in value.items():
            found = _huge_integer(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _huge_integer(item, f"{path}[{index}]")
            if found:
                return found
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return f"{path or 'value'}: a number too large for a float (got an integer of {_digits(value)})"
    return None


def check_float_range(value: Any, text: str | bytes | None = None) -> None:
    """Raise :class:`BundleFormatError` naming the first integer in ``value`` that no float can hold.

    Such an integer is valid JSON, but the checks read numbers as floats, so it is refused where the
    JSON is read, like a float that overflows.  ``text``, the JSON of ``value`` when the caller has it,
    lets the walk be skipped for every value without a 309-digit run.
    """
    if text is not None and _LONG_RUN not in (text.encode("utf-8") if isinstance(text, str) else text).translate(_DIGITS_ONLY):
        return
    problem = _huge_integer(value, "")
    if problem:
        raise BundleFormatError(problem)


def loads_strict(data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """Parse untrusted JSON ``data`` or raise :class:`BundleFormatError`.

    ``max_bytes`` bounds the encoded size and ``max_depth`` the nesting of arrays and
    objects; both are checked before the parser runs.
    """
    if not isinstance(data, (bytes, bytearray, str)):
        raise BundleFormatError(f"expected JSON text or bytes, got {type(data).__name__}")
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise BundleTooLargeError(
            f"submission is {size:,} bytes; a bundle must be at most {max_bytes:,} bytes"
        )
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BundleFormatError(
                f"submission is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); expected a JSON bundle"
            ) from exc
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise BundleFormatError("submission is empty; expected a JSON bundle")
    outside = _outside_strings(text)
    _check_depth(outside, max_depth)
    # Numbers lie outside strings: a string's letters and digits ("e123" in a hash) say nothing of them.
    shape = outside.translate(_NUMBER_SHAPE)
    may_overflow = _FLOAT_RUN in shape or any(exponent in shape for exponent in _BIG_EXPONENTS)
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float if may_overflow else None,
            object_pairs_hook=_no_duplicates,
        )
    except json.JSONDecodeError as exc:
        # json's own words end in "at" for some errors ("Unterminated string starting at"): say "at" once.
        where = f"line {exc.lineno}, column {exc.colno}"
        what = exc.msg[0].lower() + exc.msg[1:] if exc.msg else "unreadable"
        raise BundleFormatError(
            f"submission is not valid JSON: {what}{' ' if what.endswith(' at') else ' at '}{where}"
        ) from exc
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, BundleFormatError):
            raise
        raise BundleFormatError(f"submission is not valid JSON ({exc})") from exc
    if _LONG_RUN in shape:  # the same search as check_float_range's, on the shape already made
        check_float_range(value)
    return value


def canonical_dumps(value: Any) -> str:
    """Serialise ``value`` to one canonical JSON text (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(value: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``."""
    return sha256_of_text(canonical_dumps(value))


def sha256_of_text(text: str) -> str:
    """Hex SHA-256 of JSON text already made canonical by :func:`canonical_dumps`."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def exact_key(value: Any) -> bytes:
    """Bytes equal only for JSON values equal to the type and the order (``True`` is not ``1``, ``1`` is not ``1.0``,
    ``{"a": 1, "b": 2}`` is not ``{"b": 2, "a": 1}``), made at C speed: :func:`marshal.dumps`, version 2.

    Version 2 writes no back-references, so the bytes do not depend on how objects are shared; a float is
    written as its 8 bytes (no text conversion, four times quicker than ``repr``).  Bytes that differ prove
    nothing (a string's interning is written too): callers then compare in full.  Only ever written, never
    read back: nothing here turns bytes into objects.  Raises ``ValueError`` for a value JSON cannot hold.
    """
    return marshal.dumps(value, 2)
