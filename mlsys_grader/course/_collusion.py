"""Collusion flags: copied capture times, the same work part by part, or near-identical rationales, across submissions.

Two submissions of the same lab are paired when either

* **timestamps** — they share at least :data:`MIN_SHARED_TIMES` identical instants in
  the same parts.  An instant is any time a part's evidence record keeps (captured,
  prediction locked, result shown) or its run-log entry keeps (prediction locked, first
  shown, first run), compared to the microsecond; the pair lists the parts that share
  them.  The notebook stamps these times with the student's own clock, so two people
  working independently never produce the same one — while a copied bundle keeps them,
  even after the copier redoes a part, rewrites the rationale, or reopens the file in the
  notebook and recaptures (a part's first-shown time survives recapture).  Only times
  with a sub-second component count: a writer that keeps whole seconds (or a generator
  that uses round times) makes coincidences likely across a large course, and a
  deliberate edit can remove the microseconds as easily as it can shift a time, so
  such times prove nothing either way.  Two instants, not one, because some clocks tick
  coarsely (about 16 ms on older Windows Python), which makes a single match across
  thousands of students possible; copying even one part's record shares two or three.
* **clock** — the same work, part by part, whatever each part's clock says.  A part agrees
  with the same part of another submission when both are on the same track with the same
  settings and predictions and keep the same labelled times (prediction locked, result
  shown, first run, capture; :func:`work_path`), each at the same place relative to the
  part's others within :data:`PART_TOLERANCE_S` once the part's own clock offset is
  removed.  Only intervals a person paced are evidence: consecutive events of a part more
  than :data:`MACHINE_PACE_S` apart.  Cells run back to back (Jupyter's "Run All", or a
  student who fills every cell first and runs them) leave a part's events within about a
  second of each other, at the pace of the machine, so every independent run of the
  notebook's defaults would agree with every other: two parts with no longer interval are
  never compared.  A pair needs :data:`MIN_CLOCK_PARTS` agreeing parts that hold
  :data:`MIN_PACED_INTERVALS` such intervals between them.  A copy keeps each part's
  intervals whatever it does to the clock — one offset, an offset per part, every time
  truncated to whole seconds or jittered by up to ±3 s — and is paired; a copy made by
  redoing the runs by hand, by editing the intervals of two parts (one of a four-part
  lab) by more than 6 s, or from a run the machine paced, evades.

  Why four parts: an interval a person paced (seconds to many minutes) matches an
  independent one within 6 s about one time in ten, so a part with two such intervals
  about once in two hundred pairs.  Among 3,000 students who keep every default on one
  track, each with their own clock (4.5 million pairs with identical evidence; intervals
  log-normal, median 40 s, σ 1; ``benchmarks/collusion.py``), a part of Lab 08 matched in
  2.7 % of pairs, two parts in 0.03 % and three in 7 pairs (1.6 in a million): three parts
  would pair one of every few hundred thousand such pairs, while four, at the same ratio
  again, leave about one chance pair in a hundred million.  Six intervals: a run the
  machine slows beyond 5 s adds at most one interval to its part (the capture follows at
  once), five in a five-part lab, never six; a person who runs a part within 5 s of
  locking still leaves the part's other interval.
* **rationale** — the Jaccard similarity of their sets of word
  :data:`SHINGLE_WORDS`-grams is at least :data:`RATIONALE_THRESHOLD`, both having at
  least :data:`MIN_RATIONALE_WORDS` words.

Identical evidence on its own (same inputs, results and predictions, different times) is
*not* a pair: students who keep the notebook's default settings produce exactly the same
records, and the evaluators are deterministic, so equal numbers show only equal choices.

Why 5-word shingles and 0.8: independently written rationales about the same lab share
few 5-word sequences (even the package's own templated reference rationales of Lab 07
stay at or below 0.55 across different settings), while a copy with one word changed in a
60-word rationale still scores about 0.83.  The generated reference rationales of Lab 11
are one template with a few numbers changed and can reach 0.84; real students do not
write from one template.

Pairs are joined into groups (connected components).  Candidates for the clock test are the
parts of equal context whose spans differ by at most the tolerance; candidates for the rationale test
come from MinHash banding over 64 hashes (bands of 4 rows at the default threshold; fewer
rows for a lower one, so a pair at the threshold is a candidate with probability above
0.999), so a course of 10,000 is not compared pair by pair; every reported pair is
verified with the exact Jaccard.  Every hash is derived from :mod:`hashlib`, so groups are
the same in every run and under every ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..core.models import PARTS
from ..core.text import readable
from ._row import ItemKey

SHINGLE_WORDS = 5
RATIONALE_THRESHOLD = 0.8
MIN_RATIONALE_WORDS = 20
MIN_SHARED_TIMES = 2
MACHINE_PACE_S = 5.0
"""Within a part, an interval between consecutive events this short or shorter was set by the machine (cells run back
to back: in 72 recorded top-to-bottom runs of the notebooks, ``tests/fixtures/top-to-bottom-notebook-runs.json``, the
longest was 0.86 s), so it proves nothing; a longer one was paced by a person."""
PART_TOLERANCE_S = 6.0
"""How far a part's times may sit from where the other's are, relative to the part's other times (the part's own clock
offset removed): the largest minus the smallest of the differences of its labelled times.  A copy with every time
jittered by up to ±3 s stays within 6 s."""
MIN_CLOCK_PARTS = 4
"""Parts that must agree for a ``clock`` pair (every part of a four-part lab)."""
MIN_PACED_INTERVALS = 6
"""Intervals a person paced that the agreeing parts must hold between them (:attr:`PartMatch.paced`)."""
_RECORD_TIMES = ("captured_at", "prediction_locked_at", "result_shown_at")
_RUN_TIMES = ("prediction_locked_at", "first_shown_at", "first_run_at")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_MACHINE_PACE_US = round(MACHINE_PACE_S * 1_000_000)
_TOLERANCE_US = round(PART_TOLERANCE_S * 1_000_000)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HASHES = 64
_MIN_RECALL = 0.999
_BIG_BUCKET = 64


# -- what a submission contributes ----------------------------------------------------

def part_times(bundle: Any) -> dict[str, list[str]]:
    """Per part, every time its evidence record and run-log entry keep (ISO 8601, sorted, no duplicates)."""
    times: dict[str, set[str]] = {}
    for source, names in ((getattr(bundle, "evidence", {}) or {}, _RECORD_TIMES), (getattr(bundle, "runs", {}) or {}, _RUN_TIMES)):
        for part, entry in source.items():
            for name in names:
                value = getattr(entry, name, None)
                if isinstance(value, datetime):
                    times.setdefault(part, set()).add(value.isoformat())
    return {part: sorted(values) for part, values in sorted(times.items())}


def work_path(bundle: Any) -> list[tuple[str, str]]:
    """What the ``clock`` test reads of the work, labelled and sorted by label: the track (``track``), each part's
    settings (``A.settings``: its final controls as JSON) and predictions (``A.record.prediction``, ``A.run.prediction``),
    and every time its evidence record and run-log entry keep (``A.record.captured_at``, ``A.run.first_run_at``, …: ISO
    8601)."""
    found: dict[str, str] = {}
    track = getattr(bundle, "track", None)
    if track:
        found["track"] = str(track)
    for part, values in (getattr(bundle, "controls", {}) or {}).items():
        found[f"{part}.settings"] = json.dumps(dict(values), sort_keys=True, separators=(",", ":"))
    for source, kind, names in ((getattr(bundle, "evidence", {}) or {}, "record", _RECORD_TIMES),
                                (getattr(bundle, "runs", {}) or {}, "run", _RUN_TIMES)):
        for part, entry in source.items():
            prediction = getattr(entry, "prediction", None)
            if prediction is not None:
                found[f"{part}.{kind}.prediction"] = str(prediction)
            for name in names:
                value = getattr(entry, name, None)
                if isinstance(value, datetime):
                    found[f"{part}.{kind}.{name}"] = value.isoformat()
    return sorted(found.items())


def instant(value: Any) -> str | None:
    """The canonical UTC form of a time that can show a copy, or None.

    None for anything that is not a time, and for times without a sub-second component
    (see the module docstring).  A time without a zone is taken as written.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime) or value.microsecond == 0:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.isoformat()


def words(text: str) -> list[str]:
    """Lower-case words and numbers (``0.42``, ``don't`` stay whole), read as every reader reads
    the text (:func:`~mlsys_grader.core.text.visible`: invisible characters cannot split a word)."""
    return _WORD.findall(readable(text).lower())


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-word sequences of ``text``."""
    return _shingle_set(words(text), size)


def _shingle_set(tokens: Sequence[str], size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def jaccard(left: frozenset, right: frozenset) -> float:
    """|A ∩ B| / |A ∪ B| (0 for two empty sets); |A ∪ B| is counted as |A| + |B| - |A ∩ B|, without building it."""
    shared = len(left & right)
    union = len(left) + len(right) - shared
    return shared / union if union else 0.0


def stable_hash64(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (BLAKE2b)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Work:
    """What collusion needs of one graded submission; ``key`` is the caller's row index."""

    key: int
    lab: str
    times: Mapping[str, Sequence[Any]]
    """Part → the times :func:`part_times` lists (ISO strings or datetimes)."""
    rationale: str
    who: str = ""
    """Identity; two inputs of the same person are never paired with each other."""
    path: Sequence[Sequence[str]] = ()
    """The work's track, settings, predictions and labelled times, :func:`work_path` (empty, or without the track, for
    a result stored before they were kept: such a submission is not compared by clock)."""


@dataclass(frozen=True)
class Pair:
    """Two submissions (``left`` < ``right``, caller's keys) and why they are paired."""

    left: int
    right: int
    basis: str
    """``timestamps``, ``clock`` or ``rationale``."""
    similarity: float
    """Rationale: the shingle Jaccard.  Timestamps: 1.0 (the times are identical).  Clock: 1 − the largest spread of an
    agreeing part's time differences over :data:`PART_TOLERANCE_S`."""
    parts: tuple[str, ...] = ()
    """Timestamps: the parts whose times are shared; clock: the parts that agree."""
    shared: int = 0
    """Timestamps: how many distinct instants are shared; clock: how many intervals a person paced the agreeing parts
    hold (:attr:`PartMatch.paced`)."""


@dataclass
class Group:
    """Submissions joined by pairs; ``group_id`` is ``G1``, ``G2``… in order of first member."""

    group_id: str
    lab: str
    members: list[int]
    pairs: list[Pair] = field(default_factory=list)

    @property
    def bases(self) -> list[str]:
        return sorted({pair.basis for pair in self.pairs})

    @property
    def parts(self) -> list[str]:
        """Every part whose times some pair of the group shares."""
        return sorted({part for pair in self.pairs for part in pair.parts})


# -- pairs ----------------------------------------------------------------------------

def _same_person(a: Work, b: Work) -> bool:
    return bool(a.who) and a.who == b.who


def _timestamp_pairs(subs: Sequence[Work]) -> list[Pair]:
    by_instant: dict[tuple[str, str, str], list[Work]] = {}
    for sub in subs:
        for part, values in sub.times.items():
            for moment in {m for m in map(instant, values) if m is not None}:
                by_instant.setdefault((sub.lab, part, moment), []).append(sub)
    shared: dict[tuple[int, int], list[str]] = {}
    for (_lab, part, _moment), members in by_instant.items():
        if len(members) < 2:
            continue
        members = sorted({s.key: s for s in members}.values(), key=lambda s: s.key)
        # Many submissions with one time: all copies of one bundle; linking each to the first still joins them.
        links = ([(members[0], other) for other in members[1:]] if len(members) > _BIG_BUCKET else
                 [(a, b) for x, a in enumerate(members) for b in members[x + 1:]])
        for a, b in links:
            if not _same_person(a, b):
                shared.setdefault((a.key, b.key), []).append(part)
    return [Pair(left, right, "timestamps", 1.0, tuple(sorted(set(parts), key=PARTS.index)), len(parts))
            for (left, right), parts in sorted(shared.items()) if len(parts) >= MIN_SHARED_TIMES]


@dataclass(frozen=True)
class _PartPath:
    """One part of one submission, as the clock test compares it."""

    sub: Work
    times: tuple[int, ...]
    """The part's times in microseconds, in the order of their labels."""
    span: int
    """Its last time minus its first."""
    paced: int
    """How many of its intervals (between consecutive times) are longer than :data:`MACHINE_PACE_S`."""


def _part_paths(sub: Work) -> list[tuple[tuple[str, ...], _PartPath]]:
    """(what a part must share with another's to be compared — lab, track, part, settings, predictions, the labels of
    its times —, its path) for each part of ``sub`` with times.  Nothing for a path without its track (stored before the
    track was kept) or with a time that does not read."""
    facts: dict[str, str] = {}
    events: dict[str, list[tuple[str, int]]] = {}
    read: dict[str, int] = {}  # a part's lock and shown times are each kept twice (record and run log): read once
    for label, text in sub.path:
        label, text = str(label), str(text)
        part, field_name = ItemKey.of(label)
        if not field_name.endswith("_at"):
            facts[label] = text
            continue
        if text not in read:
            try:
                read[text] = _microseconds(datetime.fromisoformat(text))
            except ValueError:
                return []
        events.setdefault(part, []).append((label, read[text]))
    track = facts.get("track")
    if track is None:
        return []
    found = []
    for part, stamped in sorted(events.items()):
        stamped.sort()
        times = tuple(t for _, t in stamped)
        ordered = sorted(times)
        paced = sum(1 for early, late in itertools.pairwise(ordered) if late - early > _MACHINE_PACE_US)
        context = (sub.lab, track, part, facts.get(f"{part}.settings", ""), facts.get(f"{part}.record.prediction", ""),
                   facts.get(f"{part}.run.prediction", ""), *(label for label, _ in stamped))
        found.append((context, _PartPath(sub, times, ordered[-1] - ordered[0], paced)))
    return found


def _microseconds(moment: datetime) -> int:
    """``moment`` (UTC when it names no zone) as whole microseconds since the epoch: exact, so a difference of 6 s is
    6,000,000, never 6.0000001."""
    since = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)) - _EPOCH
    return (since.days * 86_400 + since.seconds) * 1_000_000 + since.microseconds


@dataclass(frozen=True)
class PartMatch:
    """One part on which two submissions agree by clock (:func:`matching_parts`)."""

    part: str
    paced: int
    """Intervals a person paced in the part: the more of the two submissions' (a copy jittered by up to ±3 s can bring an
    interval of the original's under :data:`MACHINE_PACE_S`; two parts the machine paced are never matched)."""
    spread_us: int
    """The largest minus the smallest difference of the part's labelled times, in microseconds (at most
    :data:`PART_TOLERANCE_S`)."""


def matching_parts(subs: Sequence[Work]) -> dict[tuple[int, int], list[PartMatch]]:
    """(left key, right key) → the parts on which the two agree: same lab, track, part, settings, predictions and
    labelled times, every time at the same place relative to the part's others within :data:`PART_TOLERANCE_S`, and
    an interval a person paced in at least one of the two.

    Only parts of equal context and nearly equal span are compared (sorted by span: a part's span differs from the
    other's by at most the spread), so a course is not compared pair by pair; and two parts the machine paced are never
    compared — a course's top-to-bottom runs of the defaults all agree with each other.  A part a person paced is
    compared with one the machine paced, because a copy with every time jittered by a few seconds can bring the
    original's short intervals under :data:`MACHINE_PACE_S`."""
    buckets: dict[tuple[str, ...], list[_PartPath]] = {}
    for sub in subs:
        for context, path in _part_paths(sub):
            buckets.setdefault(context, []).append(path)
    found: dict[tuple[int, int], list[PartMatch]] = {}
    for context, members in buckets.items():
        paced = sorted((m for m in members if m.paced), key=_by_span)
        if not paced:
            continue
        unpaced = sorted((m for m in members if not m.paced), key=_by_span)
        paced_spans, unpaced_spans = [m.span for m in paced], [m.span for m in unpaced]
        for x, a in enumerate(paced):
            later = paced[x + 1:bisect_right(paced_spans, a.span + _TOLERANCE_US)]
            near = unpaced[bisect_left(unpaced_spans, a.span - _TOLERANCE_US):bisect_right(unpaced_spans, a.span + _TOLERANCE_US)]
            for b in itertools.chain(later, near):
                differences = [p - q for p, q in zip(a.times, b.times, strict=True)]
                spread = max(differences) - min(differences)
                if spread <= _TOLERANCE_US and not _same_person(a.sub, b.sub):
                    key = (min(a.sub.key, b.sub.key), max(a.sub.key, b.sub.key))
                    found.setdefault(key, []).append(PartMatch(context[2], max(a.paced, b.paced), spread))
    return found


def _by_span(path: _PartPath) -> tuple[int, int]:
    return path.span, path.sub.key


def _clock_pairs(subs: Sequence[Work]) -> list[Pair]:
    """Pairs with at least :data:`MIN_CLOCK_PARTS` matching parts (:func:`matching_parts`) that hold at least
    :data:`MIN_PACED_INTERVALS` intervals a person paced between them."""
    pairs = []
    for (left, right), parts in sorted(matching_parts(subs).items()):
        paced = sum(match.paced for match in parts)
        if len(parts) >= MIN_CLOCK_PARTS and paced >= MIN_PACED_INTERVALS:
            worst = max(match.spread_us for match in parts)
            names = tuple(sorted((match.part for match in parts), key=_part_order))
            pairs.append(Pair(left, right, "clock", round(1 - worst / _TOLERANCE_US, 6), names, paced))
    return pairs


def _part_order(part: str) -> int:
    return PARTS.index(part) if part in PARTS else len(PARTS)


def _rows_per_band(threshold: float) -> int:
    """The most rows per band (of 8, 4, 2, 1) that still make a pair at ``threshold`` a candidate almost surely."""
    for rows in (8, 4, 2, 1):
        if 1 - (1 - threshold ** rows) ** (_HASHES // rows) >= _MIN_RECALL:
            return rows
    return 1


class _MinHasher:
    """64 MinHash values (numpy ``uint64``) per tokenised text, over its word shingles.

    Each word is hashed once with BLAKE2b; a shingle's hash combines its words' hashes
    (multiply-add, wrapping at 64 bits), so nothing depends on ``PYTHONHASHSEED``.
    """

    def __init__(self) -> None:
        import numpy as np  # numpy loads only when rationales are compared: keeps `import mlsys_grader` fast

        self.np = np
        self.masks = np.array([stable_hash64(f"minhash mask {i}") for i in range(_HASHES)], dtype=np.uint64)
        self.odd = np.array([stable_hash64(f"minhash multiplier {i}") | 1 for i in range(_HASHES)], dtype=np.uint64)
        self.step = np.uint64(stable_hash64("shingle step") | 1)
        self.cache: dict[str, int] = {}

    def signature(self, tokens: Sequence[str]) -> Any:
        np, cache = self.np, self.cache
        with np.errstate(over="ignore"):
            hashed = np.fromiter((cache[w] if w in cache else cache.setdefault(w, stable_hash64(w)) for w in tokens),
                                 dtype=np.uint64, count=len(tokens))
            count = len(tokens) - SHINGLE_WORDS + 1
            values = hashed[:count].copy()
            for offset in range(1, SHINGLE_WORDS):
                values = values * self.step + hashed[offset:offset + count]
            values = np.unique(values)
            return ((values[:, None] ^ self.masks[None, :]) * self.odd[None, :]).min(axis=0)


class RationaleIndex:
    """What the rationale test needs of each distinct rationale — its words, its shingles (as numbers) and its
    MinHash signature — computed once per text, as soon as the text is known.

    The gradebook adds each rationale as its grade comes back from a worker, while the others are still being
    graded, so :func:`find_groups` then only bands and verifies.  A shingle is numbered by the order it was
    first seen (exact: two shingles share a number only when they are the same words), so a Jaccard similarity
    of two numbered sets is the one of their word shingles, computed on small integers.
    """

    def __init__(self) -> None:
        self._read: dict[str, tuple[int, frozenset[int], Any]] = {}
        self._shingle_ids: dict[tuple[str, ...], int] = {}
        self._hasher: _MinHasher | None = None

    def add(self, text: str) -> tuple[int, frozenset[int], Any]:
        """(word count, numbered shingles, signature or None when the text is too short to be compared)."""
        found = self._read.get(text)
        if found is None:
            tokens = words(text)
            if len(tokens) < MIN_RATIONALE_WORDS:
                found = (len(tokens), frozenset(), None)
            else:
                if self._hasher is None:
                    self._hasher = _MinHasher()
                ids = self._shingle_ids
                numbered = frozenset(ids.setdefault(shingle, len(ids)) for shingle in _shingle_set(tokens))
                found = (len(tokens), numbered, self._hasher.signature(tokens))
            self._read[text] = found
        return found


def _eligible_rationales(subs: Sequence[Work], index: RationaleIndex) -> list[tuple[Work, frozenset[int], Any]]:
    """(work, numbered shingles, signature) of each submission whose rationale is long enough, in order; reads every
    rationale into ``index``."""
    read = [(s, index.add(s.rationale)) for s in subs]
    return [(s, numbered, signature) for s, (count, numbered, signature) in read if count >= MIN_RATIONALE_WORDS]


def _band_buckets(signatures: Sequence[Any], labs: Sequence[str], rows: int) -> dict[tuple[str, int, bytes], list[int]]:
    """(lab, band, the band's bytes) → the positions whose signatures hold that band, ``rows`` values per band."""
    width = rows * 8  # bytes of one band: ``rows`` uint64 values
    buckets: dict[tuple[str, int, bytes], list[int]] = {}
    for position, signature in enumerate(signatures):
        raw, lab = signature.tobytes(), labs[position]
        for band in range(_HASHES // rows):
            buckets.setdefault((lab, band, raw[band * width:(band + 1) * width]), []).append(position)
    return buckets


def _bucket_candidates(buckets: Mapping[Any, list[int]]) -> Iterator[tuple[int, int]]:
    """The positions to compare (i < j), bucket by bucket: every two members of a bucket, or the first with each other
    member of a bucket larger than :data:`_BIG_BUCKET` (many near-copies: the groups still join)."""
    for members in buckets.values():
        if len(members) < 2:
            continue
        if len(members) > _BIG_BUCKET:
            yield from ((members[0], other) for other in members[1:])
            continue
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                yield i, j


def _rationale_pairs(subs: Sequence[Work], threshold: float, index: RationaleIndex | None = None) -> list[Pair]:
    eligible = _eligible_rationales(subs, index or RationaleIndex())
    if len(eligible) < 2:
        return []
    works = [work for work, _, _ in eligible]
    sets = [numbered for _, numbered, _ in eligible]
    buckets = _band_buckets([signature for _, _, signature in eligible], [w.lab for w in works], _rows_per_band(threshold))
    pairs: list[Pair] = []
    seen: set[int] = set()
    for i, j in _bucket_candidates(buckets):
        code = i * len(works) + j
        if code in seen or works[i].lab != works[j].lab or _same_person(works[i], works[j]):
            continue
        seen.add(code)
        similarity = jaccard(sets[i], sets[j])
        if similarity >= threshold:
            left, right = works[i].key, works[j].key
            pairs.append(Pair(min(left, right), max(left, right), "rationale", round(similarity, 4)))
    return pairs


def find_groups(subs: Iterable[Work], *, threshold: float = RATIONALE_THRESHOLD,
                index: RationaleIndex | None = None) -> list[Group]:
    """Groups of submissions paired by shared capture times, the same work part by part, or near-identical rationales
    (``index``: the rationales already read, :class:`RationaleIndex`; any other is read here)."""
    subs = list(subs)
    pairs = _timestamp_pairs(subs) + _clock_pairs(subs) + _rationale_pairs(subs, threshold, index)
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for pair in pairs:
        parent[root(pair.left)] = root(pair.right)
    lab_of = {s.key: s.lab for s in subs}
    grouped: dict[int, list[int]] = {}
    for node in sorted(parent):
        grouped.setdefault(root(node), []).append(node)
    groups = sorted(grouped.values(), key=lambda members: members[0])
    result = [Group(f"G{n}", lab_of[members[0]], members) for n, members in enumerate(groups, 1)]
    where = {member: group for group in result for member in group.members}
    for pair in sorted(pairs, key=lambda p: (p.left, p.right, p.basis)):
        where[pair.left].pairs.append(pair)
    return result
