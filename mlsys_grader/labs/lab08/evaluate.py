"""Lab 08's evaluation: the only module of the lab that touches mlsysim (``v1_08_experiments``).

The arms a capture keeps replay through the book's closed dispatcher (``replay(model_key, inputs)``).  The two
alternatives that keep no inputs of their own are computed by their experiments from the track and the one setting
they take: part D's timing (``checkpoint_experiment``, inputs ``track_id`` and ``checkpointing``) and part E's three
comparisons (``bottleneck_experiment``, inputs ``track_id`` and ``intervention``).  A declared part's arms are all
evaluated under the part's key, so those two are told apart from the part's own arms by their inputs: no arm the
book's dispatcher replays has exactly these.

The rest of the lab reaches this module through the lab (``lab.evaluator()``,
:mod:`mlsys_grader.labs.declared`), on first use, so the lab loads without mlsysim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlsysim.labs.experiments import v1_08_experiments as ev

_WITHOUT_INPUTS: dict[str, tuple[str, Callable[..., dict[str, Any]]]] = {
    "memory_outcome": ("checkpointing", ev.checkpoint_experiment),
    "bottleneck_experiment": ("intervention", ev.bottleneck_experiment),
}
"""A part's experiment → (the one setting, the experiment computing its alternatives from the track and that setting)."""


def arm(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator's arm for JSON-safe ``inputs`` (their ``track_id`` is ``track``), shaped as the book captures it (an
    alternative that keeps no inputs computed by its experiment)."""
    without = _WITHOUT_INPUTS.get(model_key.rpartition(".")[2])
    if without is not None and set(inputs) == {"track_id", without[0]}:
        setting, experiment = without
        return experiment(inputs["track_id"], **{setting: inputs[setting]})
    return ev.replay(model_key, inputs)


def header_facts(track: str) -> list[tuple[str, str]]:
    """The book's header boxes: track, context, teaching workload, deliverable."""
    settings = ev.TRACKS[track]
    return [("Track", settings["label"]), ("Context", settings["task"]), ("Teaching workload", "GPT-2 on a development host"),
            ("Deliverable", "Training design recommendation")]

