"""mlsysim, and what grading needs of it without importing it.

Grading that the replay table answers never imports mlsysim: the labs import it only where
they evaluate (:func:`import_mlsysim`, from their ``evaluate`` modules), the unit conversions
the rationale reader and the messages make use :func:`unit_registry` (mlsysim's definitions,
loaded into pint without mlsysim), and ``except`` clauses name pint's errors through
:func:`pint_errors` only once pint is loaded.

Importing mlsysim, when it is needed, skips its slowest steps.

``import mlsysim`` runs a package ``__init__`` that imports every subpackage: notation registries
built from about 1.4 MB of YAML, scenario catalogues, agents, sensors — more than two seconds here,
of which grading uses nothing.  A lab's evaluators need only the modules they import themselves
(the book's ``mlsysim.labs.experiments`` module of the lab, its units and hardware registry).
:func:`import_evaluator` imports a lab's evaluation module with ``mlsysim`` loaded *lazily*: the
package module is created from its own spec without running its ``__init__``, so a submodule import
loads that submodule and what it imports, and nothing else; ``mlsysim.Hardware`` and ``mlsysim.Ops``
(what the experiment modules take from the package) are bound from the very modules ``__init__``
binds them from.  Any other name asked of the package (``mlsysim.Engine``, ``dir(mlsysim)``, a star
import) first runs the real ``__init__`` in that same module, so the package is then exactly what
``import mlsysim`` makes.  ``tests/test_mlsysim_import.py`` checks that every evaluation of both labs'
whole domains is the same either way, and that the completed package binds the same objects.

While mlsysim's modules load, ``yaml.safe_load`` is pointed at libyaml's C safe loader (the same
safe constructors, the same results — checked for every data file in ``tests/test_mlsysim_import.py``)
and restored afterwards.  Nothing the evaluators compute is touched: the notation registry holds
symbol names, not physics.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

UNITS_FILE = "mlsysim_units.txt"
"""mlsysim's own unit definitions, beside ``mlsysim/core/units.py``, which loads them into its registry."""


LAZY_NAMES = {"Hardware": "mlsysim.hardware.registry", "Ops": "mlsysim.ops"}
"""Names of the ``mlsysim`` package a lazily loaded package binds without running its ``__init__``, each from the
module its ``__init__`` imports it from (``from .hardware.registry import Hardware``, ``from .ops import Ops``)."""


@contextmanager
def _c_yaml() -> Iterator[None]:
    """Within the block, ``yaml.safe_load`` uses libyaml's C safe loader when PyYAML has it."""
    import yaml  # only mlsysim's import needs it: kept out of ``import mlsys_grader``

    if not getattr(yaml, "__with_libyaml__", False):
        yield
        return
    original = yaml.safe_load

    def c_safe_load(stream: Any) -> Any:
        return yaml.load(stream, Loader=yaml.CSafeLoader)

    yaml.safe_load = c_safe_load
    try:
        yield
    finally:
        yaml.safe_load = original


def import_mlsysim() -> None:
    """Import the whole mlsysim package if it is not imported yet, using libyaml when PyYAML has it (a package
    loaded lazily by :func:`import_evaluator` is completed)."""
    module = sys.modules.get("mlsysim")
    if isinstance(module, _LazyPackage):
        _complete(module)
        return
    if module is not None:
        return
    with _c_yaml():
        import mlsysim  # noqa: F401


class _LazyPackage(types.ModuleType):
    """The ``mlsysim`` package, loaded without its ``__init__`` (see the module docstring)."""

    def __getattr__(self, name: str) -> Any:  # only called for a name the module does not hold
        if name in LAZY_NAMES:
            value = getattr(importlib.import_module(LAZY_NAMES[name]), name)
            setattr(self, name, value)
            return value
        if (name.startswith("__") and name not in ("__all__", "__version__")) or self.__dict__.get("_completing"):
            raise AttributeError(f"module 'mlsysim' has no attribute {name!r}")
        _complete(self)
        return getattr(self, name)

    def __dir__(self) -> list[str]:
        _complete(self)
        return sorted(self.__dict__)


def _complete(module: types.ModuleType) -> None:
    """Run the real ``mlsysim/__init__.py`` in the lazily loaded package: it is then what ``import mlsysim`` makes."""
    if not isinstance(module, _LazyPackage):
        return
    spec = module.__spec__
    if spec is None or spec.loader is None:
        raise ImportError("mlsysim was loaded lazily without a spec to complete it from", name="mlsysim")
    module.__dict__["_completing"] = True
    try:
        with _c_yaml():
            spec.loader.exec_module(module)
    finally:
        module.__dict__.pop("_completing", None)
    module.__class__ = types.ModuleType  # type: ignore[assignment]  # a module again: no lazy hooks left


def _lazy_package() -> None:
    """Put a lazily loaded ``mlsysim`` package in ``sys.modules`` unless mlsysim is imported already."""
    if "mlsysim" in sys.modules:
        return
    spec = importlib.util.find_spec("mlsysim")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("mlsysim is not installed", name="mlsysim")
    module = importlib.util.module_from_spec(spec)  # the package's attributes, __path__ included; nothing run
    module.__class__ = _LazyPackage
    sys.modules["mlsysim"] = module


def import_evaluator(name: str) -> types.ModuleType:
    """Import a lab's evaluation module ``name`` with mlsysim loaded lazily (see the module docstring), libyaml
    reading mlsysim's data; if the lazy load fails, with mlsysim imported whole."""
    if name in sys.modules:
        return sys.modules[name]
    before = set(sys.modules)
    try:
        with _c_yaml():
            _lazy_package()
            return importlib.import_module(name)
    except Exception:
        if not isinstance(sys.modules.get("mlsysim"), _LazyPackage):
            raise  # mlsysim was imported whole, or is missing: the error is the evaluator's own
        for loaded in set(sys.modules) - before:  # a lazy load that failed: forget it, and import the whole package
            if loaded == "mlsysim" or loaded.startswith("mlsysim.") or loaded == name:
                del sys.modules[loaded]
        import_mlsysim()
        return importlib.import_module(name)


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
