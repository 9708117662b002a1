"""Replay as a service: :class:`Replay` turns a record's inputs into the evaluator's numbers.

It sits between the labs and every edge: the core asks for evaluations and plans only through the
:class:`~mlsys_grader.core.replayer.Replayer` it is handed, and whoever grades builds one :class:`Replay` — a
bulk worker when the pool starts it, the Gradescope runner and the Otter plugin from the image's table folder, a
notebook session its own, :func:`mlsys_grader.api.grade_submission` one live replay by default.

Modules (private): ``_replay`` the service; ``_table`` the replay tables (every evaluation a lab's whole domain
runs, computed once, stored and verified; left out of the student build, which replays live).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._replay import CACHE_SIZE, Replay, Table

if TYPE_CHECKING:
    from ._table import build as build_table
    from ._table import default_cache_dir as table_dir
    from ._table import ensure_tables, warm
    from ._table import load as load_table

_LAZY = {"table_dir": ("._table", "default_cache_dir"), "ensure_tables": ("._table", "ensure_tables"),
         "warm": ("._table", "warm"), "build_table": ("._table", "build"), "load_table": ("._table", "load")}
"""Public name → (module, attribute), loaded on first use: the student build leaves the table module out."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CACHE_SIZE", "Replay", "Table", "build_table", "ensure_tables", "load_table", "table_dir", "warm"]
