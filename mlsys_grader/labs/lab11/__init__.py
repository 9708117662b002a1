"""Lab 11 — Acceleration That Survives the Whole Path, declared: ``lab.toml`` (the parts, options, words and text),
:mod:`.judge` (what only code says), :mod:`.views` (each part's table and chart), :mod:`.evaluate` (the only module
importing mlsysim) and :mod:`.domain` (the track scenarios' data the arms are built from, written by :mod:`.evaluate`).

The registry loads it with :func:`mlsys_grader.labs.declared.load_lab`; importing this package imports nothing.
"""
