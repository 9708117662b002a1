"""Mistakes as advice: a student's mistake in a notebook cell shows as one line naming what was wrong and the
allowed values, never a traceback; code that calls the API still gets the exception.

The notebook tests run real notebooks in a python3 kernel (nbclient) and are marked ``slow``.
"""

from __future__ import annotations

import html
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


# -- the handed-out notebook's own messages (issue 20) ----------------------------------------------
INTERNALS = ("Traceback", "Error at line", "assert_item", "AssertionError", "NameError", "DomainError", "GraderError",
             "LabSession", "PartCheck", "Notice(", "otter.", "test_", "mlsys_grader.")
"""Words a student must never see in a cell's output: tracebacks, Otter's test machinery, this package's names."""


def _shown(cell) -> list[str]:
    """What the notebook shows for each of a cell's outputs, as text: the HTML when there is HTML (tags dropped),
    else the plain text; a stream's text; an error's lines."""
    shown = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            shown.append(output.text)
        elif output.output_type == "error":
            shown.append("\n".join(output.traceback))
        else:
            data = output.get("data", {})
            if "text/html" in data:
                shown.append(html.unescape(re.sub(r"<[^>]+>", "\n", data["text/html"])))
            elif data.get("text/plain"):
                shown.append(data["text/plain"])
    return shown


def _sentences(text: str) -> list[str]:
    """The sentences of ``text``: four words or more ending in ``.``, ``?`` or ``!`` (a list of labels is no sentence)."""
    pieces = (piece.strip() for piece in re.split(r"(?<=[.?!])\s+|\n", text))
    return [piece for piece in pieces if len(piece.split()) >= 4 and piece[-1] in ".?!"]


def _one_message_each(cell) -> str:
    """The cell's shown text, after checking it has no internals and says no sentence twice."""
    shown = "\n".join(_shown(cell))
    for word in INTERNALS:
        assert word not in shown, (word, cell.source, shown)
    sentences = _sentences(shown)
    repeated = sorted({s for s in sentences if sentences.count(s) > 1})
    assert not repeated, (cell.source, repeated)
    return shown


def _cell(notebook, source: str):
    found = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip() == source]
    assert found, source
    return found[0]


@pytest.fixture(scope="module")
def careless(tmp_path_factory):
    """The handed-out Lab 07 notebook (cloud) as a careless student runs it: part A's run cell first (a copy before
    its controls cell), ``executions = "50"``, nothing answered in the synthesis, then the export cell."""
    workdir = tmp_path_factory.mktemp("careless")
    references = _script("make_references")
    values = references.answers("lab07", "cloud")
    for name in ("recommendation", "rejected_alternative", "reevaluation_trigger", "residual_risk", "rationale"):
        values.pop(name)
    values["executions"] = "50"
    notebook = references.fill(nbformat.read(ROOT / "assignments" / "lab07.ipynb", as_version=4), values)
    controls_a = next(i for i, cell in enumerate(notebook.cells) if cell.source.startswith("# Part A controls"))
    notebook.cells.insert(controls_a, nbformat.v4.new_code_cell("lab.run('A')"))
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"careless-{index:03d}"
    return _execute(notebook, workdir, "lab07.ipynb"), workdir


@pytest.mark.slow
def test_a_run_cell_before_its_controls_cell_says_to_run_the_controls_first(careless):
    notebook, _ = careless
    first = next(cell for cell in notebook.cells if cell.source == "lab.run('A')")
    assert [output.output_type for output in first.outputs] == ["display_data"] or \
        [output.output_type for output in first.outputs] == ["execute_result"]
    assert "Part A: run the part's controls cell above first." in _one_message_each(first)
    assert first.outputs[0].data["text/plain"] == (
        "[warn] Part A: run the part's controls cell above first.\n"
        "  - It sets dispatches and locks prediction_A; if it stopped with a message, fix the value it names and run "
        "it again, then this cell.")
    later = [cell for cell in notebook.cells if cell.source == "lab.run('A')"][1]  # in order, the part runs
    assert later.outputs and not any(output.output_type == "error" for output in later.outputs)


@pytest.mark.slow
def test_text_where_a_number_belongs_is_said_in_words(careless):
    notebook, _ = careless
    controls = next(cell for cell in notebook.cells if cell.source.startswith("# Part B controls"))
    assert _advice_of(controls) == ("DomainError", [
        'Part B: executions must be a number from 10 to 200 in steps of 10; you set the text "50"; write 50 without quotes.'])
    _one_message_each(controls)
    run = _cell(notebook, "lab.run('B')")
    assert run.outputs[0].data["text/plain"].splitlines()[0] == "[warn] Part B: run the part's controls cell above first."


@pytest.mark.slow
def test_a_skipped_parts_check_shows_each_item_once_in_the_labs_words(careless):
    notebook, _ = careless
    check = _cell(notebook, "lab.check('B')")
    assert check.outputs[0].data["text/plain"] == (
        "Part B: 0 / 10 on the public checks\n"
        "  0 / 3  evidence captured\n"
        "  0 / 3  evidence matches your final settings\n"
        "  0 / 2  baseline and intervention differ\n"
        "  0 / 2  prediction locked before the result was shown\n"
        "To do:\n"
        "  - Part B has no captured evidence; lock a prediction, run the part and capture it.")
    assert _one_message_each(check).count("Part B has no captured evidence") == 1
    captured = _one_message_each(_cell(notebook, "lab.check('A')"))
    assert "Part A: 10 / 10 on the public checks" in captured


@pytest.mark.slow
def test_the_unanswered_synthesis_names_each_missing_answer_once(careless):
    notebook, _ = careless
    synthesis = next(cell for cell in notebook.cells if cell.source.startswith("recommendation = ..."))
    expected = ["Choose a recommended execution plan.",
                "Choose the tested alternative you reject (eager, compiled or compiled with fusion).",
                "Choose a re-evaluation trigger from the lab's list.", "Choose a remaining limitation from the lab's list.",
                "Write a rationale that compares your recommendation with the rejected alternative using saved numbers."]
    assert synthesis.outputs[0].data["text/plain"] == "\n".join(
        ["[warn] Synthesis saved, with 5 of 5 answers still to give.", *(f"  - {line}" for line in expected)])
    _one_message_each(synthesis)
    check = _cell(notebook, "lab.check('synthesis')")
    assert check.outputs[0].data["text/plain"].split("To do:\n")[1] == "\n".join(f"  - {line}" for line in expected)
    _one_message_each(check)
    whole = _cell(notebook, "lab.check()").outputs[0].data["text/plain"]  # the closing self-check says them once too
    assert [line for line in whole.splitlines() if line.startswith("  [synthesis] ")] == [f"  [synthesis] {line}" for line in expected]
    assert [line for line in whole.splitlines() if line.startswith("  [B] ")] == [
        "  [B] Part B has no captured evidence; lock a prediction, run the part and capture it."]


@pytest.mark.slow
def test_export_warns_in_one_sentence_what_is_missing_and_what_it_costs(careless):
    notebook, workdir = careless
    export = next(cell for cell in notebook.cells if "lab.export()" in cell.source)
    warning = ("Still missing: part B and the synthesis's recommendation, rejected alternative, re-evaluation trigger, "
               "remaining limitation and rationale; as it stands that costs 32 of the 100 points.")
    assert export.outputs[0].data["text/plain"] == f"[warn] {warning}"
    assert _one_message_each(export).count(warning) == 1
    report = grade_file(workdir / "lab07-submission.json")
    assert report.max_score - report.score == 32 and report.parts["B"].score == 0  # the cost is the grader's own
    assert sorted(path.suffix for path in workdir.glob("lab07_*.zip")) == [".zip"]  # and the zip is still made


@pytest.mark.slow
def test_no_cell_of_the_careless_run_shows_internals_or_says_a_sentence_twice(careless):
    notebook, _ = careless
    for cell in notebook.cells:
        if cell.cell_type == "code":
            _one_message_each(cell)
