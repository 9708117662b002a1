"""The public API is exactly what ``__all__`` lists, sorted and without duplicates."""

import re

import mlsys_grader


def test_all_is_sorted_unique_and_complete():
    names = mlsys_grader.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    public = {name for name in dir(mlsys_grader) if not name.startswith("_") or name == "__version__"}  # lazy names too
    modules = {name for name in public if type(getattr(mlsys_grader, name)).__name__ == "module"}
    assert set(names) == public - modules


def test_names_referenced_by_string_are_the_public_surface():
    """Notebooks import the student API and Otter's tests call ``assert_item`` by dotted name;
    Otter's configuration names the plugin class by dotted path: all three must resolve."""
    import importlib
    import json
    import re
    from pathlib import Path

    import mlsys_grader.gradescope as gradescope
    import mlsys_grader.student as student

    assert student.__all__ == sorted(student.__all__) and {"open_lab", "assert_item"} <= set(student.__all__)
    assert gradescope.PLUGIN_NAME == "mlsys_grader.gradescope.ScoreOfRecordPlugin"
    module, _, name = gradescope.PLUGIN_NAME.rpartition(".")
    assert getattr(importlib.import_module(module), name).__name__ == "ScoreOfRecordPlugin"  # as Otter resolves it

    root = Path(__file__).resolve().parents[1]
    notebooks = [*root.glob("assignments/*.ipynb"), *root.glob("solutions/*/*-master.ipynb")]
    assert notebooks
    for path in notebooks:
        text = "".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])
        for package, names in re.findall(r"from (mlsys_grader[\w.]*) import ([\w, ]+)", text):
            assert package == "mlsys_grader.student", (path.name, package)
            assert {n.strip() for n in names.split(",")} <= set(student.__all__), (path.name, names)


def test_subpackages_list_sorted_public_names():
    import mlsys_grader.course as course
    import mlsys_grader.gradescope as gradescope
    import mlsys_grader.replay as replay
    import mlsys_grader.staff as staff
    import mlsys_grader.student as student

    for package in (course, gradescope, replay, staff, student):
        assert package.__all__ == sorted(package.__all__), package.__name__
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)


def test_solve_is_re_exported_from_the_staff_package_and_not_from_the_student_api():
    """``mlsys_grader.solve`` is staff's (the student build leaves ``mlsys_grader.staff`` out); the notebook API has no solve."""
    import mlsys_grader.api as api
    import mlsys_grader.staff as staff
    import mlsys_grader.student as student

    assert mlsys_grader.solve is staff.solve and "solve" in mlsys_grader.__all__
    assert staff.solve.__module__ == "mlsys_grader.staff"
    import mlsys_grader.core.capture as capture

    assert not hasattr(api, "solve") and not any("solve" in name or "kit" in name.lower() for name in student.__all__)
    assert {"plan_all", "record_from_plan"} <= set(vars(capture)) and not {"solve", "bundle_from_controls"} & set(vars(capture))


def test_every_public_exception_lives_in_errors_and_is_drawn_in_its_tree():
    """A public exception (in a public module, or exported by a package's ``__all__``) is defined in
    ``mlsys_grader.errors``, derives from ``GraderError`` and appears in the hierarchy its docstring draws;
    private control-flow exceptions stay in the private module that raises them."""
    import importlib
    import inspect
    import pkgutil

    import mlsys_grader.errors as errors

    misplaced = []
    for info in pkgutil.walk_packages(mlsys_grader.__path__, "mlsys_grader."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        public_module = not any(part.startswith("_") for part in info.name.split(".")[1:])
        exported = set(getattr(module, "__all__", ())) if info.ispkg else set()
        for name, value in vars(module).items():
            if not (inspect.isclass(value) and issubclass(value, BaseException)) or name.startswith("_"):
                continue
            public = (value.__module__ == module.__name__ and public_module) or name in exported
            if public and value.__module__ != errors.__name__:
                misplaced.append(f"{info.name}.{name} (defined in {value.__module__})")
    assert misplaced == []
    own = [value for value in vars(errors).values() if inspect.isclass(value) and issubclass(value, BaseException)
           and value.__module__ == errors.__name__]
    assert len(own) > 10 and all(issubclass(value, errors.GraderError) for value in own)
    drawn = set(re.findall(r"[─└├]── (\w+)", errors.__doc__ or "")) | {"GraderError"}
    assert {value.__name__ for value in own} == drawn
