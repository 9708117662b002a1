"""Run grading tasks in worker processes that are bounded in time and memory and survive crashes.

The workers are a :class:`pebble.ProcessPool`: unlike :mod:`multiprocessing.Pool` or
:mod:`concurrent.futures`, it kills and replaces a worker whose task overruns its
timeout, and a worker that dies (killed by the kernel, a crash in C code) fails only
its own task (:class:`pebble.ProcessExpired`); the batch goes on.  On top of it:

- a ``SIGALRM`` timer inside the worker ends an ordinary overrun cleanly at the time
  limit, so the worker, with the evaluators already imported, is kept; pebble's own
  timeout, :data:`GRACE_S` later, kills a worker stuck where the timer cannot reach;
- the worker initializer caps the address space (``RLIMIT_AS``), so runaway
  allocation raises :class:`MemoryError` in the task instead of exhausting the machine;
- a worker whose parent is gone exits on its own.

Workers are forked, so ``work`` may be a closure, and they import the evaluators on
their first grade (mlsysim takes seconds to import; the workers do it in parallel).
Where ``fork`` is unavailable, tasks run in-process with no time limit.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pebble import ProcessExpired, ProcessPool

from ._row import Result

try:
    import resource
except ImportError:  # not on POSIX: no memory limit
    resource = None  # type: ignore[assignment]  # checked before use

GRACE_S = 5.0
"""Beyond the time limit, how long a worker may go on before it is killed."""
MAX_BROKEN_ROUNDS = 3
"""How many times in a row the pool may break down without finishing a task before the rest are given up."""


class TaskTimeout(Exception):
    """Raised inside a worker when a task exceeds its time limit."""


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def failure(status: str, reason: str) -> Result:
    """The result of a task that did not finish."""
    return {"status": status, "reason": reason}


def _timed_out(timeout_s: float) -> Result:
    return failure("timeout", f"grading took longer than the {timeout_s:g} s limit")


def _alarm(_signum: int, _frame: Any) -> None:
    raise TaskTimeout()


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def _run_one(work: Callable[[Any], Result], task: Any, timeout_s: float | None) -> Result:
    """``work(task)``, or the failure it ended in.  Never raises an :class:`Exception`."""
    if timeout_s is not None:
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return work(task)
    except TaskTimeout:
        return _timed_out(timeout_s or 0)
    except MemoryError:
        return failure("memory", "grading needed more memory than the per-submission limit")
    except RecursionError:
        return failure("error", "input nests too deeply to grade")
    except Exception as exc:  # a hostile input must not stop the batch; the reason goes into the row
        return failure("error", f"internal error while grading ({type(exc).__name__}: {str(exc)[:200]})")
    finally:
        if timeout_s is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)


# -- inside a worker -------------------------------------------------------------

class _Job:
    """What a worker runs, set once by the pool's initializer (each worker process has its own copy)."""

    work: Callable[[Any], Result] | None = None
    timeout_s: float | None = None
    broken: str | None = None
    """Why this worker's ``prepare`` failed: its tasks then end in that reason (an initializer that raises kills the
    worker, so the pool restarts workers until it gives up on every task, naming no cause)."""


def _limit_memory(memory_mb: int | None) -> None:
    """Cap this process's address space at its current size plus ``memory_mb``."""
    if not memory_mb or resource is None:
        return
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            vm_kb = next(int(line.split()[1]) for line in handle if line.startswith("VmSize:"))
        limit = (vm_kb * 1024) + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError, StopIteration):
        pass  # no /proc: the time limit still bounds the task


def _exit_when_orphaned(parent: int) -> None:
    # NOTE: a worker blocked on the pool's pipe never sees EOF when the parent is killed, because
    # its siblings hold copies of the pipe; so it watches its parent instead.
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start_worker(work: Callable[[Any], Result], timeout_s: float, memory_mb: int | None, parent: int,
                  prepare: Callable[[], None] | None = None) -> None:
    """The pool's initializer: runs once in every new worker, before its first task.

    ``prepare`` (e.g. importing the evaluators) runs here, outside every task's time limit,
    and before the memory cap, so the cap is measured from the prepared worker's size.
    """
    # Ctrl-C at a terminal reaches every process of the foreground group: the parent alone answers it (one line,
    # exit 130) and stops the workers, which would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _Job.work, _Job.timeout_s = work, timeout_s
    if prepare is not None:
        try:
            prepare()
        except Exception as exc:  # e.g. mlsysim fails to import: every task says so, and the batch ends
            _Job.broken = f"{type(exc).__name__}: {str(exc)[:200]}"
    # NOTE: what the worker holds now (the package, pint, the evaluators, replay tables) lives as long as
    # the worker, yet the cyclic garbage collector would walk all of it in every full collection a batch
    # of grades triggers (measured: 10 % of the grading time with mlsysim imported).  Frozen, it is left
    # out of every collection; the worker's own process, so nothing outside it is affected.
    gc.freeze()
    signal.signal(signal.SIGALRM, _alarm)
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    _limit_memory(memory_mb)  # last: the watchdog thread's stack counts against the limit


def _run_in_worker(task: Any) -> Result:
    if _Job.work is None:  # only reachable if the initializer did not run
        raise RuntimeError("grading worker started without its work")
    if _Job.broken is not None:
        return failure("crash", f"the grading worker could not start ({_Job.broken}): the grader's environment, not the "
                                "submission; nothing was judged, so grade it again once that is fixed")
    return _run_one(_Job.work, task, _Job.timeout_s)


# -- in the parent ---------------------------------------------------------------

def _outcome(future: Future[Result], timeout_s: float) -> Result:
    """The row result of a finished future (``BrokenProcessPool`` is left to the caller)."""
    error = future.exception()
    if error is None:
        return future.result()
    if isinstance(error, TimeoutError):
        return failure("timeout", f"grading took longer than the {timeout_s:g} s limit; the process was stopped")
    if isinstance(error, ProcessExpired):
        return failure("crash", f"the grading process died (exit code {error.exitcode}) on this input")
    if not isinstance(error, Exception):  # SystemExit or KeyboardInterrupt raised by the task in the worker
        return failure("crash", f"the grading process stopped ({type(error).__name__}) on this input")
    return failure("error", f"internal error while grading ({type(error).__name__}: {str(error)[:200]})")


def _run_round(indices: Sequence[int], tasks: Sequence[Any], work: Callable[[Any], Result], jobs: int,
               timeout_s: float, memory_mb: int | None, on_result: Callable[[int, Result], None],
               prepare: Callable[[], None] | None = None) -> list[int]:
    """Run ``tasks[i]`` for every ``i`` in ``indices`` in one pool; the indices the pool broke down before running."""
    # NOTE: frozen before the workers fork, what this process holds (the package, the tables, the inputs' list) is
    # left out of every collection in the workers from their start, so none of them walks (and so copies) those
    # pages; unfrozen once the pool is done, this process collects as before.
    gc.freeze()
    pool = ProcessPool(max_workers=min(jobs, len(indices)), initializer=_start_worker,
                       initargs=(work, timeout_s, memory_mb, os.getpid(), prepare), context=multiprocessing.get_context("fork"))
    broken: list[int] = []
    finished = False
    try:
        futures: dict[Future[Result], int] = {}
        for position, index in enumerate(indices):
            try:
                futures[pool.schedule(_run_in_worker, args=(tasks[index],), timeout=timeout_s + GRACE_S)] = index
            except RuntimeError:  # the pool broke down while the batch was handed to it
                broken.extend(indices[position:])
                break
        for future in as_completed(futures):  # waits on every future once: linear in the batch size
            if isinstance(future.exception(), BrokenProcessPool):
                broken.append(futures[future])
            else:
                on_result(futures[future], _outcome(future, timeout_s))
        finished = True
    finally:
        pool.stop()
        if finished:
            # Every result is in: the idle workers are stopped while the caller goes on.  pebble's join waits for
            # its manager thread, which looks at the pool every 0.1 s, so joining here would add up to that much
            # to every batch.  Interrupted (Ctrl-C, SIGTERM), the workers are stopped before the exception leaves.
            threading.Thread(target=pool.join, name="grading-pool-join", daemon=True).start()
        else:
            pool.join()
        gc.unfreeze()
    return sorted(broken)


def run_tasks(
    tasks: Sequence[Any],
    work: Callable[[Any], Result],
    *,
    jobs: int | None = None,
    timeout_s: float = 30.0,
    memory_mb: int | None = 1024,
    on_result: Callable[[int, Result], None],
    prepare: Callable[[], None] | None = None,
) -> None:
    """Run ``work(task)`` for every task, calling ``on_result(index, result)`` in the parent.

    Every task yields exactly one result: ``work``'s dict, or ``{"status": "timeout" |
    "memory" | "crash" | "error", "reason": ...}``.  ``work`` must be a function this
    process can fork with (closures are fine).  ``prepare`` runs once in every worker before
    its first task, outside the time limit (a slow start-up, such as importing the evaluators
    on a busy machine, never turns a valid submission into a ``timeout``).  Ctrl-C or SIGTERM stops every worker
    before the exception leaves this function.
    """
    if not tasks:
        return
    jobs = max(1, min(jobs or default_jobs(), len(tasks)))
    if "fork" not in multiprocessing.get_all_start_methods():
        for index, task in enumerate(tasks):
            on_result(index, _run_one(work, task, None))
        return
    previous_term = None
    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, _terminate)  # so the pool's `finally` stops the workers
    try:
        remaining, stalled = list(range(len(tasks))), 0
        while remaining:
            # A pool breaks down when a worker dies outside any task; its unfinished tasks go to a new pool.
            broken = _run_round(remaining, tasks, work, jobs, timeout_s, memory_mb, on_result, prepare)
            stalled = stalled + 1 if len(broken) == len(remaining) else 0
            if stalled >= MAX_BROKEN_ROUNDS:
                for index in broken:
                    on_result(index, failure("crash", "the grading processes kept dying before this input was graded"))
                return
            remaining = broken
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
