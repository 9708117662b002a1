"""The words a pattern's match can start with (:func:`start_words`), read by a small parser of the pattern syntax the reader's patterns are written in.

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring).

The syntax read: literal characters and escapes (``\\.``, ``\\ ``, ``\\(``…), groups (``(…)``, ``(?:…)``,
``(?P<name>…)``), alternation, the quantifiers ``? * + {m} {m,} {m,n}`` (greedy or lazy), character classes
(``[…]``, ``.``, ``\\w \\d \\s \\S \\W \\D``), and zero-width items (lookarounds, ``^ $ \\b \\B \\A \\Z``), which
a start word skips.  Anything else (a backreference, an inline flag, a conditional) is not followed: the pattern
is then tried everywhere.  No standard-library internals are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

Starts = tuple[frozenset[str], tuple[str, ...]] | None
"""The words a match can start with: (whole words, prefixes of longer words), or None when that cannot be told."""

_CLASS_ESCAPES = frozenset("wWdDsS")
_ZERO_ESCAPES = frozenset("bBAZ")
_MAX_STEPS = 20_000
_UNBOUNDED = -1


class _Unknown(Exception):
    """The pattern may start in a way the start words do not follow."""


@dataclass(frozen=True)
class _Literal:
    char: str


@dataclass(frozen=True)
class _Class:
    """Any one of several characters (a class, ``.`` or a class escape)."""


@dataclass(frozen=True)
class _ZeroWidth:
    """A lookaround or an anchor: it matches no character."""


@dataclass(frozen=True)
class _Group:
    alternatives: tuple[tuple[_Item, ...], ...]


@dataclass(frozen=True)
class _Repeat:
    low: int
    high: int  # _UNBOUNDED for no upper bound
    item: _Item


_Item = _Literal | _Class | _ZeroWidth | _Group | _Repeat


class _Parser:
    """A recursive-descent reading of one pattern into :data:`_Item` sequences."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.at = 0

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.source[index] if index < len(self.source) else ""

    def alternatives(self) -> tuple[tuple[_Item, ...], ...]:
        found = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            found.append(self.sequence())
        return tuple(found)

    def sequence(self) -> tuple[_Item, ...]:
        items: list[_Item] = []
        while self.peek() not in ("", "|", ")"):
            item = self.atom()
            items.append(self.quantified(item))
        return tuple(items)

    def atom(self) -> _Item:
        char = self.peek()
        self.at += 1
        if char == "\\":
            escaped = self.peek()
            self.at += 1
            if not escaped or escaped.isdigit():
                raise _Unknown  # a backreference, or a pattern ending in a backslash
            if escaped in _CLASS_ESCAPES:
                return _Class()
            if escaped in _ZERO_ESCAPES:
                return _ZeroWidth()
            if escaped.isalpha():
                raise _Unknown  # \n, \t, \x.. and the like: not written in the reader's patterns
            return _Literal(escaped)
        if char == "[":
            self.skip_class()
            return _Class()
        if char == ".":
            return _Class()
        if char in "^$":
            return _ZeroWidth()
        if char == "(":
            return self.group()
        if char in "*+?{":
            raise _Unknown  # a quantifier with nothing to repeat
        return _Literal(char)

    def skip_class(self) -> None:
        if self.peek() == "^":
            self.at += 1
        if self.peek() == "]":
            self.at += 1
        while self.peek() not in ("", "]"):
            self.at += 2 if self.peek() == "\\" else 1
        if not self.peek():
            raise _Unknown
        self.at += 1

    def group(self) -> _Item:
        zero_width = False
        if self.peek() == "?":
            kind = self.peek(1)
            if kind == ":":
                self.at += 2
            elif kind in "=!":
                self.at += 2
                zero_width = True
            elif kind == "<" and self.peek(2) in "=!":
                self.at += 3
                zero_width = True
            elif kind == "P" and self.peek(2) == "<":
                end = self.source.find(">", self.at)
                if end < 0:
                    raise _Unknown
                self.at = end + 1
            else:
                raise _Unknown  # inline flags, conditionals, comments
        alternatives = self.alternatives()
        if self.peek() != ")":
            raise _Unknown
        self.at += 1
        return _ZeroWidth() if zero_width else _Group(alternatives)

    def quantified(self, item: _Item) -> _Item:
        char = self.peek()
        if char in ("?", "*", "+"):
            self.at += 1
            low, high = {"?": (0, 1), "*": (0, _UNBOUNDED), "+": (1, _UNBOUNDED)}[char]
        elif char == "{" and (bounds := self.bounds()) is not None:
            low, high = bounds
        else:
            return item
        if self.peek() in ("?", "+"):
            self.at += 1  # lazy or possessive: the same words can start a match
        if self.peek() in ("?", "*", "+"):
            raise _Unknown
        return _Repeat(low, high, item)

    def bounds(self) -> tuple[int, int] | None:
        end = self.source.find("}", self.at)
        if end < 0:
            return None
        body = self.source[self.at + 1:end]
        low, comma, high = body.partition(",")
        if not (low.isdigit() or (comma and not low)) or (high and not high.isdigit()):
            return None  # a literal brace, as Python reads it
        self.at = end + 1
        return int(low or 0), (int(high) if high else _UNBOUNDED) if comma else int(low)


def _walk(items: Sequence[_Item]) -> Starts:
    exact: set[str] = set()
    prefixes: set[str] = set()
    steps = 0

    def walk(rest: tuple[_Item, ...], prefix: str) -> None:
        nonlocal steps
        steps += 1
        if steps > _MAX_STEPS:
            raise _Unknown
        if not rest:
            if not prefix:
                raise _Unknown  # the pattern can match the empty string
            exact.add(prefix)
            return
        item, tail = rest[0], rest[1:]
        if isinstance(item, _Literal):
            if item.char.isalnum():
                walk(tail, prefix + item.char)
            elif prefix:
                exact.add(prefix)  # the word ends here
            else:
                raise _Unknown
        elif isinstance(item, _ZeroWidth):
            walk(tail, prefix)
        elif isinstance(item, _Group):
            for alternative in item.alternatives:
                walk(alternative + tail, prefix)
        elif isinstance(item, _Repeat):
            if item.low == 0:
                walk(tail, prefix)
            if item.high != 0:
                again: tuple[_Item, ...] = ()
                if item.high != 1:
                    left = item.high if item.high == _UNBOUNDED else item.high - 1
                    again = (_Repeat(max(item.low - 1, 0), left, item.item),)
                walk((item.item, *again, *tail), prefix)
        elif prefix:  # a character class continues the word: any longer word with this prefix
            prefixes.add(prefix)
        else:
            raise _Unknown

    try:
        walk(tuple(items), "")
    except (_Unknown, RecursionError):
        return None
    return frozenset(exact), tuple(sorted(prefixes))


@lru_cache(maxsize=256)
def start_words(source: str) -> Starts:
    """The words a match of the pattern ``source`` can start with, on text where words are separated by spaces:
    (whole words, prefixes of longer words), or None when that cannot be told (then the whole text is scanned).

    Kept per pattern text: the readers of a lab's tracks share most of their patterns."""
    try:
        parser = _Parser(source)
        alternatives = parser.alternatives()
        if parser.at != len(source):
            return None  # an unbalanced ")"
    except _Unknown:
        return None
    return _walk((_Group(alternatives),))
