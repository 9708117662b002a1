"""Which lab an upload that could not be read belongs to, from where it came.

A gradable submission names its lab itself.  An unreadable one (truncated, empty, a PDF, a
form the course does not accept) cannot, yet its student submitted *something* for some
lab, and the final gradebook must say so rather than call the student ``missing``.  Its lab
is, in this order:

1. what the staff manifest's ``lab`` column says, or a lab the file's path names
   (``lab11_report.pdf``, a download folder ``canvas_lab11/``) — :func:`._gradebook.make_row`;
2. the lab staff named for that upload in an earlier decision (:mod:`._decisions`);
3. the lab of the gradable submissions that came with it: going up from the upload's folder
   to the folder given on the command line, the first folder whose gradable submissions are
   all of one lab (a Gradescope export is one assignment; a Canvas or Moodle download one
   assignment's folder); a folder holding several labs' submissions stops the search;
4. the course's only lab (a course file with one lab, or one lab installed).

Otherwise its lab stays unknown: the upload is listed for staff as "unreadable, lab unknown".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ._ingest import Candidate
from ._row import SCORED, Row


def _folders(candidate: Candidate) -> list[str]:
    """The folders from the upload's own up to the folder given on the command line, nearest first."""
    here = os.path.dirname(candidate.source)  # a file's folder; for a Gradescope submission folder, its export
    root = candidate.root.rstrip(os.sep)
    folders = []
    while here and (here == root or here.startswith(root + os.sep)):
        folders.append(here)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return folders


def place_labs(rows: Sequence[Row], candidates: Sequence[Candidate], decided: Mapping[str, str],
               only_lab: str | None) -> list[Row]:
    """``rows`` with a lab given to every ungradable row that had none, where one can be told (see the module docstring).

    ``decided``: upload hash → the lab staff named for it; ``only_lab``: the course's only lab, or None.
    """
    labs_in: dict[str, set[str]] = {}
    for row, candidate in zip(rows, candidates, strict=True):
        if row.status in SCORED and row.lab:
            for folder in _folders(candidate):
                labs_in.setdefault(folder, set()).add(row.lab)
    placed = []
    for row, candidate in zip(rows, candidates, strict=True):
        if row.lab or row.status in SCORED:
            placed.append(row)
            continue
        lab = decided.get(row.input_hash, "")
        if not lab:
            for folder in _folders(candidate):
                found = labs_in.get(folder, set())
                if len(found) == 1:
                    lab = next(iter(found))
                    break
                if found:  # several labs' submissions in one folder: which one this was cannot be told from here
                    break
        placed.append(row.but(lab=lab or only_lab or ""))
    return placed
