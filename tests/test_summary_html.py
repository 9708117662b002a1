"""The HTML summary: self-contained, and rendered by a real headless Chromium."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import subprocess
from pathlib import Path

import needs
import pytest

from mlsys_grader.course._gradebook import GradebookResult, grade_paths
from mlsys_grader.course._options import BatchOptions
from mlsys_grader.course._row import Row, Status
from mlsys_grader.course._summary import MAX_TABLE_ROWS, common_findings, render_summary

ROOT = Path(__file__).resolve().parents[1]
# Appended only in the test: measures what the browser actually laid out and writes it into the DOM.
PROBE = """<script>
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('svg.chart')].map(svg => {
    const box = svg.getBoundingClientRect();
    const bars = [...svg.querySelectorAll('rect.bar')].filter(r => r.getBBox().width > 0 && r.getBBox().height > 0);
    return {cls: svg.getAttribute('class'), w: Math.round(box.width), h: Math.round(box.height), bars: bars.length};
  });
  const tables = [...document.querySelectorAll('table')].map(t => ({cls: t.className, rows: t.tBodies[0].rows.length}));
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({charts, tables});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("course", ROOT / "benchmarks" / "course.py")
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    root = tmp_path_factory.mktemp("course")
    course.build_course(root, clean=6, big_file=False)
    return grade_paths([root], BatchOptions(jobs=2, db=None))


def test_page_is_self_contained_and_escapes_student_text(result):
    result = copy.deepcopy(result)  # edits a copy: the module's graded course is shared with the other tests
    first = result.rows[0]
    result.rows[0] = first.but(reasons="<script>alert(1)</script>", reason_list=("<script>alert(1)</script>",),
                               flags=first.flags or ("integrity",))
    page = render_summary(result)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "no network references"
    assert "&lt;script&gt;alert(1)" in page
    for heading in ("Most common findings", "Flagged submissions", "Possible collusion", "Inputs that could not be graded"):
        assert heading in page


def _row(path: str, status: Status, **fields) -> Row:
    values = {"identity": {}, "input_hash": "", "lab": "", "track": "", "score": 0, "max_score": "", "parts": {}, "points": {},
              "flags": (), "reasons": "", "error_kind": "", "origin": "", "grader_version": "", "rubric": "", **fields}
    values.setdefault("reason_list", tuple(piece for piece in values["reasons"].split(" | ") if piece))
    return Row(path=path, kind="json", status=status, **values)


def test_a_long_table_is_cut_and_points_to_the_csv():
    rows = [_row(f"in/{i}/<b>.json", Status.ERROR, flags=("ungradable",), reasons="BundleFormatError: not JSON")
            for i in range(MAX_TABLE_ROWS + 3)]
    page = render_summary(GradebookResult(rows=rows, columns=["path"]))
    table = page[page.index('<table class="ungradable">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + MAX_TABLE_ROWS + 1, "header, the first rows, and one line saying more are in the CSV"
    assert '<td colspan="3">… more rows in the CSV gradebook</td>' in table
    assert f"in/<wbr>{MAX_TABLE_ROWS - 1}/<wbr>&lt;b&gt;.json" in table and f"in/<wbr>{MAX_TABLE_ROWS}/" not in table


def test_common_findings_group_messages_that_differ_only_in_numbers():
    rows = [_row(f"in/{n}.json", Status.GRADED, findings=(("A", "replay", "replay", f"Part A's value {n} does not match"),))
            for n in (1.5, 2, 3)]
    assert common_findings(rows) == [(3, "A", "replay", "replay", "Part A's value 1.5 does not match")]


@pytest.mark.slow
def test_chromium_renders_charts_and_tables(result, tmp_path):
    chromium = needs.chromium()
    page = tmp_path / "report.html"
    page.write_text(render_summary(result).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2000"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    probe = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S).group(1).replace("&quot;", '"'))
    histograms = [c for c in probe["charts"] if "histogram" in c["cls"]]
    passrates = [c for c in probe["charts"] if "passrate" in c["cls"]]
    # per lab: the final gradebook's score distribution (the outcome, first) and the machine's
    assert len(histograms) == 4 and len(passrates) == 2, probe["charts"]
    assert all(c["w"] >= 400 and c["h"] >= 200 and c["bars"] >= 1 for c in histograms)
    assert all(c["bars"] >= 30 for c in passrates), "one visible bar per rubric item"
    tables = {t["cls"]: t["rows"] for t in probe["tables"]}
    assert tables["flagged"] >= 4 and tables["collusion"] == 2 and tables["ungradable"] >= 5 and tables["findings"] >= 3
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000, "a blank page compresses to a few kB"


def test_flagged_rows_show_the_reason_for_the_flag_first_and_notes_after():
    from mlsys_grader.course._summary import first_reason

    row = _row("in/a.json", Status.GRADED,
               reasons="bundle/prediction: no lock times, nothing to do | B/stale: part B is stale; recapture it",
               findings=(("bundle", "prediction", "", "no lock times, nothing to do"),
                         ("B", "stale", "fresh", "part B is stale; recapture it")))
    assert first_reason(row) == "B/stale: part B is stale; recapture it | bundle/prediction: no lock times, nothing to do"


def test_the_outcome_counts_partition_the_rosters_students():
    """Submitted or missing, and of the submitted, unreadable or not: an upload staff decided counts as missing is
    missing only, and an unknown student's upload is no student of the lab (a 200-student roster read 201)."""
    from mlsys_grader.course._row import FinalRow
    from mlsys_grader.course._summary import outcome

    def row(student, status, input_hash="", machine=None, flags=(), decision=""):
        return FinalRow.from_json({"student": student, "lab": "lab11", "status": status, "input_hash": input_hash,
                                   "score": 0.0, "max_score": 100.0, "late_penalty": 0.0, "decision": decision,
                                   "_machine_status": machine or status, "_flags": list(flags)})

    rows = [row("a", "graded", "h1"), row("b", "missing"), row("c", "unreadable", "h3"),
            row("d", "missing", "h4", machine="unreadable", decision="counts as missing: blank file"),
            row("stranger", "unreadable", "h5", flags=("not_in_roster",))]
    [lab] = outcome(rows)
    assert (lab["students"], lab["submitted"], lab["missing"], lab["unreadable"]) == (4, 2, 2, 1)
    assert lab["submitted"] + lab["missing"] == lab["students"]
