"""A block of a docs page written from a results file, between two HTML-comment markers: the
docs_* scripts print it, rewrite the page with it (--write) or check the page holds it (--check).

Imported by those scripts from their own folder (first on sys.path when a script runs; the
tests' repo_scripts.load_script puts scripts/ there too). A NamedTuple, not a dataclass: it
stays usable however a script was loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple


class MarkedBlock(NamedTuple):
    """The part of `page` from the line `begin` to the line `end`, markers included."""

    page: Path
    begin: str
    end: str

    def of(self, text: str) -> str:
        """The block as `text` (the page's) holds it."""
        return text[text.index(self.begin) : text.index(self.end) + len(self.end)]


def main(
    argv: list[str] | None, description: str, block: MarkedBlock, wanted: Callable[[], str], what: str
) -> int:
    """The scripts' command line: print `wanted()`, or --write it into the page, or --check
    (exit 1, naming `what`, if the page's block differs)."""
    parser = argparse.ArgumentParser(description=description)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite the page between the markers")
    action.add_argument("--check", action="store_true", help=f"exit 1 if the page's {what} is stale")
    args = parser.parse_args(argv)
    text, page = wanted(), block.page.read_text()
    if args.write:
        block.page.write_text(page.replace(block.of(page), text))
    elif args.check:
        if block.of(page) != text:
            print(f"{block.page.name}: the {what} is not the results file's (run with --write)")
            return 1
    else:
        print(text)
    return 0
