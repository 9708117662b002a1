"""The submission bundle as a notebook output, so a bare ``.ipynb`` upload still carries it.

On every save the student API displays the bundle under a custom MIME type.  Jupyter keeps
``application/*+json`` outputs as JSON objects in the saved notebook, and renderers that do
not know the type show the ``text/plain`` fallback (one short line), so the student sees no
wall of JSON.  The grader later reads those outputs back as *data*: parsed as strict JSON by
the core, never executed.
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


def bundle_display_data(bundle_json: str) -> dict[str, Any]:
    """The display bundle (MIME type → data) for a bundle's JSON text.

    Raises ``ValueError`` when ``bundle_json`` is not a JSON object, naming what arrived.
    """
    data = json.loads(bundle_json)
    if not isinstance(data, dict):
        raise ValueError(f"a bundle is a JSON object; got a JSON {type(data).__name__}")
    captured = sorted((data.get("evidence") or {}).keys())
    summary = (
        f"mlsys-grader bundle saved: {data.get('lab')} on track {data.get('track')}, "
        f"parts captured: {', '.join(captured) if captured else 'none'}"
    )
    return {BUNDLE_MIME: data, "text/plain": summary}


def display_bundle(bundle_json: str) -> None:
    """Display the bundle as a notebook output (a no-op outside an IPython kernel).

    Outside a kernel IPython's ``display`` would print the whole dict to stdout, so a
    script or a test that saves a bundle checks for a running shell first.
    """
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to embed into
        return
    if get_ipython() is None:
        return
    display(bundle_display_data(bundle_json), raw=True)


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
