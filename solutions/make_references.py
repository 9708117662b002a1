"""Make the reference submissions: each student notebook completed and executed on every track.

For every lab and track this fills in ``assignments/<lab>.ipynb`` the way a diligent
student would (contrasting controls, the prediction the replayed numbers support and a
valid decision — the answers of :func:`mlsys_grader.staff.solve` for that track — and the
hand-written synthesis of ``reference_rationales.toml``), executes it top to bottom in a real
kernel with nbclient, and writes::

    <master's folder>/reference-<track>.ipynb               the executed notebook
    <master's folder>/reference-<track>-submission.json     the bundle it saved

(the master's folder is ``solutions/<lab>/`` for the shipped labs: :meth:`LabSpec.master_path`).

Each notebook runs in its own scratch folder, because a notebook saves its bundle
as ``<lab>-submission.json`` next to itself.  Usage::

    python solutions/make_references.py [--lab lab07] [--track cloud]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import nbformat

from mlsys_grader.labs import get_lab, lab_ids
from mlsys_grader.staff._assign import student_path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling reference_answers module
from reference_answers import reference_synthesis

ROOT = Path(__file__).resolve().parents[1]
TRACKS = ("tinyml", "mobile", "edge", "cloud")
"""Every track a shipped lab runs on (``--track`` choices); each lab makes references for its own tracks."""


def answers(lab_id: str, track: str) -> dict[str, object]:
    """Variable name → value a diligent student assigns in the notebook for ``track``."""
    from mlsys_grader import staff

    bundle = staff.solve(lab_id, track)
    values: dict[str, object] = {"TRACK": track}
    for part, controls in bundle.controls.items():
        values.update(controls)
        values[f"prediction_{part}"] = bundle.evidence[part].prediction
    synthesis = {**bundle.synthesis.model_dump(), **reference_synthesis(lab_id, track)}
    for name in get_lab(lab_id).synthesis_fields:
        if synthesis.get(name) is not None:
            values[name] = synthesis[name]
    return values


def _literal(value: object) -> str:
    """Python source for ``value``: strings double-quoted as in the notebooks (long ones wrapped), the rest by ``repr``."""
    if not isinstance(value, str):
        return repr(value)
    if len(value) <= 80:
        return json.dumps(value, ensure_ascii=False)
    pieces = textwrap.wrap(value, 88, drop_whitespace=False)
    return "(\n" + "\n".join(f"    {json.dumps(piece, ensure_ascii=False)}" for piece in pieces) + "\n)"


def fill(notebook, values: dict[str, object]):
    """Replace each top-level ``name = …`` assignment whose name is in ``values`` (comments kept)."""
    seen: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            match = re.match(r"^([A-Za-z_]\w*) = (.*?)(\s+#.*)?$", line)
            if match and match.group(1) in values:
                name = match.group(1)
                comment = match.group(3) or ""
                lines[index] = f"{name} = {_literal(values[name])}{comment}"
                seen.add(name)
        cell.source = "\n".join(lines)
    missing = sorted(set(values) - seen)
    if missing:
        raise ValueError(f"the student notebook has no assignment for {missing}; expected one line `name = ...` for each")
    return notebook


def execute(notebook, lab_id: str, workdir: Path, *, timeout: int = 600):
    """Run ``notebook`` as ``<workdir>/<lab>.ipynb`` (Otter opens its tests by that name) in a python3 kernel."""
    from nbclient import NotebookClient

    path = workdir / f"{lab_id}.ipynb"
    nbformat.write(notebook, path)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return notebook


def make(lab_id: str, track: str) -> tuple[Path, float]:
    """Write one reference notebook and its bundle; return the notebook path and the execution seconds."""
    student = nbformat.read(student_path(ROOT, lab_id), as_version=4)
    filled = fill(student, answers(lab_id, track))
    out = get_lab(lab_id).master_path(ROOT).parent
    with tempfile.TemporaryDirectory(prefix=f"{lab_id}-{track}-") as scratch:
        began = time.perf_counter()
        executed = execute(filled, lab_id, Path(scratch))
        seconds = time.perf_counter() - began
        shutil.copyfile(Path(scratch) / f"{lab_id}-submission.json", out / f"reference-{track}-submission.json")
    target = out / f"reference-{track}.ipynb"
    nbformat.write(executed, target)
    return target, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", action="append", choices=lab_ids())
    parser.add_argument("--track", action="append", choices=TRACKS)
    args = parser.parse_args(argv)
    for lab_id in args.lab or lab_ids():
        for track in [track for track in args.track or TRACKS if track in get_lab(lab_id).tracks]:
            target, seconds = make(lab_id, track)
            print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target} ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
