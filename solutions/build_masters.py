"""Write each lab's Otter master notebook (where :meth:`LabSpec.master_path` says) from the lab's words.

The masters are the instructor sources (Otter-Grader 7 assign format).  They are
generated here from the lab module alone — its notebook text (:attr:`LabSpec.notebook`,
the seed lab's words part by part), controls and synthesis answers — and the rubric's
points, so every part has the same shape and no control, label or point value is typed
twice.  Run after changing a lab's text, then ``mlsys-grader assign`` to regenerate the
student notebooks::

    python solutions/build_masters.py [LAB ...]

Solutions are the answers for the masters' own track (TinyML, the seeds' default),
computed by :func:`mlsys_grader.staff.solve`; the per-track reference submissions are
made by ``solutions/make_references.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from mlsys_grader import api, staff
from mlsys_grader.core.labspec import LabSpec, NotebookText
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.labs import get_lab, lab_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling reference_answers module
from reference_answers import reference_synthesis

HERE = Path(__file__).resolve().parent
MASTER_TRACK = "tinyml"

ASSIGNMENT_CONFIG = """# ASSIGNMENT CONFIG
name: {lab}
init_cell: true
check_all_cell: false
run_tests: true
export_cell: false
tests:
  files: false
  ok_format: false
"""


def _literal(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _allowed(control) -> str:
    if control.kind == "choice":
        return "one of " + ", ".join(_literal(c) for c in control.choices if c is not None)
    return control.describe()


def _control_lines(lab: LabSpec, part: str, defaults: dict, solution: dict) -> list[str]:
    labels = _text(lab).labels
    lines = []
    for control in lab.parts[part].controls:
        if control.decision:
            continue
        label = labels.get(control.name, control.label[0].lower() + control.label[1:])
        lines.append(f"{control.name} = {_literal(defaults[control.name])}  # {label}: {_allowed(control)}")
    changed = {name: value for name, value in solution.items() if name in defaults and defaults[name] != value}
    if changed:
        lines.append("# BEGIN SOLUTION NO PROMPT")
        lines += [f"{name} = {_literal(value)}" for name, value in changed.items()]
        lines.append("# END SOLUTION")
    return lines


def _tests(lab_id: str, part: str, items: dict[str, float]) -> list:
    """One test case per rubric item, worth that item's points; hidden items become hidden tests.

    Points come from the rubric file only; a formative item (0 points) gets no test: its
    feedback is in the grade report, and a 0-point test would only add noise to Gradescope.
    """
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


def _question(name: str) -> object:
    # Otter's own check cell (grader.check) prints its test machinery ("Error at line 16 in test ...") and repeats a
    # skipped part's one reason once per test; the notebook's check cell is lab.check, written after the question.
    return new_raw_cell(f"# BEGIN QUESTION\nname: {name}\ncheck_cell: false")


def _check(part: str) -> object:
    return new_code_cell(f"lab.check({part!r})")


def _text(lab: LabSpec) -> NotebookText:
    if lab.notebook is None:
        raise LookupError(f"lab {lab.lab_id} declares no notebook text (LabSpec.notebook), so its master is written by hand")
    return lab.notebook


def build(lab_id: str, synthesis: dict[str, Any] | None = None) -> nbformat.NotebookNode:
    """The master notebook of ``lab_id``; its synthesis solution is ``synthesis`` (default: the hand-written
    reference answers of ``reference_rationales.toml`` for the master's track)."""
    lab = get_lab(lab_id)
    rubric = api.default_rubric(lab_id)
    text = _text(lab)
    reference = staff.solve(lab_id, MASTER_TRACK)
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
        record = reference.evidence[part]
        solution = reference.controls[part]
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
                 f"prediction_{part} = {_literal(record.prediction)}  # SOLUTION",
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
            lines = [f"{c.name} = {_literal(solution[c.name])}  # SOLUTION" for c in decisions]
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
               **(synthesis if synthesis is not None else reference_synthesis(lab_id, MASTER_TRACK))}
    fields = lab.synthesis_fields
    lines = [f"{name} = {_literal(answers[name])}  # SOLUTION" for name in fields]
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
    cells.append(new_code_cell("# Save your notebook first, then run this cell to export your submission.\n"
                               "lab.before_export()\n"
                               f"grader.export(pdf=False, files=[{f'{lab_id}-submission.json'!r}])"))
    for index, cell in enumerate(cells):
        cell["id"] = f"{lab_id}-{index:03d}"  # stable ids: rebuilding an unchanged master changes nothing
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(notebook)
    return notebook


def main(argv: list[str] | None = None) -> int:
    labs = (argv if argv else None) or [lab for lab in lab_ids() if get_lab(lab).notebook is not None]
    for lab_id in labs:
        path = get_lab(lab_id).master_path(HERE.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build(lab_id), path)
        print(f"wrote {path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
