"""The README stays a page for users, and every design note stays reachable from it.

README.md is short and links docs/README.md, the index of the topic pages in docs/; every page
is linked, every relative link resolves, and the README's set-up block is what CI runs. The
project's text describes the software as it is: no work session, device call or issue number,
and every repository file it cites exists.
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
    """Every Markdown page of docs/."""
    return sorted(DOCS.rglob("*.md"))


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
        for page in [README, REPO / "CHANGELOG.md", *_pages()]
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


# What the project's text may not name: the work that built it. Each pattern is assembled from
# parts, so that this file does not match its own patterns.
_S, _C, _I = "ses" + "sion", "ca" + "ll", "iss" + "ue"
_WORK_LOG = re.compile(
    rf"\b{_S}s? ?#?\d"                      # a numbered work session, and folders named after one
    rf"|\b{_S}s \d+(?:-\d+)?"
    rf"|\b[Cc]{_C[1:]}s? [A-F](?:\b|-[A-F]\b)"  # a device call, alone or as a range
    rf"|\b[Cc]{_C[1:]}s [A-F] and [A-F]\b"
    rf"|\b{_C}[A-F]\b"
    rf"|\b[Ii]{_I[1:]}s? #?\d"                  # an issue number
    rf"|\banchor(?:-facts| [A-C]\d)"         # a document that is not in the repository
)
#: Where the rule holds: the project's own text (tests' data files are not text of the project).
_SCANNED = ("README.md", "CHANGELOG.md", "docs", "msa", "kernels", "benchmarks", "tests")
_TEXT = {".py", ".md", ".sh", ".cu", ".cuh", ".h", ".json", ".toml", ".txt", ".cfg", ".yml", ".yaml"}
#: A repository path a comment or page cites: a top folder of the repository, then a file name
#: or a folder (ending in ``/``).
_CITED = re.compile(
    r"(?<![\w/.~-])((?:msa|kernels|benchmarks|tests|docs|datasets)/[\w./-]*\w(?:\.(?:py|md|cu|cuh|sh|json|toml|npz)\b|/))"
)


def _text_files() -> list[Path]:
    files = []
    for name in _SCANNED:
        root = REPO / name
        found = [root] if root.is_file() else sorted(root.rglob("*"))
        files += [p for p in found if p.is_file() and p.suffix in _TEXT and "__pycache__" not in p.parts]
    return files


def test_no_text_names_a_work_session_a_device_call_or_an_issue() -> None:
    """The project describes the software as it is: nothing names the work session, device call
    or issue a change came from (say what the code does and why, and cite what a reader can open)."""
    hits = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()[:120]}"
        for path in _text_files()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if _WORK_LOG.search(line)
    ]
    assert not hits, "text that names a work session, device call or issue:\n" + "\n".join(hits)


#: Folders the wheel's build makes (hatch_build.py), cited by pages but not in a checkout.
_BUILT = {"msa/_jitcache/"}


def test_cited_repository_files_exist() -> None:
    """A file that a page or a comment cites (a module under msa/, a page under docs/) is in the
    repository, and so is a folder that a page cites (code names folders of other trees too)."""
    missing = [
        f"{path.relative_to(REPO)}:{n}: {cited}"
        for path in _text_files()
        if path.suffix != ".json"
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        for cited in _CITED.findall(line)
        if (path.suffix == ".md" or not cited.endswith("/")) and cited not in _BUILT
        and not (REPO / cited).exists() and not (path.parent / cited).exists()
    ]
    assert not missing, "cited files that are not in the repository:\n" + "\n".join(missing)


def test_the_work_log_patterns_catch_what_they_name() -> None:
    """The patterns above find each form they are for, and leave ordinary prose alone."""
    caught = [f"{_S} 12", f"{_S}s 27-28", f"h200-{_S}28", f"{_C} C", f"{_C}s A-F", f"{_C}s D and E",
              f"{_C}A/O.log", f"{_I} 30", f"({_I} #30)", "anchor" + "-facts C2", "anchor" + " C10"]
    assert all(_WORK_LOG.search(text) for text in caught), [t for t in caught if not _WORK_LOG.search(t)]
    prose = ["a compiled call", "calls Bio.Align", "the session's socket", "Issues welcome", "call it"]
    assert not any(_WORK_LOG.search(text) for text in prose)
