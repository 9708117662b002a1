"""Mistakes as advice: a student's mistake in a notebook cell shows as one line naming what was wrong and the
allowed values, never a traceback; code that calls the API still gets the exception.

The notebook tests run real notebooks in a python3 kernel (nbclient) and are marked ``slow``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

from mlsys_grader.api import grade_file
from mlsys_grader.errors import DomainError, UnknownLabError
from mlsys_grader.student import _advice

ROOT = Path(__file__).resolve().parents[1]
TRACKS = '"tinyml", "mobile", "edge", "cloud"'


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"solutions_{name}", ROOT / "solutions" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _execute(notebook, workdir: Path, name: str):
    """Run ``notebook`` as ``workdir/name`` in a python3 kernel, keeping going after errors (as a student clicking on would)."""
    from nbclient import NotebookClient

    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, workdir / name)
    NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return notebook


def _texts(cell) -> list[str]:
    """Everything a cell's outputs show as text (tracebacks, streams, plain text, HTML, Markdown)."""
    found = []
    for output in cell.get("outputs", []):
        found += [*output.get("traceback", []), output.get("text", "")]
        found += [str(value) for key, value in output.get("data", {}).items() if key.startswith("text/")]
    return [text for text in found if text]


def _advice_of(cell) -> tuple[str, list[str]]:
    """(exception name, traceback lines) of the cell's single error output."""
    errors = [output for output in cell.outputs if output.output_type == "error"]
    assert len(errors) == 1, cell.source
    return errors[0].ename, list(errors[0].traceback)


# -- the wording helpers ------------------------------------------------------------------------
def test_near_miss_names_the_closest_allowed_value_and_otherwise_ends_the_sentence():
    assert _advice.near_miss("above75", ["below_25", "25_50", "50_75", "above_75"]) == ' — did you mean "above_75"?'
    assert _advice.near_miss("Edge", ["tinyml", "mobile", "edge", "cloud"]) == ' — did you mean "edge"?'
    assert _advice.near_miss("compiled fused", ["eager", "compiled", "compiled_fused"]) == ' — did you mean "compiled_fused"?'
    assert _advice.near_miss("recompiles", ["executions", "recompilations"], names=True) == " — did you mean recompilations?"
    assert _advice.near_miss(4, [1, 2, 3]) == "."
    assert _advice.near_miss("zzz", ["eager", "compiled"]) == "."


def test_advice_is_the_errors_own_sentence_and_nothing_is_installed_outside_ipython():
    assert _advice.advice(DomainError("Part A: dispatches must be one of 1, 2, 3; you set 4.")) == [
        "Part A: dispatches must be one of 1, 2, 3; you set 4."]
    assert _advice.install() is False  # plain Python (pytest): exceptions propagate and print as usual
    assert _advice.literal("aligned") == '"aligned"' and _advice.literal(0.05) == "0.05" and _advice.literal(True) == "True"


# -- real notebooks ---------------------------------------------------------------------------------
MISTAKES = [
    # (cell source, exception name, the one line it must show)
    ('lab = open_lab("lab07", track="Edge")', "UnknownLabError",
     f'TRACK must be one of {TRACKS}; you set "Edge" — did you mean "edge"?'),
    ('lab = open_lab("lab07", track=...)', "DomainError", f"Choose a track first: set TRACK to one of {TRACKS}."),
    ('lab.predict("A", "above75")', "DomainError",
     'Part A: prediction_A must be one of "below_25" (Below 25%), "25_50" (25–50%), "50_75" (50–75%), "above_75" '
     '(Above 75%); you set "above75" — did you mean "above_75"?'),
    ('lab.run("A", dispatches=4)', "DomainError", "Part A: dispatches must be one of 1, 2, 3; you set 4."),
    ('lab.run("B", executions=205, recompilations=0)', "DomainError",
     "Part B: executions must be a number from 10 to 200 in steps of 10; you set 205."),
    ('lab.capture("E", decision="selcted")', "DomainError",
     'Part E: decision must be one of "selected" (Use selected path), "hold" (Hold native baseline for more evidence), '
     '"none" (No feasible target path); you set "selcted" — did you mean "selected"?'),
    ('lab.synthesis(recommendation="fast")', "DomainError",
     'Synthesis: recommendation must be one of "eager" (Eager execution), "compiled" (Compiled execution), '
     '"compiled_fused" (Compiled with fusion), "hold" (Hold current path for more evidence), "none" (No feasible target '
     'path); you set "fast".'),
    ('lab.synthesis(reevaluation_trigger="shape_guard")', "DomainError",
     'Synthesis: reevaluation_trigger must be one of "execution_count" (Execution count changes), "shape_guards" '
     '(Shape guards change), "operator_set" (Operator set changes), "activation_memory" (Activation memory changes); '
     'you set "shape_guard" — did you mean "shape_guards"?'),
    ('lab.check("F")', "DomainError",
     'lab.check takes "A", "B", "C", "D", "E", "synthesis", or nothing for every part; you gave "F".'),
    ('lab11.run("A", change="compute", factor=10)', "DomainError",
     "Part A: factor must be a number from 2 to 8 in steps of 1; you set 10."),
    ('lab11.run("E", objective="energy", budget_scale=0.07)', "DomainError",
     "Part E: budget_scale must be a number from 0.05 to 1.5 in steps of 0.05; you set 0.07."),
    ('lab11.capture("E", choice="primary", rejected="alternativ")', "DomainError",
     'Part E: rejected must be one of "primary" (Primary), "alternative" (Alternative); you set "alternativ" — did you '
     'mean "alternative"?'),
]


@pytest.mark.slow
def test_each_mistake_shows_one_line_of_advice_and_no_traceback(tmp_path):
    cells = ["from mlsys_grader.student import open_lab\nfrom mlsys_grader.errors import DomainError",
             *(source for source, _, _ in MISTAKES[:2]),
             'lab = open_lab("lab07", track="edge")\nlab11 = open_lab("lab11", track="cloud", directory="eleven")',
             *(source for source, _, _ in MISTAKES[2:]),
             'try:\n    lab.predict("A", "above75")\nexcept DomainError as exc:\n    print("caught", type(exc).__name__)',
             "{}['missing']"]
    notebook = _execute(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), tmp_path, "mistakes.ipynb")
    by_source = {cell.source: cell for cell in notebook.cells}
    for source, ename, line in MISTAKES:
        cell = by_source[source]
        assert _advice_of(cell) == (ename, [line]), source
        assert not any("Traceback" in text or 'File "' in text for text in _texts(cell)), source
    caught = by_source[cells[-2]]
    assert [output.output_type for output in caught.outputs] == ["stream"] and caught.outputs[0].text == "caught DomainError\n"
    other = by_source[cells[-1]]  # not the package's error: the usual traceback, untouched
    assert _advice_of(other)[0] == "KeyError" and any("Traceback" in line for line in _advice_of(other)[1])


@pytest.mark.slow
def test_a_student_notebook_with_mistakes_shows_the_advice_where_each_one_is(tmp_path):
    """The handed-out notebook, filled in by a student who typed four mistakes: each of those cells shows its advice,
    no output anywhere is a traceback or a save notice, and every part without a mistake is still captured."""
    references = _script("make_references")
    values = references.answers("lab07", "cloud")
    values.update(prediction_A="above75", executions=205, decision="selcted", recommendation="fast")
    notebook = _execute(references.fill(nbformat.read(ROOT / "assignments" / "lab07.ipynb", as_version=4), values),
                        tmp_path, "lab07.ipynb")
    errors = {index: _advice_of(cell) for index, cell in enumerate(notebook.cells)
              if any(output.output_type == "error" for output in cell.get("outputs", []))}
    assert [(cell_source_line(notebook.cells[index]), lines) for index, (_, lines) in errors.items()] == [
        ('prediction_A = "above75"', ['Part A: prediction_A must be one of "below_25" (Below 25%), "25_50" (25–50%), '
                                      '"50_75" (50–75%), "above_75" (Above 75%); you set "above75" — did you mean "above_75"?']),
        ("executions = 205", ["Part B: executions must be a number from 10 to 200 in steps of 10; you set 205."]),
        ("lab.run('B', executions=executions, recompilations=recompilations)",  # the run cell names it again
         ["Part B: executions must be a number from 10 to 200 in steps of 10; you set 205."]),
        ('decision = "selcted"', ['Part E: decision must be one of "selected" (Use selected path), "hold" (Hold native '
                                  'baseline for more evidence), "none" (No feasible target path); you set "selcted" — did '
                                  'you mean "selected"?']),
        ('recommendation = "fast"', ['Synthesis: recommendation must be one of "eager" (Eager execution), "compiled" '
                                     '(Compiled execution), "compiled_fused" (Compiled with fusion), "hold" (Hold current path '
                                     'for more evidence), "none" (No feasible target path); you set "fast".'])]
    everything = [text for cell in notebook.cells for text in _texts(cell)]
    assert not any("Traceback" in text for text in everything)
    assert not any("bundle saved" in text for text in everything)
    embedded = [output for cell in notebook.cells for output in cell.get("outputs", [])
                if "application/vnd.mlsys-grader.bundle+json" in output.get("data", {})]
    assert embedded and all(output.data["text/plain"] == "" for output in embedded)  # carried silently
    report = grade_file(tmp_path / "lab07-submission.json")
    assert sorted(report.public().parts[p].score == report.public().parts[p].max_score for p in "CD") == [True, True]
    assert [p for p in "ABCDE" if report.parts[p].score == 0] == ["A", "B", "E"]


def cell_source_line(cell) -> str:
    """The line of a filled-in cell holding the student's mistaken value (or its first line)."""
    lines = cell.source.splitlines()
    return next((line.split("  #")[0] for line in lines
                 if re.match(r"^(prediction_[A-E]|executions|decision|recommendation) = ", line)), lines[0])


def test_programmatic_callers_still_get_the_exception(tmp_path):
    from mlsys_grader.student import open_lab

    with pytest.raises(UnknownLabError):
        open_lab("lab11", "Cloud", directory=tmp_path)
    lab = open_lab("lab11", "cloud", directory=tmp_path)
    with pytest.raises(DomainError, match=r"^Part D: speedup must be a number from 2 to 50 in steps of 2; you set 3\.$"):
        lab.run("D", speedup=3)
