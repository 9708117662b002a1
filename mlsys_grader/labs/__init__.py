"""The lab registry: the only place that lists labs.

A lab is one package (or module) exposing ``LAB`` (a :class:`~mlsys_grader.core.labspec.Lab`, assembled from
the package's seams) with its rubric ``rubric.toml`` in that package (``<lab_id>.toml`` beside a module), and one
Otter master notebook where ``LAB.master_path`` says (README, "Adding a lab").  Everything lab-specific is in
the lab's package (``labs/lab07/``: rules, evaluate, words, views, notebook, marimo,
references, answers); nothing outside this package names a lab.  Labs come from three places,
later ones overriding earlier ones:

1. the labs shipped here (``lab07``, ``lab11``);
2. installed packages that declare an entry point in the group ``mlsys_grader.labs``
   (name: the lab id, value: the module), so a course can add a lab without forking::

       [project.entry-points."mlsys_grader.labs"]
       lab05 = "mycourse.lab05"

3. :func:`register_lab` calls at run time (tests, notebooks of a course).

Modules are imported on first use, and loading a lab does not import mlsysim: a lab imports it
only where it evaluates (its ``evaluate`` module, through :func:`import_evaluator`, which loads just
the mlsysim modules that module imports), so grading that the replay table answers never loads it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from functools import lru_cache
from importlib import metadata, resources

from .._mlsysim import import_evaluator as import_evaluator  # public: a lab's rules load their evaluators with it
from .._mlsysim import import_mlsysim, unit_registry
from ..core.labspec import Lab
from ..errors import RubricError, UnknownLabError

ENTRY_POINT_GROUP = "mlsys_grader.labs"
_BUILTIN = {"lab07": "mlsys_grader.labs.lab07", "lab11": "mlsys_grader.labs.lab11"}
_REGISTERED: dict[str, str] = {}
_LOADED: dict[str, Lab] = {}
_ON_LOAD: list[Callable[[Lab], None]] = []


def on_load(callback: Callable[[Lab], None]) -> None:
    """Run ``callback`` on every lab loaded from now on, and on those already loaded (the replay
    table attaches itself this way: ``mlsys_grader.course._replay_table.use_replay_tables``)."""
    _ON_LOAD.append(callback)
    for lab in list(_LOADED.values()):
        callback(lab)


def remove_on_load(callback: Callable[[Lab], None]) -> None:
    """Stop running ``callback`` on labs loaded from now on (labs it already ran on stay as they are)."""
    if callback in _ON_LOAD:
        _ON_LOAD.remove(callback)


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, str]:
    """Installed labs, read once per process (scanning installed packages costs tens of ms)."""
    return {point.name: point.value for point in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def lab_modules() -> dict[str, str]:
    """Lab id → module, from the shipped labs, installed entry points and :func:`register_lab`."""
    return {**_BUILTIN, **_entry_points(), **_REGISTERED}


def register_lab(lab_id: str, module: str) -> None:
    """Register (or replace) the lab ``lab_id`` implemented by ``module`` (which exposes ``LAB``)."""
    if not lab_id or not lab_id.replace("_", "").isalnum():
        raise UnknownLabError(f"a lab id is letters, digits and underscores (got {lab_id!r})")
    _REGISTERED[lab_id] = module
    _LOADED.pop(lab_id, None)


def lab_ids() -> tuple[str, ...]:
    """Every registered lab id, sorted."""
    return tuple(sorted(lab_modules()))


def _module(lab_id: str) -> str:
    modules = lab_modules()
    if lab_id not in modules:
        raise UnknownLabError(f"unknown lab {lab_id!r}; expected one of {', '.join(sorted(modules))}")
    return modules[lab_id]


def get_lab(lab_id: str) -> Lab:
    """The :class:`Lab` for ``lab_id`` (its module imported on first use; mlsysim is not imported here)."""
    if lab_id in _LOADED:
        return _LOADED[lab_id]
    module = _module(lab_id)
    if lab_id not in _LOADED:
        lab = importlib.import_module(module).LAB
        if not isinstance(lab, Lab):
            raise UnknownLabError(f"module {module}: LAB must be a mlsys_grader.core.labspec.Lab, assembled from the lab's "
                                  f"seams (got {type(lab).__name__}); README, 'Adding a lab'", lab=lab_id)
        if lab.lab_id != lab_id:
            raise UnknownLabError(f"module {module} implements lab {lab.lab_id!r}, registered as {lab_id!r}")
        lab.module = module  # what the replay table's key digests (the package of the registered module)
        for callback in _ON_LOAD:
            callback(lab)
        _LOADED[lab_id] = lab
    return _LOADED[lab_id]


def _is_package(lab_id: str) -> bool:
    spec = importlib.util.find_spec(_module(lab_id))
    return spec is not None and spec.submodule_search_locations is not None


def _data_package(lab_id: str) -> str:
    """The package holding the lab's data files: the lab itself when it is a package
    (``mlsys_grader.labs.lab07``), else the package its module sits in; the lab is not imported."""
    module = _module(lab_id)
    return module if _is_package(lab_id) else module.rpartition(".")[0] or module


RUBRIC_FILE = "rubric.toml"


def rubric_text(lab_id: str) -> str:
    """The rubric TOML shipped with the lab, without importing the lab: ``rubric.toml`` in a lab package
    (``<lab_id>.toml`` there too, as earlier labs name it), ``<lab_id>.toml`` beside a lab module."""
    package = _data_package(lab_id)
    names = ([RUBRIC_FILE] if package == _module(lab_id) else []) + [f"{lab_id}.toml"]  # a package lab holds its own
    folder = resources.files(package)
    for name in names:
        path = folder.joinpath(name)
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise RubricError(f"lab {lab_id!r} ships no rubric: expected {' or '.join(names)} in {package}", source=names[0])


def prepare_worker() -> None:
    """Ready a grading worker before its first task (outside every task's time limit and before its memory cap):
    load every registered lab (inside :func:`mlsys_grader.course._replay_table.replay_tables` each attaches its
    table) and, unless the replay tables' unit file gives the reader its conversions, the unit registry it
    converts with; load the evaluators only of a lab left to replay live (its rules' ``evaluator()``, which loads
    just the mlsysim modules they import; the whole of mlsysim for a lab whose rules have none).  The batch
    passes this as its pool's ``prepare`` instead of :func:`import_mlsysim`, so a batch the tables answer pays
    for neither mlsysim's import nor pint's, and one that replays live pays them as before.  A lab that does not
    load (its module fails to import, or is gone) is skipped: raising here would kill every worker before its
    first task, so no submission of any lab would be graded; its own submissions fail in their tasks, each row
    saying why."""
    from ..core.rationale import unit_scales_in_use

    live = []
    for lab_id in lab_ids():
        try:
            lab = get_lab(lab_id)
        except Exception:  # reported by the task of each submission of this lab
            continue
        if lab.replay_table is None:
            live.append(lab)
    for lab in live:  # mlsysim missing raises here: every task then names the worker's environment, not the input
        evaluator = getattr(lab.rules, "evaluator", None)
        evaluator() if callable(evaluator) else import_mlsysim()
    if not live and not unit_scales_in_use():
        unit_registry()
