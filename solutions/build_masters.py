"""Shim: ``python solutions/build_masters.py [LAB ...]`` is ``mlsys-grader generate masters [--lab LAB ...]``."""
import sys

from mlsys_grader.cli import main
from mlsys_grader.staff._generate import build_master as build  # noqa: F401  (scripts that call build(lab, synthesis=...))

if __name__ == "__main__":
    sys.exit(main(["generate", "masters", *(arg for lab in sys.argv[1:] for arg in ("--lab", lab))]))
