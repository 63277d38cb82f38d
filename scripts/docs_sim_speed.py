"""docs/development.md's simulation-speed section, from bench/results/sim_speed.txt.

    python scripts/docs_sim_speed.py            # print the section
    python scripts/docs_sim_speed.py --write    # rewrite the page between the markers
    python scripts/docs_sim_speed.py --check    # exit 1 if the page's section is not the file's

bench/results/sim_speed.txt is what `python bench/sim_speed.py [--ros] --save` printed (CPU
seconds per plant second of `quirobot simulate`, of an accuracy sample and of each process of the
simulated ROS stack during one DrillHole goal). test/package/test_docs_sim_speed.py runs the check.
"""

from __future__ import annotations

import sys
from pathlib import Path

import docs_block  # scripts/ (this script's folder, first on sys.path when it runs)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
RESULTS = ROOT / "bench" / "results" / "sim_speed.txt"
BEGIN = "<!-- sim_speed results: scripts/docs_sim_speed.py --write -->"
END = "<!-- end of the sim_speed results -->"

BLOCK = docs_block.MarkedBlock(PAGE, BEGIN, END)


def markdown(text: str) -> str:
    """The saved run, verbatim in a text block, between the markers."""
    command = "python bench/sim_speed.py --before D30A129_TREE --parts --ros --save"
    rows = [f"From `bench/results/sim_speed.txt` (`{command}`):", "", "```text"]
    return "\n".join([BEGIN, *rows, text.rstrip("\n"), "```", END])


def main(argv: list[str] | None = None) -> int:
    return docs_block.main(
        argv, __doc__.splitlines()[0], BLOCK, lambda: markdown(RESULTS.read_text()), "sim_speed section"
    )


if __name__ == "__main__":
    sys.exit(main())
