"""``solve``: a complete, verified bundle from controls, without a notebook — the instructor's and the test suite's tool.

Its evidence replays, so it earns every evidence point; its rationale is the grader's own
template, flagged ``generated``.  A student who had it would need only two sentences of
their own for full marks, so it ships with staff installs and the Gradescope image only:
the student build of the package (``mlsys-grader kit``) leaves this package out.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import api
from .._version import __version__
from ..core.capture import plan_all, record_from_plan
from ..core.models import Bundle, EvidenceRecord, PartId, PartRun, Scalar, Synthesis, part_key
from ..errors import UnknownLabError
from ..labs import Lab, get_lab
from ..replay import Replay

# A session as a student works it: a few minutes reading before each part's prediction is
# locked, seconds until the run shows the result, minutes exploring before the capture.
READ_BEFORE_LOCK_S = (90, 480)
LOCK_TO_SHOWN_S = (3, 90)
SHOWN_TO_CAPTURE_S = (45, 540)
WRITING_SYNTHESIS_S = (240, 1200)


def _seconds(rng: random.Random, bounds: tuple[int, int]) -> timedelta:
    """A random span within ``bounds`` seconds, to the microsecond (as a notebook's clock stamps)."""
    return timedelta(seconds=rng.uniform(*bounds))


def session_start(rng: random.Random) -> datetime:
    """A plausible time to open the notebook: some day of a four-week term, between 08:00 and 22:00 UTC."""
    return datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(days=rng.randrange(28), seconds=rng.uniform(0, 14 * 3600))


def session_times(rng: random.Random, start: datetime,
                  parts: Iterable[str]) -> tuple[dict[PartId, tuple[datetime, datetime, datetime]], datetime]:
    """Per part of ``parts`` (locked, shown, captured), in that order, and when the bundle is written."""
    times: dict[PartId, tuple[datetime, datetime, datetime]] = {}
    moment = start
    for part in map(part_key, parts):
        locked = moment + _seconds(rng, READ_BEFORE_LOCK_S)
        shown = locked + _seconds(rng, LOCK_TO_SHOWN_S)
        moment = shown + _seconds(rng, SHOWN_TO_CAPTURE_S)
        times[part] = (locked, shown, moment)
    return times, moment + _seconds(rng, WRITING_SYNTHESIS_S)


def _run_controls(lab: Lab, part: str, controls: Mapping[str, Any]) -> dict[str, Scalar]:
    """The controls a run takes (``lab.run``): the part's own, without the decisions set at capture."""
    return {control.name: controls[control.name] for control in lab.parts[part].controls if not control.decision}


def bundle_from_controls(
    lab: Lab, track: str, controls: Mapping[str, Mapping[str, Any]], *, mlsysim_version: str, grader_version: str,
    rng: random.Random | None = None, start: datetime | None = None, session_rng: random.Random | None = None,
    replay: Replay | None = None,
) -> Bundle:
    """A complete bundle for these controls: right predictions, locked first, and a reference synthesis.

    ``rng`` draws the predictions and the synthesis answers; ``session_rng`` draws the
    session's times (by default seeded from ``rng``, after those draws), starting at
    ``start`` if given.
    Each part's run log says what the record implies: the first run after the lock used
    the captured controls and showed the result at ``result_shown_at``.  Plans go through ``replay`` (default:
    :func:`mlsys_grader.api.default_replay`).
    """
    names = rng or random.Random(0)
    plans = plan_all(lab, replay or api.default_replay(), track, controls)
    parts = [part_key(part) for part in lab.part_ids()]
    predictions = {part: names.choice(sorted(lab.accepted_predictions(track, part, plans[part]))) for part in parts}
    synthesis = Synthesis(**lab.reference_synthesis(track, plans, names))
    session_rng = session_rng or random.Random(names.getrandbits(64))
    times, created = session_times(session_rng, start if start is not None else session_start(session_rng), parts)
    evidence: dict[PartId, EvidenceRecord] = {}
    runs: dict[PartId, PartRun] = {}
    for part in parts:
        locked, shown, captured = times[part]
        evidence[part] = record_from_plan(
            lab, track, plans[part], predictions[part], mlsysim_version=mlsysim_version, grader_version=grader_version,
            prediction_locked_at=locked, result_shown_at=shown, captured_at=captured,
        )
        upstream = {part_key(dep): _run_controls(lab, dep, controls[dep]) for dep in lab.parts[part].depends_on}
        runs[part] = PartRun(prediction=predictions[part], prediction_locked_at=locked, first_shown_at=shown,
                             first_run_controls=_run_controls(lab, part, controls[part]), first_run_at=shown,
                             first_run_upstream=upstream or None)
    bundle = Bundle(lab=lab.lab_id, track=track, controls={part: dict(controls[part]) for part in parts},
                    evidence=evidence, synthesis=synthesis, runs=runs, mlsysim_version=mlsysim_version,
                    grader_version=grader_version, created_at=created)
    return bundle.sealed()


def solve_spec(lab: Lab, track: str, seed: int | None, *, mlsysim_version: str, grader_version: str,
               start: datetime | None = None, replay: Replay | None = None) -> Bundle:
    """A complete bundle as a diligent student produces it; ``seed`` draws controls across the domain.

    The session's times come from the lab, track and seed too, so two seeds (or two tracks)
    are two sessions, never one session's copy; ``seed=None`` gives the defaults and its own
    fixed session per lab and track.
    """
    rng = random.Random(seed) if seed is not None else None
    replay = replay or api.default_replay()
    controls: dict[str, dict[str, Any]] = {part: lab.sample_controls(replay, track, part, rng) for part in lab.part_ids()}
    # A string seed is hashed with SHA-512 by ``random``: the same session in every run.
    session_rng = random.Random(f"mlsys-grader solve session {lab.lab_id} {track} {seed}")
    return bundle_from_controls(lab, track, controls, mlsysim_version=mlsysim_version, grader_version=grader_version,
                                rng=random.Random(seed if seed is not None else 0), start=start, session_rng=session_rng,
                                replay=replay)


def solve(lab_id: str, track: str, seed: int | None = None, *, replay: Replay | None = None) -> Bundle:
    """A complete bundle for ``lab_id`` on ``track`` (``seed`` varies the controls and session times).

    Every part's evidence is verified, so it earns every evidence point; its rationale is the
    grader's own template, which is flagged ``generated`` and earns no rationale points.  It is
    the instructor's and the test suite's tool, not a way to produce a student's submission.
    """
    lab = get_lab(lab_id)
    if track not in lab.tracks:
        raise UnknownLabError(f"unknown track {track!r} for {lab_id}; expected one of {', '.join(lab.tracks)}")
    return solve_spec(lab, track, seed, mlsysim_version=api.mlsysim_version(), grader_version=__version__, replay=replay)
