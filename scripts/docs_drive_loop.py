"""docs/canopen.md's drive-loop measurements, from bench/results/drive_loop.txt.

    python scripts/docs_drive_loop.py            # print the section's block
    python scripts/docs_drive_loop.py --write    # rewrite the page between the markers
    python scripts/docs_drive_loop.py --check    # exit 1 if the page's block is not the file's

bench/results/drive_loop.txt is what `python bench/drive_loop.py --seconds 60 --save` printed: a
title line, the master's CPU line, a markdown table (one row a run) and one line of conditions per
run. The page gets the file verbatim and, per run, the figures against issue 32's targets (each
against the host's floor measured in the same run), so no number on the page is typed by hand.
test/package/test_docs_drive_loop.py runs the check.
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
SYNC = "SYNC period p50 / p99 / p99.9 / max (ms)"
LATENESS = "cycle lateness p99.9 / max (ms)"
STOPS = "stops in the whole run / of them not explained by a host stall > watchdog"
COMMAND = "command -> RPDO p50 / p99 (ms), samples, drives stopped in the window (s)"
CYCLE_CPU = "CPU per SYNC cycle p50 / p99 (us)"
FLOOR = "host floor: bare 1 ms loop lateness p99 / p99.9 / max (ms), wake-ups > 5 ms late"
OVER_WATCHDOG = "host floor wake-ups later than the drives' watchdog (window / whole run)"
#: Issue 32's bounds: the cycle's lateness p99.9 within this of the floor's (ms), and command ->
#: RPDO p99 within this plus the floor's p99 (ms); the master alone per SYNC cycle (us).
LATENESS_OVER_FLOOR = 1.0
COMMAND_OVER_FLOOR = 3.0
MASTER_CPU_LIMIT = 300.0


def runs(text: str) -> list[dict[str, str]]:
    """The table's rows as {column: cell}."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in row.strip("|").split("|")), strict=True))
        for row in rows[2:]
    ]


def value(run: dict[str, str], column: str, index: int) -> float:
    """The `index`th number of a 'a / b / c' cell (a ', n' after it left out)."""
    return float(run[column].split(",")[0].split("/")[index])


def master_cpu(text: str) -> float:
    """us: the median of the file's master-alone line ('... min 218 us, median 225 us')."""
    line = next(line for line in text.splitlines() if line.startswith("master CPU per SYNC cycle"))
    return float(line.rsplit("median", 1)[1].split()[0])


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


def verdicts(text: str) -> list[str]:
    """Per run, issue 32's targets against the host's floor measured in the same run; then the
    master alone."""
    lines = []
    for run in runs(text):
        floor_p99, floor_p999 = value(run, FLOOR, 0), value(run, FLOOR, 1)
        lateness = value(run, LATENESS, 0)
        stops, unexplained = (int(cell) for cell in run[STOPS].split("/"))
        figures = [
            f"cycle lateness p99.9 {lateness:g} ms against the floor's {floor_p999:g} ms "
            f"({_met(lateness <= floor_p999 + LATENESS_OVER_FLOOR)}: within {LATENESS_OVER_FLOOR:g} ms)",
            f"{stops} SYNC-loss or heartbeat stop(s) in the whole run, {unexplained} not explained by a "
            f"host stall longer than the drives' watchdog ({_met(unexplained == 0)}: none)",
        ]
        command = value(run, COMMAND, 1)
        bound = COMMAND_OVER_FLOOR + floor_p99
        if command != command:  # NaN: no setpoint went out
            figures.append("command -> RPDO not measured (no setpoint went out: the drives had stopped)")
        else:
            measured = f"command -> RPDO p99 {command:g} ms ({_met(command <= bound)}: <= {bound:g})"
            parts = [part.strip() for part in run[COMMAND].split(",")[1:]]
            if len(parts) == 2:  # the samples, and the time the drives were stopped in the window
                measured += f" over {parts[0]} commands, the drives stopped {parts[1]} s of the window"
            figures.append(measured)
        window, whole = (cell.strip() for cell in run[OVER_WATCHDOG].split("/"))
        lines.append(
            f"- {run['load beside the loop']}, ROS side {run['ROS side']}: "
            + "; ".join(figures)
            + f". SYNC period p99.9 {value(run, SYNC, 2):g} ms; the cycle's CPU per SYNC cycle, udp "
            f"sends included, {value(run, CYCLE_CPU, 0):g} us at p50. The host: a bare real-time loop "
            f"late by {floor_p99:g} ms at p99 and {floor_p999:g} ms at p99.9 in the window, {window} "
            f"wake-ups later than the drives' watchdog in it ({whole} over the whole run); steal "
            f"{run['steal (ms)']} ms."
        )
    cpu = master_cpu(text)
    lines.append(
        f"- The master alone (first line, transport out of the way): {cpu:g} us per SYNC cycle "
        f"({_met(cpu <= MASTER_CPU_LIMIT)}: <= {MASTER_CPU_LIMIT:g})."
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
