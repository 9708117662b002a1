"""Lab 11's evaluation: the only module of the lab that touches mlsysim (``v1_11_experiments``).

It replays arms, and it is where the track scenarios' data comes from: :func:`scenario_data`
is what :mod:`.domain` holds (``python -m mlsys_grader.labs.lab11.evaluate`` writes it), and
:func:`seed_arm_inputs` builds each part's evaluator inputs from the track's scenario as the
seed's cell that computes every arm does — the reference :func:`.judge.arm_inputs` equals over
the whole domain (``tests/labs/test_lab11.py``).  The rest of the lab reaches this module
through the lab (``lab.evaluator()``, :mod:`mlsys_grader.labs.declared`), on first
use, so grading that the replay table answers never loads mlsysim.
"""

from __future__ import annotations

import pprint
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from mlsysim.core.units import Q_
from mlsysim.labs.experiments import v1_11_experiments as ev

from mlsys_grader.core.labspec import ArmInputs
from mlsys_grader.labs.declared import part_specs, spec_of

MODEL_ID: str = ev.MODEL_ID
SPEC = spec_of(__package__)
"""The lab's declaration: each part's model key names its experiment, and part E's budget scales are its control's."""
def _experiment(part: str) -> str:
    return str(SPEC.parts[part].model_key).removeprefix(f"{MODEL_ID}.")


def _is_track(track: str) -> TypeGuard[ev.Track]:
    return track in ev.TRACK_SCENARIOS


def _track(track: str) -> ev.Track:
    """``track`` as the evaluators type it; ValueError for a track they do not know."""
    if not _is_track(track):
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(ev.TRACK_SCENARIOS)}")
    return track


def _jsonable(track: str, experiment: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return ev.make_replay_packet(track=_track(track), experiment=experiment, inputs=inputs)["inputs"]


def arm(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator's arm of ``track`` for JSON-safe ``inputs``: ``{"inputs", "outputs"}`` as the seed shapes it."""
    result = ev.replay_experiment({"track_id": track, "model_key": model_key, "inputs": inputs})
    return {"inputs": inputs, "outputs": ev.to_jsonable(result)}


def magnitude(payload: Mapping[str, Any], unit: str) -> float:
    """A recorded ``{"magnitude", "unit"}`` payload's magnitude in ``unit`` (mlsysim's unit registry)."""
    return Q_(payload["magnitude"], payload["unit"]).to(unit).magnitude


def header_facts(track: str) -> list[tuple[str, str]]:
    scenario = ev.get_track_scenario(_track(track))
    return [("Machine", scenario.hardware.name), ("Track", scenario.track.title()),
            ("Deliverable", "Constrained accelerator decision"), ("Assumptions", scenario.assumption_label.capitalize())]


def track_facts(track: str) -> dict[str, str]:
    """The track's accelerator and the investigation in one line."""
    scenario = ev.get_track_scenario(_track(track))
    return {"device": scenario.hardware.name, "scenario": f"{scenario.hardware.name} analytical accelerator-fit investigation"}


def scaled_budgets(track: str, scale: float) -> list[Any]:
    """``track``'s latency, energy and cost budgets at ``scale``, JSON-safe."""
    return ev.to_jsonable(ev.scenario_budgets(_track(track), scale=scale))


def budget_magnitude(track: str, unit: str) -> float:
    """``track``'s unscaled latency budget in ``unit`` (may raise pint's errors for a unit that is not a time)."""
    return ev.get_track_scenario(_track(track)).latency_budget.to(unit).magnitude


# -- the track scenarios as data (what :mod:`.domain` holds) ---------------
def scenario_data(track: str) -> dict[str, Any]:
    """The JSON-safe values of ``track``'s scenario that the arms are built from, by name (``to_jsonable``'s forms).

    ``budgets`` maps each allowed part E budget scale (``str(scale)``) to the scaled latency,
    energy and cost budgets; ``latency_budget`` is the unscaled one (part E's inference).
    """
    t = _track(track)
    sc = ev.get_track_scenario(t)
    demand = ev.scenario_gemm_demand(t)
    j = ev.to_jsonable
    return {
        "hardware": j(sc.hardware), "alternative": j(sc.alternative), "fallback": j(sc.fallback), "contract": j(sc.contract),
        "precision": sc.precision, "dimensions": j(sc.dimensions), "local_capacity": j(sc.local_capacity),
        "operations": j(demand.operations), "bytes_moved": j(demand.bytes_moved),
        "tiles": {name: j(dims) for name, dims in ev.scenario_tile_choices(t).items()},
        "misaligned": j(ev.scenario_execution_dimensions(t, aligned=False)),
        "host_time": j(sc.host_time), "transfer_bytes": j(sc.transfer_bytes),
        "transfer_fixed_latency": j(sc.transfer_fixed_latency), "launches": sc.launches,
        "postprocess_time": j(sc.postprocess_time), "candidates": j(ev.scenario_candidates(t)),
        "latency_budget": j(sc.latency_budget),
        "budgets": {str(scale): j(ev.scenario_budgets(t, scale=scale))
                    for scale in part_specs(SPEC)["E"].control("budget_scale").values()},
    }


def domain_source() -> str:
    """The text of :mod:`.domain`: every track's :func:`scenario_data`, in the evaluators' track order."""
    data = {track: scenario_data(track) for track in ev.TRACK_SCENARIOS}
    return ('"""Lab 11\'s track scenarios as data: the JSON-safe values every part\'s arms are built from.\n\n'
            "Written by ``python -m mlsys_grader.labs.lab11.evaluate`` from mlsysim (:func:`.evaluate.scenario_data`),\n"
            "so building a part\'s inputs never imports mlsysim; ``tests/labs/test_lab11.py`` checks this file is\n"
            'what that writes.  Do not edit by hand.\n"""\n\n'
            "from typing import Any\n\n"
            f"SCENARIOS: dict[str, dict[str, Any]] = {pprint.pformat(data, width=120, sort_dicts=False)}\n")


# -- building (mirrors the seed's cell that computes every arm) --------------
def seed_arm_inputs(track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c`` (``upstream``: dependency part → result arm),
    built through mlsysim as the seed does: the reference :func:`.judge.arm_inputs` is checked against."""
    sc = ev.get_track_scenario(_track(track))
    experiment = _experiment(part)
    alternatives: list[dict] = []
    if part == "A":
        demand = ev.scenario_gemm_demand(_track(track))
        base = dict(hardware=sc.hardware, operations=demand.operations, base_bytes_moved=demand.bytes_moved,
                    precision=sc.precision, reuse=1.0, compute_scale=1.0, bandwidth_scale=1.0)
        key = {"compute": "compute_scale", "bandwidth": "bandwidth_scale", "reuse": "reuse"}[c["change"]]
        result = dict(base, **{key: float(c["factor"])})
    elif part == "B":
        tiles = ev.scenario_tile_choices(_track(track))
        common = dict(hardware=sc.hardware, m=sc.dimensions[0], n=sc.dimensions[1], k=sc.dimensions[2],
                      precision=sc.precision, scratchpad_capacity=sc.local_capacity)
        bt, st = tiles["baseline"], tiles[c["tile"]]
        base = dict(common, tile_m=bt[0], tile_n=bt[1], tile_k=bt[2], fused=False)
        result = dict(common, tile_m=st[0], tile_n=st[1], tile_k=st[2], fused=c["fused"])
    elif part == "C":
        bd = ev.scenario_execution_dimensions(_track(track), aligned=True)
        sd = ev.scenario_execution_dimensions(_track(track), aligned=c["shape"] == "aligned")
        common = dict(hardware=sc.hardware, fallback_hardware=sc.fallback, contract=sc.contract,
                      precision=sc.precision, quality_observation=SPEC.constant("quality_observation"))
        base = dict(common, operation="gemm", m=bd[0], n=bd[1], k=bd[2])
        result = dict(common, operation=c["operation"], m=sd[0], n=sd[1], k=sd[2])
    elif part == "D":
        latency = upstream["C"]["outputs"]["latency"]
        base = dict(hardware=sc.hardware, baseline_kernel_time=Q_(latency["magnitude"], latency["unit"]),
                    local_speedup=1.0, host_time=sc.host_time, transfer_bytes=sc.transfer_bytes,
                    transfer_fixed_latency=sc.transfer_fixed_latency, launches=sc.launches,
                    postprocess_time=sc.postprocess_time)
        result = dict(base, local_speedup=float(c["speedup"]))
    else:
        candidates = ev.scenario_candidates(_track(track))
        latency_budget, energy_budget, cost_budget = ev.scenario_budgets(_track(track), scale=c["budget_scale"])
        common = dict(fallback_hardware=sc.fallback, operation="gemm", precision=sc.precision,
                      m=sc.dimensions[0], n=sc.dimensions[1], k=sc.dimensions[2], host_time=sc.host_time,
                      transfer_bytes=sc.transfer_bytes, transfer_fixed_latency=sc.transfer_fixed_latency,
                      launches=sc.launches, postprocess_time=sc.postprocess_time, objective=c["objective"],
                      latency_budget=latency_budget, energy_budget=energy_budget, cost_budget=cost_budget)
        base = dict(common, candidates=(candidates[0],))
        result = dict(common, candidates=(candidates[1],))
        alternatives = [_jsonable(track, experiment, dict(common, candidates=candidates))]
    base_in, result_in = _jsonable(track, experiment, base), _jsonable(track, experiment, result)
    if part == "E":
        upstream_inputs = {"ranking": alternatives[0], "choice": c["choice"], "rejected": c["rejected"]}
    else:
        upstream_inputs = {"baseline": base_in, "result": result_in}
    return ArmInputs(base_in, result_in, tuple(alternatives), upstream_inputs)


if __name__ == "__main__":
    Path(__file__).with_name("domain.py").write_text(domain_source(), encoding="utf-8")
    sys.exit(0)
