"""The submission bundle and its evidence records (pydantic v2, JSON only).

A record keeps the fields the book's marimo labs capture (``track`` … ``upstream_fingerprint``)
plus provenance metadata.  Arms (``baseline``, ``result``, ``chosen_result`` and each of
``alternatives``) are kept exactly as the lab's evaluators shape them; the lab module,
not this file, knows what is inside.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, cast, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..errors import BundleFormatError, SchemaVersionError
from .jsonio import canonical_dumps, check_float_range, loads_strict, sha256_of, sha256_of_text
from .seal import BOOK_RESULT_ROLE

SCHEMA_VERSION: Final = 3

PartId = Literal["A", "B", "C", "D", "E"]
PARTS: tuple[PartId, ...] = get_args(PartId)
"""The part letters the bundle schema holds, in order; a lab's parts are some of them (``Lab.parts``)."""
Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def part_key(part: str) -> PartId:
    """A lab's part id as a key of the bundle's per-part maps (``evidence``, ``controls``, ``runs``).

    Labs name their parts with the bundle's letters (``Lab.parts`` holds some of
    :data:`PARTS`); this states that for the type checker, and the bundle's own
    validation rejects any other key.
    """
    return cast(PartId, part)


def _as_utc(moment: datetime) -> datetime:
    """A time without a zone is read as UTC (what the notebook writes); every time is kept in UTC.

    Without this, one naive time in a bundle makes comparing it with an aware one raise.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


Timestamp = Annotated[datetime, Field(strict=False), AfterValidator(_as_utc)]
Scalar = str | int | float | bool | None
ShortText = Annotated[str, Field(max_length=200)]


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no per-part run log: an old bundle reads as one with an empty log."""
    return {**data, "schema_version": 2, "runs": {}}


def _upgrade_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 left ``result_role`` empty where the book writes its default: a record reads with the book's role.

    Each record keeps the fingerprint it was sealed with (schema 2's own rule); the bundle remembers the schema it
    was read from (:attr:`Bundle.read_version`), so the staleness check verifies that seal by the rule it was made
    with, and an old bundle grades exactly as it did.
    """
    evidence = data.get("evidence")
    if isinstance(evidence, Mapping):
        evidence = {part: {**record, "result_role": BOOK_RESULT_ROLE}
                    if isinstance(record, Mapping) and record.get("result_role") is None else record
                    for part, record in evidence.items()}
        data = {**data, "evidence": evidence}
    return {**data, "schema_version": 3}


# schema_version -> function upgrading a raw mapping of that version to the next.
UPGRADERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _upgrade_v1, 2: _upgrade_v2}


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=False)


class EvidenceRecord(_Strict):
    """One captured part: the prediction, both arms and where they came from."""

    track: ShortText = Field(description="Deployment track the record was captured on.")
    part: PartId = Field(description="Lab part A–E.")
    prediction: ShortText | None = Field(description="Prediction choice value locked before the result was shown.")
    inputs: dict[str, Any] = Field(description="The part's upstream inputs at capture (the seed's `upstream_inputs`).")
    baseline: dict[str, Any] | None = Field(description="Baseline arm exactly as the evaluator shaped it.")
    result: dict[str, Any] | None = Field(description="Intervention arm exactly as the evaluator shaped it.")
    alternatives: list[dict[str, Any]] = Field(default_factory=list, description="Further evaluator results shown with the part.")
    decision: Any = Field(default=None, description="The part's decision, when it has one (Lab 07 E, Lab 11 E).")
    model_key: ShortText = Field(description="Evaluator identifier, e.g. `v1_07_experiments` or `v1_11_experiments.roofline`.")
    chosen_result: dict[str, Any] | None = Field(default=None, description="The arm the decision keeps, when the part has a decision.")
    result_role: ShortText = Field(default=BOOK_RESULT_ROLE, description="What the `result` arm is, as the book writes it "
                                   "(`tested intervention` unless the part's decision makes it another).")
    upstream_fingerprint: Hex64 = Field(description="The book's seal: SHA-256 of the track and the upstream inputs the lab "
                                                    "declares for the part (bundles before schema 3: the lab, track, part and "
                                                    "upstream settings).")
    lab: ShortText | None = Field(default=None, description="Lab id of any registered lab, e.g. `lab07`.")
    mlsysim_version: ShortText | None = Field(default=None, description="mlsysim version the arms were produced with.")
    grader_version: ShortText | None = Field(default=None, description="mlsys_grader version that captured the record.")
    captured_at: Timestamp | None = Field(default=None, description="When the record was captured (ISO 8601).")
    prediction_locked_at: Timestamp | None = Field(default=None, description="When the prediction was locked.")
    result_shown_at: Timestamp | None = Field(default=None, description="When the result was first shown.")


class PartRun(_Strict):
    """What the notebook saw of one part, kept whether or not the part was captured.

    It survives reopening the notebook, so a result shown in an earlier session still
    counts as shown, and it keeps the settings the prediction is judged against.
    """

    prediction: ShortText | None = Field(default=None, description="The prediction locked most recently.")
    prediction_locked_at: Timestamp | None = Field(default=None, description="When that prediction was locked.")
    first_shown_at: Timestamp | None = Field(default=None, description="When any result of this part was first shown, in any session.")
    first_run_controls: dict[str, Scalar] | None = Field(
        default=None, description="The part's controls at the first run after the prediction was locked (what it is judged "
                                  "against): the controls `lab.run` takes, by name; decisions are set at capture.")
    first_run_at: Timestamp | None = Field(default=None, description="When that first run after the lock happened.")
    first_run_upstream: dict[PartId, dict[str, Scalar]] | None = Field(
        default=None, description="At that first run, the controls of each part this one builds on (Lab 11 D: part C), "
                                  "so the result it was judged on can be rebuilt.")


class Synthesis(_Strict):
    """The final answers: decision, rejected alternative, trigger, limitation, rationale."""

    recommendation: ShortText | None = Field(default=None, description="Recommended option (Lab 07; Lab 11 takes it from part E).")
    rejected_alternative: ShortText | None = Field(default=None, description="Quantified rejected alternative (Lab 07; Lab 11 takes it from part E).")
    reevaluation_trigger: ShortText | None = Field(default=None, description="Condition that reopens the decision.")
    residual_risk: ShortText | None = Field(default=None, description="Remaining limitation.")
    rationale: Annotated[str, Field(max_length=20_000)] = Field(default="", description="Written rationale citing saved evidence.")


SYNTHESIS_FIELDS: tuple[str, ...] = tuple(Synthesis.model_fields)
"""Every synthesis answer the bundle schema holds (:class:`Synthesis`), in order; a lab asks for some of them."""


class Bundle(_Strict):
    """One student's submission for one lab on one track."""

    schema_version: Literal[3] = Field(default=SCHEMA_VERSION, description="Bundle schema version.")
    lab: ShortText = Field(description="Lab id of any registered lab, e.g. `lab07`.")
    track: ShortText = Field(description="Deployment track (`tinyml`, `mobile`, `edge`, `cloud`).")
    controls: dict[PartId, dict[str, Scalar]] = Field(default_factory=dict, description="Final control values per part.")
    evidence: dict[PartId, EvidenceRecord] = Field(default_factory=dict, description="Captured evidence per part.")
    synthesis: Synthesis = Field(default_factory=Synthesis, description="Final answers.")
    runs: dict[PartId, PartRun] = Field(default_factory=dict, description="Per part: prediction lock, first result shown, first run after the lock.")
    mlsysim_version: ShortText | None = Field(default=None, description="mlsysim version of the student's session.")
    grader_version: ShortText | None = Field(default=None, description="mlsys_grader version that wrote the bundle.")
    created_at: Timestamp | None = Field(default=None, description="When the bundle was written.")
    content_hash: Hex64 | None = Field(default=None, description="SHA-256 of the canonical bundle without this field.")
    _parsed_hash: str | None = PrivateAttr(default=None)
    _read_version: int = PrivateAttr(default=SCHEMA_VERSION)
    _schema2_roles: frozenset[str] | None = PrivateAttr(default=None)
    """Read from schema 1 or 2: the parts whose ``result_role`` that schema held empty (see :meth:`compute_hash`)."""

    @property
    def read_version(self) -> int:
        """The ``schema_version`` the bundle was written with, before the reader upgraded it (its records' seals
        follow that schema's rule: :data:`~.seal.FIRST_BOOK_SEALED_SCHEMA`)."""
        return self._read_version

    def hash_matches(self) -> bool:
        """True when ``content_hash`` is the hash of this bundle's content.

        A bundle read from JSON first compares the hash of the JSON it was read from
        (cheap: no re-serialisation of the model); only when that differs — a writer
        that left defaults out, say — is the model itself hashed.
        """
        if self.content_hash is None:
            return False
        return self._parsed_hash == self.content_hash or self.compute_hash() == self.content_hash

    def compute_hash(self) -> str:
        """SHA-256 of the canonical JSON of this bundle, ``content_hash`` left out.

        A bundle read from schema 1 or 2 is hashed as the schema-2 reader held it (``schema_version`` 2, the
        ``result_role`` it left empty empty again), so the seal its writer computed still verifies.
        """
        data = self.model_dump(mode="json", exclude={"content_hash"})
        if self._schema2_roles is not None:
            data["schema_version"] = 2
            for part in self._schema2_roles:
                data["evidence"][part]["result_role"] = None
        return sha256_of(data)

    def sealed(self) -> Bundle:
        """A copy whose ``content_hash`` matches its content (as this schema writes it)."""
        copy = self.model_copy()
        copy._schema2_roles = copy._parsed_hash = None
        copy.content_hash = copy.compute_hash()
        return copy

    def to_json(self, *, indent: int | None = 1) -> str:
        """The bundle as JSON text (canonical key order)."""
        data = self.model_dump(mode="json")
        if indent is None:
            return canonical_dumps(data)
        return json.dumps(data, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)


def _describe_errors(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(item) for item in error["loc"]) or "bundle"
        got = error.get("input")
        shown = type(got).__name__ if isinstance(got, (dict, list)) else repr(got)[:60]
        parts.append(f"{where}: {error['msg']} (got {shown})")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def bundle_from_mapping(data: Any) -> Bundle:
    """Validate a parsed JSON value as a :class:`Bundle`, upgrading old schema versions."""
    if not isinstance(data, Mapping):
        raise BundleFormatError(f"a bundle is a JSON object; got a JSON {type(data).__name__}")
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SchemaVersionError(f"bundle needs an integer schema_version (got {version!r})")
    if version > SCHEMA_VERSION or (version < SCHEMA_VERSION and version not in UPGRADERS):
        raise SchemaVersionError(
            f"bundle schema_version {version} is not supported; this release reads schema_version "
            f"{SCHEMA_VERSION}{' and upgrades ' + ' and '.join(map(str, sorted(UPGRADERS))) if UPGRADERS else ''}"
        )
    data = dict(data)
    try:
        # The hash of what was read, before any upgrade: an old bundle keeps its own seal.
        text: str | None = canonical_dumps({key: value for key, value in data.items() if key != "content_hash"})
    except (TypeError, ValueError):  # not JSON (a mapping built in Python): no seal to compare, numbers walked in full
        text = None
    # Here as well as in loads_strict: a mapping handed to the API directly never went through the parser.
    check_float_range(data, text)
    schema2_roles: frozenset[str] | None = None
    while data["schema_version"] < SCHEMA_VERSION:
        if data["schema_version"] == 2:
            evidence = data.get("evidence")
            schema2_roles = frozenset(str(part) for part, record in evidence.items()
                                      if isinstance(record, Mapping) and record.get("result_role") is None
                                      ) if isinstance(evidence, Mapping) else frozenset()
        data = UPGRADERS[data["schema_version"]](data)
    try:
        bundle = Bundle.model_validate(data)
    except ValidationError as exc:
        raise BundleFormatError(f"bundle does not match the schema: {_describe_errors(exc)}") from exc
    bundle._parsed_hash = None if text is None else sha256_of_text(text)
    bundle._read_version, bundle._schema2_roles = version, schema2_roles
    return bundle


def load_bundle(data: bytes | str, *, max_bytes: int | None = None) -> Bundle:
    """Parse and validate untrusted bundle JSON; raises :class:`BundleFormatError`."""
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    return bundle_from_mapping(loads_strict(data, **kwargs))


def submission_filename(lab_id: str) -> str:
    """The one name a lab's bundle is saved and submitted under: ``<lab>-submission.json``."""
    return f"{lab_id}-submission.json"


def bundle_json_schema() -> dict[str, Any]:
    """The JSON Schema of the bundle, as published by ``mlsys-grader schema``."""
    schema = Bundle.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"mlsys-grader submission bundle (schema_version {SCHEMA_VERSION})"
    return schema
