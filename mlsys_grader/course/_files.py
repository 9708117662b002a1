"""Files the gradebook writes are written whole: an interrupted run leaves the previous file as it was."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


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
