"""Files the gradebook writes are written whole: an interrupted run leaves the previous file as it was."""

from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def replace_atomically(out: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text handle (UTF-8, ``newline=""``) whose content replaces ``out`` only when the block ends without an error."""
    target = Path(out)
    handle = tempfile.NamedTemporaryFile("w", newline="", encoding="utf-8", dir=target.parent or ".",  # noqa: SIM115 - closed below
                                         prefix=f".{target.name}.", suffix=".part", delete=False)
    try:
        with handle:
            yield handle
        os.chmod(handle.name, 0o666 & ~_umask())  # as open() would have made it (a temporary file is private)
        os.replace(handle.name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell; text that a spreadsheet would run as a formula is quoted with a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def write_csv(rows: Iterable[Mapping[str, Any]], out: str | os.PathLike[str], columns: Sequence[str]) -> int:
    """Write rows to ``out`` (UTF-8, header first); returns how many were written.

    Written whole or not at all: into a temporary file beside ``out``, renamed over it once complete, so an
    interrupted run leaves the previous file as it was."""
    count = 0
    with replace_atomically(out) as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(column, "")) for column in columns])
            count += 1
    return count
