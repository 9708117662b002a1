"""Import mlsysim once, without its slowest step.

``import mlsysim`` builds a notation registry by parsing about 1.4 MB of YAML with
PyYAML's pure-Python safe loader, which is most of its multi-second import time.
While that import runs, ``yaml.safe_load`` is pointed at libyaml's C safe loader
(the same safe constructors, the same results — checked for every data file in
``tests/test_mlsysim_import.py``) and restored afterwards.  Nothing the evaluators
compute is touched: the notation registry holds symbol names, not physics.
"""

from __future__ import annotations

import sys
from typing import Any


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
