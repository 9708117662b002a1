"""The lab's words everywhere: every message a student or the staff reads names controls as the notebook
shows them, rounds numbers with readable units, and never shows internal attribute paths, reprs or
16-digit floats; the book's own wordings; plural forms; the self-check labelled as the public checks;
pass-rate bars coloured by rate.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import sweep

from mlsys_grader import solve
from mlsys_grader.api import grade_bundle
from mlsys_grader.core.models import bundle_from_mapping
from mlsys_grader.course._summary import RATE_COLOURS, pass_rates
from mlsys_grader.errors import GraderError
from mlsys_grader.labs import get_lab
from mlsys_grader.student._session import LabSession, Notice, PartResult, _open_lab_with_clock
from mlsys_grader.student._views import plain_number, readable

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
TRACKS = ("tinyml", "mobile", "edge", "cloud")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


# -- the scan ---------------------------------------------------------------------------------------
_PATH = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:(?:\.[A-Za-z_]\w*)|\[\d+\])+(?![\w(])")
_ALLOWED_DOTTED = re.compile(r"^(e\.g|i\.e|lab\.\w+|grader\.\w+|mlsys_grader(\.\w+)*)$")
_FILE = re.compile(r"\.(json|ipynb|zip|toml|csv|py|md|whl)$")
_REPRS = ("{'", '{"', "['", '["', " object at 0x", "Quantity(", "datetime.", "np.float", "array(", "PartScore(", "ItemScore(")
_TINY_DOLLARS = re.compile(r"\$\d(?:\.\d{1,2})?e-\d\d\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]\d+)?")


def _long_numbers(text: str) -> list[str]:
    """Numbers no person writes: an exponent, a decimal with more than 6 significant digits, an 11-digit integer."""
    found = []
    for number in _NUMBER.findall(text):
        if "e" in number or ("." in number and len(number.replace(".", "").lstrip("0")) > 6) or ("." not in number and len(number) >= 11):
            found.append(number)
    return found


def _key_paths(value: Any) -> Iterator[dict]:
    """Every mapping in a parsed JSON document (where a field path of the student's own file may start)."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _key_paths(item)
    elif isinstance(value, list):
        for item in value:
            yield from _key_paths(item)


def _resolves(path: str, document: Any) -> bool:
    keys = re.findall(r"[A-Za-z_]\w*|\[\d+\]", path)
    for start in _key_paths(document):
        node: Any = start
        for key in keys:
            if key.startswith("[") and isinstance(node, list) and int(key[1:-1]) < len(node):
                node = node[int(key[1:-1])]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                break
        else:
            return True
    return False


def problems(message: str, document: Any = None) -> list[str]:
    """What is wrong with one message: internal paths, reprs, long floats (a field of the student's own file is fine)."""
    found = []
    for path in _PATH.findall(message):
        if _ALLOWED_DOTTED.match(path) or _FILE.search(path):
            continue
        if path.startswith("settings.") or path.endswith((".magnitude", ".unit")) or not _resolves(path, document):
            found.append(f"internal path {path!r}")
    found += [f"repr {marker!r}" for marker in _REPRS if marker in message]
    # Dollars have no prefixed unit: an amount below a millionth of a dollar is written 1.28e-08, as people do.
    found += [f"long number {number!r}" for number in _long_numbers(_TINY_DOLLARS.sub("$", message))]
    return found


def test_the_scan_catches_what_the_lab_must_never_say():
    document = {"evidence": {"B": {"baseline": {"inputs": {"tensor_elements": 7}}}}, "knob_settings": {"B": {"executions": 1}}}
    assert problems("settings.baseline.baseline_kernel_time.magnitude is now 0.030840470588235292", document) == [
        "internal path 'settings.baseline.baseline_kernel_time.magnitude'", "long number '0.030840470588235292'"]
    assert problems("settings.result.m is now 1024") == ["internal path 'settings.result.m'"]
    assert problems("energy 1e+06 mJ") == ["long number '1e+06'"]
    assert problems("lab.run takes executions (missing ['recompilations'])") == ["repr \"['\""]
    assert problems("Part B's recorded baseline.inputs.tensor_elements differs", document) == []  # the file's own field
    assert problems("knob_settings.B.executions must be 10..200", document) == []
    assert problems("saved to lab07-submission.json, e.g. run lab.predict('A', choice) first; 30.8 µs and 0.0156 ms") == []


def _graded_messages(data: bytes) -> list[str]:
    try:
        report = grade_bundle(data)
    except GraderError as exc:
        return [str(exc)]
    return [finding.message for finding in report.findings]


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.json")), ids=lambda p: p.stem)
def test_no_message_of_a_scenario_fixture_shows_internals(path):
    data = path.read_bytes()
    messages = _graded_messages(data)
    assert {message: problems(message, _parsed(data)) for message in messages if problems(message, _parsed(data))} == {}


def test_the_scenario_fixtures_give_the_scan_plenty_to_read():
    messages = [m for path in SCENARIOS.glob("*.json") for m in _graded_messages(path.read_bytes())]
    assert len(messages) >= 30 and any("no longer matches your final settings" in m for m in messages)


def _reseal(data: dict) -> bytes:
    data = copy.deepcopy(data)
    data["content_hash"] = None
    return bundle_from_mapping(data).sealed().to_json().encode()


def _every_other_value(lab, part: str, name: str, value: Any) -> list[Any]:
    control = lab.parts[part].control(name)
    return [other for other in control.values() if other is not None and other != value][:3]


@pytest.mark.parametrize("lab_id", ["lab07", "lab11"])
def test_no_stale_message_shows_internals_and_each_names_the_changed_control(lab_id):
    """Change every control of every part, one at a time, after capture: the stale finding names the control the
    way the notebook does, with its old and new value; Lab 11 D names the part C result it builds on in words."""
    lab = get_lab(lab_id)
    base = json.loads(solve(lab_id, "edge").to_json())
    seen = 0
    for part in "ABCDE":
        for control in lab.parts[part].controls:
            for other in _every_other_value(lab, part, control.name, base["controls"][part][control.name]):
                data = copy.deepcopy(base)
                data["controls"][part][control.name] = other
                report = grade_bundle(_reseal(data))
                stale = [f.message for f in report.findings if f.criterion == "stale" and f.part == part]
                assert len(stale) == 1, (part, control.name, other)
                assert f"({control.name} is now " in stale[0], stale[0]
                assert problems(stale[0], data) == [], stale[0]
                for finding in report.findings:
                    assert problems(finding.message, data) == [], finding.message
                seen += 1
    assert seen >= 20


def test_lab11_d_built_on_another_part_c_result_says_so_in_words_and_readable_units():
    message = next(m for m in _graded_messages((SCENARIOS / "stale-part-d-after-c-recapture.json").read_bytes())
                   if m.startswith("Part D"))
    assert message == ("Part D's evidence no longer matches your final settings or the part C result it builds on "
                       "(baseline kernel time is now 30.8 µs, captured with 15.6 µs); recapture part D.")
    data = json.loads(solve("lab11", "edge").to_json())
    data["controls"]["C"] = {"shape": "aligned", "operation": "scatter"}
    messages = [f.message for f in grade_bundle(_reseal(data)).findings if f.criterion == "stale"]
    assert messages[0] == ('Part C\'s evidence no longer matches your final settings (shape is now "aligned", captured '
                           'with "misaligned"); recapture part C.')


def test_a_one_word_rationale_is_one_word():
    data = json.loads(solve("lab07", "cloud").to_json())
    data["synthesis"]["rationale"] = "Compiled."
    messages = [m for m in _graded_messages(_reseal(data)) if m.startswith("Your rationale has")]
    assert messages and messages[0].startswith("Your rationale has 1 word;")


# -- messages a notebook session shows --------------------------------------------------------------
def _answers(lab_id: str, track: str):
    reference = solve(lab_id, track)
    return reference, {part: reference.controls[part] for part in "ABCDE"}


def _session_messages(lab: LabSession) -> Iterator[str]:
    """Walk a whole lab, then change every control after capture: every notice, warning, observation, table cell,
    progress line, self-check line and report line the student sees."""
    reference, controls = _answers(lab.lab_id, lab.track)
    spec = lab.lab
    for part in "ABCDE":
        names = [c.name for c in spec.parts[part].controls if not c.decision]
        decisions = {c.name: controls[part][c.name] for c in spec.parts[part].controls if c.decision}
        yield from _shown(lab.run(part, **{n: controls[part][n] for n in names}))
        yield from _shown(lab.predict(part, reference.evidence[part].prediction))
        yield from _shown(lab.run(part, **{n: controls[part][n] for n in names}))
        yield from _shown(lab.capture(part, **decisions))
    for part in "ABCDE":
        for name in [c.name for c in spec.parts[part].controls if not c.decision]:
            for other in _every_other_value(spec, part, name, controls[part][name])[:2]:
                yield from _shown(lab.run(part, **{**{n: controls[part][n] for n in controls[part]
                                                      if not spec.parts[part].control(n).decision}, name: other}))
        names = [c.name for c in spec.parts[part].controls if not c.decision]
        lab.run(part, **{n: controls[part][n] for n in names})
    yield from _shown(lab.synthesis(rationale="Too short."))
    yield from lab.progress().table.column("What to do")
    yield repr(lab.check())
    yield repr(lab.report())
    yield repr(lab.synthesis_options())


def _shown(result) -> Iterator[str]:
    if isinstance(result, Notice):
        yield result.title
        yield from result.lines
    elif isinstance(result, PartResult):
        yield result.observation
        yield from result.warnings
        for notice in result.notices:
            yield from _shown(notice)
        yield from (str(cell) for row in result.table.rows for cell in row)


@pytest.mark.parametrize("lab_id, track", sweep([(lab, track) for lab in ("lab07", "lab11") for track in ("tinyml", "cloud")],
                                            fast=[("lab07", "tinyml"), ("lab11", "tinyml")]))
def test_no_message_of_a_notebook_session_shows_internals(tmp_path, lab_id, track):
    lab = _open_lab_with_clock(lab_id, track, Clock(), directory=tmp_path)
    messages = list(_session_messages(lab))
    document = json.loads((tmp_path / f"{lab_id}-submission.json").read_text(encoding="utf-8"))
    assert len(messages) > 100
    assert [(m, problems(m, document)) for m in messages if problems(m, document)] == []
    assert not [m for m in messages if re.search(r"\b1 (words|launches|compilations|executions)\b|\(s\)|\(es\)", m)]


# -- readable numbers ------------------------------------------------------------------------------
@pytest.mark.parametrize("magnitude, unit, shown", [
    (1e6, "mJ", "1 kJ"), (0.030840470588235292, "ms", "30.8 µs"), (2150, "MFLOP", "2.15 GFLOP"), (999.96, "ms", "1 s"),
    (3145728, "B", "3 MiB"), (0, "ms", "0 ms"), (0, "flop", "0 FLOP"), (12, "flop/byte", "12 flop/B"),
    (0.00012, "dollar", "$0.00012"), (0.5, "mJ", "500 µJ"), (20.0, "millisecond", "20 ms"),
])
def test_quantities_are_shown_in_units_chosen_for_reading(magnitude, unit, shown):
    assert readable(magnitude, unit) == shown


def test_plain_numbers_have_no_exponent_where_a_person_would_not_write_one():
    assert [plain_number(v) for v in (0.000123, 1234567.0, 3.0, 1.28e-08)] == ["0.000123", "1230000", "3", "1.28e-08"]
    assert problems("Cost $1.28e-08") == [] and problems("Energy 1.28e-08 J") == ["long number '1.28e-08'"]


@pytest.mark.parametrize("objective, axis", [("latency", "End-to-end latency"), ("energy", "Accelerator energy"),
                                             ("cost", "Operating cost")])
def test_lab11_e_charts_the_objective_it_ranks_by(tmp_path, objective, axis):
    for track in TRACKS:
        lab = _open_lab_with_clock("lab11", track, Clock(), directory=tmp_path / track)
        lab.predict("E", "primary")
        result = lab.run("E", objective=objective, budget_scale=1.0)
        axes = result.figure.axes[0]
        assert axes.get_ylabel().startswith(axis), (track, axes.get_ylabel())
        assert axes.get_legend().get_texts()[0].get_text() == f"{objective.title()} budget"
        cells = " ".join(str(c) for row in result.table.rows for c in row)
        assert problems(cells) == [], cells


# -- the book's words ------------------------------------------------------------------------------
def test_the_book_names_the_device_the_training_host_and_the_tinyml_wording(tmp_path):
    from mlsysim.labs.experiments import v1_07_experiments as ev

    for track in TRACKS:
        lab = _open_lab_with_clock("lab07", track, Clock(), directory=tmp_path / track)
        assert repr(lab.scenario("A")) == (f"Maya, the performance engineer, keeps arithmetic and payload fixed on "
                                           f"{ev.TRACKS[track].target.name} while changing only the number of dispatches.")
        host = lab.lab.plan(lab.replay, track, "D", lab.lab.parts["D"].defaults(), {}).baseline["training_host"]
        assert f"runs this track on **{host}** and compares" in lab.scenario("D")._repr_markdown_()
        context = ("offline host rebuild and redeployment count (TinyML compiles ahead-of-time on the host, not via "
                   "on-device JIT guards)" if track == "tinyml" else "guard-triggered recompilation count")
        assert repr(lab.scenario("B")) == f"Ishan, the compiler engineer, separates repeated execution count from {context}."
        assert lab.scenario("C") is None  # worded the same on every track: it is in the notebook's Markdown
        trigger = lab.synthesis_options()["reevaluation_trigger"]["shape_guards"]
        assert trigger == ("Deployment shapes change" if track == "tinyml" else "Shape guards change")
    for lab_id in ("lab07", "lab11"):
        text = "\n".join(cell.source for cell in nbformat.read(ROOT / "assignments" / f"{lab_id}.ipynb", as_version=4).cells)
        for retired in ("this track's target device", "(named in the result)", "(TinyML: deployment shapes change)"):
            assert retired not in text


def test_the_notebooks_show_the_scenario_options_and_report_cells():
    lab07 = [cell.source for cell in nbformat.read(ROOT / "assignments" / "lab07.ipynb", as_version=4).cells]
    assert [s for s in lab07 if s.startswith("lab.scenario(")] == ["lab.scenario('A')", "lab.scenario('B')", "lab.scenario('D')"]
    for lab_id in ("lab07", "lab11"):
        cells = [cell.source for cell in nbformat.read(ROOT / "assignments" / f"{lab_id}.ipynb", as_version=4).cells]
        assert "lab.synthesis_options()" in cells and "lab.report()" in cells and "lab.check()" in cells
        assert cells.index("lab.report()") < cells.index("lab.check()")
        assert any(s.startswith("## Local evidence report") for s in cells)
        assert any("Their total is not your grade" in s for s in cells)


# -- the self-check and the staff report -------------------------------------------------------------
def test_the_self_check_total_is_labelled_as_the_public_checks_not_the_grade(tmp_path):
    lab = _open_lab_with_clock("lab07", "cloud", Clock(), directory=tmp_path)
    check = lab.check()
    assert check.score == 0 and check.hidden_points == 30
    assert repr(check).splitlines()[1] == ("Public checks: 0 of 70 points (70 points still to earn). This is not your grade: "
                                           "hidden checks worth 30 points (every number must replay) run after the deadline.")
    assert "This is not your grade" in check._repr_html_() and "Public checks" in check._repr_html_()


def test_pass_rate_bars_are_coloured_by_rate():
    """83 % must not look like 100 %: each bar takes the colour of the band its rate falls in, and the legend names them."""
    chart = pass_rates([("full", 1.0, 10), ("most", 0.83, 12), ("nearly", 0.95, 20), ("half", 0.5, 4), ("few", 0.1, 10)], "x")
    colours = {floor: colour for floor, colour, _ in RATE_COLOURS}
    fills = [bar["colour"] for bar in chart["bars"]]
    assert fills == [colours[1.0], colours[0.75], colours[0.9], colours[0.5], colours[0.0]]
    assert len(set(fills)) == 5
    assert (RATE_COLOURS[0][2], RATE_COLOURS[-1][2]) == ("100 %", "below 50 %")
