"""The pure core: models, safe JSON, replay, audits, rationale and rubric scoring.

Nothing in this package reads files, talks to the network or touches a notebook;
outer layers (``mlsys_grader.api``, the CLI, the notebook API, the Otter glue and
the gradebook) import it, never the reverse.
"""
