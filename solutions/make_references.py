"""Shim: ``python solutions/make_references.py [--lab L] [--track T]`` is ``mlsys-grader generate references``."""
import sys

from mlsys_grader.cli import main
from mlsys_grader.staff._generate import answers, execute, fill  # noqa: F401  (the tests fill and run notebooks with these)

if __name__ == "__main__":
    sys.exit(main(["generate", "references", *sys.argv[1:]]))
