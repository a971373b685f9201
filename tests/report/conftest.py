"""A headless Chromium (Debian's ``chromium``, driven by Playwright) shared by a test module,
and pages opened from ``file://`` with every other request aborted.

The browser tests skip, saying why, only when no chromium is installed (``.ci/run`` installs
it). Screenshots go to ``test-artifacts/report/`` (gitignored).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH: install Debian's 'chromium' package "
                    "(.ci/run does) to run the report's browser tests")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright (the 'dev' extra) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Opened:
    """A page opened from file://, with what it said and what it tried to fetch."""
    page: object
    errors: list = field(default_factory=list)      # console errors and uncaught exceptions
    dialogs: list = field(default_factory=list)     # alert/confirm/prompt messages
    blocked: list = field(default_factory=list)     # requests other than file:// (aborted)


def open_page(browser, html: Path, width: int = 1280, height: int = 900) -> Opened:
    page = browser.new_page(viewport={"width": width, "height": height})
    opened = Opened(page)

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            opened.blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))

    def dialog(d):
        opened.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(html.resolve().as_uri())
    page.wait_for_load_state("load")
    return opened


def screenshot(opened: Opened, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"{name}.png"
    opened.page.screenshot(path=str(out), full_page=True)
    return out
