"""The words Lab 02's rationale reader uses: placements, triggers, limitations, evidence quantities.

This module is the lab's :class:`~mlsys_grader.core.labspec.LabWords`.  Everything here is matched by
:mod:`mlsys_grader.core.rationale` on the normalised text of a student's rationale (lower case, hyphens as spaces,
American spelling), so it is written that way here; nothing imports mlsysim.  Placement names count only with a
recommending or rejecting cue around them ("I recommend running locally", "… I reject"); ``decisive`` phrasings
state "no feasible design" by themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlsys_grader.core.labspec import Choice, default_synthesis_choices
from mlsys_grader.core.models import Bundle
from mlsys_grader.core.rationale import FRACTION, ChoiceTerms, RecordedArms, compared, share

_REMOTE = r"(remote|cloud|server|offload|offloaded|offloading|upload|uploading|uploaded|send|sending|sent|transmit|transmitting)"
PLACEMENTS = (
    Choice("local", "Run locally",
           ("local", "locally", "run locally", "running locally", "local execution", "local inference", "on device",
            "on the device", "local placement", "local design", "local option", "on premise", "on site", "at the edge"),
           phrasings=(r"(run|runs|running|execute|executes|executing|keep|keeping|infer|inferring|inference)( it| the model"
                      r"| the workload| inference)? (locally|on (the )?device|on site|on premise|in place)",
                      r"(local|on device|onboard|on board) (execution|inference|processing|compute|model|path|run)",
                      r"(keep|keeping|run|running|do|doing|perform|performing)( the)? (inference|model|workload|it) (on|at) "
                      r"(the )?(regional |ingress |local |edge |inspection )*(host|device|station|sensor|node|phone|board|site)")),
    Choice("raw", "Send raw input",
           ("raw", "raw input", "raw remote", "send raw input", "raw upload", "raw payload", "raw transfer", "raw data",
            "raw frames", "send raw", "sending raw", "raw offload"),
           phrasings=(_REMOTE + r"( the| every| each| full| whole| complete)* (raw|unfiltered|full|uncompressed|original) "
                                r"(input|inputs|payload|payloads|data|frames?|images?|requests?|stream)",
                      r"(unfiltered|raw) (remote|cloud|offload|upload|transfer|transmission)",
                      r"(remote|cloud) (inference )?(on|with|of) (the )?(raw|unfiltered|full) (input|payload|data)")),
    Choice("event_filter", "Filter events, then send",
           ("event filter", "event filtering", "filter events", "filtering events", "filter events then send",
            "event filtered", "events filter", "keep detected events", "event based filtering", "event gating",
            "event triggered upload", "filtered events"),
           phrasings=(r"(filter|filters|filtering|filtered|keep|keeping|send|sending|upload|uploading|forward|forwarding)"
                      r"( only)? (the )?(detected |interesting |relevant |triggered )?events",
                      r"event (filter|filtering|based|gated|gating|detection)( (then|and|plus|before) (send|sending|upload"
                      r"|uploading|remote|offload|offloading))?",
                      r"(only|just) (send|sending|upload|uploading|transmit|transmitting) (the )?(events|detections|event frames"
                      r"|frames with events)")),
    Choice("feature_summary", "Send feature summary",
           ("feature summary", "feature summaries", "send feature summary", "sending feature summary", "summary features",
            "compact feature summary", "feature vector", "feature vectors", "feature extraction", "features only",
            "summarized features", "send features", "sending features", "compact summary"),
           phrasings=(r"(send|sending|upload|uploading|transmit|transmitting|ship|shipping)( only| just)? (a |the )?"
                      r"(compact |small |short )?(features?|feature summary|summary|embeddings?|descriptors?)",
                      r"(feature|features|summary|summarization|summarizing) (plus|then|and|before) (remote|cloud|send|sending"
                      r"|upload|uploading|offload)")),
    Choice("none", "Hold: no feasible design", ("no feasible design", "none", "no feasible placement", "hold"),
           decisive=(
               r"no (feasible|viable|workable|acceptable|valid) (design|placement|option|choice|deployment|plan|configuration)",
               r"(no|none of the) (designs?|placements?|options?|candidates?) (is |are |can be )?(feasible|viable|survives?"
               r"|passes|pass|meets?|satisfies|satisfy|works?)",
               r"nothing (is feasible|survives|passes|works|satisfies)",
               r"neither (local|local execution|running locally) nor (any |a )?remote",
               r"every (design|placement|option) (fails|violates|misses)",
               r"(hold|holding) (off|for now|the (deployment|decision|launch|rollout))")),
)
REJECTABLE = ("local", "raw", "event_filter", "feature_summary")
_CHANGES = (r"(changes?|changed|grows?|grew|increases?|increased|rises?|rose|shrinks?|drops?|dropped|falls?|fell|goes up|goes down"
            r"|gets bigger|gets larger|doubles?|doubled|exceeds?|exceeded|crosses|tightens?|loosens?|shifts?|moves?)")
TRIGGERS = (
    Choice("payload", "Payload exceeds saved boundary",
           ("payload exceeds saved boundary", "payload boundary", "boundary payload", "payload size", "request size",
            "payload grows", "larger payload", "bigger payload", "larger payloads", "bigger payloads", "larger requests"),
           phrasings=(
               r"(payload|payloads|request|requests|input|inputs|frame|frames|image|images|upload)( size| sizes| volume)? "
               + _CHANGES,
               r"(payload|request|input|upload)s? (above|beyond|past|over|larger than|bigger than) (the )?(saved |missed "
               r"deadline |deadline )?(boundary|threshold|limit|cap)",
               r"(exceeds?|crosses|passes) (the )?(saved |missed deadline |deadline )?(payload )?boundary",
               r"(larger|bigger|heavier|higher resolution) (payloads?|requests?|inputs?|frames?|images?|uploads?)",
               r"(deadline|missed deadline) boundary", r"boundary payload")),
    Choice("connectivity", "Connection becomes unavailable",
           ("connection becomes unavailable", "connectivity", "connection loss", "loss of connectivity", "link outage",
            "network outage", "outage", "offline", "goes offline", "no connection", "link goes down", "link down"),
           phrasings=(
               r"(connection|connectivity|link|network|uplink|backhaul|internet|wan|cellular|wifi)( is| becomes| gets| goes)?"
               r" (unavailable|lost|down|offline|drops?|dropped|fails?|failed|cut|severed|intermittent|unreliable|interrupted)",
               r"(lose|loses|losing|lost|without|no) (the )?(connection|connectivity|link|network|uplink|signal|internet)",
               r"(connection|connectivity|link|network) (availability|outages?|loss|failures?|drops?)",
               r"(when|if|once) (the )?(device|sensor|station|phone|site) (goes|is) offline")),
    Choice("duty_cycle", "Observation or power requirement changes",
           ("observation or power requirement changes", "duty cycle", "duty cycles", "power requirement", "observation requirement",
            "power budget", "observation fraction", "active fraction", "observation time"),
           phrasings=(
               r"(observation|power|energy|duty|mission|service|battery)( requirement| requirements| budget| budgets| target"
               r"| targets| envelope| fraction| cycle| window| time)s? " + _CHANGES,
               r"(duty cycle|active observation|observation fraction|active fraction|average power)",
               r"(new|different|stricter|tighter|looser|higher|lower) (observation|power|energy|duty|mission|service) "
               r"(requirements?|budgets?|targets?|cycles?|fractions?)",
               r"(observe|observation|run|running|active) (more|longer|less|more often|less often|continuously)")),
)
LIMITATIONS = (
    Choice("information", "Filtering evidence may not transfer",
           ("filtering evidence may not transfer", "retained information", "information retained", "filtering evidence",
            "information loss", "information retention", "retention figures", "retained information figures"),
           phrasings=(
               r"(filtering|filter|retention|retained information|information|matched task|accuracy)( evidence| observations?"
               r"| figures?| numbers?| percentages?| estimates?| results?)? (may|might|could|will|would|does|do)( not|n't)? "
               r"(transfer|generalize|hold|carry over|apply)",
               r"(retained|retention of) information( percentages?| figures?| numbers?)? (are|is|were|was) (only |just )?"
               r"(supplied|assumed|illustrative|observations|estimates|given|fixed)",
               r"(supplied|illustrative|assumed|matched task) (retention|retained information|filtering|information)"
               r"( observations?| evidence| figures?| numbers?| percentages?)?",
               r"(filter|filtering|summary|summarization|compression) (may|might|could|will|can) (drop|lose|miss|discard|throw away)"
               r"( \w+){0,3} (information|events|detections|signal|anomalies|defects)",
               r"(lose|losing|lost|drop|dropping|miss|missing) (important |critical |rare |relevant )?(information|events"
               r"|detections|anomalies|defects)",
               r"(is|are) (only |just |merely )?(a |an )?(supplied|illustrative|assumed|given) observations?",
               r"(may|might|could|will|would)( not|n't) (hold|transfer|generalize|carry over|apply) (for|to) (other|new"
               r"|different|real|unseen|future) (documents?|tasks?|defects?|inputs?|data|workloads?|scenes?|images?|frames?"
               r"|sites?|fields?|requests?)")),
    Choice("network", "Connection rate may vary",
           ("connection rate may vary", "connection rate", "link rate", "link speed", "bandwidth varies", "network variability",
            "variable bandwidth", "network congestion", "congestion", "jitter", "tail latency", "queueing"),
           phrasings=(
               r"(connection|link|network|upload|uplink|bandwidth)( rate| speed| throughput| bandwidth| quality| conditions?)? "
               r"(may|might|could|will|can|does|do|would)( not)? (vary|varies|fluctuate|change|drop|degrade|differ|stay|hold)",
               r"(variable|varying|fluctuating|unstable|unreliable|congested|shared|degraded) (connection|link|network|bandwidth"
               r"|uplink|throughput)",
               r"(bandwidth|throughput|link speed|connection rate|network rate) (variability|variation|fluctuations?|drops?)",
               r"(symmetric|symmetrical) (link|rate|connection)( assumption)?", r"(queueing|queuing|tail latency|congestion)")),
    Choice("energy", "Power fixture needs target measurement",
           ("power fixture needs target measurement", "power fixture", "target measurement", "power measurement",
            "energy measurement", "measured power", "power figures", "energy figures", "power numbers"),
           phrasings=(
               r"(power|energy|wattage|draw|consumption)( fixture| figures?| numbers?| model| estimates?| values?| draw"
               r"| consumption)? (is|are|was|were) (only |just )?(illustrative|assumed|supplied|estimates?|estimated|modeled"
               r"|a fixture|fixtures|not measured|unmeasured|untested|unverified)",
               r"(measure|measured|measuring|measurement of|meter|metering|profile|profiling) (the )?(real |actual |target )?"
               r"(power|energy|draw|consumption)",
               r"(power|energy) (on|of) (the )?(real|actual|target|deployed) (device|hardware|station|sensor|phone|host)",
               r"(nobody|no one|never|not|nothing)( \w+){0,3} (measured|metered|profiled) (the |any |real |actual )*"
               r"(power|energy)",
               r"(thermal|heat|throttling|temperature) (behavior|effects?|limits?)( (is|are) (not )?(modeled|simulated))?")),
)


if TYPE_CHECKING:
    from mlsys_grader.core.labspec import Lab


def synthesis_choices(lab: Lab) -> dict[str, tuple[Choice, ...]]:
    """The recommendation (a placement or none), the rejected alternative (a tested placement), trigger, limitation."""
    return {"recommendation": PLACEMENTS,
            "rejected_alternative": tuple(c for c in PLACEMENTS if c.value in REJECTABLE),
            **default_synthesis_choices(lab)}


def final_choice_terms(lab: Lab, bundle: Bundle) -> ChoiceTerms:
    """The placements; the recommendation and rejected alternative are the synthesis answers."""
    s = bundle.synthesis
    recommended = {c.value for c in PLACEMENTS if c.value == s.recommendation}
    rejected = {value for value in REJECTABLE if value == s.rejected_alternative}
    return ChoiceTerms(f"{lab.lab_id}:{bundle.track}", PLACEMENTS, frozenset(recommended), frozenset(rejected))


# Evidence a rationale may cite (see ``evidence_quantities``): fields by their unit suffix, the percentages and the
# duty cycle as fractions, and what a student derives within a record.
_SUFFIX_UNITS = {"_ms": "millisecond", "_mb": "megabyte", "_w": "watt", "_wh": "watt_hour", "_mj": "millijoule",
                 "_hours": "hour"}
_FRACTION_KEYS = {"duty_cycle", "minimum_observation_fraction"}
# The same field in a record's baseline and result (and part D's designs), compared.
_COMPARED = {"remote_latency_ms": "millisecond", "request_upload_ms": "millisecond", "latency_ms": "millisecond",
             "uploaded_payload_mb": "megabyte", "raw_payload_mb": "megabyte", "required_memory_mb": "megabyte",
             "execution_ms": "millisecond", "average_power_w": "watt", "energy_wh": "watt_hour",
             "active_observation_hours": "hour"}
# Two quantities one arm holds side by side.
_PAIRS = (("remote_latency_ms", "local_latency_ms", "millisecond"), ("remote_latency_ms", "deadline_ms", "millisecond"),
          ("latency_ms", "deadline_ms", "millisecond"), ("execution_ms", "deadline_ms", "millisecond"),
          ("average_power_w", "average_power_budget_w", "watt"), ("raw_payload_mb", "deadline_boundary_payload_mb", "megabyte"),
          ("uploaded_payload_mb", "upload_limit_mb", "megabyte"))
_SHARES = (("required_memory_mb", "memory_capacity_mb"), ("execution_ms", "deadline_ms"),
           ("request_upload_ms", "remote_latency_ms"), ("average_power_w", "average_power_budget_w"),
           ("uploaded_payload_mb", "raw_payload_mb"))


def _numbers(arm: dict[str, Any], found: list[tuple[float, str]]) -> None:
    for key, value in arm.items():
        if isinstance(value, dict):
            _numbers(value, found)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if key.endswith("_pct"):
                found.append((float(value) / 100.0, FRACTION))
            elif key in _FRACTION_KEYS:
                found.append((float(value), FRACTION))
            else:
                unit = next((u for suffix, u in _SUFFIX_UNITS.items() if key.endswith(suffix)), None)
                if unit is not None:
                    found.append((float(value), unit))


def evidence_quantities(record: RecordedArms) -> list[tuple[float, str]]:
    """Every field with a unit in every arm, the percentages and duty cycle, and what a student derives within the
    record: each ``_COMPARED`` field baseline vs result (and between part D's designs), each ``_PAIRS`` pair within an
    arm, and each ``_SHARES`` part of its whole."""
    found: list[tuple[float, str]] = []
    arms = [arm for arm in (record.baseline, record.result, *record.alternatives) if isinstance(arm, dict)]
    flat: list[dict[str, Any]] = [arm["breakdown"] for arm in arms if isinstance(arm.get("breakdown"), dict)]
    for arm in arms:
        _numbers(arm, found)
    for i, first in enumerate(arms):
        for second in arms[i + 1:]:
            for key, unit in _COMPARED.items():
                found += compared(first.get(key), second.get(key), unit, both=True)
    for arm in (*arms, *flat):
        for first_key, second_key, unit in _PAIRS:
            found += compared(arm.get(first_key), arm.get(second_key), unit, both=True)
        for part, whole in _SHARES:
            found += share(arm.get(part), arm.get(whole))
    return found
