"""The autograder's options: the plugin's block in the zip's ``otter_config.json``.

One object, read by the Gradescope runner (``run_autograder``), the Otter plugin
(``otter run``) and ``mlsys-grader autograder`` (which writes it)::

    {"plugins": [{"mlsys_grader.gradescope.ScoreOfRecordPlugin":
                  {"lab": "lab07", "rerun_notebook": false, "notebook_budget_s": 120}}]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import OptionsError
from ..labs import lab_ids

PLUGIN_NAME = "mlsys_grader.gradescope.ScoreOfRecordPlugin"
OTTER_CONFIG = "otter_config.json"


class AutograderOptions(BaseModel):
    """What the autograder does with an upload (defaults are the recommended setting)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lab: str = Field(description="The lab this Gradescope assignment grades (a registered lab id, e.g. lab07).")
    rerun_notebook: bool = Field(
        default=False,
        description="Also run the student's notebook, as an unprivileged user in a sandbox, for a second opinion "
                    "and staff flags. Never changes the score; costs the notebook's run time. A notebook uploaded "
                    "without its bundle is run in the sandbox either way, to regenerate the bundle.")
    notebook_budget_s: float = Field(
        default=120.0, ge=10, le=420,
        description="Seconds the notebook may run in the sandbox, all cells together; then every sandbox process "
                    "is killed. Keeps each run far below Gradescope's 10-minute limit.")
    cell_timeout_s: float = Field(
        default=120.0, gt=0, le=420,
        description="Seconds one notebook cell may run (the notebook budget applies on top).")
    sandbox_uid: int = Field(
        default=64123, ge=1000, le=65533,
        description="User and group id the notebook runs as on Gradescope; no other process may use it.")
    question_parts: dict[str, str] = Field(
        default_factory=dict,
        description="Otter question name → rubric part, for masters whose questions are not named after the parts.")

    @field_validator("lab")
    @classmethod
    def _known_lab(cls, value: str) -> str:
        if value not in lab_ids():
            raise ValueError(f"lab must be one of {', '.join(lab_ids())} (got {value!r})")
        return value


def options_from_mapping(block: Any) -> AutograderOptions:
    """Validate the plugin's config block; :class:`OptionsError` names what is wrong."""
    try:
        return AutograderOptions.model_validate(block or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'block'}: {e['msg']}" for e in exc.errors())
        raise OptionsError(f"{PLUGIN_NAME} options in {OTTER_CONFIG} are invalid: {problems}") from exc


def plugin_block(config: dict[str, Any]) -> dict[str, Any] | None:
    """The plugin's block in a parsed ``otter_config.json`` (None when the plugin is not configured)."""
    for plugin in config.get("plugins") or []:
        if isinstance(plugin, dict) and PLUGIN_NAME in plugin:
            return plugin[PLUGIN_NAME] or {}
        if plugin == PLUGIN_NAME:
            return {}
    return None


def read_options(source_dir: str | Path) -> AutograderOptions:
    """The options in ``<source_dir>/otter_config.json``."""
    path = Path(source_dir) / OTTER_CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OptionsError(f"cannot read {path}: {exc}") from exc
    block = plugin_block(config) if isinstance(config, dict) else None
    if block is None:
        raise OptionsError(f"{path} does not configure the plugin {PLUGIN_NAME}")
    return options_from_mapping(block)


def with_options(config: dict[str, Any], options: AutograderOptions) -> dict[str, Any]:
    """``config`` with the plugin configured by ``options`` (replacing any earlier block)."""
    config = dict(config)
    plugins = [p for p in config.get("plugins") or [] if not (p == PLUGIN_NAME or (isinstance(p, dict) and PLUGIN_NAME in p))]
    block = options.model_dump(exclude_defaults=True)
    block["lab"] = options.lab
    block["rerun_notebook"] = options.rerun_notebook  # always written: staff look for it
    config["plugins"] = [*plugins, {PLUGIN_NAME: block}]
    return config
