"""Write the Otter master notebooks ``solutions/<lab>/<lab>-master.ipynb`` from the seeds' text.

The masters are the instructor sources (Otter-Grader 7 assign format).  They are
generated here, from one table of the seed labs' words per lab plus the lab modules'
controls and the rubric's points, so every part has the same shape and no control,
label or point value is typed twice.  Run after changing the text below, then
``mlsys-grader assign`` to regenerate the student notebooks::

    python solutions/build_masters.py

Solutions are the answers for the masters' own track (TinyML, the seeds' default),
computed by :func:`mlsys_grader.api.solve`; the per-track reference submissions are
made by ``solutions/make_references.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from mlsys_grader import api
from mlsys_grader.core.report import HIDDEN_ITEMS
from mlsys_grader.labs import get_lab, lab_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling reference_answers module
from reference_answers import reference_synthesis

HERE = Path(__file__).resolve().parent
MASTER_TRACK = "tinyml"
TRACK_LINE = 'TRACK = "tinyml"  # one of "tinyml", "mobile", "edge", "cloud"'

# The seeds' words, part by part: heading (with the seed's minutes), scenario,
# calculation notes.  A scenario of None is one the seed words for the track (it names
# the target device, the training host, or says something else on TinyML): the notebook
# shows it with ``lab.scenario(part)``, which fills it in for the student's track
# (``mlsys_grader/student/_text.py``).
TEXT = {
    "lab07": {
        "title": "Lab 07: The Framework Tax",
        "framing": (
            "**Volume I · Lab 07 · about 50–55 minutes**\n\n"
            "*When does an execution path earn its setup and memory costs, and when does target support make the "
            "decision for us?*\n\n"
            "Output: a runtime-path recommendation.\n\n"
            "Graph shape, tensor scale, compilation work, and runtime support are illustrative scenario assumptions. "
            "Hardware limits and runtime overhead anchors come from MLSysIM."
        ),
        "parts": {
            "A": ("A · Why can small operations waste the machine? (9 min)",
                  None,
                  "Useful time is the larger of arithmetic time and fixed input/output movement time. Total time adds one "
                  "registry-backed dispatch cost per launch. The two runs use identical operations and bytes."),
            "B": ("B · When does compilation repay setup? (9 min)",
                  None,
                  "Compiled total = compilation count × setup time + repetitions × fused execution time. Eager total = "
                  "repetitions × unfused execution time. Break-even is the first repetition that recovers all setup work. "
                  "Setup time uses a shared illustrative compiler pass assumption (constant framework dispatch tax across "
                  "analysis passes, not measured on the named host). For TinyML, compilation is ahead-of-time (AOT) host "
                  "compilation; recompilation represents an offline host rebuild and redeployment rather than a dynamic "
                  "native JIT.\n\n"
                  "*How the prediction is judged.* The path with the lower total is right. When the two totals are equal, "
                  "\"They are equal\" is accepted, and so is the verdict the result states."),
            "C": ("C · What does fusion eliminate? (9 min)",
                  "Sofia, the runtime engineer, compares the same 6-operation graph before and after fusion. Graph breaks "
                  "split the fused region.",
                  "Each unfused operation reads and writes the tensor. A fused region reads once and writes once, so every "
                  "graph boundary adds another full read/write pair. Fusion changes dispatch and intermediate traffic, not "
                  "the graph's arithmetic."),
            "D": ("D · Which activations should remain stored? (9 min)",
                  None,
                  "Training counts one forward pass and a two-forward-equivalent backward pass. A discarded activation "
                  "repeats its forward operation during backward. Retained bytes are checked directly against the selected "
                  "training host's memory capacity."),
            "E": ("E · Can the runtime execute the actual graph? (9 min)",
                  "Priya, the deployment engineer, inserts one operator and shape behavior into a known-native baseline. "
                  "Unsupported work must follow a visible fallback path or fail.",
                  "Native execution requires both operator and shape support. A fallback materializes one input and one "
                  "output through target memory, then uses an illustrative portable CPU path capped by the MLSysIM "
                  "reference CPU rate. TinyML has no fallback runtime in this scenario."),
        },
        "synthesis": ("Synthesis · Defend one execution plan (5 min)",
                      "Choose a tested path, quantify a rejected tested alternative, state the remaining limitation, and "
                      "name the condition that would reopen the decision. Use *hold* when the baseline remains viable but "
                      "evidence is insufficient (after capturing part E with decision `\"hold\"`), and *no feasible target "
                      "path* only after an unsupported part E captured with decision `\"none\"`."),
        "decision_text": {
            "E": ("Runtime decision, chosen after you see the result: `\"selected\"` (use selected path), `\"hold\"` "
                  "(hold native baseline for more evidence) or `\"none\"` (no feasible target path — valid only when the "
                  "selected path cannot execute)."),
        },
        "labels": {"recompilations": "guard-triggered recompilations (TinyML: host rebuilds / redeployments)"},
    },
    "lab11": {
        "title": "Lab 11: Acceleration That Survives the Whole Path",
        "framing": (
            "**Volume I · Lab 11 · about 50–55 minutes**\n\n"
            "*When does specialized hardware improve the application rather than one attractive kernel?*\n\n"
            "Deliverable: a constrained accelerator decision.\n\n"
            "The track's workload and execution contract are illustrative assumptions. Hardware supply comes from "
            "MLSysIM registry entries; results are analytical, not measured benchmarks."
        ),
        "parts": {
            "A": ("A · When does faster arithmetic help? (9 min)",
                  "Change one resource while workload operations and base traffic stay fixed.",
                  "Arithmetic intensity = operations / effective off-chip bytes. Reuse lowers traffic. Latency is the larger "
                  "of compute time and memory time; compute and bandwidth scales change only their own ceilings.\n\n"
                  "*How the prediction is judged.* With r = baseline latency / changed latency and f the factor, the "
                  "realised share is q = (r − 1) / (f − 1), to the two decimals the result shows. If the binding "
                  "resource switches, \"the bottleneck switches\" is right (\"falls nearly with the factor\" is also "
                  "accepted when q ≥ 0.9, \"barely changes\" when q ≤ 0.1). Otherwise \"falls nearly with the factor\" "
                  "when q ≥ 0.5 and \"barely changes\" below; without a switch q is exactly 1 (the changed resource "
                  "limits latency before and after) or 0 (it never does). The result states the verdict these rules "
                  "give, and that verdict is always accepted."),
            "B": ("B · How much reuse fits locally? (10 min)",
                  "Compare one blocked matrix mapping with the baseline tile and unfused intermediate.",
                  "Scratchpad occupancy counts A, B, and C tiles. DRAM traffic counts tiled inputs, output, and an explicit "
                  "write/read intermediate when fusion is off. Movement energy uses registry energy per byte."),
            "C": ("C · Can the specialized unit execute this workload? (9 min)",
                  "The execution contract is an illustrative scenario assumption. Matched-task quality evidence stays fixed "
                  "and cannot accelerate hardware. The baseline is an aligned matrix multiply, so change the shape or the "
                  "operation before capturing.",
                  "Native execution requires a supported operation, precision, and aligned shape. Padding rounds each "
                  "dimension to the contract multiple and recomputes work. Unsupported work executes on the named fallback "
                  "hardware."),
            "D": ("D · Why does kernel speedup disappear end to end? (9 min)",
                  "Preserve host work, transfer, launches, and postprocessing while changing only kernel time. The "
                  "baseline kernel time is **part C's selected result latency**: run part C first, and recapture part D "
                  "whenever you recapture part C.",
                  "Application time adds host, one-way transfer plus fixed latency, registry dispatch time per launch, "
                  "kernel time, and postprocessing. Only kernel time is divided by the local speedup.\n\n"
                  "*How the prediction is judged.* With S the end-to-end speedup (to the two decimals the result shows) "
                  "and L the kernel-only speedup, g = (S − 1) / (L − 1) is the share of the kernel gain that survives. "
                  "\"Almost no gain\" when S < 1.10; otherwise g decides: \"nearly the kernel speedup\" when g ≥ 0.5, "
                  "\"less than half\" below. Near a threshold both neighbouring answers are accepted: for "
                  "1.05 ≤ S ≤ 1.15 \"almost no gain\" and the answer g gives, and for 0.45 ≤ g ≤ 0.55 \"nearly the "
                  "kernel speedup\" and \"less than half\". The result states the verdict these rules give, and that "
                  "verdict is always accepted."),
            "E": ("E · Which feasible accelerator should we choose? (9 min)",
                  "Both candidates run the same workload and application stages. Filter constraints before optimizing the "
                  "selected objective.",
                  "Each candidate first passes native support, latency, accelerator energy, and active-time operating cost "
                  "budgets. Feasible rows are then sorted by the selected objective. Holding preserves the feasible primary "
                  "baseline while recording why the tested alternative was rejected."),
        },
        "synthesis": ("Synthesis · Defend the accelerator decision (4 min)",
                      "Use saved experiments to name the chosen option, quantify the rejected candidate, state one "
                      "limitation, and define a reevaluation trigger. The decision and the rejected candidate are the ones "
                      "you captured in part E."),
        "decision_text": {
            "E": ("Deployment decision, chosen after you see the ranking: `choice` is `\"primary\"`, `\"alternative\"`, "
                  "`\"hold\"` (no change / hold for more evidence) or `\"none\"` (no feasible design); `rejected` is the "
                  "tested candidate you reject (`\"primary\"` or `\"alternative\"`). Choose a feasible candidate, hold the "
                  "feasible primary while rejecting the tested alternative, or choose no feasible design only when both fail."),
        },
        "labels": {},
    },
}

ASSIGNMENT_CONFIG = """# ASSIGNMENT CONFIG
name: {lab}
init_cell: true
check_all_cell: false
run_tests: true
export_cell:
  pdf: false
  run_tests: false
  files:
    - {lab}-submission.json
  instructions: "The zip holds this notebook and {lab}-submission.json, the evidence bundle the grader replays."
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


def _control_lines(lab_id: str, part: str, defaults: dict, solution: dict) -> list[str]:
    lab = get_lab(lab_id)
    labels = TEXT[lab_id]["labels"]
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
    return new_raw_cell(f"# BEGIN QUESTION\nname: {name}")


def build(lab_id: str) -> nbformat.NotebookNode:
    lab = get_lab(lab_id)
    rubric = api.default_rubric(lab_id)
    text = TEXT[lab_id]
    reference = api.solve(lab_id, MASTER_TRACK)
    cells = [
        new_raw_cell(ASSIGNMENT_CONFIG.format(lab=lab_id)),
        new_markdown_cell(f"# {text['title']}\n\n{text['framing']}\n\n"
                          "## How this notebook works\n\n"
                          "Every part follows the book's loop: **predict** first, then **run** the baseline and your "
                          "intervention through the book's reference evaluators (`mlsysim` 0.3.0), then **capture** the "
                          "evidence. `lab.run` refuses to show a result before its prediction is locked, and a changed "
                          "prediction after the result counts as late. Every capture saves "
                          f"`{lab_id}-submission.json` next to this notebook; that file is what gets graded, by replaying "
                          "every number. Set the controls as plain Python values (the allowed values are in the comment "
                          "beside each one); if you change a control after capturing, the evidence becomes **stale** — "
                          "capture again. `lab.progress()` shows where you stand and `grader.check(\"A\")` (or "
                          "`lab.check(\"A\")`) runs the public checks for one part. A value that is not allowed "
                          "stops its cell with one line naming the allowed values: fix it and run the cell again.\n\n"
                          "Choose your deployment track below (TinyML, Mobile, Edge or Cloud). Evidence belongs to one "
                          "track; opening another track starts a new submission and keeps the old file aside."),
        new_code_cell("from mlsys_grader.student import open_lab\n\n"
                      f"{TRACK_LINE}\n"
                      f"lab = open_lab({lab_id!r}, track=TRACK)\nlab"),
    ]
    for part in "ABCDE":
        spec = lab.parts[part]
        heading, scenario, notes = text["parts"][part]
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
        lines = [f"# Part {part} controls", *_control_lines(lab_id, part, spec.defaults(), solution), "",
                 f"# Your prediction: {spec.question}",
                 f"prediction_{part} = {_literal(record.prediction)}  # SOLUTION",
                 f"lab.predict({part!r}, prediction_{part}"
                 + "".join(f", {c.name}={c.name}" for c in spec.controls if not c.decision) + ")"]
        cells.append(new_code_cell("\n".join(lines)))
        cells.append(new_raw_cell("# END SOLUTION"))
        arguments = ", ".join(f"{c.name}={c.name}" for c in spec.controls if not c.decision)
        cells.append(new_code_cell(f"lab.run({part!r}, {arguments})"))
        cells.append(new_markdown_cell(f"**Calculation notes.** {notes}"))
        decisions = [c for c in spec.controls if c.decision]
        if decisions:
            cells.append(new_markdown_cell(text["decision_text"][part]))
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

    heading, prompt = text["synthesis"]
    session_options = _synthesis_options(lab_id)
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
    synthesis = {**reference.synthesis.model_dump(), **reference_synthesis(lab_id, MASTER_TRACK)}
    fields = ["recommendation", "rejected_alternative"] if lab_id == "lab07" else []
    fields += ["reevaluation_trigger", "residual_risk", "rationale"]
    lines = [f"{name} = {_literal(synthesis[name])}  # SOLUTION" for name in fields]
    lines.append("lab.synthesis(" + ", ".join(f"{name}={name}" for name in fields) + ")")
    cells.append(new_raw_cell("# BEGIN SOLUTION"))
    cells.append(new_code_cell("\n".join(lines)))
    cells.append(new_raw_cell("# END SOLUTION"))
    cells.append(new_raw_cell("# BEGIN TESTS"))
    cells += _tests(lab_id, "synthesis", items)
    cells.append(new_raw_cell("# END TESTS"))
    cells.append(new_raw_cell("# END QUESTION"))
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
    for index, cell in enumerate(cells):
        cell["id"] = f"{lab_id}-{index:03d}"  # stable ids: rebuilding an unchanged master changes nothing
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(notebook)
    return notebook


def _synthesis_options(lab_id: str) -> dict[str, dict[str, str]]:
    from mlsys_grader.labs.lab07 import RECOMMENDATIONS, REJECTABLE

    lab = get_lab(lab_id)
    options = {}
    if lab_id == "lab07":
        options["recommendation"] = {c.value: c.label for c in RECOMMENDATIONS}
        options["rejected_alternative"] = {c.value: c.label for c in RECOMMENDATIONS if c.value in REJECTABLE}
    options["reevaluation_trigger"] = {c.value: c.label for c in lab.triggers}
    options["residual_risk"] = {c.value: c.label for c in lab.limitations}
    return options


def main(argv: list[str] | None = None) -> int:
    labs = (argv if argv else None) or [lab for lab in lab_ids() if lab in TEXT]
    for lab_id in labs:
        path = HERE / lab_id / f"{lab_id}-master.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build(lab_id), path)
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
