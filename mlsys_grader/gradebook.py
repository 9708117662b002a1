"""Grade many submissions into a gradebook (one row per input, never stopping on a bad one)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, Iterator

from .api import grade_file
from .core.models import PARTS
from .errors import GraderError

BASE_COLUMNS = ["path", "lab", "track", "score", "max_score", *[f"part_{p}" for p in PARTS], "part_synthesis", "flags", "reason"]


def iter_inputs(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Every ``*.json`` file under the given files and folders, sorted, without following symlinks."""
    for raw in paths:
        path = Path(raw)
        if path.is_symlink():
            continue
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file() and not p.is_symlink())
        else:
            yield path


def grade_row(path: Path) -> dict[str, object]:
    """One gradebook row; an unreadable submission gets score 0 and the reason."""
    row: dict[str, object] = {column: "" for column in BASE_COLUMNS}
    row["path"] = str(path)
    try:
        report = grade_file(path)
    except (GraderError, OSError) as exc:
        row.update(score=0, reason=f"{type(exc).__name__}: {exc}")
        return row
    row.update(lab=report.lab, track=report.track, score=report.score, max_score=report.max_score,
               flags=";".join(report.flags), reason="")
    for name, part in report.parts.items():
        row[f"part_{name}"] = part.score
    return row


def write_csv(rows: Iterable[dict[str, object]], out: str | Path) -> int:
    """Write rows to ``out``; returns how many were written."""
    count = 0
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=BASE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            count += 1
    return count
