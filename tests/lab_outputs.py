"""What a student or staff member sees from every shipped lab, as digests: the proof that moving a lab changed none of it.

    python tests/lab_outputs.py            # compare with tests/fixtures/lab_outputs.json; exit 1 naming each difference
    python tests/lab_outputs.py --write    # record the digests (after a change whose differences are explained)

The outputs digested (``tests/test_lab_outputs.py`` runs the comparison in the suite):

* ``report/…``: the grade report (its JSON) of every shipped file a grader reads: the quick start's example submissions,
  the reference submissions, the scenario and marimo fixtures, and the book's genuine marimo exports of the shipped labs
  (``../shared/marimo-exports``, when it is there); a file that cannot be graded digests its error's words.
* ``corpus/…``: ``mlsys-grader grade`` over 1,008 bundles (every lab × track × 63 seeds, each fifth one left as
  ``solve`` wrote it and the others edited one way each: a part dropped, a result number changed, the two synthesis
  choices swapped, the hand-written answers in place of the template), its ``grades.csv`` and ``final.csv``.
* ``file/…``: the generated student notebooks and Otter masters, byte for byte (the zips' hidden tests are the masters'
  test cells, through the pinned ``otter assign``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "fixtures" / "lab_outputs.json"
EXPORTS = ROOT.parent / "shared" / "marimo-exports"
SEEDS = 63
SHIPPED = ("lab02", "lab07", "lab08", "lab11")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def graded_files() -> Iterator[tuple[str, Path]]:
    """(name, path) of every shipped file a grader reads, the book's exports of the shipped labs included when present."""
    for folder, pattern in (("examples/submissions", "*"), ("tests/fixtures/scenarios", "*"), ("tests/fixtures/marimo", "*")):
        for path in sorted((ROOT / folder).glob(pattern)):
            if path.is_file():
                yield f"{folder}/{path.relative_to(ROOT / folder).as_posix()}", path
    if EXPORTS.is_dir():
        for path in sorted(EXPORTS.glob("lab*")):
            if path.name.startswith(SHIPPED) and path.suffix in (".json", ".md"):
                yield f"marimo-exports/{path.name}", path


def report_digests() -> dict[str, str]:
    from mlsys_grader import grade_file

    found: dict[str, str] = {}
    for name, path in graded_files():
        try:
            text = grade_file(path).model_dump_json()
        except Exception as error:  # a refused file: its words are what staff see
            text = f"{type(error).__name__}: {error}".replace(str(ROOT), "<root>")
        found[f"report/{name}"] = _digest(text.encode("utf-8"))
    return found


def _edited(lab_id: str, track: str, seed: int) -> dict[str, Any]:
    """A bundle ``solve`` wrote for ``seed``, edited one way by ``seed % 5`` (0: as written) and sealed again."""
    from mlsys_grader import Bundle, solve
    from mlsys_grader.labs import get_lab

    data = solve(lab_id, track, seed=seed).model_dump(mode="json")
    kind = seed % 5
    parts = sorted(data["evidence"])
    if kind == 1:
        data["evidence"].pop(parts[seed % len(parts)])
    elif kind == 2:
        record = data["evidence"][parts[seed % len(parts)]]
        _nudge(record["result"])
    elif kind == 3:
        s = data["synthesis"]
        s["recommendation"], s["rejected_alternative"] = s.get("rejected_alternative"), s.get("recommendation")
    elif kind == 4 and seed % 3 == 0:
        data = solve(lab_id, track).model_dump(mode="json")
        data["synthesis"].update(get_lab(lab_id).reference_answers(track))
    return json.loads(Bundle.model_validate(data).sealed().to_json())


def _nudge(value: Any) -> bool:
    """Multiply the first non-zero float under ``value`` by 1.01, in place; whether one was found."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, float) and item:
            value[key] = item * 1.01
            return True
        if isinstance(item, dict | list) and _nudge(item):
            return True
    return False


def corpus_digests() -> dict[str, str]:
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "bundles"
        folder.mkdir()
        for lab_id in SHIPPED:
            from mlsys_grader.labs import get_lab

            for track in get_lab(lab_id).tracks:
                for seed in range(SEEDS):
                    bundle = _edited(lab_id, track, seed)
                    (folder / f"{lab_id}-{track}-{seed:03d}.json").write_text(json.dumps(bundle), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        subprocess.run([sys.executable, "-m", "mlsys_grader", "grade", "bundles", "--no-db", "-q", "-o", "grades.csv"],
                       cwd=scratch, env=env, check=False, capture_output=True)
        for name in ("grades.csv", "final.csv"):
            path = Path(scratch) / name
            found[f"corpus/{name}"] = _digest(path.read_bytes()) if path.is_file() else "missing"
    return found


def file_digests() -> dict[str, str]:
    paths = sorted((ROOT / "assignments").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*/*-master.ipynb"))
    return {f"file/{path.relative_to(ROOT).as_posix()}": _digest(path.read_bytes()) for path in paths}


def digests() -> dict[str, str]:
    """Every output above, name → digest."""
    return {**file_digests(), **report_digests(), **corpus_digests()}


def differences(found: dict[str, str], recorded: dict[str, str]) -> list[str]:
    """What differs from the record, one line each (an output only one side has is named too)."""
    lines = [f"{name}: {recorded.get(name, 'absent')} -> {found.get(name, 'absent')}"
             for name in sorted(set(found) | set(recorded)) if found.get(name) != recorded.get(name)]
    if not EXPORTS.is_dir():  # a clone without ../shared cannot grade the book's exports: not a difference
        lines = [line for line in lines if not line.startswith("report/marimo-exports/")]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record the digests in tests/fixtures/lab_outputs.json")
    options = parser.parse_args(argv)
    found = digests()
    if options.write:
        RECORD.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"recorded {len(found)} outputs in {RECORD.relative_to(ROOT)}")
        return 0
    lines = differences(found, json.loads(RECORD.read_text(encoding="utf-8")))
    print("\n".join(lines) if lines else f"all {len(found)} outputs are as recorded")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
