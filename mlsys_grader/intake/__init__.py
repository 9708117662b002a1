"""Intake: how every edge reads a submission (student ``check``, course ``grade``, the Gradescope runner, the API).

This layer sits above :mod:`mlsys_grader.core` and :mod:`mlsys_grader.labs` and below the
three edges (:mod:`mlsys_grader.student`, :mod:`mlsys_grader.course`,
:mod:`mlsys_grader.gradescope`), so that the same file is read the same way everywhere.
"""
