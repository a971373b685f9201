"""Notes that go with a figure (a caption), not over its data.

A figure function calls :func:`note` for text that explains the figure (a budget not reached,
an approximation used) rather than drawing it on the axes. ``mixlab plot`` writes the notes
below the axes, in space added at the bottom of the figure (:func:`draw_below`); ``mixlab
report`` puts them in the figure's HTML caption and draws nothing.
"""

from __future__ import annotations

import textwrap

NOTE_FONT = 7        # points
LINE_INCHES = 0.15   # one line of notes at NOTE_FONT, with spacing
MARGIN_INCHES = 0.12
CHAR_WIDTH = 0.62    # a character's width in units of the font size (DejaVu Sans, generous)


def note(fig, *lines: str) -> None:
    """Attach lines of caption text to ``fig`` (a matplotlib Figure)."""
    fig.__dict__.setdefault("mixlab_notes", []).extend(str(s) for s in lines if s)


def notes_of(fig) -> list[str]:
    """The caption lines attached to ``fig`` (empty if none)."""
    return list(fig.__dict__.get("mixlab_notes", []))


def draw_below(fig) -> None:
    """Grow ``fig`` at the bottom by the height of its notes and write them there, each wrapped
    to the figure's width: every axes and figure-level text keeps its size in inches and moves
    up, so nothing is drawn over."""
    width, height = fig.get_size_inches()
    chars = max(20, int(width * 72 / (CHAR_WIDTH * NOTE_FONT)))   # a line's characters
    notes = [line for n in notes_of(fig) for line in textwrap.wrap(n, chars) or [""]]
    if not notes:
        return
    extra = LINE_INCHES * len(notes) + MARGIN_INCHES
    total = height + extra

    def lift(y: float) -> float:  # a figure fraction of the old height -> of the new one
        return (y * height + extra) / total

    for ax in fig.axes:
        pos = ax.get_position(original=True)
        ax.set_position([pos.x0, lift(pos.y0), pos.width, pos.height * height / total])
    for text in fig.texts:
        x, y = text.get_position()
        text.set_position((x, lift(y)))
    fig.set_size_inches(width, total)
    fig.text(0.01, MARGIN_INCHES / 2 / total, "\n".join(notes), fontsize=NOTE_FONT,
             va="bottom", ha="left")
