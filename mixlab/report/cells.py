"""Table cells for the templates' ``table`` macro: text (escaped by the template), a sort key,
and a class and badge from a fixed set (never a string from a run)."""

from __future__ import annotations

from typing import Any

from .values import fmt, sort_key

#: a verdict -> (the cell class, the badge text); anything else is "no verdict"
VERDICTS = {"ok": ("v-ok", "ok"), "biased": ("v-biased", "biased"),
            "not mixed": ("v-notmixed", "not mixed")}
NO_VERDICT = ("v-none", "no verdict")


def cell(value: Any, *, text: str | None = None, numeric: bool | None = None,
         cls: str = "", badge: str = "", badge_cls: str = "", limit: int = 0) -> dict:
    """One cell: ``text`` (default: the formatted value), sorted by the value when it is a
    number."""
    key = sort_key(value) if numeric is not False else ""
    num = "num" if key != "" and numeric is not False else ""
    return {"text": fmt(value) if text is None else text, "sort": key,
            "cls": " ".join(c for c in (num, cls) if c), "badge": badge,
            "badge_cls": badge_cls, "limit": limit}


def verdict_style(verdict: str) -> tuple[str, str]:
    """(cell class, badge text) of a verdict (``ok``, ``biased``, ``not mixed``; else none)."""
    return VERDICTS.get(verdict.strip().lower(), NO_VERDICT)
