"""Every link in the repository's Markdown resolves: a relative target exists, and a ``#anchor`` names a heading
of the page it points to (GitHub's slugs), so moving a page or a recorded result cannot leave a dead link behind."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted({ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("research/**/*.md"),
                *ROOT.glob("baselines/**/*.md"), *ROOT.glob("leaderboards/**/*.md")})
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The page without code blocks and code spans: a ``[x](y)`` inside code is an example, not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    prose = _prose(text)
    return INLINE.findall(prose) + REFERENCE.findall(prose)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a page: each heading's slug (repeats get -1, -2, ... as on GitHub) and HTML anchors."""
    text = page.read_text()
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(text))
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken(page: Path) -> list[str]:
    """The links of ``page`` that lead nowhere, each with the reason."""
    bad = []
    for target in links(page.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ... (not checked offline)
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file {_shown(dest)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: {_shown(dest)} has no heading with anchor #{anchor}")
    return bad


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_link_resolves(page: Path) -> None:
    bad = broken(page)
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


def test_the_checker_sees_links_and_anchors(tmp_path: Path) -> None:
    """The checker itself: it finds a dead file, a dead anchor and a live one, and ignores links in code."""
    (tmp_path / "other.md").write_text("# The `env` page: spaces, reward!\n## Reward\n## Reward\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#the-env-page-spaces-reward) [ok](other.md#reward-1) [ok](#here) ![img](other.md)\n"
                    "# Here\n[dead](missing.md) [dead anchor](other.md#nope) `[code](missing.md)`\n"
                    "```\n[fenced](missing.md)\n```\n[web](https://example.com/x.md)\n[ref]: other.md#reward\n")
    assert [b.split(":")[0] for b in broken(page)] == ["missing.md", "other.md#nope"]
    assert slug("3. Step `make test` (CPU)") == "3-step-make-test-cpu"


def test_the_docs_index_lists_every_page() -> None:
    """docs/README.md is the index: every page under docs/ has its line there, so a new page cannot hide."""
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / target.partition("#")[0]).resolve() for target in links(index.read_text())}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    assert sorted(p.name for p in pages - listed) == []
