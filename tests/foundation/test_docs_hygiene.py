"""The README stays a manual and the tree holds no diary: README.md is at most 350 lines, its
and the docs' relative links resolve, and README.md, docs/ and mixlab/ say why, not when
("session", "issue N", "this build", "previous build" belong in git log and CHANGELOG.md)."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"session|issue [0-9]+|this build|previous build", re.I)
ALLOWED = re.compile(r"""scope\s*=\s*["']session["']""")     # pytest's fixture scope
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _texts():
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "mixlab").rglob("*.py"))]
    return [f for f in files if f.is_file()]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_readme_is_a_manual_of_at_most_350_lines():
    n = len((REPO / "README.md").read_text().splitlines())
    assert n <= 350, f"README.md has {n} lines: move the detail to docs/"


def test_no_history_words_in_readme_docs_or_source():
    hits = []
    for f in _texts():
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if HISTORY.search(ALLOWED.sub("", line)):
                hits.append(f"{f.relative_to(REPO)}:{i}: {line.strip()[:80]}")
    assert not hits, "history belongs in git log / CHANGELOG.md:\n" + "\n".join(hits)


DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_resolve_to_files_and_headings(doc):
    path = REPO / doc
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):                     # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = [_anchor(m) for m in re.findall(r"^#+ (.+)$", dest.read_text(), re.M)]
            if anchor not in headings:
                broken.append(target)
    assert not broken, f"{doc}: links that lead nowhere: {broken}"


def test_the_anchor_rule_and_the_history_pattern_can_fail():
    assert _anchor("Austerity: the sequential MH test") == "austerity-the-sequential-mh-test"
    assert HISTORY.search("measured in the third session") and HISTORY.search("see Issue 16")
    assert not HISTORY.search(ALLOWED.sub("", '@pytest.fixture(scope="session")'))
