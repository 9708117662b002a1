"""Run a student's notebook as an unprivileged user, within a time budget, and leave nothing running.

On Gradescope the grader runs as root, in a container made for this one submission.  When
the notebook has to run (the re-run option, or a notebook uploaded without its bundle),
:func:`run_notebook` runs it as a user id of its own (``sandbox_uid``) that

- owns nothing but a fresh folder in ``/tmp`` holding copies of the notebook, the bundle and
  Otter's test files — it cannot write the results, the autograder's files or the grading
  environment (all root's, not writable by others; :func:`protect_autograder` makes sure);
- cannot signal or trace the grader (another user id, no capabilities, ``no_new_privs``, so
  no setuid program gives them back);
- is bounded: the whole run has ``notebook_budget_s`` seconds, a fork and file-size limit,
  and the kernel is the first thing the out-of-memory killer takes;
- leaves no process behind: when the run ends (or its time is up) every process of that user
  id is killed — with ``kill(-1)`` sent *as* that user, repeated until none is left — before
  the grader reads anything the run left or writes the final results.

What the run leaves is read back as untrusted data: Otter's kernel-side results as bounded
strict JSON, the bundle it saved as bytes for the core to validate.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.jsonio import MAX_BYTES, loads_strict
from ..core.models import submission_filename
from ..errors import GraderError
from ._otter_tests import OtterResults, from_json, test_file_paths
from ._upload import read_regular_file

REPORT_NAME = ".mlsys-kernel-report.json"
MAX_REPORT_BYTES = 1024 * 1024
MAX_PROCESSES = 512
MAX_FILE_BYTES = 256 * 1024 * 1024
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38


@dataclass(frozen=True)
class Process:
    pid: int
    session: int
    command: str


@dataclass
class SandboxRun:
    """How the sandboxed run went, and what it left (all untrusted but the timings)."""

    started: bool
    why_not: str | None = None
    seconds: float = 0.0
    exit_code: int | None = None
    timed_out: bool = False
    bundle: bytes | None = None
    kernel: OtterResults | None = None
    finished: bool = False
    cell_errors: list[str] = field(default_factory=list)
    outlived: list[Process] = field(default_factory=list)
    killed: int = 0
    log_tail: str = ""

    def summary(self) -> dict:
        return {"started": self.started, "why_not": self.why_not, "seconds": round(self.seconds, 2),
                "exit_code": self.exit_code, "timed_out": self.timed_out, "finished": self.finished,
                "killed_processes": self.killed, "outlived": [p.command for p in self.outlived]}


# -- processes of one user id -------------------------------------------------------------
def processes_of(uid: int) -> list[Process]:
    """Live (not zombie) processes whose real, effective or saved user id is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8", errors="replace") as handle:
                status = dict(line.split(":", 1) for line in handle if ":" in line)
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read(300).replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        uids = {int(value) for value in status.get("Uid", "").split()[:3]}
        if uid in uids and not status.get("State", "").strip().startswith(("Z", "X")):
            found.append(Process(int(entry), int(fields[3]), command or status.get("Name", "?").strip()))
    return found


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _reap() -> None:
    """Collect exited children (the grader is the subreaper of everything the notebook started)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all(uid: int, gid: int, *, timeout_s: float = 10.0) -> int:
    """Kill every process of ``uid``; return how many were alive.  Raises ``GraderError`` if some survive.

    ``kill(-1, SIGKILL)`` sent by a process running *as* ``uid`` reaches every process of
    that user in one system call, so a process that forks in a loop cannot outrun it; the
    loop repeats until ``/proc`` shows none.
    """
    first = len(processes_of(uid))
    deadline = time.monotonic() + timeout_s
    while True:
        alive = processes_of(uid)
        if not alive:
            _reap()
            return first
        if time.monotonic() > deadline:
            raise GraderError(f"{len(alive)} process(es) of uid {uid} survived SIGKILL: "
                              + "; ".join(p.command[:80] for p in alive[:5]))
        child = os.fork()
        if child == 0:  # only system calls from here to _exit
            try:
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        for process in alive:
            with contextlib.suppress(OSError):  # gone already
                os.kill(process.pid, signal.SIGKILL)
        _reap()
        time.sleep(0.02)


# -- the folder, the permissions ----------------------------------------------------------
def not_traversable(path: Path) -> list[str]:
    blocked = []
    for folder in [path, *path.parents]:
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            blocked.append(f"{folder} (mode {stat.S_IMODE(mode):o})")
    return blocked


def unavailable(uid: int) -> str | None:
    """Why the notebook cannot run sandboxed here (None: it can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the grader does not run as root, so it cannot run the notebook as another user"
    busy = processes_of(uid)
    if busy:
        return f"uid {uid} already runs {len(busy)} process(es) here; the notebook needs a user id of its own"
    blocked = not_traversable(Path(sys.executable).parent) + not_traversable(Path(sys.prefix))
    if blocked:
        return ("other users cannot enter " + ", ".join(dict.fromkeys(blocked))
                + ", so the notebook's user cannot start Python (the image's setup.sh runs chmod 711 /root)")
    return None


def protect_autograder(autograder_dir: str | os.PathLike) -> list[str]:
    """Make the autograder folder root's and not writable by others: results, source, run_autograder,
    the upload.  Returns what had to be changed (a note for staff; Gradescope's own modes are kept
    when they are already safe)."""
    changed = []
    root = Path(autograder_dir)
    targets = [root, root / "results", root / "run_autograder", root / "submission_metadata.json"]
    for top in (root / "source", root / "submission"):
        if top.is_dir() and not top.is_symlink():
            targets.append(top)
            for folder, dirs, files in os.walk(top):
                targets += [Path(folder) / name for name in dirs + files]
    for path in targets:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        if info.st_uid != 0 or info.st_gid != 0:
            os.chown(path, 0, 0, follow_symlinks=False)
            changed.append(f"chown root {path}")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
            changed.append(f"chmod go-w {path}")
    return changed


def _confine(libc) -> None:
    """Runs in the child after it became the sandbox user, before the notebook runner starts."""
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as handle:
            handle.write("1000")  # a runaway notebook is what the OOM killer takes, not the grader
    except OSError:
        pass


def _stage(work: Path, notebook: Path, lab: str, tests_dir: Path, bundle: bytes | None, uid: int, gid: int) -> str:
    name = f"{lab}.ipynb"
    shutil.copyfile(notebook, work / name, follow_symlinks=False)
    if bundle is not None:
        (work / submission_filename(lab)).write_bytes(bundle)
    (work / "tests").mkdir()
    for path in test_file_paths(tests_dir):
        shutil.copyfile(path, work / "tests" / path.name)
    for sub in ("home", "tmp"):
        (work / sub).mkdir()
    for folder, dirs, files in os.walk(work):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(entry, uid, gid, follow_symlinks=False)
    os.chmod(work, 0o700)
    return name


def _environment(work: Path) -> dict[str, str]:
    bin_dir = os.path.dirname(sys.executable)
    return {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
            "LANG": "C.UTF-8", "USER": "student", "LOGNAME": "student", "PYTHONDONTWRITEBYTECODE": "1",
            "JUPYTER_RUNTIME_DIR": str(work / "tmp"), "IPYTHONDIR": str(work / "home" / ".ipython"),
            "MPLCONFIGDIR": str(work / "tmp"), "MPLBACKEND": "Agg"}


def _read_report(work: Path) -> tuple[OtterResults | None, bool, list[str], str | None]:
    try:
        raw = read_regular_file(work / REPORT_NAME, MAX_REPORT_BYTES)
        if len(raw) > MAX_REPORT_BYTES:
            raise ValueError("the kernel report is too large")
        data = loads_strict(raw, max_bytes=MAX_REPORT_BYTES)
        run = from_json(data)
        errors = data.get("cell_errors") if isinstance(data.get("cell_errors"), list) else []
        return run, data.get("finished") is True, [str(e)[:300] for e in errors[:20]], None
    except FileNotFoundError:
        return None, False, [], "the notebook run left no kernel report (it was killed or did not finish)"
    except (OSError, ValueError, GraderError) as exc:
        return None, False, [], f"the kernel report was refused: {str(exc)[:200]}"


def run_notebook(notebook: Path, lab: str, tests_dir: Path, *, uid: int, budget_s: float, cell_timeout_s: float,
                 bundle: bytes | None = None) -> SandboxRun:
    """Run ``notebook`` with Otter's tests as ``uid``, at most ``budget_s`` seconds; kill everything it started."""
    why_not = unavailable(uid)
    if why_not:
        return SandboxRun(started=False, why_not=why_not)
    gid = uid
    libc = _libc()
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    private = Path(tempfile.mkdtemp(prefix="mlsys-grader-"))  # root's, 0700: the run's log
    work = Path(tempfile.mkdtemp(prefix="mlsys-notebook-"))
    run = SandboxRun(started=True)
    try:
        name = _stage(work, notebook, lab, tests_dir, bundle, uid, gid)
        cell = max(1.0, min(cell_timeout_s, budget_s))
        command = [sys.executable, "-I", "-m", "mlsys_grader.gradescope._in_sandbox", "--lab", lab, "--notebook", name,
                   "--cell-timeout", f"{cell:g}", "--report", REPORT_NAME]
        with open(private / "log", "w+b") as log:
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=work, env=_environment(work), stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, user=uid, group=gid, extra_groups=[],
                                       start_new_session=True, close_fds=True, preexec_fn=lambda: _confine(libc))
            try:
                try:
                    run.exit_code = process.wait(timeout=budget_s)
                except subprocess.TimeoutExpired:
                    run.timed_out = True
                run.seconds = time.monotonic() - started
                run.outlived = _outlived(uid, process.pid, ended=not run.timed_out)
            finally:  # whatever happened above, nothing of the notebook's user survives this block
                run.killed = kill_all(uid, gid)
            if run.exit_code is None:
                run.exit_code = process.wait()
            log.seek(max(0, os.fstat(log.fileno()).st_size - 4000))
            run.log_tail = log.read().decode("utf-8", "replace")
        run.kernel, run.finished, run.cell_errors, problem = _read_report(work)
        if problem and run.kernel is None:
            run.why_not = problem
        try:
            data = read_regular_file(work / submission_filename(lab), MAX_BYTES)
            run.bundle = data if len(data) <= MAX_BYTES else None
        except OSError:
            run.bundle = None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)
    return run


def _outlived(uid: int, leader: int, *, ended: bool) -> list[Process]:
    """Processes that left the notebook's session, or that are still alive a moment after it ended."""
    if ended:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and processes_of(uid):
            _reap()
            time.sleep(0.05)
        return processes_of(uid)
    return [p for p in processes_of(uid) if p.session != leader]
