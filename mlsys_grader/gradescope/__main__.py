"""``python -I -m mlsys_grader.gradescope /autograder``: what the autograder zip's ``run_autograder`` executes."""

import sys

from ._runner import main

sys.exit(main())
