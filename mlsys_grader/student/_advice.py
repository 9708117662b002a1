"""Mistakes shown as advice: the package's own errors render as one line in a notebook, not a traceback.

A student who types ``"above75"`` or sets ``factor = 10`` made a mistake the package
names precisely (what was wrong, the allowed values); the 20 lines of this package's
source that IPython prints before that sentence only hide it.  So the notebook API
registers a renderer for :class:`~mlsys_grader.errors.GraderError` with the running
IPython shell (``InteractiveShell.set_custom_exc``): the cell still fails — "Run all"
stops at the mistake, as it should — but its output is the advice alone.  Only
exceptions escaping a cell are affected; code that calls the API and catches
``DomainError`` gets the exception as always, and any other error keeps its traceback.

The wording helpers here are shared by every message the session raises, so a
choice is always written as the notebook writes it (``"above_75"``) and a near miss
is named ("did you mean …").  Each refusal is built from its data (where, which name, the
allowed values, what arrived), and the :class:`~mlsys_grader.errors.DomainError` it raises
keeps that data, so a caller never has to read the sentence back.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import DomainError, GraderError

if TYPE_CHECKING:
    from ..core.labspec import Control


def literal(value: Any) -> str:
    """A value as the notebook's code writes it: strings in double quotes, numbers plainly, ``True``/``False``."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return f"{value:g}"
    if value is Ellipsis:
        return "..."
    if isinstance(value, (bool, int)) or value is None:
        return repr(value)
    return f"a {type(value).__name__}"


def listing(items: Iterable[str], last: str = "or") -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def choices_text(options: Mapping[Any, str] | Iterable[Any]) -> str:
    """``"a" (Label A), "b" (Label B)`` — or just the literals when there are no labels."""
    if isinstance(options, Mapping):
        return ", ".join(f"{literal(value)} ({label})" if label else literal(value) for value, label in options.items())
    return ", ".join(literal(value) for value in options)


def near_miss(value: Any, allowed: Iterable[Any], *, names: bool = False) -> str:
    """`` — did you mean "above_75"?`` when ``value`` is close to one allowed value, else ``"."``: the end of a sentence.

    ``names=True`` for keyword names (``recompilations``), which the notebook writes unquoted.
    """
    candidates = [candidate for candidate in allowed if candidate is not None]
    if not isinstance(value, str):
        matches = [c for c in candidates if str(c) == str(value)]
    else:
        folded = value.strip().lower().replace("-", "_").replace(" ", "_")
        matches = [c for c in candidates if isinstance(c, str) and c.lower() == folded]
        if not matches:
            by_text = {str(c): c for c in candidates}
            found = difflib.get_close_matches(value, list(by_text), n=1, cutoff=0.6)
            matches = [by_text[found[0]]] if found else []
    if not matches:
        return "."
    return f" — did you mean {matches[0] if names else literal(matches[0])}?"


def unquoted(value: Any, allowed: Iterable[Any] = ()) -> str | None:
    """What ``value`` means written without quotes, when it is text standing for a number or ``True``/``False``.

    ``executions = "50"`` is the text "50", not the number 50; the advice says so in words
    (``allowed`` lists a choice control's values: the text is only read as a number when they are numbers).
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text in ("True", "False"):
        return text
    try:
        number = float(text)
    except ValueError:
        return None
    allowed = list(allowed)
    if allowed and not any(isinstance(c, (int, float)) and not isinstance(c, bool) for c in allowed):
        return None
    return text if number == number else None  # NaN is not a number a student means


def refused_choice(where: str, name: str, options: Mapping[Any, str] | Sequence[Any], got: Any, *,
                   part: str | None, control: str | None) -> DomainError:
    """``<where><name> must be one of <options>; you set <got>`` (and the nearest option), keeping that data."""
    allowed = [value for value in options if value is not None]
    return DomainError(f"{where}{name} must be one of {choices_text(options)}; you set {literal(got)}{near_miss(got, allowed)}",
                       part=part, control=control, allowed=allowed, got=got)


def control_words(control: Control, allowed: Sequence[Any]) -> str:
    """A control's allowed values in the notebook's words (the comment beside it says the same)."""
    if control.kind == "choice":
        return "one of " + choices_text(allowed)
    if control.kind == "bool":
        return "True or False"
    return f"a number from {control.minimum:g} to {control.maximum:g} in steps of {control.step:g}"


def refused_control(error: DomainError, control: Control, *, part: str, value: Any) -> DomainError:
    """The notebook's sentence for a value :meth:`Control.check <mlsys_grader.core.labspec.Control.check>` refused.

    Built from the refusal's data: its part, control, allowed values and the value that
    arrived; where the core's error carries none (an older lab), the control and the value
    the session passed stand in.  The words for a range come from the control (the data
    lists no values for a range).
    """
    where = error.part or part
    name = error.control or control.name
    got = error.got if error.control is not None else value
    listed = (error.allowed or control.values()) if control.kind in ("choice", "bool") else ()  # a range lists none
    allowed = [choice for choice in listed if choice is not None]
    meant = unquoted(got, allowed if control.kind == "choice" else ())
    if meant is not None:  # "50" where 50 belongs: say what happened, not only the quotes
        said = f"you set the text {literal(got)}; write {meant} without quotes."
    else:
        said = f"you set {literal(got)}{near_miss(got, allowed)}"
    return DomainError(f"Part {where}: {name} must be {control_words(control, allowed)}; {said}",
                       part=where, control=name, allowed=allowed, got=got)


def dedupe(messages: Iterable[str]) -> list[str]:
    """Each sentence once, in order of first appearance."""
    return list(dict.fromkeys(message for message in messages if message))


def advice(exc: BaseException) -> list[str]:
    """The lines a notebook shows for one of the package's errors: its sentence, nothing else."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()


def _show_advice(shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
                 tb_offset: int | None = None) -> None:
    """IPython's custom-exception hook: report the error as its advice line instead of a traceback."""
    shell._showtraceback(etype, value, advice(value))  # the kernel sends these lines as the cell's error output


def install() -> bool:
    """Register the advice renderer with the running IPython shell; False outside IPython.

    Never replaces a custom-exception handler someone else registered.
    """
    try:
        from IPython import get_ipython  # only inside a notebook kernel, where IPython is already loaded
    except ImportError:  # plain Python: exceptions print as usual
        return False
    shell = get_ipython()
    if shell is None:
        return False
    current = getattr(shell, "custom_exceptions", ())
    if current and GraderError not in current:
        return False
    if GraderError not in current:
        shell.set_custom_exc((GraderError,), _show_advice)
    return True
