"""docs/drive_from_another_node.md's load-test table, from bench/results/sim_load.txt.

    python scripts/docs_sim_load.py            # print the table
    python scripts/docs_sim_load.py --write    # rewrite the page between the markers
    python scripts/docs_sim_load.py --check    # exit 1 if the page's table is not the file's

bench/results/sim_load.txt is a copy of what test_8 of test/ros/test_launch_drill_hole.py wrote
to $QUIROBOT_ARTIFACTS/sim_load.txt (test/ros/busy_load.py's `write_sim_load`): one line a run.
test/package/test_docs_sim_load.py runs the check.
"""

from __future__ import annotations

import sys
from pathlib import Path

import docs_block  # scripts/ (this script's folder, first on sys.path when it runs)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "drive_from_another_node.md"
RESULTS = ROOT / "bench" / "results" / "sim_load.txt"
BEGIN = "<!-- sim_load table: scripts/docs_sim_load.py --write -->"
END = "<!-- end of the sim_load table -->"

BLOCK = docs_block.MarkedBlock(PAGE, BEGIN, END)
COLUMNS = (
    "label",
    "ratio",
    "sim",
    "wall",
    "true_depth",
    "true_lateral",
    "depth",
    "lateral",
    "fk_depth",
    "fk_lateral",
)


def read_runs(text: str) -> tuple[str, list[dict[str, str]]]:
    """(the file's first comment line, one {column: text} per run)."""
    lines = text.splitlines()
    runs = [
        dict(zip(COLUMNS, (value.strip() for value in line.split(",")), strict=True))
        for line in lines
        if line[:1] != "#"
    ]
    return lines[0].lstrip("# "), runs


def spread(runs: list[dict[str, str]], column: str, scale: float) -> float:
    """um: the largest minus the smallest of `column` over the runs (`scale`: um per unit)."""
    values = [float(run[column]) * scale for run in runs]
    return max(values) - min(values)


def markdown(text: str) -> str:
    """The table and its summary line, between the markers."""
    title, runs = read_runs(text)
    rows = [
        f"From `bench/results/sim_load.txt` ({title}):",
        "",
        "| run | sim/wall | wall s | true tip depth | true tip lateral | result depth | FK depth "
        "| FK lateral |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows += [
        f"| {r['label']} | {r['ratio']} | {r['wall']} | {r['true_depth']} mm | {r['true_lateral']} µm | "
        f"{r['depth']} mm | {r['fk_depth']} mm | {r['fk_lateral']} µm |"
        for r in runs
    ]
    rows += [
        "",
        f"The true holes agree within {spread(runs, 'true_depth', 1e3):.2f} µm in depth and "
        f"{spread(runs, 'true_lateral', 1.0):.2f} µm laterally; the measured ones (FK) within "
        f"{spread(runs, 'fk_depth', 1e3):.2f} µm and {spread(runs, 'fk_lateral', 1.0):.2f} µm.",
    ]
    return "\n".join([BEGIN, *rows, END])


def main(argv: list[str] | None = None) -> int:
    return docs_block.main(
        argv, __doc__.splitlines()[0], BLOCK, lambda: markdown(RESULTS.read_text()), "load-test table"
    )


if __name__ == "__main__":
    sys.exit(main())
