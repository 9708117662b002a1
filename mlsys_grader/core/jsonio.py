"""Strict, safe JSON: parse untrusted bytes and write canonical bytes.

A submission is read as plain JSON and nothing else: no pickle, no import, no
``eval``.  The reader bounds size and nesting depth *before* parsing (Python's
parser recurses, so a 10,000-deep document would otherwise raise RecursionError),
rejects NaN/Infinity and duplicate keys, and names what it expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from ..errors import BundleFormatError, BundleTooLargeError

MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _check_depth(text: str, max_depth: int) -> None:
    """Raise when brackets outside strings nest deeper than ``max_depth``.

    Strings are cut out by a regex first so the Python-level loop only walks the
    brackets, which keeps this linear and cheap for ordinary bundles.
    """
    if "\\" in text:
        outside = _STRING.sub("", text)
    else:  # no escapes: every other quote-delimited piece is outside a string
        outside = "".join(text.split('"')[::2])
    brackets = _NOT_BRACKET.sub("", outside)
    depth = 0
    for char in brackets:
        if char in "[{":
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
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise BundleFormatError(f"JSON object repeats the key {key!r}; keys must be unique")
        result[key] = value
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BundleFormatError(f"JSON number {text[:40]} overflows a finite float")
    return value


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
    _check_depth(text, max_depth)
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_no_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise BundleFormatError(
            f"submission is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, BundleFormatError):
            raise
        raise BundleFormatError(f"submission is not valid JSON ({exc})") from exc


def canonical_dumps(value: Any) -> str:
    """Serialise ``value`` to one canonical JSON text (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(value: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_dumps(value).encode("utf-8")).hexdigest()
