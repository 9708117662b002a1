"""Collusion finds copies (shared capture times, near-identical rationales), not coincidences."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from conftest import LABS, reseal, solved

from mlsys_grader import get_lab, grade_bundle, solve
from mlsys_grader.core.models import PARTS, load_bundle
from mlsys_grader.course._collusion import (
    MIN_SHARED_TIMES,
    RATIONALE_THRESHOLD,
    Work,
    find_groups,
    instant,
    jaccard,
    part_times,
    shingles,
)

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


# -- copies by the path of the work, whatever the clock says ------------------------------------------------------------

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
    from mlsys_grader.course._collusion import work_path

    bundle = load_bundle(json.dumps(data))
    text = bundle.synthesis.rationale if rationale is None else rationale
    return Work(key, bundle.lab, part_times(bundle), text, f"student{key}", work_path(bundle))


def _every_fifth_word_replaced(text: str) -> str:
    return " ".join("indeed" if n % 5 == 4 else word for n, word in enumerate(text.split()))


EVASIONS = {
    "a constant offset": lambda t, i: t + timedelta(days=3, seconds=7, microseconds=123),
    "truncation to whole seconds": lambda t, i: t.replace(microsecond=0),
    "+1 µs": lambda t, i: t + timedelta(microseconds=1),
    "1-999 µs jitter per field": lambda t, i: t + timedelta(microseconds=1 + (i * 389) % 999),
    "a shift then truncation": lambda t, i: (t + timedelta(hours=2, microseconds=654321)).replace(microsecond=0),
    "a 5-hour shift": lambda t, i: t + timedelta(hours=5),
}


@pytest.mark.parametrize("lab", LABS)
@pytest.mark.parametrize("evasion", sorted(EVASIONS))
def test_a_copy_with_its_clock_edited_is_paired_by_the_path_of_its_work(lab, evasion):
    """Measured before: every one of these copies, with the rationale reworded, earned 93-96/100 unpaired."""
    original = stamped(solved(lab, "cloud", 4), 4)
    copied = _retimed(original, EVASIONS[evasion])
    reworded = _every_fifth_word_replaced(TEXT)
    group = only_group([path_submission(0, original, TEXT), path_submission(1, copied, reworded)])
    assert "clock" in group.bases and group.members == [0, 1]
    [pair] = [p for p in group.pairs if p.basis == "clock"]
    assert pair.shared >= 20 and pair.parts == get_lab(lab).part_ids() and 0 <= pair.similarity <= 1


@pytest.mark.parametrize("lab", LABS)
def test_independent_clocks_on_the_same_defaults_and_settings_are_never_paired(lab):
    """A population of one lab (clocks are compared only within a lab): seeded solve bundles and students who keep
    every default in the notebook's order, each with its own clock (intervals log-normal, median 40 s, σ 1, occasional
    breaks of hours) — no clock pair."""
    rng = random.Random(0)

    def own_clock(data: dict) -> dict:
        moment = SESSION + timedelta(days=rng.randrange(28))
        times = {}

        def step() -> timedelta:
            seconds = rng.lognormvariate(math.log(40), 1) + (rng.uniform(3600, 10800) if rng.random() < 0.1 else 0)
            return timedelta(seconds=seconds, microseconds=rng.randrange(1, 10**6))

        def change(t: datetime, i: int) -> datetime:
            nonlocal moment
            key = t.isoformat()
            if key not in times:
                moment = moment + step()
                times[key] = moment
            return times[key]
        return _retimed(data, change)

    population = [stamped(solved(lab, "cloud", seed), seed) for seed in range(40)]
    population += [own_clock(stamped(solved(lab, track, None), 0)) for track in ("cloud", "edge") for _ in range(25)]
    subs = [path_submission(i, data, f"{TEXT} {i}") for i, data in enumerate(population)]
    from mlsys_grader.course._collusion import _clock_pairs

    assert _clock_pairs(subs) == []
