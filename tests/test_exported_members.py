"""The public API is exactly what ``__all__`` lists, sorted and without duplicates."""

import mlsys_grader


def test_all_is_sorted_unique_and_complete():
    names = mlsys_grader.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    public = {name for name in vars(mlsys_grader) if not name.startswith("_") or name == "__version__"}
    modules = {name for name in public if type(getattr(mlsys_grader, name)).__name__ == "module"}
    assert set(names) == public - modules
