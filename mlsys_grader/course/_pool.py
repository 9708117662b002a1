"""A small process pool that bounds every task in time and memory and survives crashes.

Why not :mod:`multiprocessing.Pool` or :mod:`concurrent.futures`: a task that hangs in C
code or is killed by the kernel poisons those pools (``BrokenProcessPool``) or blocks
them forever.  Here the parent hands each worker one task at a time and watches the
clock; a worker that overruns is killed and replaced, and its task gets a result saying
so.  Inside the worker a ``SIGALRM`` timer ends ordinary overruns cleanly, and
``RLIMIT_AS`` turns runaway allocation into :class:`MemoryError`.

Workers are forked and import the evaluators on their first grade (mlsysim takes
seconds to import; the workers do it in parallel).  Where ``fork`` is unavailable
tasks run in-process, with the time limit only.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

GRACE_S = 5.0
"""Beyond the time limit, how long the parent waits before killing an unresponsive worker."""


class TaskTimeout(Exception):
    """Raised inside a worker when a task exceeds its time limit."""


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _alarm(_signum: int, _frame: Any) -> None:
    raise TaskTimeout()


def _limit_memory(memory_mb: int | None) -> None:
    """Cap this process's address space at its current size plus ``memory_mb``."""
    if not memory_mb:
        return
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as handle:
            vm_kb = next(int(line.split()[1]) for line in handle if line.startswith("VmSize:"))
        limit = (vm_kb * 1024) + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError, StopIteration, ImportError):
        pass  # no /proc or no resource module: the parent's watchdog still bounds time


def _terminate(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def failure(status: str, reason: str) -> dict[str, Any]:
    """The result of a task that did not finish."""
    return {"status": status, "reason": reason}


def _run_one(work: Callable[[Any], dict], task: Any, timeout_s: float) -> tuple[dict, bool]:
    """(result, worker must exit).  Never raises."""
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return work(task), False
    except TaskTimeout:
        return failure("timeout", f"grading took longer than the {timeout_s:g} s limit"), False
    except MemoryError:
        return failure("memory", "grading needed more memory than the per-submission limit"), True
    except RecursionError:
        return failure("error", "input nests too deeply to grade"), False
    except Exception as exc:  # a hostile input must not stop the batch; the reason goes into the row
        return failure("error", f"internal error while grading ({type(exc).__name__}: {str(exc)[:200]})"), False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _worker(conn: Any, work: Callable[[Any], dict], timeout_s: float, memory_mb: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    signal.signal(signal.SIGALRM, _alarm)
    _limit_memory(memory_mb)
    parent = os.getppid()
    while True:
        try:
            # NOTE: poll with a timeout rather than block, because siblings forked later hold
            # copies of this pipe's parent end, so a dead parent does not always mean EOF here.
            if not conn.poll(1.0):
                if os.getppid() != parent:
                    return
                continue
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, task = message
        result, fatal = _run_one(work, task, timeout_s)
        try:
            conn.send((index, result))
        except (OSError, ValueError):
            return
        if fatal:
            return


class _Worker:
    def __init__(self, ctx: Any, work: Callable, timeout_s: float, memory_mb: int | None) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, work, timeout_s, memory_mb), daemon=True)
        self.process.start()
        child.close()
        self.task: int | None = None
        self.started = 0.0

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


def run_tasks(
    tasks: Sequence[Any],
    work: Callable[[Any], dict],
    *,
    jobs: int | None = None,
    timeout_s: float = 30.0,
    memory_mb: int | None = 1024,
    on_result: Callable[[int, dict], None],
) -> None:
    """Run ``work(task)`` for every task, calling ``on_result(index, result)`` in the parent.

    Every task yields exactly one result: ``work``'s dict, or ``{"status": "timeout" |
    "memory" | "crash" | "error", "reason": ...}``.  ``work`` must be a function this
    process can fork with (closures are fine).
    """
    if not tasks:
        return
    jobs = max(1, min(jobs or default_jobs(), len(tasks)))
    if "fork" not in multiprocessing.get_all_start_methods():
        old = signal.signal(signal.SIGALRM, _alarm) if hasattr(signal, "SIGALRM") else None
        try:
            for index, task in enumerate(tasks):
                on_result(index, _run_one(work, task, timeout_s)[0])
        finally:
            if old is not None:
                signal.signal(signal.SIGALRM, old)
        return
    ctx = multiprocessing.get_context("fork")
    pending = deque(range(len(tasks)))
    previous_term = None
    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, _terminate)  # so `finally` below stops the workers
    workers = [_Worker(ctx, work, timeout_s, memory_mb) for _ in range(jobs)]
    try:
        while pending or any(w.task is not None for w in workers):
            for slot, worker in enumerate(workers):
                if worker.task is None and pending:
                    index = pending.popleft()
                    try:
                        worker.conn.send((index, tasks[index]))
                    except (OSError, ValueError):
                        worker.kill()
                        workers[slot] = worker = _Worker(ctx, work, timeout_s, memory_mb)
                        worker.conn.send((index, tasks[index]))
                    worker.task, worker.started = index, time.monotonic()
            busy = [w for w in workers if w.task is not None]
            ready = wait([w.conn for w in busy], timeout=0.5)
            now = time.monotonic()
            for slot, worker in enumerate(workers):
                if worker.task is None:
                    continue
                if worker.conn in ready:
                    try:
                        index, result = worker.conn.recv()
                    except (EOFError, OSError):
                        worker.process.join(timeout=5)
                        code = worker.process.exitcode
                        on_result(worker.task, failure("crash", f"the grading process died (exit code {code}) on this input"))
                        worker.kill()
                        workers[slot] = _Worker(ctx, work, timeout_s, memory_mb)
                        continue
                    worker.task = None
                    on_result(index, result)
                    if result.get("status") == "memory":
                        worker.kill()
                        workers[slot] = _Worker(ctx, work, timeout_s, memory_mb)
                elif now - worker.started > timeout_s + GRACE_S:
                    on_result(worker.task, failure("timeout", f"grading did not finish within {timeout_s:g} s; the process was stopped"))
                    worker.kill()
                    workers[slot] = _Worker(ctx, work, timeout_s, memory_mb)
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        for worker in workers:
            try:
                worker.conn.send(None)
            except (OSError, ValueError):
                pass
        for worker in workers:
            worker.process.join(timeout=2)
            worker.kill()
