"""Lab 11's evaluation: the only module of the lab that touches mlsysim (``v1_11_experiments``).

It builds each part's evaluator inputs from the track's scenario (as the seed's cell
that computes every arm does), replays them, and reads back the controls a record was
built from.  The rest of the lab reaches it through :func:`.rules.evaluator`, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from mlsysim.core.units import Q_
from mlsysim.labs.experiments import v1_11_experiments as ev
from pint.errors import PintError

from ...core.labspec import ArmInputs
from ...core.models import EvidenceRecord
from .rules import EXPERIMENTS, QUALITY_OBSERVATION, _q

MODEL_ID: str = ev.MODEL_ID


def _is_track(track: str) -> TypeGuard[ev.Track]:
    return track in ev.TRACK_SCENARIOS


def _track(track: str) -> ev.Track:
    """``track`` as the evaluators type it; ValueError for a track they do not know."""
    if not _is_track(track):
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(ev.TRACK_SCENARIOS)}")
    return track


def _jsonable(track: str, experiment: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return ev.make_replay_packet(track=_track(track), experiment=experiment, inputs=inputs)["inputs"]


def replay(track: str, model_key: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator's arm for JSON-safe ``inputs``: ``{"inputs", "outputs"}`` as the seed shapes it."""
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


def candidates(track: str) -> dict[str, tuple[str, str]]:
    """Role (``primary``, ``alternative``) → (hardware name, registry reference) of ``track``'s candidates.

    KeyError or ValueError for a track the evaluators do not know.
    """
    scenario = ev.get_track_scenario(_track(track))
    return {role: (hardware.name, ev.to_jsonable(hardware)["registry_ref"] or "")
            for role, hardware in (("primary", scenario.hardware), ("alternative", scenario.alternative))}


# -- building (mirrors the seed's cell that computes every arm) --------------
def arm_inputs(track: str, part: str, c: Mapping[str, Any], upstream: Mapping[str, Any]) -> ArmInputs:
    """The evaluator inputs of a part's arms for validated controls ``c`` (``upstream``: dependency part → result arm)."""
    sc = ev.get_track_scenario(_track(track))
    experiment = EXPERIMENTS[part]
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
                      precision=sc.precision, quality_observation=QUALITY_OBSERVATION)
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


# What reading a hand-edited record can raise: missing keys, wrong types, odd units.
RECORD_SHAPE_ERRORS = (LookupError, TypeError, ValueError, ArithmeticError, AttributeError, PintError)


def infer(track: str, part: str, record: EvidenceRecord) -> tuple[dict[str, Any], Any] | None:
    """The controls a record's arms were built from, and (part D) the kernel time it builds on; may raise
    :data:`RECORD_SHAPE_ERRORS` on a hand-edited record."""
    sc = ev.get_track_scenario(_track(track))
    inputs = (record.result or {})["inputs"]  # a record without a result has no setting (KeyError, caught)
    if part == "A":
        changed = [(name, inputs[key]) for name, key in (("compute", "compute_scale"), ("bandwidth", "bandwidth_scale"), ("reuse", "reuse")) if inputs[key] != 1.0]
        if len(changed) != 1:
            return None
        return {"change": changed[0][0], "factor": changed[0][1]}, {}
    if part == "B":
        tile = (inputs["tile_m"], inputs["tile_n"], inputs["tile_k"])
        names = [name for name, dims in ev.scenario_tile_choices(_track(track)).items() if tuple(dims) == tile]
        return ({"tile": names[0], "fused": inputs["fused"]}, {}) if names else None
    if part == "C":
        shape = "aligned" if inputs["m"] == sc.dimensions[0] else "misaligned"
        return {"shape": shape, "operation": inputs["operation"]}, {}
    if part == "D":
        return {"speedup": inputs["local_speedup"]}, inputs["baseline_kernel_time"]
    ranking = record.inputs["ranking"]
    scale = round(_q(ranking["latency_budget"]) / sc.latency_budget.to(ranking["latency_budget"]["unit"]).magnitude, 2)
    decision = record.decision if isinstance(record.decision, Mapping) else {}
    return {"objective": ranking["objective"], "budget_scale": scale,
            "choice": decision.get("recommendation"), "rejected": decision.get("rejected")}, {}
