"""How a capture is sealed: the book's seal, and the rule bundles before schema 3 used.

The book's labs seal every capture (``capture_evidence`` in the book's ``experiment_evidence``) with the
SHA-256 of ``{"track": track, "inputs": upstream_inputs}`` as compact JSON with sorted keys, where
``upstream_inputs`` is what the lab's notebook declares a part depends on (Lab 07 and Lab 11: the
capture's own ``inputs``; each lab states its rule: :meth:`~.labspec.PartRules.upstream_inputs`).  The
book's evidence audit calls a capture stale when that seal no longer matches the track and the upstream
inputs of the notebook's current settings.  Bundle schemas 1 and 2 sealed a record with this package's
own fingerprint of lab, track, part and upstream settings (:func:`legacy_fingerprint`); those records
keep it, and are checked against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from .jsonio import sha256_of

BOOK_RESULT_ROLE: Final = "tested intervention"
"""The ``result_role`` the book's ``capture_evidence`` writes unless a part's decision names another."""

FIRST_BOOK_SEALED_SCHEMA: Final = 3
"""The first bundle schema whose records carry the book's seal (earlier ones carry :func:`legacy_fingerprint`)."""


def book_seal(track: Any, upstream_inputs: Any) -> str:
    """The book's seal of a capture: SHA-256 hex of ``{"track", "inputs"}`` as the book serialises it (``track`` as a
    capture holds it: a track id, or whatever an edited export holds there).

    The book's text is ``json.dumps(..., sort_keys=True, separators=(",", ":"), allow_nan=False)``: ASCII
    escapes included, so it is not :func:`~.jsonio.canonical_dumps` (which keeps non-ASCII characters).
    """
    text = json.dumps({"track": track, "inputs": upstream_inputs}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def legacy_fingerprint(lab_id: str, track: str, part: str, upstream: Mapping[str, Any]) -> str:
    """The seal of records in bundle schemas 1 and 2: SHA-256 of the lab, track, part and upstream settings."""
    return sha256_of({"lab": lab_id, "track": track, "part": part, "upstream": upstream})
