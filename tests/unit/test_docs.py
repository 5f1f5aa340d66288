"""The README stays a page for users, and every design note stays reachable from it.

README.md is short and links docs/README.md, the index of the topic pages in docs/; every page
is linked, every relative link resolves, and the README's set-up block is what CI runs.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
INDEX = DOCS / "README.md"
#: Most lines the README may have: set-up, usage, results and links; the rest is docs/.
README_MAX_LINES = 250

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SETUP_BLOCK = re.compile(r"^## Set-up\n.*?^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _pages() -> list[Path]:
    """Every Markdown page of docs/ but the historical log."""
    return sorted(p for p in DOCS.rglob("*.md") if "log" not in p.relative_to(DOCS).parts[:-1])


def _links(page: Path) -> list[str]:
    """Relative link targets of a page (code blocks, web addresses and in-page anchors left out)."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    targets = (m[1].split("#", 1)[0] for m in _LINK.finditer(text))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def _linked(page: Path) -> set[Path]:
    return {(page.parent / t).resolve() for t in _links(page)}


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move design notes to docs/"


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    from_readme = _linked(README)
    assert INDEX.resolve() in from_readme, "README.md must link docs/README.md"
    reachable = from_readme | _linked(INDEX)
    unlinked = [str(p.relative_to(REPO)) for p in _pages() if p.resolve() not in reachable]
    assert not unlinked, f"not linked from README.md or docs/README.md: {unlinked}"


def test_relative_links_resolve() -> None:
    broken = [
        f"{page.relative_to(REPO)}: {target}"
        for page in [README, *_pages(), *sorted((DOCS / "log").glob("*.md"))]
        for target in _links(page)
        if not (page.parent / target).exists()
    ]
    assert not broken, f"links to missing files: {broken}"


def test_setup_block_is_what_ci_runs() -> None:
    """The README's set-up commands, line for line, are the two commands .ci/run runs."""
    block = _SETUP_BLOCK.search(README.read_text(encoding="utf-8"))
    assert block, "README.md has no ```bash block under '## Set-up'"
    readme_commands = block[1].splitlines()
    ci_commands = [
        line.removesuffix(" || status=$?")
        for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith(("python3 -m pip install", "python3 -m pytest"))
    ]
    assert len(ci_commands) == 2
    assert readme_commands == ci_commands
