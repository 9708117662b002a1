"""Displaying the embedded bundle from Gradescope's side; the format itself is :mod:`mlsys_grader.core.embed`.

The names of the format are re-exported here because readers of this package (the upload
reader, older callers of ``mlsys_grader.gradescope``) find them here.
"""

from __future__ import annotations

from ..core.embed import BUNDLE_MIME, EmbeddedBundle, bundle_display_data, bundle_from_outputs, find_embedded_bundles

__all__ = ["BUNDLE_MIME", "EmbeddedBundle", "bundle_display_data", "bundle_from_outputs", "display_bundle",
           "find_embedded_bundles"]


def display_bundle(bundle_json: str) -> None:
    """Display the bundle as a notebook output (a no-op outside an IPython kernel).

    Outside a kernel IPython's ``display`` would print the whole dict to stdout, so a
    script or a test that saves a bundle checks for a running shell first.
    """
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python: nothing to embed into
        return
    if get_ipython() is None:
        return
    display(bundle_display_data(bundle_json), raw=True)
