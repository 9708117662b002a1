"""Course staff's bulk grading: a folder of submissions → gradebook (CSV, SQLite, HTML), no Docker.

Modules (private): ``_ingest`` finds and reads inputs of every kind, ``_pool`` runs them
in bounded worker processes, ``_gradebook`` grades and keeps the gradebook,
``_collusion`` pairs copies, ``_summary`` renders the HTML report.
"""

from ._gradebook import BatchOptions, GradebookDB, GradebookResult, grade_paths, gradebook_dataframe, resolve_rubrics
from ._summary import render_summary, write_summary

__all__ = ["BatchOptions", "GradebookDB", "GradebookResult", "grade_paths", "gradebook_dataframe", "render_summary",
           "resolve_rubrics", "write_summary"]
