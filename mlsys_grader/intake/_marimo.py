"""The book's marimo lab exports, read exactly as the book's report code writes them.

A student of the book's marimo labs downloads one of two files, both holding the same evidence:

* the **JSON snapshot** (``<lab_id>_snapshot.json``): the whole report, with the lab's
  captures under ``result_snapshot.captures`` and copies of them elsewhere
  (``predictions``, ``knob_settings``, ``evidence_summary``, ``binding_constraints``,
  ``decisions``, ``final_decision``, ``reflections``, ``residual_risk``);
* the **Markdown report** (``<lab_id>_report.md``): the same report in words, with
  ``result_snapshot`` embedded verbatim as a JSON block under "### MLSysIM Result Snapshot"
  and the predictions, evidence summary (Python literals), final decision, reflections and
  residual risk as lists.

:func:`read_export` parses either into a :class:`MarimoExport`; :func:`export_bundle`
turns its captures into a bundle; :func:`export_findings` checks the file against itself;
:data:`IMPOSSIBLE` says what the grade finds that the lab never downloads (the core reads it as
:class:`~mlsys_grader.core.grading.OnlyWhenComplete`, see :mod:`._reader`).
All of these findings are ``integrity`` findings that void the part they name:

* each capture's ``upstream_fingerprint`` is the lab's own seal (:func:`~mlsys_grader.core.seal.book_seal` of
  ``{"track": track, "inputs": upstream_inputs}``, where ``upstream_inputs`` is what the lab's notebook seals the
  capture over, :meth:`~mlsys_grader.core.roles.LabRules.upstream_inputs` of its inputs: Lab 07 and Lab 11 seal
  each capture's own inputs); a capture whose track or inputs no longer match it was edited;
* a capture that disagrees with a copy of it elsewhere in the report was edited;
* the lab renders its download only once its own audit is complete (every part captured,
  current and contrasting, the synthesis answered), so a stale, missing or
  non-contrasting part, or an incomplete synthesis, did not come from the lab as is.

``metadata.mlsysim_version`` is a static default of the book's report code ("0.1.2"
whatever ran) and is never read; whether numbers that do not replay come from another
mlsysim is decided by the grader from the pattern of the mismatch.

The layout of each lab's export (which snapshot keys hold the synthesis answers, what
``binding_constraints`` repeats) is the book's report code, declared by the lab module
(:attr:`~mlsys_grader.core.labspec.Lab.marimo_layout`); an export is matched to the
lab by the evaluator family its captures name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard, get_args

from ..core.context import first_difference
from ..core.jsonio import loads_strict
from ..core.labspec import Binding, MarimoLayout
from ..core.models import Bundle, EvidenceRecord, PartId, Synthesis, part_key
from ..core.replayer import Replayer
from ..core.report import Finding, PartName
from ..core.seal import book_seal
from ..errors import BundleFormatError
from ..labs import get_lab, lab_ids
from ..replay import Replay

SNAPSHOT_HEADING = "### MLSysIM Result Snapshot"
REPORT_SCHEMA_VERSION = "1.0"
RECORD_FIELDS = ("track", "part", "prediction", "inputs", "baseline", "result", "alternatives", "decision",
                 "model_key", "chosen_result", "result_role")
"""The fields of a capture kept in an :class:`EvidenceRecord` (the book's ``to_dict``)."""
ORIGINS = {"json": "marimo-json", "markdown": "marimo-md"}
_MAX_LITERAL_CHARS = 4 * 1024 * 1024
"""A Markdown evidence-summary line longer than this is not read as a Python literal."""


# -- the layout of each lab's export (the lab declares it: Lab.marimo_layout) ----------

def _layout(lab_id: str) -> MarimoLayout:
    layout = get_lab(lab_id).marimo_layout
    if layout is None:
        raise BundleFormatError(f"lab {lab_id} has no marimo export layout, so its marimo reports cannot be read")
    return layout


def _marimo_labs() -> dict[str, str]:
    """Evaluator family (the lab's ``model_id``) → lab id, for every registered lab with a marimo layout (first id wins)."""
    found: dict[str, str] = {}
    for lab_id in lab_ids():
        lab = get_lab(lab_id)
        if lab.marimo_layout is not None:
            found.setdefault(lab.model_id, lab_id)
    return found


# -- reading -------------------------------------------------------------------------

@dataclass(frozen=True)
class MarimoExport:
    """One export as read: the snapshot, the copies the file repeats, and its form."""

    form: str
    """``json`` (the JSON snapshot) or ``markdown`` (the Markdown report)."""
    lab_id: str
    snapshot: Mapping[str, Any]
    report: Mapping[str, Any]
    """The report's sections; for a Markdown report only those it prints (parsed back)."""
    unreadable: tuple[str, ...] = field(default=())
    """Markdown sections that are present but cannot be read back (edited by hand)."""
    other_snapshots: int = 0
    """JSON snapshot blocks a Markdown report holds besides the one under its heading that differ from it (the lab writes
    one): which is this session's cannot be told, so nothing in the report is trusted."""

    @property
    def origin(self) -> str:
        return ORIGINS[self.form]

    @property
    def layout(self) -> MarimoLayout:
        return _layout(self.lab_id)

    @property
    def parts(self) -> tuple[str, ...]:
        """The lab's part letters."""
        return get_lab(self.lab_id).part_ids()

    @property
    def captures(self) -> Mapping[str, Any]:
        return self.snapshot["captures"]

    @property
    def track(self) -> Any:
        return self.snapshot.get("track")


def is_snapshot(value: Any) -> bool:
    """True for the JSON of a marimo report: an object with ``result_snapshot.captures``."""
    snapshot = value.get("result_snapshot") if isinstance(value, Mapping) else None
    return isinstance(snapshot, Mapping) and isinstance(snapshot.get("captures"), Mapping)


def looks_like_markdown_report(data: bytes) -> bool:
    """True when ``data`` is text holding the Markdown report's embedded snapshot heading."""
    return SNAPSHOT_HEADING.encode() in data and data.lstrip()[:1] not in (b"{", b"[")


def _lab_of(captures: Mapping[str, Any]) -> str:
    keys = {str(c.get("model_key", "")) for c in captures.values() if isinstance(c, Mapping)}
    known = _marimo_labs()
    for model, lab_id in known.items():
        if any(key == model or key.startswith(model + ".") for key in keys):
            return lab_id
    raise BundleFormatError(f"marimo report captures name no known evaluator (model_key {sorted(keys)[:3]}); expected one of "
                            f"{sorted(known)}")


def export_from_json(value: Any) -> MarimoExport:
    """A JSON snapshot download (parsed) as a :class:`MarimoExport`."""
    if not is_snapshot(value):
        raise BundleFormatError("marimo report has no result_snapshot.captures")
    snapshot = value["result_snapshot"]
    return MarimoExport("json", _lab_of(snapshot["captures"]), snapshot, value)


def _sections(text: str) -> dict[str, str]:
    """Level-2 sections of the Markdown report: title → body (the snapshot block left out)."""
    body = text.split("\n" + SNAPSHOT_HEADING, 1)[0]
    sections: dict[str, str] = {}
    for chunk in re.split(r"^## ", body, flags=re.M)[1:]:
        title, _, rest = chunk.partition("\n")
        sections.setdefault(title.strip(), rest.strip("\n"))
    return sections


def _items(body: str, keys: tuple[str, ...]) -> dict[str, str]:
    """``- key: value`` items in the order the report writes them; a value runs to the next key (or the end)."""
    found: dict[str, str] = {}
    starts = []
    position = 0
    for key in keys:
        match = re.compile(rf"^- {re.escape(key)}: ?", re.M).search(body, position)
        if match is None:
            continue
        starts.append((key, match.start(), match.end()))
        position = match.end()
    for index, (key, _, value_start) in enumerate(starts):
        end = starts[index + 1][1] if index + 1 < len(starts) else len(body)
        found[key] = body[value_start:end].rstrip()
    return found


def _line_items(body: str) -> dict[str, str]:
    """One-line ``- Key: value`` items (the report's Lab and Track sections)."""
    return {match.group(1): match.group(2).strip() for match in re.finditer(r"^- ([^:\n]+): ?(.*)$", body, flags=re.M)}


def _literal(text: str) -> Any:
    """A Python literal the report printed with ``str()``; raises ValueError when it is not one."""
    if len(text) > _MAX_LITERAL_CHARS:
        raise ValueError("too long")
    try:
        return ast.literal_eval(text)
    except (SyntaxError, RecursionError, MemoryError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


def export_from_markdown(data: bytes) -> MarimoExport:
    """A Markdown report download as a :class:`MarimoExport` (its embedded snapshot plus the copies it prints)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleFormatError(f"marimo Markdown report is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    match = re.search(re.escape(SNAPSHOT_HEADING) + r"[ \t]*\n+```json[ \t]*\n(.*?)\n```", text, flags=re.S)
    if match is None:
        raise BundleFormatError(f"marimo Markdown report has no JSON block under {SNAPSHOT_HEADING!r}; download the report again")
    snapshot = loads_strict(match.group(1))
    if not is_snapshot({"result_snapshot": snapshot}):
        raise BundleFormatError(f"the JSON block under {SNAPSHOT_HEADING!r} has no captures; download the report again")
    sections = _sections(text)
    lab_id = _lab_of(snapshot["captures"])
    parts = get_lab(lab_id).part_ids()
    report: dict[str, Any] = {}
    unreadable: list[str] = []
    if "Lab" in sections:
        report["metadata"] = {"lab_id": _line_items(sections["Lab"]).get("Lab ID")}
    if "Track And Scenario" in sections:
        report["track"] = _line_items(sections["Track And Scenario"]).get("Track")
    if "Predictions" in sections:
        report["predictions"] = _items(sections["Predictions"], parts)
    if "Evidence Summary" in sections:
        summary = {}
        for part, literal in _items(sections["Evidence Summary"], parts).items():
            try:
                summary[part] = _literal(literal)
            except ValueError:
                unreadable.append(f"Evidence Summary {part}")
        report["evidence_summary"] = summary
    if "Final Decision" in sections:
        report["final_decision"] = _items(sections["Final Decision"], ("recommendation", "rejected_alternative", "rationale"))
    if "Reflections" in sections:
        report["reflections"] = _items(sections["Reflections"], ("rationale", _layout(lab_id).reflections_trigger))
    if "Residual Risk" in sections:
        report["residual_risk"] = sections["Residual Risk"].strip()
    report["result_snapshot"] = snapshot
    return MarimoExport("markdown", lab_id, snapshot, report, tuple(unreadable), _other_snapshots(text, match, snapshot))


def _other_snapshots(text: str, graded: re.Match[str], snapshot: Any) -> int:
    """How many other fenced JSON blocks of ``text`` hold a result snapshot that is not ``snapshot`` (a block that does not
    parse, or is not a snapshot, is the report's own business: only a second snapshot competes with the graded one)."""
    others = 0
    for block in re.finditer(r"```json[ \t]*\n(.*?)\n```", text, flags=re.S):
        if block.start(1) == graded.start(1):
            continue
        try:
            value = loads_strict(block.group(1))
        except (BundleFormatError, ValueError):
            continue
        if is_snapshot({"result_snapshot": value}) and value != snapshot:
            others += 1
    return others


# -- the bundle ------------------------------------------------------------------------

def _rationale(export: MarimoExport) -> str:
    for section in ("final_decision", "reflections"):
        holder = export.report.get(section)
        if isinstance(holder, Mapping) and isinstance(holder.get("rationale"), str):
            return holder["rationale"]
    return ""


def export_bundle(export: MarimoExport, replay: Replayer | None = None) -> Bundle:
    """The captures of an export as a sealed bundle.

    Each capture becomes an :class:`EvidenceRecord` with no mlsysim version (the export's
    label is a static default) and the book's seal of its recorded inputs (the capture's own
    seal is checked against it by :func:`export_findings`).  Final controls are
    inferred from the records by the lab module, so staleness is found where the lab
    finds it: between parts (Lab 11 D against C) and against the export's track.  The
    records carry no lock times: predictions in the marimo labs are not timed.  Inferring a part's controls may
    plan the parts it depends on (Lab 11 D on each part C setting): through ``replay``, by default a live one of its
    own (reading a file never depends on what a grader replayed before).
    """
    lab = get_lab(export.lab_id)
    replay = replay or Replay()
    layout = export.layout
    track = export.track
    if track not in lab.tracks:
        raise BundleFormatError(f"marimo report track must be one of {', '.join(lab.tracks)} (got {track!r})")
    evidence: dict[PartId, EvidenceRecord] = {}
    controls: dict[PartId, dict[str, Any]] = {}
    for part in map(part_key, lab.part_ids()):
        capture = export.captures.get(part)
        if not isinstance(capture, Mapping):
            continue
        fields = {name: capture[name] for name in RECORD_FIELDS if name in capture}
        if isinstance(fields.get("alternatives"), tuple):
            fields["alternatives"] = list(fields["alternatives"])
        fields.setdefault("alternatives", [])
        inputs = fields.get("inputs")
        fields["upstream_fingerprint"] = lab.fingerprint(str(capture.get("track", track)), part,
                                                         inputs if isinstance(inputs, Mapping) else {})
        try:
            record = EvidenceRecord.model_validate(fields)
        except ValueError as exc:
            raise BundleFormatError(f"marimo capture {part} does not match the evidence record: {str(exc).splitlines()[0]}") from exc
        evidence[part] = record
        inferred = lab.infer_controls(replay, track, part, record) if record.baseline and record.result else None
        if inferred is not None:
            controls[part] = inferred[0]
    snapshot = export.snapshot
    answers = layout.answers(snapshot)  # the lab's mapping: which answers the snapshot gives the bundle
    try:
        synthesis = Synthesis.model_validate({**answers, "rationale": _rationale(export)})
        bundle = Bundle(lab=export.lab_id, track=track, controls=controls, evidence=evidence, synthesis=synthesis)
    except ValueError as exc:
        raise BundleFormatError(f"marimo report answers do not match the bundle schema: {str(exc).splitlines()[0]}") from exc
    return bundle.sealed()


# -- the export checked against itself ------------------------------------------------------

class _Missing:
    """A copy the report should hold and does not."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
EDITED = "submit the file exactly as the lab downloaded it, or recapture the part in the lab and download again"
EDITED_FILE = "submit the file exactly as the lab downloaded it, or download it again from the lab"


def _shown(value: Any) -> str:
    """A value for a message: short, floats to 6 significant digits, containers by size."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return f"{{{len(value)} fields}}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_part_name(part: str) -> TypeGuard[PartName]:
    return part in get_args(PartName)


def _integrity(part: str, message: str, expected: Any = None, actual: Any = None) -> Finding:
    if not _is_part_name(part):
        raise ValueError(f"a finding names a part A–E, synthesis or bundle (got {part!r})")
    return Finding(part=part, criterion="integrity", message=message, expected=expected, actual=actual, voids_part=True,
                   code="integrity.export")


def _fingerprint_finding(export: MarimoExport, part: str, capture: Mapping[str, Any]) -> Finding | None:
    """The capture against the lab's own seal; the finding names the track or the input field that moved."""
    recorded = capture.get("upstream_fingerprint")
    track, inputs = capture.get("track"), capture.get("inputs")  # read from strict JSON: always serialisable
    lab = get_lab(export.lab_id)

    def seal(on_track: Any, over: Any) -> str:
        """The lab's seal of a capture with these inputs (over what the lab declares it seals: its upstream inputs)."""
        return book_seal(on_track, lab.upstream_inputs(part, over) if isinstance(over, Mapping) else over)

    actual = seal(track, inputs)
    if recorded == actual:
        return None
    sealed_tracks = [t for t in lab.tracks if t != track and recorded == seal(t, inputs)]
    if sealed_tracks:
        return _integrity(part, f"Part {part} is labelled track {track!r}, but the lab sealed it on track {sealed_tracks[0]!r} "
                                f"(its upstream_fingerprint); {EDITED}.", expected=sealed_tracks[0], actual=track)
    copy = export.report.get("knob_settings", {}).get(part) if isinstance(export.report.get("knob_settings"), Mapping) else None
    where = None
    if copy is not None and copy != inputs and recorded == seal(track, copy):
        where = first_difference(copy, inputs, "inputs")
    if where is None:
        where = _arm_input_difference(capture)
    if where is not None:
        name, sealed, now = where
        return _integrity(part, f"Part {part}'s {name} is {_shown(now)}, but the lab sealed the capture with {_shown(sealed)} "
                                f"(its upstream_fingerprint no longer matches its track and inputs); {EDITED}.",
                          expected=sealed, actual=now)
    return _integrity(part, f"Part {part}'s inputs do not match the lab's own seal of them (its upstream_fingerprint is not "
                            f"the fingerprint of its track and inputs); {EDITED}.",
                      expected=recorded, actual=actual)


def _arm_input_difference(capture: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """Where the capture's inputs disagree with the inputs its own arms were computed from."""
    inputs = capture.get("inputs")
    if not isinstance(inputs, Mapping):
        return None
    for arm_name in ("baseline", "result"):
        arm = capture.get(arm_name)
        arm_inputs = arm.get("inputs") if isinstance(arm, Mapping) else None
        if not isinstance(arm_inputs, Mapping):
            continue
        nested = inputs.get(arm_name)
        if isinstance(nested, Mapping):  # Lab 11: inputs = {"baseline": arm inputs, "result": arm inputs}
            found = first_difference(arm_inputs, nested, f"inputs.{arm_name}")
        else:  # Lab 07: the controls appear among the intervention's inputs
            shared = {key: value for key, value in inputs.items() if key in arm_inputs} if arm_name == "result" else {}
            found = first_difference({key: arm_inputs[key] for key in shared}, shared, "inputs")
        if found:
            return found
    return None


def _copies(export: MarimoExport, part: str, capture: Mapping[str, Any], binding: Binding) -> list[tuple[str, str, Any, Any]]:
    """(capture field, where its copy is, copy, capture value) for each copy that disagrees with the capture."""
    report = export.report
    wanted: list[tuple[str, str, Any, Any]] = []

    def section(name: str) -> Any:
        holder = report.get(name)
        return holder.get(part, _MISSING) if isinstance(holder, Mapping) else _MISSING

    if "predictions" in report or export.form == "json":
        wanted.append(("prediction", f"predictions.{part}", section("predictions"), capture.get("prediction")))
    if "knob_settings" in report or export.form == "json":
        wanted.append(("inputs", f"knob_settings.{part}", section("knob_settings"), capture.get("inputs")))
    if "evidence_summary" in report or export.form == "json":
        summary = section("evidence_summary")
        for arm in ("baseline", "result", "alternatives"):
            copy = summary.get(arm, _MISSING) if isinstance(summary, Mapping) else _MISSING
            wanted.append((arm, f"evidence_summary.{part}.{arm}", copy, capture.get(arm)))
    if "binding_constraints" in report or export.form == "json":
        held = report.get("binding_constraints")
        for key, (owner, name, value) in binding.items():
            if owner == part:
                copy = held.get(key, _MISSING) if isinstance(held, Mapping) else _MISSING
                wanted.append((name, f"binding_constraints.{key}", copy, value))
    differing = []
    for name, where, copy, value in wanted:
        if copy is _MISSING:
            differing.append((name, where, _MISSING, value))
            continue
        found = first_difference(value, copy, name)
        if found:
            differing.append((found[0], where + found[0][len(name):], found[2], found[1]))
    return differing


def _copy_finding(part: str, differing: list[tuple[str, str, Any, Any]]) -> Finding:
    name, where, copy, value = differing[0]
    more = f" (and {len(differing) - 1} more cop{'y' if len(differing) == 2 else 'ies'})" if len(differing) > 1 else ""
    if copy is _MISSING:
        text = f"Part {part}'s copy in {where} is missing{more}, though the lab writes it from the capture"
        copy = None
    else:
        text = (f"Part {part}'s captured {name} is {_shown(value)}, but its copy in {where} says {_shown(copy)}{more}; "
                "the lab writes both from the same capture")
    return _integrity(part, f"{text}, so the export was edited; {EDITED}.", expected=copy, actual=value)


def _synthesis_findings(export: MarimoExport) -> list[Finding]:
    """Copies of the synthesis answers, and the answers the lab requires before it downloads anything."""
    layout, snapshot, report = export.layout, export.snapshot, export.report
    findings: list[Finding] = []
    answers = {"recommendation": snapshot.get(layout.recommendation), "rejected_alternative": snapshot.get(layout.rejected),
               "reevaluation_trigger": snapshot.get(layout.trigger), "residual_risk": snapshot.get("residual_risk")}
    for held in layout.decision_copies(export.captures, snapshot):  # the lab's mapping: answers a captured decision holds
        if held.captured != held.copy:
            findings.append(_integrity(held.part, f"Part {held.part}'s captured decision {held.key} is {_shown(held.captured)}, but "
                                                  f"its copy in the result snapshot says {_shown(held.copy)}; the lab writes both "
                                                  f"from the same capture, so the export was edited; {EDITED}.",
                                       expected=held.copy, actual=held.captured))
    copies = [("decisions", "recommendation", "recommendation"), ("decisions", "rejected_alternative", "rejected_alternative"),
              ("decisions", "reevaluation_trigger", "reevaluation_trigger"), ("final_decision", "recommendation", "recommendation"),
              ("final_decision", "rejected_alternative", "rejected_alternative"),
              ("reflections", layout.reflections_trigger, "reevaluation_trigger")]
    differing = []
    for section, key, answer in copies:
        if section not in report and export.form == "markdown":
            continue
        holder = report.get(section)
        copy = holder.get(key, _MISSING) if isinstance(holder, Mapping) else _MISSING
        if copy is _MISSING or str(copy) != str(answers[answer]) or (export.form == "json" and copy != answers[answer]):
            differing.append((f"{section}.{key}", copy, "the result snapshot", answers[answer]))
    if "residual_risk" in report or export.form == "json":
        copy = report.get("residual_risk", _MISSING)
        if copy is _MISSING or str(copy) != str(answers["residual_risk"]):
            differing.append(("residual_risk", copy, "the result snapshot", answers["residual_risk"]))
    rationales = [report[s].get("rationale") for s in ("final_decision", "reflections")
                  if isinstance(report.get(s), Mapping) and "rationale" in report[s]]
    if len(set(map(str, rationales))) > 1:
        differing.append(("reflections.rationale", rationales[1], "final_decision.rationale", rationales[0]))
    if differing:
        where, copy, source, value = differing[0]
        copy_text = "is missing" if copy is _MISSING else f"says {_shown(copy)}"
        findings.append(_integrity("synthesis", f"The synthesis answer in {where} {copy_text}, but {source} holds "
                                                f"{_shown(value)}; the lab writes both from the same answers, so the export was "
                                                f"edited; {EDITED_FILE}.", expected=value, actual=None if copy is _MISSING else copy))
    missing = layout.missing(snapshot, bool(_rationale(export).strip()))  # the lab's mapping: what it requires
    if missing:
        findings.append(_integrity("synthesis", f"The export's synthesis lacks {', '.join(missing)}, but the lab downloads its "
                                                "report only once the synthesis is complete; complete it in the lab and download "
                                                "the report again.", expected="a complete synthesis", actual=missing))
    return findings


def _file_findings(export: MarimoExport) -> list[Finding]:
    """The export as a whole: the lab it says it is, its track, incomplete fields, unreadable sections."""
    report, findings = export.report, []
    metadata = report.get("metadata")
    expected_id = export.layout.book_lab_id
    book_id = metadata.get("lab_id") if isinstance(metadata, Mapping) else None
    if book_id != expected_id:
        findings.append(_integrity("bundle", f"The export says it is lab {_shown(book_id)}, but its captures are {expected_id}'s; "
                                             f"{EDITED_FILE}.", expected=expected_id, actual=book_id))
    if export.form == "json":
        version = metadata.get("report_schema_version") if isinstance(metadata, Mapping) else None
        if version != REPORT_SCHEMA_VERSION:
            findings.append(_integrity("bundle", f"The export's report_schema_version is {_shown(version)}; the book's labs write "
                                                 f"{REPORT_SCHEMA_VERSION!r}; {EDITED_FILE}.", expected=REPORT_SCHEMA_VERSION,
                                       actual=version))
    if ("track" in report or export.form == "json") and report.get("track") != export.track:
        findings.append(_integrity("bundle", f"The export's track is {_shown(report.get('track'))}, but its result snapshot was "
                                             f"taken on {export.track!r}; {EDITED_FILE}.", expected=export.track,
                                   actual=report.get("track")))
    incomplete = report.get("incomplete_fields", [])
    if export.form == "json" and incomplete != []:
        named = [str(item) for item in incomplete] if isinstance(incomplete, list) else [str(incomplete)]
        letters = "".join(export.parts)
        parts = sorted({p for item in named for p in re.findall(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", item)}) or ["synthesis"]
        for part in parts:
            findings.append(_integrity(part, f"The export lists incomplete fields ({', '.join(named)[:120]}), but the lab "
                                             "downloads its report only once nothing is incomplete; complete the lab and download "
                                             "the report again.", expected=[], actual=named))
    if export.other_snapshots:
        message = (f"The report holds {export.other_snapshots + 1} different JSON result snapshots, but the lab writes one, "
                   f"so which is this session's cannot be told and none of its evidence is trusted; {EDITED_FILE}.")
        for part in (*export.parts, "synthesis"):
            findings.append(_integrity(part, message, expected=1, actual=export.other_snapshots + 1))
    for where in export.unreadable:
        part = where.rsplit(" ", 1)[-1]
        findings.append(_integrity(part, f"Part {part}'s copy in the report's {where.rsplit(' ', 1)[0]} cannot be read back as "
                                         f"the lab prints it; {EDITED}.", expected="the lab's printed evidence", actual=where))
    return findings


def export_findings(export: MarimoExport) -> list[Finding]:
    """Everything the export says against itself, as ``integrity`` findings voiding the parts they name."""
    findings = _file_findings(export)
    binding = export.layout.binding(export.captures)
    for part in export.parts:
        capture = export.captures.get(part)
        if not isinstance(capture, Mapping):
            continue  # a missing part is found by the grader, then read through IMPOSSIBLE
        if capture.get("track") != export.track:
            findings.append(_integrity(part, f"Part {part} was captured on track {_shown(capture.get('track'))}, but the export "
                                             f"is for {export.track!r}, and the lab clears every capture when the track changes; "
                                             f"{EDITED}.", expected=export.track, actual=capture.get("track")))
        sealed = _fingerprint_finding(export, part, capture)
        if sealed is not None:
            findings.append(sealed)
        differing = _copies(export, part, capture, binding)
        if differing:
            findings.append(_copy_finding(part, differing))
    return findings + _synthesis_findings(export)


IMPOSSIBLE = {  # criterion of a grade's finding -> why the lab could not have downloaded it so
    "missing": "is missing from this export, but the lab downloads its report only once every part is captured",
    "stale": "is stale in this export, but the lab downloads its report only once every part is current",
    "contrast": "does not contrast its baseline in this export, but the lab downloads its report only once every part does",
}


def read_export(data: bytes) -> MarimoExport | None:
    """The marimo export in ``data`` (JSON snapshot or Markdown report), or None when it is neither."""
    if looks_like_markdown_report(data):
        return export_from_markdown(data)
    value = loads_strict(data)
    return export_from_json(value) if is_snapshot(value) else None
