"""The lab registry: the only place that lists labs.

A lab is one package declaring it: ``lab.toml`` (:mod:`.spec`) with its ``judge``, ``views`` and ``evaluate``
modules, assembled into a :class:`Lab` (:mod:`.declared`), and one Otter master notebook where ``LAB.master_path``
says (docs/adding-a-lab.md); a module whose ``LAB`` is a :class:`Lab` (a shipped lab's ``replace``, with
``<lab_id>.toml`` beside it for its rubric) is one too.  Everything lab-specific is in the lab's package
(``labs/lab07/``); nothing outside it names a lab.  Labs come from three places, later ones overriding earlier ones:

1. the labs shipped here (``lab02``, ``lab07``, ``lab08``, ``lab11``);
2. installed packages that declare an entry point in the group ``mlsys_grader.labs``
   (name: the lab id, value: the package or module), so a course can add a lab without forking::

       [project.entry-points."mlsys_grader.labs"]
       lab05 = "mycourse.lab05"

3. :func:`register_lab` calls at run time (tests, notebooks of a course).

Packages are imported on first use, and loading a lab does not import mlsysim: a lab imports it
only where it evaluates (its ``evaluate`` module, through :func:`import_evaluator`, which loads just
the mlsysim modules that module imports), so grading that the replay table answers never loads it.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import lru_cache
from importlib import metadata, resources

from .._mlsysim import import_evaluator as import_evaluator  # public: a lab loads its evaluators with it
from ..errors import RubricError, UnknownLabError
from .declared import Lab

ENTRY_POINT_GROUP = "mlsys_grader.labs"
_BUILTIN = {"lab02": "mlsys_grader.labs.lab02", "lab07": "mlsys_grader.labs.lab07", "lab08": "mlsys_grader.labs.lab08",
            "lab11": "mlsys_grader.labs.lab11"}
_REGISTERED: dict[str, str] = {}
_LOADED: dict[str, Lab] = {}


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


def lab_codes() -> dict[str, tuple[str, ...]]:
    """Per registered lab, the finding codes its spec declares (``[problems]`` in ``lab.toml``), sorted."""
    return {lab_id: tuple(sorted(get_lab(lab_id).spec.problems)) for lab_id in lab_ids()}


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
        from .declared import is_declared, load_lab

        lab = load_lab(module) if is_declared(module) else importlib.import_module(module).LAB
        if not isinstance(lab, Lab):
            raise UnknownLabError(f"module {module}: a lab is a package declaring it (lab.toml), or a module whose LAB is "
                                  f"a mlsys_grader.labs.Lab (got {type(lab).__name__}); docs/adding-a-lab.md", lab=lab_id)
        if lab.lab_id != lab_id:
            raise UnknownLabError(f"module {module} implements lab {lab.lab_id!r}, registered as {lab_id!r}")
        lab.module = module  # what the replay table's key digests (the package of the registered module)
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
    from .declared import is_declared, rubric_toml, spec_of

    if package == _module(lab_id) and is_declared(package):  # a declared lab's rubric follows from its parts
        return rubric_toml(spec_of(package))
    raise RubricError(f"lab {lab_id!r} ships no rubric: expected {' or '.join(names)} in {package}", source=names[0])


def load_evaluators(lab: Lab) -> None:
    """Load the evaluators of ``lab`` (its ``evaluate`` module, which loads just the mlsysim modules it imports): what a
    worker that replays ``lab`` live does before its first task (:meth:`mlsys_grader.replay.Replay.prepare`)."""
    lab.evaluator()
