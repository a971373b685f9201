"""Values from a run as text for a page: numbers formatted, long strings and lists cut with a
visible marker (the bounds of ``mixlab show``), every string left for the template to escape."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

#: a longer string is shown cut, saying by how much (as ``mixlab show``)
SHOWN_CHARS = 2000
#: a longer list (or table) is shown cut likewise
SHOWN_ITEMS = 1000
#: the resolved spec's YAML text is shown up to this many characters
SPEC_CHARS = 20000


def clip(value: Any, limit: int = SHOWN_CHARS) -> Markup:
    """``value`` as escaped text, cut after ``limit`` characters with a marker saying how many
    were left out (the marker is the only markup; the value itself is always escaped)."""
    text = value if isinstance(value, str) else fmt(value)
    if len(text) <= limit:
        return escape(text)
    return Markup('{}<span class="cut">… [cut: {:,} more characters]</span>').format(
        text[:limit], len(text) - limit)


def fmt(v: Any) -> str:
    """A scalar as a short text: floats to 4 significant digits, non-finite spelled out."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        head = ", ".join(fmt(x) for x in list(v)[:SHOWN_ITEMS])
        more = len(v) - SHOWN_ITEMS
        return f"[{head}{f', … {more:,} more items' if more > 0 else ''}]"
    return str(v)


def sort_key(v: Any) -> str:
    """The ``data-sort`` value of a cell: a number as its repr (the sorter compares it as a
    number), anything else empty (the sorter then compares the cell's text)."""
    if isinstance(v, bool) or v is None:
        return ""
    if isinstance(v, (int, float)):
        return "" if isinstance(v, float) and math.isnan(v) else repr(float(v))
    try:
        x = float(v)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(x) else repr(x)


def cut_items(items: list, limit: int = SHOWN_ITEMS) -> tuple[list, int]:
    """The first ``limit`` items and how many were left out."""
    return list(items[:limit]), max(0, len(items) - limit)
