"""Drive the Gradescope emulator (``../shared/gradescope-emulator`` beside the repository) from tests and benchmarks.

The emulator builds an image from an autograder zip with the zip's own ``setup.sh`` and runs
one upload per fresh container, as root, with Gradescope's limits (see its README).  One
deviation matters for a fully pinned zip: the image's Python is the host's (``python3.11``
under ``/usr/bin``), not the exact version the zip pins.  :func:`for_emulator` therefore
relaxes the pins of the few packages whose ``Requires-Python`` excludes the host's Python
(named in the returned list); every other pin is installed as built.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABS = ("lab02", "lab07", "lab11")
"""The labs whose masters ship in ``solutions/`` (each gets its zip)."""
EMULATOR = ROOT.parent / "shared" / "gradescope-emulator" / "gradescope-emulator"
WORK = Path(os.environ.get("MLSYS_EMULATOR_WORK", "/tmp/gradescope-emulator"))
CONTAINER_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def container_python(minor: str) -> str:
    """The version of the host's ``python<minor>`` the emulator builds its environment from."""
    for folder in CONTAINER_PATH:
        candidate = Path(folder) / f"python{minor}"
        if candidate.is_file():
            done = subprocess.run([str(candidate), "-c", "import platform; print(platform.python_version())"],
                                  capture_output=True, text=True, check=True)
            return done.stdout.strip()
    raise FileNotFoundError(f"no python{minor} in {':'.join(CONTAINER_PATH)} for the emulator's image")


_PIN = re.compile(r"^(  - )?([A-Za-z0-9_.\-]+)==([^\s#]+)$", re.M)


def relax_pins(text: str, python: str) -> tuple[str, list[str]]:
    """``text`` with ``name==version`` lines unpinned where the installed version's Requires-Python excludes ``python``."""
    from packaging.specifiers import SpecifierSet

    relaxed = []

    def relax(match: re.Match) -> str:
        prefix, name, version = match.group(1) or "", match.group(2), match.group(3)
        try:
            requires = metadata.metadata(name).get("Requires-Python")
        except metadata.PackageNotFoundError:
            return match.group(0)
        if requires and not SpecifierSet(requires).contains(python):
            relaxed.append(f"{name}=={version} (Requires-Python {requires}; the emulator has {python})")
            return prefix + name
        return match.group(0)

    return _PIN.sub(relax, text), relaxed


def for_emulator(zip_path: Path, target: Path) -> tuple[Path, list[str]]:
    """A copy of ``zip_path`` whose pins the emulator's Python can install; the pins that were relaxed."""
    with zipfile.ZipFile(zip_path) as source:
        environment = source.read("environment.yml").decode()
        python = container_python(re.search(r"python=(\d+\.\d+)", environment).group(1))
        environment, relaxed = relax_pins(environment, python)
        replaced = {"environment.yml": environment.encode(),
                    "requirements.txt": relax_pins(source.read("requirements.txt").decode(), python)[0].encode()}
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            for info in source.infolist():
                out.writestr(info, replaced.get(info.filename) or source.read(info.filename))
    return target, relaxed


def build(zip_path: Path) -> Path:
    """The emulator image for ``zip_path`` (built once per zip content; the emulator caches it)."""
    done = subprocess.run([str(EMULATOR), "build", str(zip_path), "--work", str(WORK)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"gradescope-emulator build failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass
class Run:
    """One emulated submission: the harness line and what Gradescope would read."""

    line: str
    rc: int
    seconds: float
    score: float | None
    timed_out: bool
    peak_mb: int | None
    results: dict | None
    stdout: str
    folder: Path

    def upper(self, path: str) -> Path:
        """A file as the run left it in the container's writable layer (``/autograder/...``)."""
        return self.folder / "top" / "upper" / path.lstrip("/")


def run(image: Path, upload: Path, *, cpu: float = 0.5, mem: str = "768M", timeout: int = 600, name: str | None = None) -> Run:
    """Run ``upload`` (a folder, a zip or one file) in a fresh container of ``image``."""
    name = name or uuid.uuid4().hex[:8]
    done = subprocess.run([str(EMULATOR), "run", str(image), str(upload), "--cpu", str(cpu), "--mem", mem,
                           "--timeout", str(timeout), "--name", name, "--work", str(WORK)],
                          capture_output=True, text=True, timeout=timeout + 120)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    if done.returncode != 0 or "rc" not in fields:
        raise RuntimeError(f"gradescope-emulator run failed ({done.returncode}): {line}\n{done.stderr[-2000:]}")
    folder = sorted(WORK.glob(f"runs/*-{name}"))[-1]
    results_path = folder / "results" / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else None
    stdout = (folder / "stdout").read_text(errors="replace") if (folder / "stdout").is_file() else ""
    score = fields.get("score")
    return Run(line=line, rc=int(fields["rc"]), seconds=float(fields["seconds"]),
               score=None if score in (None, "none") else float(score), timed_out=fields.get("timeout") == "yes",
               peak_mb=int(fields["peak_mb"]) if fields.get("peak_mb", "?").isdigit() else None,
               results=results, stdout=stdout, folder=folder)


def validate(results_path: Path) -> tuple[bool, str]:
    """The emulator's check of a results.json against Gradescope's spec: (ok, its report)."""
    done = subprocess.run([str(EMULATOR), "validate", str(results_path)], capture_output=True, text=True)
    return done.returncode == 0, done.stdout + done.stderr


def remove_run(result: Run) -> None:
    shutil.rmtree(result.folder, ignore_errors=True)


def zip_with_config(zip_path: Path, target: Path, **options) -> Path:
    """A copy of an autograder zip with plugin options changed (e.g. ``rerun_notebook=True``)."""
    from mlsys_grader.gradescope._options import PLUGIN_NAME

    with zipfile.ZipFile(zip_path) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "otter_config.json":
                config = json.loads(data)
                for plugin in config["plugins"]:
                    if isinstance(plugin, dict) and PLUGIN_NAME in plugin:
                        plugin[PLUGIN_NAME].update(options)
                data = json.dumps(config, indent=2).encode()
            out.writestr(info, data)
    return target


@dataclass(frozen=True)
class Built:
    zips: dict[str, Path]
    stdout: str


@functools.cache
def autograder_zips() -> Built:
    """Every shipped lab's zip built by ``mlsys-grader autograder`` (default options), once per test process.

    Shared by ``test_autograder.py`` and ``test_gradescope_emulator.py``, so a session builds them once.
    Raises ``RuntimeError`` with the command's output when the build fails.
    """
    out = Path(tempfile.mkdtemp(prefix="mlsys-autograders-"))
    atexit.register(shutil.rmtree, out, True)
    command = [sys.executable, "-m", "mlsys_grader", "autograder", "-o", str(out), "--no-run-tests"]
    for lab in LABS:
        command += ["--master", f"{lab}={ROOT / 'solutions' / lab / f'{lab}-master.ipynb'}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"mlsys-grader autograder failed:\n{done.stdout}\n{done.stderr}")
    return Built({lab: out / f"{lab}-autograder.zip" for lab in LABS}, done.stdout)
