"""Close the channels through which a student's kernel (or uploaded files) reach Otter's runner.

Otter 7's runner process trusts three pickles that student code controls:

1. ``.OTTER_LOG`` in the submission, loaded with dill before execution;
2. the results file the kernel writes at the end of execution (``pickle.load`` in
   ``otter.execute.grade_notebook``) — student code can replace ``pickle.dump`` in its
   kernel or overwrite the file;
3. log records the kernel streams to the runner's logging socket (``pickle.loads``).

Unpickling runs arbitrary code, in the process that writes the results.  ``install``
(called by the plugin's ``before_grading``, before any student code runs) moves the log
aside and routes 2 and 3 through unpicklers that build only Otter's own result classes
(2) or plain data (3).  It also guards execution and bounds each cell's run time, so a
kernel that dies or never finishes still leaves the score of record.

Under ``otter run`` (the plugin) that process is the one that reports the grade.  On
Gradescope the notebook runs in the sandbox instead (:mod:`._sandbox`), where Otter's
runner is itself unprivileged; the same loaders keep its kernel-side results honest
data there, although those results never change the grade.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Otter and nbconvert are imported inside the functions that patch or check them, not here: they are
# heavy, and install() must import Otter's runner only after the writable import paths are dropped.

#: The classes a genuine kernel-side ``GradingResults`` pickle is made of.
RESULT_CLASSES = frozenset({
    ("otter.test_files", "GradingResults"),
    ("otter.test_files.abstract_test", "TestCase"),
    ("otter.test_files.abstract_test", "TestCaseResult"),
    ("otter.test_files.ok_test", "OKTestFile"),
    ("otter.test_files.exception_test", "ExceptionTestFile"),
    ("otter.test_files.exception_test", "test_case"),
    ("otter.test_files.metadata_test", "NotebookMetadataOKTestFile"),
    ("otter.test_files.metadata_test", "NotebookMetadataExceptionTestFile"),
})
MAX_RESULTS_BYTES = 16 * 1024 * 1024
QUARANTINE_SUFFIX = ".not-loaded"


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, allowed: frozenset[tuple[str, str]]):
        super().__init__(file)
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(
                f"refused to load {module}.{name} from a pickle written by student code; "
                f"expected only {', '.join(sorted('.'.join(pair) for pair in self._allowed)) or 'plain data'}"
            )
        return super().find_class(module, name)


def safe_load_results(handle: io.BufferedIOBase) -> Any:
    """Load the kernel's results pickle, allowing only Otter's result classes and plain data.

    Raises ``pickle.UnpicklingError`` naming what was refused (Otter then records the
    kernel results as missing; the score of record does not depend on them).
    """
    data = handle.read(MAX_RESULTS_BYTES + 1)
    if len(data) > MAX_RESULTS_BYTES:
        raise pickle.UnpicklingError(f"kernel results are over {MAX_RESULTS_BYTES} bytes; refused to load")
    value = _AllowListUnpickler(io.BytesIO(data), RESULT_CLASSES).load()
    from otter.test_files import GradingResults

    if type(value) is not GradingResults:
        raise pickle.UnpicklingError(f"kernel results must be a GradingResults; got {type(value).__name__}")
    return value


def safe_loads_plain(data: bytes) -> Any:
    """Unpickle plain data only (dicts, lists, strings, numbers) — what a log record is."""
    return _AllowListUnpickler(io.BytesIO(data), frozenset()).load()


def quarantine_otter_log(submission_dir: str | os.PathLike) -> bool:
    """Rename ``.OTTER_LOG`` so the runner never unpickles it; True when there was one."""
    log = Path(submission_dir) / ".OTTER_LOG"
    if log.exists() or log.is_symlink():
        log.replace(log.with_name(log.name + QUARANTINE_SUFFIX))
        return True
    return False


def _guard_grade_notebook(original: Callable[..., Any]) -> Callable[..., Any]:
    """``grade_notebook`` that turns an execution failure into empty kernel results, then still
    runs ``after_grading`` — so a killed kernel cannot leave the submission without a score."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as exc:
            from otter.test_files import GradingResults

            results = GradingResults.without_results(exc)
            plugins = kwargs.get("plugin_collection")
            if plugins is not None:
                plugins.run("after_grading", results)
            return results

    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    return guarded


def drop_writable_import_paths(autograder_dir: str | os.PathLike | None) -> list[str]:
    """Remove ``sys.path`` entries student code could plant modules in; the removed entries.

    On Gradescope the runner starts as ``python /autograder/source/run_otter.py``, so
    ``/autograder/source`` heads ``sys.path``: a module the kernel wrote there would shadow
    anything the runner imports after the notebook ran.  The runner needs nothing from
    the autograder folder or the working directory, so those entries go.
    """
    root = os.path.realpath(autograder_dir) if autograder_dir else None
    removed, kept = [], []
    for entry in sys.path:
        real = os.path.realpath(entry or ".")
        if entry in ("", ".") or (root and (real == root or real.startswith(root + os.sep))):
            removed.append(entry)
        else:
            kept.append(entry)
    sys.path[:] = kept
    return removed


DEFAULT_CELL_TIMEOUT_S = 300.0


def limit_cell_time(cell_timeout_s: float, *, interrupt: bool = False) -> None:
    """Give every notebook cell at most ``cell_timeout_s`` seconds (Otter sets no limit).

    A cell that runs longer raises ``CellTimeoutError``; the guarded execution turns that
    into missing kernel results, so a submission that never finishes still gets its score
    of record instead of using up the whole Gradescope time budget.  With ``interrupt``
    the kernel is interrupted instead and the next cells (Otter's tests) still run.
    """
    from nbconvert.preprocessors import ExecutePreprocessor

    original = getattr(ExecutePreprocessor.__init__, "__wrapped__", ExecutePreprocessor.__init__)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self.timeout is None or self.timeout > cell_timeout_s:
            self.timeout = cell_timeout_s
        if interrupt:
            self.interrupt_on_timeout = True

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    ExecutePreprocessor.__init__ = __init__  # type: ignore[method-assign]  # patching nbconvert's class is the point


def install_safe_unpickling() -> None:
    """Route Otter's unpickling of the kernel's results file and log records through the safe loaders."""
    import otter.execute as execute
    import otter.execute.logging as execute_logging

    if not getattr(execute.pickle, "_mlsys_safe", False):
        shim = types.SimpleNamespace(load=safe_load_results, loads=lambda data: safe_load_results(io.BytesIO(data)),
                                     dump=pickle.dump, dumps=pickle.dumps, UnpicklingError=pickle.UnpicklingError,
                                     _mlsys_safe=True)
        execute.pickle = shim  # grade_notebook looks ``pickle`` up in its module at call time
    execute_logging.LogRecordStreamHandler.unpickle = lambda self, data: safe_loads_plain(data)


def install(autograder_dir: str | os.PathLike | None = None, *, cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S) -> None:
    """Route Otter's runner-side unpickling through the safe loaders, guard execution, bound
    each cell's run time and drop import paths inside ``autograder_dir``.

    Idempotent.  Must run in the runner process before the submission executes.
    """
    drop_writable_import_paths(autograder_dir)
    limit_cell_time(cell_timeout_s)
    install_safe_unpickling()
    from otter.run.run_autograder.runners import python_runner

    if not hasattr(python_runner.grade_notebook, "__wrapped__"):
        python_runner.grade_notebook = _guard_grade_notebook(python_runner.grade_notebook)


def skip_execution(results: Callable[[], Any]) -> None:
    """Otter's runner gets ``results()`` instead of executing the notebook: no student code runs at all.

    ``results`` is responsible for reporting (the plugin renders the score of record there).
    """
    from otter.run.run_autograder.runners import python_runner

    original = getattr(python_runner.grade_notebook, "__wrapped__", python_runner.grade_notebook)

    def not_executed(*args: Any, **kwargs: Any) -> Any:
        return results()

    not_executed.__wrapped__ = original  # type: ignore[attr-defined]
    python_runner.grade_notebook = not_executed
