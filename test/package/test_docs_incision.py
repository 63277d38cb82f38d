"""docs/simulation.md's incision table comes from runs: scripts/docs_incision.py writes it from
`quirobot simulate --json` (the shipped incision on both plants, the report's line) and
bench/results/accuracy.txt; these tests fail when a precision row no longer matches.

The full check simulates about a minute on 2 cores (marked slow). Timing rows (controller cost,
simulated/wall time) are the writing machine's and are not compared.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "simulation.md").read_text()


script = load_script("docs_incision")


def test_the_page_holds_the_generated_table_between_its_markers():
    documented = PAGE[PAGE.index(script.BEGIN) : PAGE.index(script.END)].splitlines()
    metrics = [line.split("|")[1].strip() for line in documented[3:]]
    assert documented[1:3] == script.HEADER
    assert metrics == [row[0] for row in script.ROWS]


def test_the_monte_carlo_row_is_the_saved_bench_result():
    (row,) = [line for line in PAGE.splitlines() if line.startswith("| Monte-Carlo p95")]
    assert f"| {script.micrometres(script.monte_carlo_p95())} |" in row


def test_the_check_finds_a_stale_row():
    """stale_rows can fail: a precision number changed in the text is found, a timing one not."""
    runs = {
        plant: {
            "entry_error": 1e-6,
            "lateral_deviation": 2e-6,
            "depth_overshoot": 3e-6,
            "final_depth_error": 4e-6,
            "peak_thrust": 50.0,
            "duration": 28.0,
            "line_deviation": 5e-6,
            "controller_p99": 1e-4,
            "real_time_factor": 1.0,
        }
        for plant in ("realistic", "ideal", "line")
    } | {"monte_carlo_p95": 1e-4, "load": 3.0}
    text = script.markdown_table(runs)
    assert script.stale_rows(text, runs) == []
    assert len(script.stale_rows(text.replace("3.00 µm", "0.68 µm"), runs)) == 1
    assert script.stale_rows(text.replace("100 µs (load 3)", "161 µs (load 1)"), runs) == []


@pytest.mark.slow
def test_the_page_table_is_what_the_runs_give():
    runs = {**script.measure(), "monte_carlo_p95": script.monte_carlo_p95()}
    stale = script.stale_rows(PAGE, runs)
    assert stale == [], "docs/simulation.md's incision table is stale: run scripts/docs_incision.py --write"


def test_a_row_matches_within_its_tolerance_and_words():
    """Another CPU's run (419 um documented, 417 um run: 0.5 %) matches; 2 % off or other words not."""
    row = "| portal drift: the scope axis' largest distance from the portal | 419 µm | 269 µm | ≤ 500 µm |"
    assert script.same_row(row, row.replace("419 µm", "417 µm"))
    assert not script.same_row(row, row.replace("419 µm", "428 µm"))
    assert not script.same_row(row, row.replace("portal drift", "portal shift"))
