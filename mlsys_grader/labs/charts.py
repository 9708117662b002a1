"""What the lab modules draw their part views with: the seeds' palette, bars, readable numbers.

A lab's :meth:`~mlsys_grader.core.labspec.Lab.render` builds a
:class:`~mlsys_grader.core.labspec.View` from its plan's arms; these helpers keep
every lab's tables and charts in the book's style.  Nothing here imports matplotlib
(a chart painter receives the ``Axes``) and mlsysim's units load on first use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# The seeds' palette (mlsysim.labs.style.COLORS), by name.
BLUE, ORANGE, GREEN, RED, MUTED = "#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8C8C8C"


def q(payload: Mapping[str, Any], unit: str) -> float:
    """A ``{"magnitude", "unit"}`` payload converted to ``unit`` (pint via mlsysim's registry)."""
    from mlsysim.core.units import Q_  # here, not at the top: mlsysim is slow to import

    return float(Q_(payload["magnitude"], payload["unit"]).to(unit).magnitude)


# Units chosen for reading: for each kind of quantity, the prefixed units a person writes,
# smallest first ("30.8 µs", "1 kJ", "2.15 GFLOP"); bytes keep the binary prefixes the book uses.
_READABLE_UNITS = (
    ("second", (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))),
    ("joule", (("nJ", 1e-9), ("µJ", 1e-6), ("mJ", 1e-3), ("J", 1.0), ("kJ", 1e3), ("MJ", 1e6))),
    ("flop", (("FLOP", 1.0), ("kFLOP", 1e3), ("MFLOP", 1e6), ("GFLOP", 1e9), ("TFLOP", 1e12), ("PFLOP", 1e15))),
    ("byte", (("B", 1.0), ("KiB", 2.0 ** 10), ("MiB", 2.0 ** 20), ("GiB", 2.0 ** 30), ("TiB", 2.0 ** 40))),
    ("watt", (("mW", 1e-3), ("W", 1.0), ("kW", 1e3))),
)


_BYTE_UNITS = frozenset({"byte", "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB", "TB", "kilobyte", "megabyte",
                         "gigabyte", "terabyte", "kibibyte", "mebibyte", "gibibyte", "tebibyte"})


def plain_number(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, written without an exponent when it reads well (0.000123, 1230);
    below a millionth (a TinyML inference's dollar cost, where no unit prefix helps) as ``1.28e-08``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:.{digits}g}"
    if "e" not in text or not 1e-6 <= abs(value) < 1e12:
        return text
    places = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, places):.{max(0, places)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def readable(magnitude: float, unit: str, digits: int = 3) -> str:
    """A quantity as people read it: the prefixed unit that keeps the number between 1 and 1000
    ("30.8 µs" for 0.0308 ms, "1 kJ" for 1e6 mJ), to ``digits`` significant digits; dollars as "$0.00123"."""
    from mlsysim.core.units import Q_  # here, not at the top: mlsysim is slow to import

    quantity = Q_(float(magnitude), unit)
    if unit in ("dollar", "USD", "$"):
        return "$" + plain_number(float(magnitude), digits)
    name = format(quantity.units, "D")
    for base, scales in _READABLE_UNITS:
        if "/" in name or "*" in name or quantity.dimensionality != Q_(1.0, base).dimensionality:
            continue  # compound units (FLOP/B) keep their own
        if (base == "byte") != (name in _BYTE_UNITS):
            continue  # mlsysim's byte is dimensionless: only a unit named as bytes is one
        value = float(quantity.to(base).magnitude)
        if value == 0:  # zero keeps the unit it was recorded in, written the family's way
            factor = float(Q_(1.0, unit).to(base).magnitude)
            return "0 " + next((symbol for symbol, size in scales if abs(size - factor) <= 1e-9 * size), scales[0][0])
        index = 0
        for position, (_, size) in enumerate(scales):
            if abs(value) >= size * (1 - 1e-12):
                index = position
        # Rounding can carry into the next unit (999.96 ms reads as 1 s, not 1000 ms).
        if index + 1 < len(scales) and abs(float(f"{value / scales[index][1]:.{digits}g}")) >= 1000:
            index += 1
        symbol, scale = scales[index]
        return f"{plain_number(value / scale, digits)} {symbol}"
    return f"{plain_number(float(magnitude), digits)} {quantity.units:~P}".strip()


def readable_payload(payload: Mapping[str, Any], digits: int = 3) -> str:
    """:func:`readable` for a ``{"magnitude", "unit"}`` payload as the evaluators record it."""
    return readable(payload["magnitude"], payload["unit"], digits)


def plural(count: Any, one: str, many: str | None = None) -> str:
    """``1 launch``, ``2 launches``."""
    return f"{count} {one if count == 1 else (many or one + 's')}"


def bars(ax: Any, labels: list[str], series: list[tuple[str, list[float], str]], *, ylabel: str,
         stacked: bool = False) -> None:
    """Grouped or stacked bars; ``series`` is [(name, values, colour)]."""
    count = len(series)
    width = 0.7 if stacked or count == 1 else 0.8 / count
    bottoms = [0.0] * len(labels)
    for index, (name, values, colour) in enumerate(series):
        positions: list[float]
        if stacked or count == 1:
            positions = list(range(len(labels)))
        else:
            positions = [i - 0.4 + width * (index + 0.5) for i in range(len(labels))]
        ax.bar(positions, values, width=width, color=colour, label=name, bottom=bottoms if stacked else None)
        if stacked:
            bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel(ylabel)
    if count > 1:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(count, 5), frameon=False)
