"""``mlsys-grader autograder``: build each lab's Gradescope autograder zip from its Otter master.

Steps per lab: copy the master's folder to a scratch directory, run ``otter assign``
there, then rewrite the zip it made so that it

- ships a wheel of this package (built once from the source tree) at the zip's root, which
  Gradescope unpacks to ``/autograder/source``;
- installs that wheel and the pinned requirements (``autograder/requirements.txt``) through
  the ``environment.yml`` Otter's ``setup.sh`` builds the image from;
- enables :class:`~mlsys_grader.gradescope.ScoreOfRecordPlugin` for the lab in
  ``otter_config.json``.

The masters stay the single source of the tests; this module only adds what Gradescope needs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import GraderError
from ..labs import lab_ids
from ._plugin import PLUGIN_NAME

GRADESCOPE_SOURCE = "/autograder/source"
PYTHON_VERSION = "3.11"
DEFAULT_REQUIREMENTS = ("mlsysim==0.3.0", "otter-grader[grading,plugins]==7.0.0")


class AutograderBuildError(GraderError, RuntimeError):
    """Raised when a master, ``otter assign`` or the wheel build does not give what the zip needs."""


@dataclass(frozen=True)
class BuiltAutograder:
    lab: str
    path: Path
    wheel: str
    assign_seconds: float


def project_root() -> Path:
    """The source tree this package was imported from (``pyproject.toml`` beside the package)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise AutograderBuildError(f"expected pyproject.toml in {root} (the autograder build needs the source tree, not an installed wheel)")
    return root


def default_masters(root: Path | None = None) -> dict[str, Path]:
    root = root or project_root()
    return {lab: root / "solutions" / lab / f"{lab}-master.ipynb" for lab in lab_ids()}


def read_requirements(root: Path | None = None) -> list[str]:
    """Pinned requirements from ``autograder/requirements.txt`` (comments dropped)."""
    path = (root or project_root()) / "autograder" / "requirements.txt"
    if not path.is_file():
        return list(DEFAULT_REQUIREMENTS)
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line]


def build_wheel(dest: Path, root: Path | None = None) -> Path:
    """Build this package's wheel into ``dest`` from a clean copy of the source (the tree stays untouched)."""
    root = root or project_root()
    with tempfile.TemporaryDirectory(prefix="mlsys-wheel-") as scratch:
        src = Path(scratch) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        shutil.copytree(root / "mlsys_grader", src / "mlsys_grader", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        dest.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dest), str(src)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise AutograderBuildError(f"pip wheel failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    wheels = sorted(dest.glob("mlsys_grader-*.whl"))
    if len(wheels) != 1:
        raise AutograderBuildError(f"expected one mlsys_grader wheel in {dest}, found {[w.name for w in wheels]}")
    return wheels[0]


def _environment_yml(original: str, requirements: list[str], wheel_name: str) -> str:
    """The conda environment Gradescope builds: Otter's (and the master's) packages, Python
    pinned to the tested version, our pins replacing Otter's, and the shipped wheel."""
    import yaml

    environment = yaml.safe_load(original) or {}
    if not isinstance(environment, dict) or not isinstance(environment.get("dependencies", []), list):
        raise AutograderBuildError(f"environment.yml from otter assign is not a conda environment: {original[:200]!r}")
    conda, pip = [], []
    for dependency in environment.get("dependencies", []):
        if isinstance(dependency, dict) and "pip" in dependency:
            pip.extend(dependency["pip"])
        elif isinstance(dependency, str) and not dependency.startswith("python"):
            conda.append(dependency)

    def name(requirement: str) -> str:
        return requirement.split("==")[0].split("[")[0].strip().lower()

    pinned = {name(requirement) for requirement in requirements}
    pip = [r for r in pip if name(r) not in pinned] + requirements + [f"{GRADESCOPE_SOURCE}/{wheel_name}"]
    environment["dependencies"] = [f"python={PYTHON_VERSION}", *conda, {"pip": pip}]
    return yaml.safe_dump(environment, sort_keys=False)


def _otter_config(original: dict, lab: str) -> dict:
    config = dict(original)
    plugins = [p for p in config.get("plugins", []) if not (p == PLUGIN_NAME or (isinstance(p, dict) and PLUGIN_NAME in p))]
    config["plugins"] = plugins + [{PLUGIN_NAME: {"lab": lab}}]
    config["grade_from_log"] = False
    config["pdf"] = False
    return config


def rewrite_zip(assigned: Path, target: Path, lab: str, wheel: Path, requirements: list[str]) -> None:
    """Copy ``assigned`` to ``target`` with our environment, plugin config and wheel."""
    with zipfile.ZipFile(assigned) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        names = source.namelist()
        for required in ("otter_config.json", "environment.yml", "run_autograder"):
            if required not in names:
                raise AutograderBuildError(f"{assigned.name}: expected {required} from otter assign; the zip holds {names}")
        for name in names:
            data = source.read(name)
            if name == "otter_config.json":
                data = json.dumps(_otter_config(json.loads(data), lab), indent=2).encode()
            elif name == "environment.yml":
                data = _environment_yml(data.decode(), requirements, wheel.name).encode()
            info = source.getinfo(name)
            out.writestr(info, data)
        out.write(wheel, arcname=wheel.name)
        out.writestr("requirements.txt", "\n".join(requirements + [f"{GRADESCOPE_SOURCE}/{wheel.name}"]) + "\n")


def assign(master: Path, lab: str, scratch: Path, *, run_tests: bool) -> Path:
    """Run ``otter assign`` on a copy of the master's folder; the path of the zip it wrote."""
    if not master.is_file():
        raise AutograderBuildError(f"{lab}: expected an Otter master notebook at {master}, found none")
    work = scratch / lab
    shutil.copytree(master.parent, work, ignore=shutil.ignore_patterns("__pycache__", "dist", "*.zip", "reference-*"))
    # the generated notebooks name themselves after the master file: call it <lab>.ipynb
    named = work / f"{lab}.ipynb"
    if master.name != named.name:
        shutil.copy2(work / master.name, named)
    command = [sys.executable, "-m", "otter", "assign", named.name, "dist"] + ([] if run_tests else ["--no-run-tests"])
    done = subprocess.run(command, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-3000:]
        raise AutograderBuildError(f"{lab}: otter assign failed on {master} (exit {done.returncode}):\n{tail}")
    zips = sorted((work / "dist" / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise AutograderBuildError(f"{lab}: expected one autograder zip from otter assign, found {[z.name for z in zips]}")
    return zips[0]


def build_autograders(output_dir: str | os.PathLike, masters: dict[str, Path] | None = None, *,
                      run_tests: bool = True, wheel: Path | None = None) -> list[BuiltAutograder]:
    """Build ``<lab>-autograder.zip`` in ``output_dir`` for each master (default: ``solutions/<lab>/<lab>-master.ipynb``)."""
    import time

    masters = masters or default_masters()
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    requirements = read_requirements()
    built = []
    with tempfile.TemporaryDirectory(prefix="mlsys-autograder-") as scratch_name:
        scratch = Path(scratch_name)
        wheel = wheel or build_wheel(scratch / "wheel")
        for lab, master in masters.items():
            started = time.perf_counter()
            assigned = assign(Path(master).resolve(), lab, scratch, run_tests=run_tests)
            target = output / f"{lab}-autograder.zip"
            rewrite_zip(assigned, target, lab, wheel, requirements)
            built.append(BuiltAutograder(lab, target, wheel.name, time.perf_counter() - started))
    return built
