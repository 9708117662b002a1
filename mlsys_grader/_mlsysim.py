"""mlsysim, and what grading needs of it without importing it.

Grading that the replay table answers never imports mlsysim: the labs import it only where
they evaluate (:func:`import_mlsysim`, from their ``evaluate`` modules), the unit conversions
the rationale reader and the messages make use :func:`unit_registry` (mlsysim's definitions,
loaded into pint without mlsysim), and ``except`` clauses name pint's errors through
:func:`pint_errors` only once pint is loaded.

Importing mlsysim, when it is needed, skips its slowest step.

``import mlsysim`` builds a notation registry by parsing about 1.4 MB of YAML with
PyYAML's pure-Python safe loader, which is most of its multi-second import time.
While that import runs, ``yaml.safe_load`` is pointed at libyaml's C safe loader
(the same safe constructors, the same results — checked for every data file in
``tests/test_mlsysim_import.py``) and restored afterwards.  Nothing the evaluators
compute is touched: the notation registry holds symbol names, not physics.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

UNITS_FILE = "mlsysim_units.txt"
"""mlsysim's own unit definitions, beside ``mlsysim/core/units.py``, which loads them into its registry."""


def import_mlsysim() -> None:
    """Import mlsysim if it is not imported yet, using libyaml when PyYAML has it."""
    if "mlsysim" in sys.modules:
        return
    import yaml  # only mlsysim's import needs it: kept out of ``import mlsys_grader``

    if not getattr(yaml, "__with_libyaml__", False):
        import mlsysim
        return
    original = yaml.safe_load

    def c_safe_load(stream: Any) -> Any:
        return yaml.load(stream, Loader=yaml.CSafeLoader)

    yaml.safe_load = c_safe_load
    try:
        import mlsysim  # noqa: F401
    finally:
        yaml.safe_load = original


def pint_errors() -> tuple[type[BaseException], ...]:
    """``(pint.errors.PintError,)`` when pint is loaded, else ``()``.

    Used in ``except`` clauses, which are evaluated only once something was raised: a pint
    error can exist only if pint was imported, so checking ``sys.modules`` at that moment
    catches exactly what importing pint to name its base class would, without importing it
    when grading never needed pint.
    """
    errors = sys.modules.get("pint.errors")
    return () if errors is None else (errors.PintError,)


def unit_registry() -> Any:
    """mlsysim's pint unit registry (``mlsysim.core.units.ureg``), or one built the same way without importing mlsysim.

    The rationale reader and the grader's messages convert units (``"0.42 ms"`` against
    420 µs), which needs mlsysim's definitions (flop, dollar, bytes as bits) but none of
    its evaluators.  ``mlsysim.core.units`` builds its registry as ``pint.UnitRegistry()``
    with the ``~P`` default format and its ``mlsysim_units.txt`` definitions; the same is
    done here from the installed file (found without importing mlsysim), so a grade the
    replay table answers never pays for mlsysim's import.  ``tests/test_mlsysim_import.py``
    checks that both registries give every unit the same base factor, dimensionality and
    spelling.  Once mlsysim is imported its own registry is returned.
    """
    loaded = sys.modules.get("mlsysim.core.units")
    return loaded.ureg if loaded is not None else _own_registry()


@cache
def _own_registry() -> Any:
    """mlsysim's registry rebuilt from its definition file, once per process (about 0.5 s: pint and its defaults)."""
    import importlib.util

    import pint

    spec = importlib.util.find_spec("mlsysim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("mlsysim is not installed", name="mlsysim")
    registry: Any = pint.UnitRegistry()
    registry.formatter.default_format = "~P"
    registry.load_definitions(str(Path(spec.submodule_search_locations[0]) / "core" / UNITS_FILE))
    return registry
