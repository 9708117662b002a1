"""What only course staff run: ``solve`` (a full-marks bundle without a notebook) and the student kit's builder.

The student build of the package (``mlsys-grader-student``, the wheel inside the kit)
leaves this package out, with the autograder and Otter-assign builders
(:data:`mlsys_grader._packaging.STUDENT`): a student's install has no ``solve`` to
import and the command line no staff command to run.  Staff installs (README's quick
start) and the Gradescope image install the full package, which keeps them all.
"""

from ._kit import INSTALL_COMMAND, Kit, build_kit
from ._solve import bundle_from_controls, solve, solve_spec

__all__ = ["INSTALL_COMMAND", "Kit", "build_kit", "bundle_from_controls", "solve", "solve_spec"]

for _name in ("Kit", "build_kit", "bundle_from_controls", "solve", "solve_spec"):
    globals()[_name].__module__ = __name__
del _name
