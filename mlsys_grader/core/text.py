"""The one text normalisation applied before anything reads what a student wrote.

The rationale reader, the generated-text detector and the collusion shingles all read
:func:`visible` of the text, so they agree on what it says, and characters that render as
nothing cannot make the same words look different to one of them:

* **Removed** — every format character (Unicode category Cf: zero-width space and joiners,
  word joiner, soft hyphen, byte-order mark, bidirectional controls, tag characters …),
  every other default-ignorable code point (combining grapheme joiner U+034F, Hangul
  fillers U+115F/U+1160/U+3164/U+FFA0, Khmer inherent vowels, Mongolian free variation
  selectors and vowel separator, variation selectors, the reserved ignorable blocks) and
  the control characters that are not whitespace.
* **Folded to a plain space** — confusable spaces (no-break, narrow no-break, figure,
  thin, hair, ideographic, en/em spaces, Ogham space mark, the Braille blank) and the
  unit separator; **to a newline** — line separator U+2028, vertical tab, form feed,
  next line U+0085, carriage returns (``\\r\\n`` is one newline) and the information
  separators Python already splits lines at; the paragraph separator U+2029 becomes a
  blank line (a new paragraph, as the rationale reader reads one).
* **Compatibility forms folded** (NFKC: full-width letters and digits, ligatures,
  mathematical alphanumerics, squared units such as "㎳") — except superscripts and
  subscripts of digits and signs and the vulgar fractions, which keep their meaning
  (and the micro sign, which the reader reads either way):
  "10⁻⁷" stays an exponent for the quantity reader (NFKC would make it "10-7") and
  "10²" is not "102".  The minus sign "−" has no compatibility form and stays.  The
  rationale reader folds the rest itself when it matches names, as it always has.

Removing a character never joins what a reader sees as two words: the removed characters
are invisible, so the text as rendered already shows them joined.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Category Cf (Unicode 15.1) and the rest of Default_Ignorable_Code_Point, by range, plus
# the C0/C1 controls that are not whitespace.  A test checks this against the running
# Python's Unicode database, so a newer Cf character cannot slip past.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_SPACE = re.compile("[\x1f\u00a0\u1680\u2000-\u200a\u202f\u205f\u2800\u3000]")
_LINE_BREAK = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028]")
_PARAGRAPH = "\u2029"
# What a plain ASCII text must not hold to skip the work (controls other than tab and newline).
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# Compatibility forms whose folding would change a number: super/subscript digits, signs,
# parentheses and "=", and the vulgar fractions ("½" is not "1⁄2" to the quantity reader).
_NUMERIC_TAGS = ("<super>", "<sub>")
_NUMERIC_FOLDS = frozenset("0123456789+-−=()")
# The micro sign stays as typed: the quantity reader reads "µs" and "μs" alike, and a message that
# quotes a student's "0.42 µs" quotes it as written.
_MICRO = "\u00b5"


@dataclass(frozen=True)
class Visible:
    """A text as every reader reads it, and how many invisible code points were removed from it."""

    text: str
    removed: int = 0

    @property
    def had_invisible(self) -> bool:
        """True when the text as typed held characters that render as nothing."""
        return self.removed > 0


@lru_cache(maxsize=4096)
def _keeps_meaning(char: str) -> bool:
    """True for a compatibility character that NFKC would turn into another number."""
    decomposition = unicodedata.decomposition(char)
    if char == _MICRO or decomposition.startswith("<fraction>"):
        return True
    return decomposition.startswith(_NUMERIC_TAGS) and unicodedata.normalize("NFKC", char) in _NUMERIC_FOLDS


def _compatibility_folded(text: str) -> str:
    """NFKC, except for the characters :func:`_keeps_meaning` keeps as written."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    pieces: list[str] = []
    start = 0
    for index, char in enumerate(text):
        if not char.isascii() and _keeps_meaning(char):
            pieces += [unicodedata.normalize("NFKC", text[start:index]), char]
            start = index + 1
    pieces.append(unicodedata.normalize("NFKC", text[start:]))
    return "".join(pieces)


CACHED_CHARS = 20_000
"""Texts up to this length are kept (every reader asks for the same rationale); a longer one, a hostile wall
of text, is folded afresh each time rather than held by the cache (2,048 such texts would be gigabytes)."""


def visible(text: str) -> Visible:
    """``text`` with invisible characters removed, confusable spaces folded and compatibility
    forms folded (see the module docstring); ``removed`` counts the invisible code points."""
    return _kept_visible(text) if len(text) <= CACHED_CHARS else _visible(text)


def _visible(text: str) -> Visible:
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return Visible(text)  # the common case: nothing to do
    cleaned, removed = _INVISIBLE.subn("", text)
    cleaned = _LINE_BREAK.sub("\n", cleaned).replace(_PARAGRAPH, "\n\n")
    if not cleaned.isascii():
        cleaned = _compatibility_folded(cleaned)
    return Visible(_SPACE.sub(" ", cleaned), removed)


_kept_visible = lru_cache(maxsize=2048)(_visible)


def readable(text: str) -> str:
    """:func:`visible` text alone (for readers that do not report what was removed)."""
    return visible(text).text
