"""The submission bundle as a notebook output: the format written on save and read back by every reader.

On every save the student API displays the bundle under a custom MIME type.  Jupyter keeps
``application/*+json`` outputs as JSON objects in the saved notebook, and renderers that do
not know the type show the ``text/plain`` fallback, so the student sees no wall of JSON.
Readers (the Gradescope upload, the intake reader) later find those outputs again in a parsed
``.ipynb`` as *data*: untrusted text the caller validates with the core, never executed.

Pure: JSON values in, JSON values out; displaying (IPython) and reading files belong to the
callers (:mod:`mlsys_grader.student`, :mod:`mlsys_grader.gradescope`, :mod:`mlsys_grader.intake`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

BUNDLE_MIME = "application/vnd.mlsys-grader.bundle+json"


@dataclass(frozen=True)
class EmbeddedBundle:
    """One bundle found in a notebook output: its JSON text and where it was."""

    text: str
    cell_index: int
    created_at: str


def bundle_display_data(bundle_json: str, *, summary: bool = True) -> dict[str, Any]:
    """The display data (MIME type → data) that embeds a bundle's JSON text in a notebook output.

    ``summary``: the ``text/plain`` fallback names the lab, track and captured parts (one
    line); without it the fallback is empty (the notebook's own notice says what was saved).
    Raises ``ValueError`` when ``bundle_json`` is not a JSON object, naming what arrived.
    """
    data = json.loads(bundle_json)
    if not isinstance(data, dict):
        raise ValueError(f"a bundle is a JSON object; got a JSON {type(data).__name__}")
    text = ""
    if summary:
        captured = sorted((data.get("evidence") or {}).keys())
        text = (f"mlsys-grader bundle saved: {data.get('lab')} on track {data.get('track')}, "
                f"parts captured: {', '.join(captured) if captured else 'none'}")
    return {BUNDLE_MIME: data, "text/plain": text}


def _outputs(notebook: Mapping[str, Any]) -> Iterable[tuple[int, Mapping[str, Any]]]:
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        return
    for index, cell in enumerate(cells):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        outputs = cell.get("outputs")
        if not isinstance(outputs, list):
            continue
        for output in outputs:
            if isinstance(output, Mapping) and isinstance(output.get("data"), Mapping):
                yield index, output["data"]


def find_embedded_bundles(notebook: Mapping[str, Any]) -> list[EmbeddedBundle]:
    """Every bundle embedded in ``notebook`` (a parsed ``.ipynb``), oldest save first.

    Saves are ordered by the bundle's own ``created_at`` (ISO 8601 text), then by cell
    position, so a part re-captured after the synthesis cell still counts as the latest
    save.  The data stays untrusted text: the caller validates it with the core.
    """
    found = []
    for index, data in _outputs(notebook):
        value = data.get(BUNDLE_MIME)
        if value is None:
            continue
        created: Any
        if isinstance(value, str):  # a frontend may keep JSON data as text
            text = value
            try:
                created = json.loads(value).get("created_at")
            except (ValueError, AttributeError):
                created = None
        else:
            text = json.dumps(value, ensure_ascii=False)
            created = value.get("created_at") if isinstance(value, Mapping) else None
        found.append(EmbeddedBundle(text=text, cell_index=index, created_at=created if isinstance(created, str) else ""))
    return sorted(found, key=lambda item: (item.created_at, item.cell_index))


def bundle_from_outputs(notebook: Mapping[str, Any]) -> EmbeddedBundle | None:
    """The latest bundle saved in ``notebook``'s outputs (see :func:`find_embedded_bundles`), or None."""
    found = find_embedded_bundles(notebook)
    return found[-1] if found else None
