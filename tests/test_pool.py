"""The bounded worker pool: time and memory limits, crash isolation, one result per task, clean stops."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mlsys_grader.course._pool import run_tasks

ROOT = Path(__file__).resolve().parents[1]
# A task's limit in these tests: a trivial task must finish within it even on a loaded machine (it is wall time, so a
# 1 s limit made a trivial task's verdict depend on the machine's load), and the slow start must exceed it.
TASK_LIMIT_S = 2.0


def _hostile(task):
    if task == "sleep":
        time.sleep(60)
    if task == "spin":
        while True:
            pass
    if task == "eat":
        hog = []
        while True:
            hog.append(bytes(50 * 1024 * 1024))  # calloc: address space grows at once, as RLIMIT_AS counts it
    if task == "die":
        os._exit(9)
    if task == "raise":
        raise KeyError("boom")
    if task == "exit":
        sys.exit(3)
    if task == "deaf":  # stuck where the in-worker timer cannot reach it
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)
    return {"status": "graded", "task": task, "pid": os.getpid()}


def _run(tasks, **options):
    results = {}

    def collect(index, result):
        assert index not in results, f"task {index} reported twice"
        results[index] = result

    run_tasks(tasks, _hostile, on_result=collect, **options)
    return results


def test_pool_bounds_time_memory_and_crashes_and_keeps_going():
    tasks = ["ok1", "sleep", "spin", "eat", "die", "raise", "exit", "ok2"]
    results = _run(tasks, jobs=2, timeout_s=TASK_LIMIT_S, memory_mb=256)
    status = {tasks[i]: r["status"] for i, r in results.items()}
    assert status == {"ok1": "graded", "sleep": "timeout", "spin": "timeout", "eat": "memory", "die": "crash",
                      "raise": "error", "exit": "crash", "ok2": "graded"}
    assert f"{TASK_LIMIT_S:g} s limit" in results[1]["reason"] and "exit code 9" in results[4]["reason"]
    assert "KeyError" in results[5]["reason"] and "SystemExit" in results[6]["reason"]


@pytest.mark.slow
def test_a_task_deaf_to_the_timer_is_killed_and_its_worker_replaced():
    tasks = ["deaf", "ok1", "ok2", "ok3"]
    results = _run(tasks, jobs=1, timeout_s=0.5, memory_mb=None)
    assert results[0]["status"] == "timeout"
    assert "0.5 s limit; the process was stopped" in results[0]["reason"]
    assert [results[i]["status"] for i in (1, 2, 3)] == ["graded"] * 3


def test_every_task_gets_exactly_one_result_of_its_own(tmp_path):
    """Every task's result is its own, and with two jobs both workers take tasks.  The first task holds its worker until
    another worker has taken one (each task leaves its worker's pid in ``tmp_path``): with trivial tasks, one worker
    could otherwise finish the batch before the other started on a loaded machine, and the test would fail by chance."""
    def work(task):
        if task == "t0":
            deadline = time.monotonic() + 25
            while time.monotonic() < deadline and not any(p.name != str(os.getpid()) for p in tmp_path.iterdir()):
                time.sleep(0.01)
        else:
            (tmp_path / str(os.getpid())).touch()
        return _hostile(task)

    tasks = [f"t{i}" for i in range(60)] + ["die", "raise"] + [f"u{i}" for i in range(20)]
    results = {}
    run_tasks(tasks, work, jobs=2, timeout_s=30.0, on_result=lambda index, result: results.setdefault(index, result))
    assert sorted(results) == list(range(len(tasks)))
    for index, task in enumerate(tasks):
        if task[0] in "tu":
            assert results[index]["task"] == task
    assert len({r["pid"] for r in results.values() if "pid" in r}) >= 2, "both workers took tasks"


def test_a_finished_batch_returns_before_its_workers_are_joined_and_none_outlives_it():
    """run_tasks hands back every result and returns; the idle workers are stopped in the background and exit."""
    tasks = [f"t{i}" for i in range(20)]
    results = _run(tasks, jobs=2, timeout_s=10.0)
    pids = {result["pid"] for result in results.values()}
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids
    assert _wait_for(lambda: not any(_alive(pid) for pid in pids), limit_s=10.0), "every worker exits"


def test_an_empty_batch_starts_no_worker():
    assert _run([], jobs=2) == {}


STOPPED_RUN = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from mlsys_grader.course._pool import run_tasks

    folder = Path(sys.argv[1])

    def work(task):
        (folder / f"{os.getpid()}.pid").write_text("")
        time.sleep(120)
        return {"status": "graded"}

    run_tasks(["a", "b", "c"], work, jobs=2, timeout_s=300, on_result=lambda i, r: None)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def _wait_for(condition, limit_s: float = 60.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_parent_stops_every_worker(signum, tmp_path):
    """Ctrl-C or SIGTERM: the parent stops its workers before it exits; killed outright, the workers notice
    and exit on their own."""
    parent = subprocess.Popen([sys.executable, "-c", STOPPED_RUN, str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: len(list(tmp_path.glob("*.pid"))) == 2), "both workers started a task"
        workers = [int(path.stem) for path in tmp_path.glob("*.pid")]
        parent.send_signal(signum)
        parent.communicate(timeout=60)
        assert parent.returncode != 0
        assert _wait_for(lambda: not any(_alive(pid) for pid in workers)), "no worker outlives the run"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _slow_start():
    # Stands in for importing the evaluators on a busy machine: longer than a task may take.
    time.sleep(TASK_LIMIT_S + 1.0)
    os.environ["MLSYS_TEST_PREPARED"] = str(os.getpid())


def _prepared(task):
    return {"status": "graded", "prepared_in": os.environ.get("MLSYS_TEST_PREPARED"), "pid": os.getpid()}


def test_a_slow_worker_start_is_outside_every_task_time_limit():
    results = {}
    run_tasks(["a", "b", "c", "d"], _prepared, jobs=2, timeout_s=TASK_LIMIT_S, memory_mb=None,
              on_result=lambda index, result: results.setdefault(index, result), prepare=_slow_start)
    assert [results[i]["status"] for i in range(4)] == ["graded"] * 4
    # prepared once in each worker, in that worker
    assert all(r["prepared_in"] == str(r["pid"]) for r in results.values())
    assert len({r["pid"] for r in results.values()}) <= 2


def _frozen(task):
    return {"status": "graded", "frozen": gc.get_freeze_count()}


def test_a_prepared_worker_leaves_what_it_holds_out_of_garbage_collection_and_the_parent_does_not():
    """After its start (imports, tables), a worker freezes its objects so full collections skip them;
    the parent's collector is left as it was."""
    before = gc.get_freeze_count()
    results = {}
    run_tasks(["a"], _frozen, jobs=1, memory_mb=None, on_result=lambda index, result: results.setdefault(index, result),
              prepare=lambda: None)
    assert results[0]["status"] == "graded"
    assert results[0]["frozen"] > before + 1000  # the package and pytest at least
    assert gc.get_freeze_count() == before


def test_without_prepare_the_same_slow_start_inside_a_task_is_a_timeout():
    def slow_first(task):
        _slow_start()
        return {"status": "graded"}

    results = {}
    run_tasks(["a"], slow_first, jobs=1, timeout_s=TASK_LIMIT_S, memory_mb=None,
              on_result=lambda index, result: results.setdefault(index, result))
    assert results[0]["status"] == "timeout"


BROKEN_START = """
import json

from mlsys_grader.course._pool import run_tasks

def prepare():
    raise ImportError("No module named 'mlsysim'")

results = {}
run_tasks(["a", "b", "c"], lambda task: {"status": "graded", "task": task}, jobs=2, timeout_s=5,
          on_result=results.__setitem__, prepare=prepare)
print(json.dumps(sorted((index, result["status"], result["reason"]) for index, result in results.items())))
"""


def test_a_worker_that_cannot_start_fails_its_tasks_with_the_reason_instead_of_hanging():
    """Measured before: an exception in the workers' start-up (``prepare``) killed every worker pebble started, so each
    task ended as "the grading processes kept dying" with no cause (and a full batch, in the registry's case, hung).
    Now each task ends at once as a crash that names the cause and says it is not the submission's."""
    done = subprocess.run([sys.executable, "-c", BROKEN_START], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert [(index, status) for index, status, _ in results] == [(0, "crash"), (1, "crash"), (2, "crash")]
    assert all("could not start (ImportError: No module named 'mlsysim')" in reason and "not the submission" in reason
               for _, _, reason in results)


BATCH_WITHOUT_MLSYSIM = """
import json, sys
from pathlib import Path

sys.modules["mlsysim"] = None  # mlsysim cannot be imported in this process

from mlsys_grader.course import BatchOptions, grade_paths
from mlsys_grader.replay import Replay

folder = Path(sys.argv[1])
result = grade_paths([folder], BatchOptions(jobs=2), replay=Replay())
print(json.dumps([(row.path.rsplit("/", 1)[-1], str(row.status), row.reasons) for row in result.rows]))
"""


def test_a_batch_whose_replay_cannot_be_prepared_says_why_on_every_row(tmp_path):
    """The gradebook prepares its replay once, before the workers fork; when that fails (mlsysim does not import, on a
    live replay), every input's row is a crash naming the grader's environment — the batch neither stops nor hangs,
    and no row blames the submission."""
    for name in ("lab07-cloud", "lab11-edge", "lab02-mobile"):
        (tmp_path / "subs" / name).mkdir(parents=True)
        shutil.copy(ROOT / "examples" / "submissions" / f"{name}.json", tmp_path / "subs" / name / "submission.json")
    done = subprocess.run([sys.executable, "-c", BATCH_WITHOUT_MLSYSIM, str(tmp_path / "subs")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert sorted(name for name, _, _ in rows) == ["submission.json"] * 3
    assert {status for _, status, _ in rows} == {"crash"}
    assert all("could not start (ModuleNotFoundError: No module named 'mlsysim" in reasons and "not the submission" in reasons
               for _, _, reasons in rows), rows
