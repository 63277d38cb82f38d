"""docs/canopen.md's drive-loop measurements, from bench/results/drive_loop.txt.

    python scripts/docs_drive_loop.py            # print the section's block
    python scripts/docs_drive_loop.py --write    # rewrite the page between the markers
    python scripts/docs_drive_loop.py --check    # exit 1 if the page's block is not the file's

bench/results/drive_loop.txt is what `python bench/drive_loop.py --seconds 60 --save` printed: a
title line, the master's CPU line, a markdown table (one row a run) and one line of conditions per
run. The page gets the file verbatim and, per run, the figures against issue 18's targets, so no
number on the page is typed by hand. test/package/test_docs_drive_loop.py runs the check.
"""

from __future__ import annotations

import sys
from pathlib import Path

import docs_block  # scripts/ (this script's folder, first on sys.path when it runs)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "canopen.md"
RESULTS = ROOT / "bench" / "results" / "drive_loop.txt"
BEGIN = "<!-- drive_loop results: scripts/docs_drive_loop.py --write -->"
END = "<!-- end of the drive_loop results -->"

BLOCK = docs_block.MarkedBlock(PAGE, BEGIN, END)
#: Issue 18's targets, each against the table's column: (label, column, index in it, bound, unit).
TARGETS = (
    ("SYNC period p99.9", "SYNC period p50 / p99 / p99.9 / max (ms)", 2, 3.0, "ms (period 2 ms + 1 ms)"),
    ("stops, whole run", "SYNC-loss or heartbeat stops (window / whole run)", 1, 0, ""),
    ("command -> RPDO p99", "command -> RPDO p50 / p99 (ms)", 1, 3.0, "ms"),
    ("CPU per SYNC cycle p50", "CPU per SYNC cycle p50 / p99 (us)", 0, 300.0, "us"),
)
FLOOR = "host floor: bare 1 ms loop lateness p99.9 / max (ms), wake-ups > 5 ms late"
#: The floor's wake-ups later than the drives' watchdog (a stall that stops the drives whatever the
#: cycle does); in the files the bench writes since issue 32, absent from older ones.
OVER_WATCHDOG = "host floor wake-ups later than the drives' watchdog (window / whole run)"


def runs(text: str) -> list[dict[str, str]]:
    """The table's rows as {column: cell}."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in row.strip("|").split("|")), strict=True))
        for row in rows[2:]
    ]


def value(run: dict[str, str], column: str, index: int) -> float:
    """The `index`th number of a 'a / b / c' cell."""
    return float(run[column].split(",")[0].split("/")[index])


def master_cpu(text: str) -> float:
    """us: the median of the file's master-alone line ('... min 218 us, median 225 us')."""
    line = next(line for line in text.splitlines() if line.startswith("master CPU per SYNC cycle"))
    return float(line.rsplit("median", 1)[1].split()[0])


def verdicts(text: str) -> list[str]:
    """Per run, each target met or not, and the host's floor beside it; then the master alone."""
    lines = []
    for run in runs(text):
        figures = []
        for label, column, index, bound, unit in TARGETS:
            measured = value(run, column, index)
            if measured != measured:  # NaN: nothing of it in the window
                figures.append(f"{label} not measured (no setpoint went out: the drives had stopped)")
                continue
            verdict = "met" if measured <= bound else "missed"
            figures.append(f"{label} {measured:g} {unit}".rstrip() + f" ({verdict}: <= {bound:g})")
        p999, worst, over = run[FLOOR].replace(",", " /").split(" / ")
        stalls = ""
        if OVER_WATCHDOG in run:
            window, whole = (cell.strip() for cell in run[OVER_WATCHDOG].split("/"))
            stalls = f", {window} later than the drives' watchdog ({whole} over the whole run)"
        lines.append(
            f"- {run['load beside the loop']}, buses read by the {run['buses read by']}"
            + (f", ROS side {run['ROS side']}" if "ROS side" in run else "")
            + ": "
            + "; ".join(figures)
            + f". The host in the window: a bare real-time loop late by {p999.strip()} ms at p99.9, "
            f"{worst.strip()} ms at most, {over.strip()} wake-ups over 5 ms late{stalls}; "
            f"steal {run['steal (ms)']} ms."
        )
    cpu = master_cpu(text)
    lines.append(
        f"- The master alone (first line, transport out of the way): {cpu:g} us per SYNC cycle "
        f"({'met' if cpu <= 300.0 else 'missed'}: <= 300)."
    )
    return lines


def block(text: str) -> str:
    """The file verbatim, then the verdicts, between the markers."""
    lines = [BEGIN, "```", text.rstrip("\n"), "```", "", "Against the targets:", "", *verdicts(text), END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return docs_block.main(
        argv, __doc__.splitlines()[0], BLOCK, lambda: block(RESULTS.read_text()), "drive-loop block"
    )


if __name__ == "__main__":
    sys.exit(main())
