"""The way in: the README is a short front page that leads to docs/architecture.md and examples/,
and every relative link of the README, the docs and the examples' index points at a file that
exists (a page moved or renamed breaks a test, not a newcomer's first hour)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "README.md"]
#: The front page's length (issue 35 item 5: "at most about 250 lines").
README_LINES = 250


def broken_links(page: Path, text: str) -> list[str]:
    """The relative link targets of `text` (the page at `page`, code blocks left out) that name
    no file or folder."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    targets = re.findall(r"\]\(([^)\s]+)\)", prose)
    return [
        target
        for target in targets
        if not re.match(r"[a-z]+:", target)
        and target.split("#")[0]
        and not (page.parent / target.split("#")[0]).exists()
    ]


def test_every_relative_link_resolves():
    broken = {page.name: broken_links(page, page.read_text()) for page in PAGES}
    assert {name: links for name, links in broken.items() if links} == {}


def test_the_link_check_can_fail():
    page = ROOT / "docs" / "architecture.md"
    text = "[ok](safety.md) [image](images/architecture.png) [gone](simulations.md) [web](https://x.org)"
    assert broken_links(page, text) == ["simulations.md"]


def test_the_readme_is_a_short_front_page_that_leads_the_way_in():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_LINES
    for target in ("docs/architecture.md", "examples/README.md", "docs/safety.md", "docs/simulation.md"):
        assert f"]({target})" in readme, target
