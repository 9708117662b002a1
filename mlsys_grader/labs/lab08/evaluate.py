"""Lab 08's evaluation: the only module of the lab that touches mlsysim (``v1_08_experiments``).

The arms a capture keeps replay through the book's closed dispatcher (``replay(model_key, inputs)``); the two
alternatives that keep no inputs of their own (part D's ``checkpoint_experiment`` timing and part E's
``bottleneck_experiment`` comparisons) are computed by those experiments from the track and the one setting they
take.  The rest of the lab reaches this module through :func:`.rules.evaluator`, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlsysim.labs.experiments import v1_08_experiments as ev

from .rules import CHECKPOINT_TIMING_KEY, COMPARISON_KEY


def replay(model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator's arm for JSON-safe ``inputs``, shaped as the book captures it."""
    if model_key == CHECKPOINT_TIMING_KEY:
        return ev.checkpoint_experiment(inputs["track_id"], checkpointing=inputs["checkpointing"])
    if model_key == COMPARISON_KEY:
        return ev.bottleneck_experiment(inputs["track_id"], intervention=inputs["intervention"])
    return ev.replay(model_key, inputs)


def track_settings(track: str) -> dict[str, Any]:
    """The track's scenario settings as plain values (the hardware by its registry name)."""
    profile = ev.track_profile(track)
    return {key: (value.name if key == "hardware" else value) for key, value in ev.TRACKS[track].items()} | {
        "model": profile["model"].name}


def batch_policy(track: str) -> dict[str, Any]:
    """The book's batch menu for ``track``: baseline and (physical batch, accumulation steps) per option key."""
    return ev.batch_policy(track)
