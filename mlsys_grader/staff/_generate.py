"""What ``mlsys-grader generate`` writes from the labs: Otter masters, student notebooks, reference submissions.

Three kinds, each for every registered lab (or ``--lab``), each with ``--check`` (write nothing; list the
committed files that differ from what would be generated; exit 1 when any does):

- **masters** — each lab's Otter master (where :meth:`Lab.master_path` says), written from the lab
  alone: its notebook text (:attr:`Lab.notebook`, the seed lab's words part by part), controls, the
  rubric's points, and as the solution the answers of :func:`~mlsys_grader.staff.solve` for the masters'
  track with the lab's hand-written synthesis (:meth:`Lab.reference_answers`).  A lab without notebook
  text has a hand-written master and is skipped.  ``--check`` compares the notebook file byte for byte
  (cell ids are stable: an unchanged lab rebuilds an identical master).
- **notebooks** — the student notebooks in ``assignments/``, by ``otter assign`` from the masters
  (:func:`~mlsys_grader.staff.regenerate`; ``--check`` is :func:`~mlsys_grader.staff.drift`).
- **references** — for each track, the student notebook filled in as a diligent student would (``solve``'s
  controls and predictions, the hand-written synthesis), executed top to bottom in a real kernel, written with
  the bundle it saved: ``reference-<track>.ipynb`` beside the master and the bundle in the quick start's
  ``examples/submissions/<lab>-<track>.json`` (beside the notebook for a lab whose master lives elsewhere).
  Execution records times, so ``--check`` executes nothing: it compares what is not a time — every cell's
  source, and the bundle's track, controls, predictions and synthesis answers — with what would be filled in.

Run them in that order after changing a lab's words: masters, then notebooks, then references.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import tempfile
import textwrap
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import default_rubric
from ..core.embed import BUNDLE_MIME, bundle_from_outputs, find_embedded_bundles
from ..core.labspec import Control, NotebookText, default_master_path
from ..core.models import part_key
from ..core.report import HIDDEN_ITEMS
from ..labs import Lab, get_lab, lab_ids
from ._assign import drift, regenerate, student_path
from ._solve import solve

KINDS = ("masters", "notebooks", "references")
MASTER_TRACK = "tinyml"
"""The track the masters are written for (the seeds' default); their solution is that track's."""


@dataclass(frozen=True)
class Generated:
    """What one ``generate`` run wrote, or (``check``) which committed files differ from what it would write."""

    kind: str
    written: tuple[Path, ...] = ()
    differs: tuple[tuple[Path, str], ...] = ()
    """(committed file, what differs) for ``--check``; empty when everything matches."""


ASSIGNMENT_CONFIG = """# ASSIGNMENT CONFIG
name: {lab}
init_cell: false
check_all_cell: false
run_tests: true
export_cell: false
tests:
  files: false
  ok_format: false
"""


def _python(value: Any) -> str:
    """A control value as the master writes it."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _allowed(control: Control) -> str:
    if control.kind == "choice":
        return "one of " + ", ".join(_python(c) for c in control.choices if c is not None)
    return control.describe()


def _control_lines(lab: Lab, part: str, defaults: Mapping[str, Any], solution: Mapping[str, Any]) -> list[str]:
    labels = _text(lab).labels
    lines = []
    for control in lab.parts[part].controls:
        if control.decision:
            continue
        label = labels.get(control.name, control.label[0].lower() + control.label[1:])
        lines.append(f"{control.name} = {_python(defaults[control.name])}  # {label}: {_allowed(control)}")
    changed = {name: value for name, value in solution.items() if name in defaults and defaults[name] != value}
    if changed:
        lines.append("# BEGIN SOLUTION NO PROMPT")
        lines += [f"{name} = {_python(value)}" for name, value in changed.items()]
        lines.append("# END SOLUTION")
    return lines


def _tests(lab_id: str, part: str, items: dict[str, float]) -> list[Any]:
    """One test case per rubric item, worth that item's points; hidden items become hidden tests.

    Points come from the rubric file only; a formative item (0 points) gets no test: its
    feedback is in the grade report, and a 0-point test would only add noise to Gradescope.
    """
    from nbformat.v4 import new_code_cell

    cells = []
    for item, points in items.items():
        if points == 0:
            continue
        name = f"test_{part}_{item}"
        config = f"points: {points:g}" + ("\nhidden: true" if item in HIDDEN_ITEMS else "")
        cells.append(new_code_cell(
            f'""" # BEGIN TEST CONFIG\n{config}\n""" # END TEST CONFIG\n'
            f"def {name}():\n"
            f"    from mlsys_grader.student import assert_item\n"
            f"    assert_item({lab_id!r}, {part!r}, {item!r})\n"
            f"{name}()"
        ))
    return cells


def _question(name: str) -> Any:
    from nbformat.v4 import new_raw_cell

    # Otter's own check cell (grader.check) prints its test machinery ("Error at line 16 in test ...") and repeats a
    # skipped part's one reason once per test; the notebook's check cell is lab.check, written after the question.
    return new_raw_cell(f"# BEGIN QUESTION\nname: {name}\ncheck_cell: false")


def _check(part: str) -> Any:
    from nbformat.v4 import new_code_cell

    return new_code_cell(f"lab.check({part!r})")


def _text(lab: Lab) -> NotebookText:
    if lab.notebook is None:
        raise LookupError(f"lab {lab.lab_id} declares no notebook text (Lab.notebook), so its master is written by hand")
    return lab.notebook


def build_master(lab_id: str, synthesis: dict[str, Any] | None = None) -> Any:
    """The master notebook of ``lab_id``; its synthesis solution is ``synthesis`` (default: the lab's hand-written
    reference answers for the master's track, :meth:`~mlsys_grader.core.labspec.Lab.reference_answers`)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

    lab = get_lab(lab_id)
    rubric = default_rubric(lab_id)
    text = _text(lab)
    reference = solve(lab_id, MASTER_TRACK)
    tracks = ", ".join(f'"{track}"' for track in lab.tracks)
    cells = [
        new_raw_cell(ASSIGNMENT_CONFIG.format(lab=lab_id)),
        new_markdown_cell(f"# {text.title}\n\n{text.framing}\n\n"
                          "## How this notebook works\n\n"
                          "Every part follows the book's loop: **predict** first, then **run** the baseline and your "
                          "intervention through the book's reference evaluators (`mlsysim` 0.3.0), then **capture** the "
                          "evidence. `lab.run` refuses to show a result before its prediction is locked, and a changed "
                          "prediction after the result counts as late. Every capture saves "
                          f"`{lab_id}-submission.json` next to this notebook; that file is what gets graded, by replaying "
                          "every number. Set the controls as plain Python values (the allowed values are in the comment "
                          "beside each one); if you change a control after capturing, the evidence becomes **stale** — "
                          "capture again. `lab.progress()` shows where you stand, and the check cell after each part "
                          "(`lab.check(\"A\")`) runs the public checks for that part. A value that is not allowed "
                          "stops its cell with one line naming the allowed values: fix it and run the cell again. Run "
                          "the cells in order: a part's run cell runs the settings its controls cell locked.\n\n"
                          "Choose your deployment track below (TinyML, Mobile, Edge or Cloud). Evidence belongs to one "
                          "track; opening another track starts a new submission and keeps the old file aside."),
        new_code_cell("from mlsys_grader.student import open_lab\n\n"
                      f'TRACK = "{MASTER_TRACK}"  # one of {tracks}\n'
                      f"lab = open_lab({lab_id!r}, track=TRACK)\nlab"),
    ]
    for part in lab.part_ids():
        spec = lab.parts[part]
        heading, scenario, notes = text.parts[part].heading, text.parts[part].scenario, text.parts[part].notes
        record = reference.evidence[part_key(part)]
        solution = reference.controls[part_key(part)]
        choices = "\n".join(f"- `\"{value}\"` — {label}" for value, label in spec.predictions.items())
        items = rubric.parts[part]
        cells.append(_question(part))
        predict = f"**Predict first:** {spec.question}\n\n{choices}\n\nSet the controls, lock your prediction, then run the part."
        if scenario is None:  # the seed words it for the track: the session fills it in
            cells.append(new_markdown_cell(f"## Part {heading}"))
            cells.append(new_code_cell(f"lab.scenario({part!r})"))
            cells.append(new_markdown_cell(predict))
        else:
            cells.append(new_markdown_cell(f"## Part {heading}\n\n{scenario}\n\n{predict}"))
        cells.append(new_raw_cell("# BEGIN SOLUTION"))
        lines = [f"# Part {part} controls", *_control_lines(lab, part, spec.defaults(), solution), "",
                 f"# Your prediction: {spec.question}",
                 f"prediction_{part} = {_python(record.prediction)}  # SOLUTION",
                 f"lab.predict({part!r}, prediction_{part}"
                 + "".join(f", {c.name}={c.name}" for c in spec.controls if not c.decision) + ")"]
        cells.append(new_code_cell("\n".join(lines)))
        cells.append(new_raw_cell("# END SOLUTION"))
        cells.append(new_code_cell(f"lab.run({part!r})"))  # the controls its prediction cell locked: no name to be undefined
        cells.append(new_markdown_cell(f"**Calculation notes.** {notes}"))
        decisions = [c for c in spec.controls if c.decision]
        if decisions:
            cells.append(new_markdown_cell(text.decision_text[part]))
            cells.append(new_raw_cell("# BEGIN SOLUTION"))
            lines = [f"{c.name} = {_python(solution[c.name])}  # SOLUTION" for c in decisions]
            lines.append(f"lab.capture({part!r}, " + ", ".join(f"{c.name}={c.name}" for c in decisions) + ")")
            cells.append(new_code_cell("\n".join(lines)))
            cells.append(new_raw_cell("# END SOLUTION"))
        else:
            cells.append(new_code_cell(f"lab.capture({part!r})"))
        cells.append(new_raw_cell("# BEGIN TESTS"))
        cells += _tests(lab_id, part, items)
        cells.append(new_raw_cell("# END TESTS"))
        cells.append(new_raw_cell("# END QUESTION"))
        cells.append(_check(part))

    heading, prompt = text.synthesis
    session_options = {name: {c.value: c.label for c in choices} for name, choices in lab.synthesis_choices().items()}
    items = rubric.synthesis
    cells.append(new_markdown_cell(f"## {heading}\n\n{prompt}\n\nYour evidence so far:"))
    cells.append(new_code_cell("lab.progress()"))
    cells.append(_question("synthesis"))
    names = " and ".join(f"`{name}`" for name in session_options) if len(session_options) <= 2 else \
        ", ".join(f"`{name}`" for name in list(session_options)[:-1]) + f" and `{list(session_options)[-1]}`"
    cells.append(new_markdown_cell(
        f"Answer {names} with one of the values listed below (as the book labels them for your track), and write "
        "the rationale in your own words. It must compare your recommendation with the rejected alternative using "
        "numbers from your saved evidence (with their units, e.g. `4.61 ms` or `1.84x`), and name the remaining "
        "limitation and the re-evaluation trigger."))
    cells.append(new_code_cell("lab.synthesis_options()"))
    answers = {**reference.synthesis.model_dump(),
               **(synthesis if synthesis is not None else lab.reference_answers(MASTER_TRACK))}
    fields = lab.synthesis_fields
    lines = [f"{name} = {_python(answers[name])}  # SOLUTION" for name in fields]
    lines.append("lab.synthesis(" + ", ".join(f"{name}={name}" for name in fields) + ")")
    cells.append(new_raw_cell("# BEGIN SOLUTION"))
    cells.append(new_code_cell("\n".join(lines)))
    cells.append(new_raw_cell("# END SOLUTION"))
    cells.append(new_raw_cell("# BEGIN TESTS"))
    cells += _tests(lab_id, "synthesis", items)
    cells.append(new_raw_cell("# END TESTS"))
    cells.append(new_raw_cell("# END QUESTION"))
    cells.append(_check("synthesis"))
    cells.append(new_markdown_cell(
        "## Local evidence report\n\nAs the book's lab ends: the learning objectives, your prediction, settings, "
        "evidence and decision for each part, your final decision and the big takeaways — built from your saved "
        f"`{lab_id}-submission.json`, so it shows exactly what will be graded and what is still missing."))
    cells.append(new_code_cell("lab.report()"))
    cells.append(new_markdown_cell("## Self-check\n\nThe public checks of your saved bundle, rationale included. Their "
                                   "total is not your grade: two checks stay hidden until grades are published — that "
                                   "every number replays (its points are not in this total), and whether each prediction "
                                   "matched the numbers (feedback only, no points)."))
    cells.append(new_code_cell("lab.check()"))
    cells.append(new_markdown_cell(f"## Submission\n\nRun every cell in order first and **save the notebook**. The cell "
                                   "below says what is still missing and what it costs, then makes the zip to upload: it "
                                   f"holds this notebook and `{lab_id}-submission.json`, the evidence bundle the grader "
                                   "replays."))
    cells.append(new_code_cell("# Save your notebook first (File > Save), then run this cell to export your submission.\n"
                               "lab.export()"))
    for index, cell in enumerate(cells):
        cell["id"] = f"{lab_id}-{index:03d}"  # stable ids: rebuilding an unchanged master changes nothing
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(notebook)
    return notebook


# -- filling and executing a student notebook -----------------------------------------------------------------
def answers(lab_id: str, track: str) -> dict[str, object]:
    """Variable name → value a diligent student assigns in the notebook for ``track``."""
    bundle = solve(lab_id, track)
    values: dict[str, object] = {"TRACK": track}
    for part, controls in bundle.controls.items():
        values.update(controls)
        values[f"prediction_{part}"] = bundle.evidence[part].prediction
    synthesis = {**bundle.synthesis.model_dump(), **get_lab(lab_id).reference_answers(track)}
    for name in get_lab(lab_id).synthesis_fields:
        if synthesis.get(name) is not None:
            values[name] = synthesis[name]
    return values


def _literal(value: object) -> str:
    """Python source for ``value``: strings double-quoted as in the notebooks (long ones wrapped), the rest by ``repr``."""
    if not isinstance(value, str):
        return repr(value)
    if len(value) <= 80:
        return json.dumps(value, ensure_ascii=False)
    pieces = textwrap.wrap(value, 88, drop_whitespace=False)
    return "(\n" + "\n".join(f"    {json.dumps(piece, ensure_ascii=False)}" for piece in pieces) + "\n)"


def fill(notebook: Any, values: Mapping[str, object]) -> Any:
    """Replace each top-level ``name = …`` assignment whose name is in ``values`` (comments kept)."""
    seen: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            match = re.match(r"^([A-Za-z_]\w*) = (.*?)(\s+#.*)?$", line)
            if match and match.group(1) in values:
                name = match.group(1)
                comment = match.group(3) or ""
                lines[index] = f"{name} = {_literal(values[name])}{comment}"
                seen.add(name)
        cell.source = "\n".join(lines)
    missing = sorted(set(values) - seen)
    if missing:
        raise ValueError(f"the student notebook has no assignment for {missing}; expected one line `name = ...` for each")
    return notebook


def execute(notebook: Any, lab_id: str, workdir: Path, *, timeout: int = 600) -> Any:
    """Run ``notebook`` as ``<workdir>/<lab>.ipynb`` (Otter opens its tests by that name) in a python3 kernel."""
    import nbformat
    from nbclient import NotebookClient

    path = workdir / f"{lab_id}.ipynb"
    nbformat.write(notebook, path)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(workdir)}},
                            record_timing=False)
    client.execute()
    return notebook


def settled(notebook: Any) -> Any:
    """``notebook`` (parsed, as nbformat or plain JSON) as a reference is committed: the latest bundle it saved kept
    in its outputs (the one an upload is graded from, :func:`mlsys_grader.core.embed.bundle_from_outputs`) and each
    earlier save's copy of it dropped, and no execution times, so regenerating it changes only what changed."""
    latest = bundle_from_outputs(notebook)
    for index, cell in enumerate(notebook["cells"]):
        if cell.get("cell_type") != "code":
            continue
        cell.get("metadata", {}).pop("execution", None)
        cell["outputs"] = [output for output in cell.get("outputs", [])
                           if BUNDLE_MIME not in (output.get("data") or {})
                           or (latest is not None and index == latest.cell_index and _same_save(output, latest.text))]
    return notebook


def _same_save(output: Any, text: str) -> bool:
    value = output["data"][BUNDLE_MIME]
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)) == text


def make_reference(root: str | Path, lab_id: str, track: str) -> tuple[Path, float]:
    """Write one reference notebook and its bundle under ``root``; return the notebook path and the execution seconds."""
    import nbformat

    root = Path(root)
    student = nbformat.read(student_path(root, lab_id), as_version=4)
    filled = fill(student, answers(lab_id, track))
    target, bundle = reference_paths(root, lab_id, track)
    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-{track}-") as scratch:
        began = time.perf_counter()
        executed = execute(filled, lab_id, Path(scratch))
        seconds = time.perf_counter() - began
        bundle.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(scratch) / f"{lab_id}-submission.json", bundle)
    nbformat.write(settled(executed), target)
    return target, seconds


# -- masters ---------------------------------------------------------------------------------------------------
def master_labs(labs: Iterable[str] | None = None) -> list[str]:
    """``labs`` (default: every registered lab whose master is written from its words, :attr:`Lab.notebook`)."""
    return list(labs) if labs else [lab for lab in lab_ids() if get_lab(lab).notebook is not None]


def _master_text(lab_id: str) -> str:
    """The master notebook file's text exactly as :func:`nbformat.write` writes it."""
    import nbformat

    text = nbformat.writes(build_master(lab_id))
    return text if text.endswith("\n") else text + "\n"


def masters(root: str | Path, labs: Iterable[str] | None = None, *, check: bool = False) -> Generated:
    """Write (or with ``check`` compare) each lab's master under ``root``."""
    written: list[Path] = []
    differs: list[tuple[Path, str]] = []
    for lab_id in master_labs(labs):
        path = get_lab(lab_id).master_path(Path(root))
        text = _master_text(lab_id)
        if check:
            if not path.is_file():
                differs.append((path, "missing"))
            elif path.read_text(encoding="utf-8") != text:
                differs.append((path, "differs from the master the lab's words generate"))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Generated("masters", tuple(written), tuple(differs))


# -- student notebooks -----------------------------------------------------------------------------------------
def notebooks(root: str | Path, labs: Iterable[str] | None = None, *, check: bool = False, run_tests: bool = False) -> Generated:
    """``otter assign`` each lab's master into ``assignments/`` (``check``: :func:`drift`)."""
    chosen = list(labs) if labs else list(lab_ids())
    if check:
        found = drift(root, chosen)
        return Generated("notebooks", differs=tuple((student_path(root, lab), what) for lab, what in found.items()))
    return Generated("notebooks", tuple(regenerate(root, chosen, run_tests=run_tests)))


# -- reference submissions ---------------------------------------------------------------------------------------
EXAMPLES = Path("examples") / "submissions"
"""Where the quick start grades from: a shipped lab's reference bundles are written there, once (``<lab>-<track>.json``)."""


def reference_paths(root: str | Path, lab_id: str, track: str) -> tuple[Path, Path]:
    """(executed notebook, its bundle) of the reference submission for ``track``: the notebook beside the lab's master;
    the bundle in the quick start's examples (``examples/submissions/<lab>-<track>.json``) for a lab whose master is in
    this tree's ``solutions/``, so it exists once, and beside the notebook (``reference-<track>-submission.json``) for
    a lab that keeps its master elsewhere (a course's own distribution)."""
    root = Path(root)
    lab = get_lab(lab_id)
    master = lab.master_path(root)
    notebook = master.parent / f"reference-{track}.ipynb"
    if master == default_master_path(lab_id, root):
        return notebook, root / EXAMPLES / f"{lab_id}-{track}.json"
    return notebook, master.parent / f"reference-{track}-submission.json"


def _reference_difference(root: Path, lab_id: str, track: str) -> list[tuple[Path, str]]:
    """What of the committed reference for ``track`` is not what :func:`make_reference` would fill in (times aside)."""
    import nbformat

    notebook_path, bundle_path = reference_paths(root, lab_id, track)
    missing = [(path, "missing") for path in (notebook_path, bundle_path) if not path.is_file()]
    if missing:
        return missing
    found: list[tuple[Path, str]] = []
    values = answers(lab_id, track)
    expected = fill(nbformat.read(student_path(root, lab_id), as_version=4), values)
    committed = nbformat.read(notebook_path, as_version=4)
    sources = [(cell.cell_type, cell.source) for cell in expected.cells]
    if [(cell.cell_type, cell.source) for cell in committed.cells] != sources:
        found.append((notebook_path, "its cells are not the student notebook filled in with the reference answers"))
    elif len(find_embedded_bundles(committed)) > 1 or any("execution" in cell.get("metadata", {}) for cell in committed.cells):
        found.append((notebook_path, "it keeps earlier saves of its bundle or execution times"))
    bundle = json.loads(bundle_path.read_text(encoding="utf-8"))
    solved = solve(lab_id, track)
    lab = get_lab(lab_id)
    # What the filled-in cells evaluate to (a long string is wrapped into pieces, its line breaks read as spaces).
    answered = {name: ast.literal_eval(_literal(values[name])) for name in lab.synthesis_fields if name in values}
    saved = {
        "track": bundle.get("track"),
        "controls": bundle.get("controls"),
        "predictions": {part: record.get("prediction") for part, record in (bundle.get("evidence") or {}).items()},
        "synthesis": {name: (bundle.get("synthesis") or {}).get(name) for name in answered},
    }
    wanted = {
        "track": track,
        "controls": solved.model_dump(mode="json")["controls"],
        "predictions": {part: record.prediction for part, record in solved.evidence.items()},
        "synthesis": answered,
    }
    for key, value in wanted.items():
        if saved[key] != value:
            found.append((bundle_path, f"its {key} are not the reference answers"))
            break
    return found


def references(root: str | Path, labs: Iterable[str] | None = None, tracks: Iterable[str] | None = None, *,
               check: bool = False, log: Any = None) -> Generated:
    """Make (or with ``check`` compare) the reference submissions of each lab on each of its tracks."""
    written: list[Path] = []
    differs: list[tuple[Path, str]] = []
    wanted = set(tracks) if tracks else None
    for lab_id in list(labs) if labs else list(lab_ids()):
        for track in [track for track in get_lab(lab_id).tracks if wanted is None or track in wanted]:
            if check:
                differs += _reference_difference(Path(root), lab_id, track)
                continue
            target, seconds = make_reference(root, lab_id, track)
            written += reference_paths(root, lab_id, track)
            if log is not None:
                log(f"wrote {target} ({seconds:.1f} s)")
    return Generated("references", tuple(written), tuple(differs))


def generate(kind: str, root: str | Path = ".", labs: Iterable[str] | None = None, *, tracks: Iterable[str] | None = None,
             check: bool = False, log: Any = None) -> Generated:
    """One of :data:`KINDS` (``masters``, ``notebooks``, ``references``) for ``labs`` under ``root``."""
    if kind == "masters":
        return masters(root, labs, check=check)
    if kind == "notebooks":
        return notebooks(root, labs, check=check)
    if kind == "references":
        return references(root, labs, tracks, check=check, log=log)
    raise ValueError(f"generate: kind must be one of {', '.join(KINDS)} (got {kind!r})")
