"""Lab 02 — Where Should Inference Run?, declared: ``lab.toml`` (the parts, options, words and text), :mod:`.judge`
(what only code says), :mod:`.views` (each part's table and chart) and :mod:`.evaluate` (the only module importing
mlsysim).

The registry loads it with :func:`mlsys_grader.labs.declared.load_lab`; importing this package imports nothing.
"""
