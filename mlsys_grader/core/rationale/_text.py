"""Text as the reader reads it: Unicode forms, case, spelling and punctuation normalised (:func:`normalise`), words counted as written, LaTeX spans read as what they typeset (:func:`plain_text`).

Part of :mod:`mlsys_grader.core.rationale` (the rules in words are in its docstring)."""

from __future__ import annotations

import re
import unicodedata

from ..text import readable

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
# words typed in a hurry, as the reader reads them ("timings r illustrative", "dont", "thats")
_BRITISH.update({"r": "are", "u": "you", "ur": "your", "dont": "do not", "doesnt": "does not", "isnt": "is not",
                 "arent": "are not", "wasnt": "was not", "wouldnt": "would not", "shouldnt": "should not",
                 "couldnt": "could not", "didnt": "did not", "thats": "that is", "im": "i am", "ive": "i have",
                 "theres": "there is", "whats": "what is"})
_CONTRACTION = re.compile(r"\b(?:can'?t|won'?t|i'm)\b|n't\b|'(?:d|ll|re|ve|s)\b")
_CONTRACTED = {"can't": "can not", "cant": "can not", "won't": "will not", "wont": "will not", "i'm": "i am",
               "n't": " not", "'d": " would", "'ll": " will", "'re": " are", "'ve": " have", "'s": ""}
_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|vs|etc|approx|cf|incl|resp)\.")
_BULLET_BREAK = re.compile(r"\n[ \t]*(?:[-*•·‣▪◦]|\d{1,2}[.)])[ \t]+|\n[ \t]*\n|\n[ \t]*(?=[*_>]{0,3}[A-Z])")
# Punctuation: sentence ends become " . ", ", : ( )" stay tokens of their own, a dash between
# words is a pause, joiners inside words become spaces and the rest (quotes, markup) goes.
_PUNCTUATION = {
    **{mark: " . " for mark in "!?;"}, **{mark: f" {mark} " for mark in ",:()"}, "→": " → ", "⇒": " → ", "[": " ( ", "]": " ) ", "{": " ( ",
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


_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]*([^\n#]{1,60}?)[ \t]*#*[ \t]*\n(?:[ \t]*\n)*(?=[ \t]*\S)", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.+)\|[ \t]*$", re.MULTILINE)
_RULE_CELL = re.compile(r"^[ \t:]*-{2,}[ \t:]*$")


def _row(match: re.Match[str]) -> str:
    cells = [cell.strip() for cell in match.group(1).split("|")]
    if all(not cell or _RULE_CELL.match(cell) for cell in cells):
        return ""  # the rule under a table's header
    cells = [cell for cell in cells if cell]
    return f"{cells[0]}: {', '.join(cells[1:])}." if len(cells) > 1 else f"{cells[0]}." if cells else ""


def field_lines(text: str) -> str:
    """Markdown that pairs a field with its answer read as "field: answer": a heading and the line under it
    ("## Recommendation" / "Compiled with fusion." → "Recommendation: Compiled with fusion."), and each table row
    ("| recommendation | compiled with fusion |" → "recommendation: compiled with fusion."), and a field written as
    code ("`choice = primary`" → "choice: primary"), and a question and its answer as the answer's field ("Q: What do I
    reject? A: eager" → "Rejected: eager")."""
    if "#" in text:
        text = _HEADING.sub(lambda m: m.group(1).rstrip(":") + ": ", text)
    if "|" in text:
        text = _TABLE_ROW.sub(_row, text)
    if " > " in text:  # "faster arithmetic > prefetch": one option put over another (never an arrow "->")
        text = re.sub(r"(?<=[A-Za-z)`]) > (?=[A-Za-z`(])", " over ", text)
    if "w/" in text:
        text = re.sub(r"(?<![\w/])w/(?=\s)", "with", text)
    if any(mark in text for mark in _MARKS):
        text = _MARK.sub(_verdict, text)
    text = _NUMBERED_LABEL.sub(r"\1: ", text)
    text = _DASH_LABEL.sub(r"\1: ", text)
    if "Q:" in text or "q:" in text:
        text = _QA.sub(_answer, text)
    if "=" in text:
        text = re.sub(r"(?<=[A-Za-z)]) = (?=(?:nope|no|out|rejected|nah|yes|chosen)\b)", ": ", text)
        text = _CODE_FIELD.sub(lambda m: f"{m.group(1) or m.group(3)}: {m.group(2) or m.group(4)}", text)
    return text


_NUMBERED_LABEL = re.compile(r"(?im)^[ \t]*(?:\d+[.)][ \t]*)?(recommendation|recommended option|rejected alternative|rejected"
                             r"|rejection|choice|decision|limitation|remaining limitation|risk|trigger)\.[ \t]+(?=\S)")
"""A numbered section whose label ends with a full stop ("2. Rejected alternative. Compiled execution …"): "label: …"."""
_DASH_LABEL = re.compile(r"(?im)^[ \t]*(recommendation|rejected|rejected alternative|decision|choice|limitation|risk|trigger"
                         r"|residual risk)[ \t]+[-\u2013\u2014][ \t]+(?=\S)")
"""A field written with a dash ("Recommendation - compiled with fusion."): "field: …"."""
_MARKS = {"\u2714": " (ticked)", "\u2713": " (ticked)", "\u2611": " (ticked)", "\u2705": " (ticked)",
          "\u2718": " (struck)", "\u2717": " (struck)", "\u274c": " (struck)", "\u2612": " (struck)"}
"""A tick or a cross beside an option ("primary ✔", "alternative ✘"): a verdict in words that names the option, but,
since a tick may check a budget or a property ("native ✓"), never contradicts."""
_MARK = re.compile("[" + "".join(_MARKS) + "]")
_TICKED_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?[ \t]*(?:[A-Za-zµμ%/]+)?[ \t]*\)?[ \t]*$")


def _verdict(match: re.Match[str]) -> str:
    """A mark's verdict, or nothing where it ticks a number off against a budget ("36.9 mJ ✓", "0.0051 s ≤ 0.010 s ✓")."""
    ticks_number = _TICKED_NUMBER.search(match.string, 0, match.start()) is not None
    return " " if ticks_number else _MARKS[match.group()]
_QA = re.compile(r"(?im)^[ \t]*(?:q|question)[ \t]*[:.][ \t]*(?P<q>[^\n?]{1,120}\?)[ \t]*(?:\n[ \t]*)?(?:a|answer)[ \t]*[:.][ \t]*")
_REJECTING_QUESTION = re.compile(r"(?i)\b(?:reject\w*|rule out|ruled out|not (?:choose|pick|take|use|go with)|why not|drop\w*"
                                 r"|discard\w*|lose|loser|turn down)\b")
_CHOOSING_QUESTION = re.compile(r"(?i)\b(?:recommend\w*|which|choose|choice|pick|decision|decide|go with|select|winner"
                                r"|where should|what should)\b")


def _answer(match: re.Match[str]) -> str:
    """A question and answer read as "field: answer": "Q: What do I reject? A: eager" → "… Rejected: eager"."""
    question = match.group("q")
    label = "Rejected: " if _REJECTING_QUESTION.search(question) else "Recommendation: " if _CHOOSING_QUESTION.search(
        question) else ""
    return f"{question} {label}"


_CODE_FIELD = re.compile(r"`([A-Za-z_][\w ]{0,40}?)\s*=\s*['\"]?([^`'\"\n]{1,80}?)['\"]?`"
                         r"|\b([A-Za-z_]\w{2,40})\s*=\s*`([^`\n]{1,80})`")
"""A field written as code ("`recommendation = none`", "`rejected = 'alternative'`"), read as "field: answer"."""


# The commonest words of English and of the languages a class writes in besides it; a word shared with English
# ("a", "in", "die", "also") is left out of the others.
_ENGLISH = frozenset((
    "the", "and", "of", "to", "is", "are", "was", "were", "be", "for", "with", "that", "this", "it", "not", "but",
    "because", "so", "we", "i", "than", "which", "if", "would", "should", "at", "on", "by", "from", "as", "or",
    "has", "have", "when", "then", "more", "less", "our", "its",
))
# Spanish, French, German, Italian, Portuguese and Dutch.
_OTHER = frozenset((
    "el", "la", "los", "las", "de", "del", "que", "y", "en", "es", "son", "por", "para", "con", "una", "un", "lo",
    "se", "su", "al", "como", "pero", "más", "muy", "porque", "está", "le", "les", "des", "du", "et", "est", "une",
    "pour", "avec", "dans", "qui", "pas", "sur", "mais", "plus", "ce", "cette", "sont", "nous", "je", "der", "das",
    "und", "ist", "nicht", "mit", "für", "ein", "eine", "den", "dem", "zu", "auf", "sich", "wir", "ich", "aber",
    "oder", "wird", "sind", "il", "di", "che", "non", "per", "sono", "della", "questo", "anche", "perché", "o", "os",
    "da", "do", "não", "com", "uma", "mas", "são", "em", "het", "een", "niet", "voor", "zijn", "maar", "ook", "wij",
)) - _ENGLISH
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_LATIN = re.compile(r"[A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F]")  # Latin letters (not × or ÷)
_WORDS = re.compile(r"[^\W\d_]+", re.UNICODE)


def not_english(text: str) -> bool:
    """True when ``text`` is plainly written in another language: most of its letters are not Latin (Chinese,
    Cyrillic, Arabic…), or it holds at least five of the commonest words of Spanish, French, German, Italian,
    Portuguese or Dutch and more of them than of English's.  Numbers, units and option names count for neither."""
    if not text.isascii():  # ASCII letters are all Latin: only other text can be mostly another script
        letters = len(_LETTER.findall(text))
        if letters >= 20 and len(_LATIN.findall(text)) < letters / 2:
            return True
    english, other = _common_words(text)
    return other >= 5 and other > english


def partly_english(text: str) -> bool:
    """True when ``text`` mixes English with another language and holds enough English to read ("Mi recomendación:
    compiled with fusion … so eager execution es la opción que rechazo"): at least :data:`MIXED_ENGLISH` of the
    commonest English words and at least a quarter as many as of the other language's."""
    english, other = _common_words(text)
    return english >= MIXED_ENGLISH and 4 * english >= other


MIXED_ENGLISH = 5


def _common_words(text: str) -> tuple[int, int]:
    """(commonest English words, commonest words of the other languages) in ``text``."""
    words = _WORDS.findall(text.lower())
    return sum(word in _ENGLISH for word in words), sum(word in _OTHER for word in words)


def word_count(text: str) -> int:
    """Words as written (numbers count; punctuation does not), unless fewer than half of them hold a letter: a list of
    numbers with a few words around it ("16, 50, 1934.64, … see the evidence above") counts only its words."""
    words = _WORD.findall(text)
    lettered = sum(1 for word in words if _LETTER.search(word))
    return len(words) if 2 * lettered >= len(words) else lettered


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
