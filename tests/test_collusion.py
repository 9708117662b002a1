"""Collusion finds copies (shared capture times, the same work part by part, near-identical rationales), not coincidences."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import FIXTURES, LABS, TRACKS, reseal, solved

from mlsys_grader import get_lab, grade_bundle, solve
from mlsys_grader.core.models import PARTS, load_bundle
from mlsys_grader.course._collusion import (
    MIN_PACED_INTERVALS,
    MIN_SHARED_TIMES,
    PART_TOLERANCE_S,
    RATIONALE_THRESHOLD,
    Work,
    find_groups,
    instant,
    jaccard,
    part_times,
    shingles,
    work_path,
)
from mlsys_grader.course._gradebook import grade_paths
from mlsys_grader.course._options import BatchOptions

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "submissions"

TEXT = ("I recommend compiled execution with fusion because at 120 executions the compiled total of 8.5 ms beats "
        "eager at 11.2 ms, and I reject eager execution; the limitation is unmodeled operator interactions and I "
        "would re-evaluate when the operator set changes or the batch size grows beyond the memory budget of the target.")
OTHER = ("Eager wins on this edge device: compilation never repays itself with only ten runs and two recompilations, "
         "so the tax is not worth paying. Fusion would save 100 MB of traffic but the fallback path for the dynamic "
         "slice operator makes the compiled plan fragile, which is the limitation I keep in mind for the next release.")
# Seed 5's reference rationale for lab07 on edge, said again in other words.
REWORDED = ("Compiled with fusion is my recommendation, and eager execution is the option I reject. Over 90 executions and "
            "6 compilation(s) the compiled path totals 42.603 ms while eager needs 119.103 ms. Fusion cuts graph traffic; "
            "alternate recomputation keeps 754.975 MB stored rather than 1509.949 MB. The inserted operator stays native. "
            "Illustrative timing assumptions remain the limitation; a change in the execution count would make me re-evaluate.")
SESSION = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def stamped(data: dict, student: int) -> dict:
    """``data`` as one student's notebook writes it: that student's own lock, shown, run and capture
    times (to the microsecond, drawn from ``student``) in every record and run-log entry; resealed."""
    data = copy.deepcopy(data)
    rng = random.Random(f"student {student}")
    runs = {}
    for index, part in enumerate(get_lab(data["lab"]).part_ids()):
        record = data["evidence"][part]
        locked = SESSION + timedelta(minutes=12 * index, seconds=rng.randrange(600), microseconds=rng.randrange(1, 10**6))
        shown = locked + timedelta(seconds=rng.randrange(2, 30), microseconds=rng.randrange(1, 10**6))
        captured = shown + timedelta(seconds=rng.randrange(30, 300), microseconds=rng.randrange(1, 10**6))
        record.update(prediction_locked_at=_iso(locked), result_shown_at=_iso(shown), captured_at=_iso(captured))
        runs[part] = {"prediction": record["prediction"], "prediction_locked_at": _iso(locked), "first_shown_at": _iso(shown),
                      "first_run_at": _iso(shown), "first_run_controls": None}
    data["runs"] = runs
    return reseal(data)


def submission(key: int, data: dict, rationale: str | None = None, who: str | None = None) -> Work:
    bundle = load_bundle(json.dumps(data))
    text = bundle.synthesis.rationale if rationale is None else rationale
    return Work(key, bundle.lab, part_times(bundle), text, who or f"student{key}")


def only_group(subs: list[Work]):
    groups = find_groups(subs)
    assert len(groups) == 1, [(g.members, g.pairs) for g in groups]
    return groups[0]


# -- what is not a copy -----------------------------------------------------------------------

def test_identical_defaults_with_different_writing_are_not_paired():
    """Measured before: two students keeping the notebook defaults, with rationales of similarity 0.0,
    were grouped because their evidence was identical."""
    defaults = solved("lab07", "edge", None)
    first, second = stamped(defaults, 1), stamped(defaults, 2)
    assert first["evidence"]["A"]["inputs"] == second["evidence"]["A"]["inputs"]
    assert jaccard(shingles(TEXT), shingles(OTHER)) == 0.0
    assert find_groups([submission(0, first, TEXT), submission(1, second, OTHER)]) == []


def test_times_in_whole_seconds_do_not_pair_different_work():
    """Round times (a writer that drops the microseconds, or a hand-made bundle) coincide too easily to prove a copy."""
    first, second = stamped(solved("lab07", "edge", 1), 1), stamped(solved("lab07", "edge", 2), 2)
    for part in PARTS:
        for entry, names in (("evidence", ("captured_at", "prediction_locked_at", "result_shown_at")),
                             ("runs", ("prediction_locked_at", "first_shown_at", "first_run_at"))):
            for name in names:
                whole = datetime.fromisoformat(first[entry][part][name]).replace(microsecond=0).isoformat()
                first[entry][part][name] = second[entry][part][name] = whole
    assert instant(first["evidence"]["C"]["captured_at"]) is None
    assert find_groups([submission(0, reseal(first), TEXT), submission(1, reseal(second), OTHER)]) == []


def test_one_shared_instant_is_not_enough_but_two_are():
    first, second = stamped(solved("lab07", "edge", 3), 1), stamped(solved("lab07", "edge", 4), 2)
    second["evidence"]["B"]["captured_at"] = first["evidence"]["B"]["captured_at"]
    assert MIN_SHARED_TIMES == 2
    assert find_groups([submission(0, first, TEXT), submission(1, reseal(second), OTHER)]) == []
    second["evidence"]["D"]["result_shown_at"] = first["evidence"]["D"]["result_shown_at"]
    group = only_group([submission(0, first, TEXT), submission(1, reseal(second), OTHER)])
    assert [(p.basis, p.parts, p.shared) for p in group.pairs] == [("timestamps", ("B", "D"), 2)]


def test_the_same_time_in_different_parts_is_not_shared():
    first, second = stamped(solved("lab07", "edge", 3), 1), stamped(solved("lab07", "edge", 4), 2)
    second["evidence"]["B"]["captured_at"] = first["evidence"]["A"]["captured_at"]
    second["evidence"]["C"]["result_shown_at"] = first["evidence"]["D"]["result_shown_at"]
    assert find_groups([submission(0, first, TEXT), submission(1, reseal(second), OTHER)]) == []


# -- what is a copy -----------------------------------------------------------------------------

def test_copy_with_one_part_redone_and_rationale_reworded_is_paired_on_the_kept_parts():
    """Measured before: this copy graded 100 with no flag although four records kept the classmate's times."""
    original = stamped(solved("lab07", "edge", 5), 1)
    taker = copy.deepcopy(original)
    redone = stamped(solved("lab07", "edge", 6), 2)
    taker["evidence"]["C"], taker["controls"]["C"], taker["runs"]["C"] = redone["evidence"]["C"], redone["controls"]["C"], redone["runs"]["C"]
    taker["synthesis"]["rationale"] = REWORDED
    taker = reseal(taker)
    assert jaccard(shingles(original["synthesis"]["rationale"]), shingles(taker["synthesis"]["rationale"])) < 0.1
    report = grade_bundle(taker)
    assert not {"integrity", "stale", "missing"} & set(report.flags), "the copy grades as valid work on its own"
    group = only_group([submission(0, original), submission(1, taker)])
    [pair] = group.pairs
    assert (pair.left, pair.right, pair.basis, pair.parts) == (0, 1, "timestamps", ("A", "B", "D", "E"))
    assert pair.shared == 4 * 3, "captured, locked and shown in each kept part (the run log repeats two of them)"
    assert group.bases == ["timestamps"] and group.parts == ["A", "B", "D", "E"]


def test_copy_reopened_in_the_notebook_and_recaptured_keeps_its_first_shown_times():
    """Re-locking every prediction and recapturing changes lock and capture times; the result was
    already shown (to the classmate), and that time stays in the record and the run log."""
    original = stamped(solved("lab11", "mobile", 7), 1)
    fresh = stamped(original, 2)
    taker = copy.deepcopy(fresh)
    for part in PARTS:
        taker["evidence"][part]["result_shown_at"] = original["evidence"][part]["result_shown_at"]
        taker["runs"][part]["first_shown_at"] = original["runs"][part]["first_shown_at"]
    group = only_group([submission(0, original, TEXT), submission(1, reseal(taker), OTHER)])
    assert [(p.basis, p.parts, p.shared) for p in group.pairs] == [("timestamps", tuple(PARTS), 5)]


def test_times_only_in_the_run_log_are_the_same_signal():
    """Parts run but never captured still leave their times in the run log."""
    original, taker = stamped(solved("lab07", "cloud", 8), 1), stamped(solved("lab07", "cloud", 9), 2)
    for data in (original, taker):
        for part in ("D", "E"):
            del data["evidence"][part]
    taker["runs"]["E"] = copy.deepcopy(original["runs"]["E"])
    group = only_group([submission(0, reseal(original), TEXT), submission(1, reseal(taker), OTHER)])
    assert [(p.basis, p.parts) for p in group.pairs] == [("timestamps", ("E",))]


def test_the_same_instant_written_in_another_zone_is_the_same_time():
    original, taker = stamped(solved("lab07", "mobile", 10), 1), stamped(solved("lab07", "mobile", 11), 2)
    for name in ("captured_at", "prediction_locked_at"):
        moment = datetime.fromisoformat(original["evidence"]["A"][name])
        taker["evidence"]["A"][name] = moment.astimezone(timezone(timedelta(hours=-8))).isoformat()
    group = only_group([submission(0, original, TEXT), submission(1, reseal(taker), OTHER)])
    assert [(p.parts, p.shared) for p in group.pairs] == [(("A",), 2)]


def test_groups_join_pairs_and_keep_other_labs_and_the_same_student_apart():
    one = stamped(solved("lab07", "edge", 12), 1)
    subs = [
        submission(0, one, TEXT),
        submission(1, stamped(solved("lab07", "edge", 13), 2), TEXT.replace("beats", "exceeds")),   # rationale copy of 0
        submission(2, stamped(solved("lab07", "edge", 14), 3), OTHER),                                # independent
        submission(3, copy.deepcopy(one), "short"),                                                   # time copy of 0
        submission(4, stamped(solved("lab11", "edge", 15), 4), TEXT),                                 # another lab
        submission(5, copy.deepcopy(one), "", who="student0"),                                        # 0's own second input
    ]
    groups = find_groups(subs)
    assert [(g.group_id, g.members, g.bases) for g in groups] == [("G1", [0, 1, 3, 5], ["rationale", "timestamps"])]
    pairs = {(p.left, p.right, p.basis): p for p in groups[0].pairs}
    assert set(pairs) == {(0, 1, "rationale"), (0, 3, "timestamps"), (3, 5, "timestamps")}, "0 and 5 are one student"
    assert pairs[0, 1, "rationale"].similarity >= RATIONALE_THRESHOLD
    assert pairs[0, 3, "timestamps"].parts == tuple(PARTS)


def test_a_stored_result_without_times_still_pairs_on_rationale():
    subs = [Work(0, "lab07", {}, TEXT, "a"), Work(1, "lab07", {}, TEXT.replace("beats", "exceeds"), "b")]
    assert [p.basis for p in only_group(subs).pairs] == ["rationale"]


# -- rationales -----------------------------------------------------------------------------------

def test_shingles_and_jaccard():
    assert jaccard(shingles(TEXT), shingles(TEXT)) == 1.0
    assert jaccard(shingles(TEXT), shingles(OTHER)) < 0.05
    one_word = TEXT.replace("beats", "exceeds")
    assert RATIONALE_THRESHOLD <= jaccard(shingles(TEXT), shingles(one_word)) < 1.0



def test_invisible_characters_neither_hide_a_copy_nor_change_a_shingle():
    """A zero-width character inside every word (issue 15) renders as the same text, so it is the same text here."""
    hidden = " ".join(word[:2] + "\u200b" + word[2:] for word in TEXT.split(" "))
    spaced = TEXT.replace(" ", "\u00a0")
    assert shingles(hidden) == shingles(spaced) == shingles(TEXT)
    subs = [Work(0, "lab07", {}, TEXT, "a"), Work(1, "lab07", {}, hidden, "b")]
    assert [p.basis for p in only_group(subs).pairs] == ["rationale"]

def test_many_copies_form_one_group_without_pairwise_blowup():
    subs = [Work(i, "lab07", {}, TEXT + f" Student number {i}.", str(i)) for i in range(300)]
    groups = find_groups(subs)
    assert len(groups) == 1 and len(groups[0].members) == 300


_GROUPING_SCRIPT = """
import json, random
from mlsys_grader.course._collusion import Work, find_groups
rng = random.Random(7)
subs = []
for n in range(30):
    text = [f"w{n}x{k}" for k in range(60)]
    edited = list(text)
    for k in rng.sample(range(60), 4):
        edited[k] = f"edit{n}x{k}"
    subs += [Work(2 * n, "lab07", {}, " ".join(text), str(2 * n)),
             Work(2 * n + 1, "lab07", {}, " ".join(edited), str(2 * n + 1))]
groups = find_groups(subs, threshold=0.35)
print(json.dumps([[g.members, [[p.left, p.right, p.similarity] for p in g.pairs]] for g in groups]))
"""


@pytest.mark.slow
def test_groups_are_the_same_under_every_hash_seed():
    """Measured before: shingle signatures used ``hash()``, so these groups changed with PYTHONHASHSEED.

    Thirty pairs whose similarity sits near a low threshold, where banding decides what is found."""
    outputs = []
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", _GROUPING_SCRIPT], env={**os.environ, "PYTHONHASHSEED": seed},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == 30, "every edited pair is found at this threshold"


# -- bundles from solve (clearly dependent on how solve stamps its times) ----------------------------

def solve_times_from_seed() -> bool:
    """True once ``solve`` draws capture and lock times (to the microsecond) from its seed; before that
    every solve bundle carried the same round times, which the timestamp rule ignores."""
    return instant(solve("lab07", "tinyml", 1000).evidence["A"].captured_at) is not None


def test_solve_bundles_of_different_seeds_are_never_paired_and_copies_of_one_seed_are():
    """Different seeds are different students; two copies of one seed are one bundle handed in twice.

    The copy is always paired (its rationale is the same); it is paired on its times as well only
    when solve draws them from the seed (see :func:`solve_times_from_seed`)."""
    cases = [(lab, track, 1000 + n) for n, (lab, track) in
             enumerate((lab, track) for lab in LABS for track in ("tinyml", "cloud") for _ in range(3))]
    subs = [submission(i, json.loads(solve(*case).to_json())) for i, case in enumerate(cases)]
    copied = submission(len(subs), json.loads(solve(*cases[0]).to_json()), who="copier")
    group = only_group([*subs, copied])
    assert group.members == [0, len(subs)]
    assert group.bases == (["rationale", "timestamps"] if solve_times_from_seed() else ["rationale"])
    assert find_groups(subs) == []


# -- copies by the work, part by part, whatever the clock says ----------------------------------------------------------

RUNS = FIXTURES / "top-to-bottom-notebook-runs.json"
"""Real notebooks run top to bottom (``tests/make_notebook_runs.py``): only their lab, track, settings, predictions and times."""
DEFAULT_TRACKS = ("cloud", "edge")


def _retimed(data: dict, change) -> dict:
    """``data`` with every time of every record and run-log entry passed through ``change(datetime, field index)``."""
    data = copy.deepcopy(data)
    index = 0
    for entry, names in (("evidence", ("captured_at", "prediction_locked_at", "result_shown_at")),
                         ("runs", ("prediction_locked_at", "first_shown_at", "first_run_at"))):
        for part in sorted(data[entry]):
            for name in names:
                value = data[entry][part].get(name)
                if value:
                    data[entry][part][name] = _iso(change(datetime.fromisoformat(value.replace("Z", "+00:00")), index))
                    index += 1
    return reseal(data)


def path_submission(key: int, data: dict, rationale: str | None = None) -> Work:
    bundle = load_bundle(json.dumps(data))
    text = bundle.synthesis.rationale if rationale is None else rationale
    return Work(key, bundle.lab, part_times(bundle), text, f"student{key}", work_path(bundle))


def _every_fifth_word_replaced(text: str) -> str:
    return " ".join("indeed" if n % 5 == 4 else word for n, word in enumerate(text.split()))


def _is_time(label: str) -> bool:
    return label.endswith("_at")


def repaced(path, change) -> list[tuple[str, str]]:
    """A :func:`work_path` with every time passed through ``change(datetime, label)``."""
    return [(label, change(datetime.fromisoformat(text), label).isoformat() if _is_time(label) else text) for label, text in path]


def own_clock(path, rng: random.Random) -> list[tuple[str, str]]:
    """``path`` as a person with their own clock paced it: the same events in the same order (equal times stay equal),
    before each new time an interval log-normal with median 40 s and σ 1, and before a tenth of them a break of hours."""
    moment = SESSION + timedelta(days=rng.randrange(28), seconds=rng.uniform(0, 14 * 3600))
    mapped = {}
    for old in sorted({datetime.fromisoformat(text) for label, text in path if _is_time(label)}):
        pause = rng.uniform(3600, 10800) if rng.random() < 0.1 else 0.0
        moment += timedelta(seconds=rng.lognormvariate(math.log(40), 1) + pause, microseconds=rng.randrange(1, 10**6))
        mapped[old] = moment
    return repaced(path, lambda t, label: mapped[t])


def paced_by_people(lab: str, count: int, seed: int = 0) -> list[list[tuple[str, str]]]:
    """``count`` independent students of ``lab`` paced by a person: every other one a seeded solve bundle (settings
    drawn across the domain, solve's own session), the rest keeping every notebook default on cloud or edge (identical
    evidence within a track), each with their own clock."""
    rng = random.Random(f"people {lab} {seed}")
    return [work_path(solve(lab, TRACKS[n // 2 % 4], 1000 * seed + n // 2)) if n % 2 == 0 else
            own_clock(work_path(solve(lab, DEFAULT_TRACKS[n // 2 % 2])), rng) for n in range(count)]


def works(lab: str, paths) -> list[Work]:
    """One submission of ``lab`` per path, as the gradebook builds it (its times by part, its path), each with a
    rationale of its own, so only times can pair them."""
    return [Work(n, lab, times_of(path), f"rationale {n}", f"student{n}", path) for n, path in enumerate(paths)]


def times_of(path) -> dict[str, list[str]]:
    """Part → its times, as :func:`part_times` lists them."""
    found: dict[str, set[str]] = {}
    for label, text in path:
        if _is_time(label):
            found.setdefault(label.split(".")[0], set()).add(text)
    return {part: sorted(values) for part, values in found.items()}


def per_part_offsets(rng: random.Random):
    shifts: dict[str, timedelta] = {}
    return lambda t, label: t + shifts.setdefault(label.split(".")[0], timedelta(hours=rng.uniform(-72, 72),
                                                                                  microseconds=rng.randrange(10**6)))


def jitter(rng: random.Random, seconds: float = 3.0):
    return lambda t, label: t + timedelta(microseconds=rng.randint(-round(seconds * 1e6), round(seconds * 1e6)))


def recorded_runs() -> list[dict]:
    return json.loads(RUNS.read_text(encoding="utf-8"))["runs"]


def recorded_path(run: dict) -> list[tuple[str, str]]:
    """A recorded run's :func:`work_path`, read from the fixture's lab, track, settings, predictions and times."""
    def entry(fields: dict) -> SimpleNamespace:
        return SimpleNamespace(**{name: datetime.fromisoformat(value.replace("Z", "+00:00")) if name.endswith("_at") and value
                                  else value for name, value in fields.items()})
    bundle = SimpleNamespace(track=run["track"], controls=run["controls"],
                             evidence={part: entry(fields) for part, fields in run["evidence"].items()},
                             runs={part: entry(fields) for part, fields in run["runs"].items()})
    return work_path(bundle)


EVASIONS = {
    "a constant offset": lambda t, i: t + timedelta(days=3, seconds=7, microseconds=123),
    "truncation to whole seconds": lambda t, i: t.replace(microsecond=0),
    "+1 µs": lambda t, i: t + timedelta(microseconds=1),
    "1-999 µs jitter per field": lambda t, i: t + timedelta(microseconds=1 + (i * 389) % 999),
    "a shift then truncation": lambda t, i: (t + timedelta(hours=2, microseconds=654321)).replace(microsecond=0),
    "a 5-hour shift": lambda t, i: t + timedelta(hours=5),
    "±3 s per field": lambda t, i: t + timedelta(microseconds=random.Random(f"jitter {i}").randint(-3 * 10**6, 3 * 10**6)),
}


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("evasion", sorted(EVASIONS))
def test_a_copy_with_its_clock_edited_is_paired_by_its_work_part_by_part(lab, evasion):
    """Measured before: every one of these copies, with the rationale reworded, earned 93-96/100 unpaired (the first six
    paired by the whole path of the work since; the ±3 s copy by nothing)."""
    original = stamped(solved(lab, "cloud", 4), 4)
    copied = _retimed(original, EVASIONS[evasion])
    reworded = _every_fifth_word_replaced(TEXT)
    group = only_group([path_submission(0, original, TEXT), path_submission(1, copied, reworded)])
    assert "clock" in group.bases and group.members == [0, 1]
    [pair] = [p for p in group.pairs if p.basis == "clock"]
    assert pair.parts == get_lab(lab).part_ids() and 0 <= pair.similarity <= 1
    assert pair.shared >= MIN_PACED_INTERVALS


@pytest.mark.parametrize("lab", ["lab08", "lab02"])
def test_copies_with_each_part_shifted_by_its_own_offset_or_every_time_jittered_by_3_s_are_paired(lab):
    """Measured before: a copy whose parts were each shifted by their own offset (each part's intervals kept), or whose
    every time was jittered by up to ±3 s, given a new rationale, was not paired.  Forty sessions paced by a person,
    each copied three ways."""
    originals = paced_by_people(lab, 40, seed=1)
    rng = random.Random(f"copies {lab}")
    kinds = {"per-part offsets": lambda path: repaced(path, per_part_offsets(rng)),
             "±3 s jitter": lambda path: repaced(path, jitter(rng)),
             "both": lambda path: repaced(repaced(path, per_part_offsets(rng)), jitter(rng))}
    missed = []
    for kind, copier in kinds.items():
        for n, original in enumerate(originals):
            groups = find_groups(works(lab, [original, copier(original)]))
            if [g.bases for g in groups] != [["clock"]]:
                missed.append((kind, n))
    assert missed == []


@pytest.mark.parametrize("lab", LABS)
def test_independent_clocks_on_the_same_defaults_and_settings_are_never_paired(lab):
    """400 independent students of one lab paced by a person — half seeded solve bundles, half keeping every default on
    cloud or edge (identical evidence: thousands of pairs), each with their own clock — and no pair of any kind."""
    paths = paced_by_people(lab, 400)
    identical = Counter(tuple((label, text) for label, text in path if not _is_time(label)) for path in paths)
    assert sum(n * (n - 1) // 2 for n in identical.values()) >= 2 * 100 * 99 // 2, "pairs with identical evidence"
    assert find_groups(works(lab, paths)) == []


def test_recorded_top_to_bottom_notebook_runs_are_never_paired():
    """Measured before: 23 independent notebook sessions run top to bottom gave 40 false clock pairs (and the whole-path
    rule pairs 812 pairs of these 72, 636 of them across tracks).  Their intervals are the machine's (cells run back to
    back), so they agree with each other and prove nothing."""
    runs = recorded_runs()
    labs = Counter(run["lab"] for run in runs)
    assert labs["lab08"] + labs["lab02"] >= 50 and min(labs["lab08"], labs["lab02"]) >= 20, labs
    alike = identical = 0
    for lab in sorted(labs):
        paths = [recorded_path(run) for run in runs if run["lab"] == lab]
        for x, a in enumerate(paths):
            for b in paths[x + 1:]:
                identical += [f for f in a if not _is_time(f[0])] == [f for f in b if not _is_time(f[0])]
                alike += _every_part_within(a, b, PART_TOLERANCE_S)
        assert find_groups(works(lab, paths)) == [], lab
    assert alike == identical >= 80, "every two runs with the same evidence agree in every part: the machine's pace"


def _every_part_within(a, b, seconds: float) -> bool:
    """Same facts, and in every part the spread of the time differences (the part's clock offset removed) within ``seconds``."""
    facts_a = {label: text for label, text in a if not _is_time(label)}
    if facts_a != {label: text for label, text in b if not _is_time(label)}:
        return False
    times_b = {label: datetime.fromisoformat(text) for label, text in b if _is_time(label)}
    differences: dict[str, list[float]] = {}
    for label, text in a:
        if _is_time(label):
            if label not in times_b:
                return False
            differences.setdefault(label.split(".")[0], []).append((datetime.fromisoformat(text) - times_b[label]).total_seconds())
    return bool(differences) and all(max(d) - min(d) <= seconds for d in differences.values())


def test_a_copy_of_a_run_the_machine_paced_is_not_a_clock_pair():
    """Its intervals are anyone's: a copy shifted part by part keeps nothing that a second run of the notebook would not
    (an unshifted copy still shares its times)."""
    first = recorded_runs()[0]
    run = recorded_path(first)
    assert find_groups(works(first["lab"], [run, repaced(run, per_part_offsets(random.Random(3)))])) == []
    assert [g.bases for g in find_groups(works(first["lab"], [run, run]))] == [["timestamps"]]


def test_the_shipped_reference_examples_of_different_tracks_are_not_grouped():
    """Measured before: the README quick start grouped the reference examples of every track of a lab with each other.
    Only the edited copies are grouped, each with the reference it was made from."""
    result = grade_paths([EXAMPLES], BatchOptions(jobs=1, db=None))
    groups = sorted(sorted(Path(result.rows[m]["path"]).stem for m in g.members) for g in result.groups)
    assert groups == [["lab07-cloud", "lab07-cloud-edited-number"], ["lab07-mobile", "lab07-mobile-rationale-without-numbers"],
                      ["lab11-edge", "lab11-edge-stale-part-d"]]
    assert all("clock" not in g.bases for g in result.groups), "the references were run top to bottom: no interval of a person"


def test_a_pair_on_different_tracks_is_never_a_clock_pair():
    """The same settings, predictions and times part by part (each part shifted by its own offset): a clock pair on
    one track, none when the copy names another."""
    original = paced_by_people("lab08", 1)[0]
    copied = repaced(original, per_part_offsets(random.Random(5)))
    same = find_groups(works("lab08", [original, copied]))
    assert [g.bases for g in same] == [["clock"]]
    elsewhere = [(label, "mobile" if label == "track" else text) for label, text in copied]
    assert dict(original)["track"] != "mobile"
    assert find_groups(works("lab08", [original, elsewhere])) == []


def test_a_path_stored_without_its_track_is_not_compared_by_clock():
    """A result stored before the track was kept: its track is unknown, so it is never a clock pair."""
    original = paced_by_people("lab08", 1)[0]
    copied = repaced(original, per_part_offsets(random.Random(6)))
    untracked = [[(label, text) for label, text in path if label != "track"] for path in (original, copied)]
    assert [g.bases for g in find_groups(works("lab08", [original, copied]))] == [["clock"]]
    assert find_groups(works("lab08", untracked)) == []
