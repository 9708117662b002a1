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
   options stands for the one of them the text does not take the other way by name (it
   rejects the one not recommended elsewhere), or else for none.  A stance reached through a
   pronoun never contradicts.
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

What the reading used
---------------------
The reading also says where in the rationale as written it found what it used (:class:`RationaleSpan`: the cited
quantities with the recorded or derived value each matches, the stances, contradictions, the limitation and the
trigger), so the review page highlights the grade's own reading and never reads the text again; the report keeps
them (``GradeReport.rationale_spans``, not serialised) and the gradebook stores them with the result.

How sure the reader is
----------------------
:func:`read_rationale` reads the text once per grade and returns the findings and a
:class:`Verdict` per item, ``certain`` or ``uncertain`` with a reason for staff.  Uncertain:
a quantity that matched only after rounding to its last significant digit or only with an
open decimal comma read as a point; an option recommended or rejected only with a hedge, or
named with no stance cue found (the item is lost); a limitation or
trigger named only in a keyword list (three or more of its list, none marked as the main one),
or a trigger named without a condition.  A limitation or trigger stated beside one other option
of its list is certain: the rubric asks that the chosen one be stated.  The points follow the verdict either
way, the student's messages are the same, and :func:`with_verdicts` puts the verdicts into
the synthesis item scores (``ItemScore.certainty`` / ``certainty_reason``), where
``GradeReport.uncertain_items`` lists the uncertain ones for staff review.

Speed
-----
Patterns are compiled once per lab and track (:func:`reader_for`) and tried only at
the tokens a match can start with (:func:`start_words`, read from each pattern by our own parser of the
syntax the patterns are written in; ``tests/test_start_words.py`` checks they are complete); the derived evidence of a replayed part is kept by
the identity of its memoised arms (:func:`part_evidence`).  Both are kept in the
:class:`~.memos.Memos` of the replay service that grades, never in a lab or a module.
Units are converted from the checked-in scales (:func:`unit_scales`), pint only for a
unit they lack.
"""

from __future__ import annotations

from ..report import RationaleSpan
from ..values import ChoiceTerms, RecordedArms  # the reader's values, named here as before
from ._check import (
    CERTAIN,
    MESSAGES,
    UNCERTAIN,
    Reading,
    Verdict,
    check_rationale,
    rationale_reading,
    rationale_verdicts,
    read_rationale,
    with_verdicts,
)
from ._evidence import (
    RecordedQuantity,
    agreement,
    compared,
    magnitude_in,
    part_evidence,
    recorded_quantities,
    share,
    usable,
)
from ._quantities import (
    CHANGE,
    CHANGE_TOLERANCE,
    COMMA_AMBIGUOUS,
    DERIVED,
    DERIVED_TOLERANCE,
    FRACTION,
    MAX_CITED,
    RATIO,
    ROUNDING_CAP,
    SIGNIFICANT_ROUNDING_CAP,
    UNIT_SCALES_FILE,
    CitedQuantity,
    cited_quantities,
    pint_unit_scale,
    trivial_reason,
    unit_lookups,
    unit_scales,
)
from ._spans import MAX_SPANS, locate, reading_spans
from ._stances import (
    CHANGE_WORDS,
    CLAUSE_BREAKS,
    CUES,
    FILLER,
    HEDGE,
    HYPOTHETICAL,
    LIST_SIZE,
    LISTED,
    MAIN_MARKERS,
    MAX_NAMED_TRIES,
    MULTI,
    NAMED,
    NEGATORS,
    NO_CONDITION,
    PRONOUN,
    QUALIFIERS,
    REC,
    REJ,
    TRIGGER_CUE,
    UNMEASURED_ON,
    Cue,
    Reader,
    Stance,
    Starts,
    device_names,
    read_stances,
    reader_for,
    ready_reader,
)
from ._starts import start_words
from ._text import (
    normalise,
    plain_text,
    word_count,
)

__all__ = [
    "CERTAIN",
    "CHANGE",
    "CHANGE_TOLERANCE",
    "CHANGE_WORDS",
    "CLAUSE_BREAKS",
    "COMMA_AMBIGUOUS",
    "CUES",
    "ChoiceTerms",
    "CitedQuantity",
    "Cue",
    "DERIVED",
    "DERIVED_TOLERANCE",
    "FILLER",
    "FRACTION",
    "HEDGE",
    "HYPOTHETICAL",
    "LISTED",
    "LIST_SIZE",
    "MAX_SPANS",
    "MAIN_MARKERS",
    "MAX_CITED",
    "MAX_NAMED_TRIES",
    "MESSAGES",
    "MULTI",
    "NAMED",
    "NEGATORS",
    "NO_CONDITION",
    "PRONOUN",
    "QUALIFIERS",
    "RATIO",
    "REC",
    "REJ",
    "ROUNDING_CAP",
    "Reader",
    "RationaleSpan",
    "Reading",
    "RecordedArms",
    "RecordedQuantity",
    "SIGNIFICANT_ROUNDING_CAP",
    "Stance",
    "Starts",
    "TRIGGER_CUE",
    "UNCERTAIN",
    "UNIT_SCALES_FILE",
    "UNMEASURED_ON",
    "Verdict",
    "agreement",
    "check_rationale",
    "cited_quantities",
    "compared",
    "device_names",
    "locate",
    "magnitude_in",
    "normalise",
    "part_evidence",
    "pint_unit_scale",
    "plain_text",
    "rationale_reading",
    "rationale_verdicts",
    "reading_spans",
    "read_rationale",
    "read_stances",
    "reader_for",
    "ready_reader",
    "recorded_quantities",
    "share",
    "start_words",
    "trivial_reason",
    "unit_lookups",
    "unit_scales",
    "usable",
    "with_verdicts",
    "word_count",
]
