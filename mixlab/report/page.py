"""The page shell: a Jinja2 environment with autoescape on, the inline style and table sorter,
and a Content-Security-Policy that lets the page fetch nothing and run only its own script.

The policy names the sorter and the style by their SHA-256 hashes, so a script or an event
handler that reached the page from a run's strings (it cannot: every value is escaped) would
still not run, and ``default-src 'none'`` keeps the page from loading anything but its own
``data:`` images.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
from markupsafe import Markup

from ..runfile.atomic import atomic_write
from . import values

_TEMPLATES = Path(__file__).with_name("templates")


@dataclass
class Figure:
    """One embedded figure: PNG bytes, what it shows (alt text) and its caption lines."""
    title: str
    png: bytes
    alt: str
    notes: list[str] = field(default_factory=list)

    @property
    def src(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _source(name: str) -> str:
    return (_TEMPLATES / name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["clip"] = values.clip
    env.filters["fmt"] = values.fmt
    env.filters["sort_key"] = values.sort_key
    return env


def render(template: str, **context) -> str:
    """The page ``template`` (a file of templates/) with ``context``, as one HTML document."""
    style, script = _source("style.css"), _source("sort.js")
    csp = (f"default-src 'none'; img-src data:; style-src {_hash(style)}; "
           f"script-src {_hash(script)}; base-uri 'none'; form-action 'none'")
    # the page's own style and script (package files, not data) go in verbatim
    return environment().get_template(template).render(
        style=Markup(style), script=Markup(script), csp=csp, **context)


def write(html: str, out: str | os.PathLike) -> Path:
    """Write the page atomically (a reader never sees half a page)."""
    out = Path(out)
    if out.parent and not out.parent.is_dir():
        out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, html.encode("utf-8"))
    return out
