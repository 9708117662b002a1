"""``python -m mlsys_grader`` runs the CLI."""

import sys

from .cli import main

sys.exit(main())
