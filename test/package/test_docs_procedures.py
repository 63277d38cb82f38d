"""docs/simulation.md's arthroscopy and pin tables come from runs: scripts/docs_procedures.py writes
them from `quirobot simulate --json`; these tests fail when a row no longer matches a run (the
full check runs the arthroscopy on both plants, minutes on a shared 2-core machine: slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "simulation.md").read_text()


script = load_script("docs_procedures")


def test_the_page_holds_each_generated_table_between_its_markers():
    for table in script.TABLES:
        documented = PAGE[PAGE.index(table.begin) : PAGE.index(table.end)].splitlines()
        assert documented[1 : 1 + len(table.header)] == list(table.header)
        metrics = [line.split("|")[1].strip() for line in documented[1 + len(table.header) :]]
        assert metrics == [row[0] for row in table.rows]


def _runs(rcm: float) -> dict:
    arthroscopy = {
        "rcm_error": rcm,
        "rcm_error_commanded": 0.0,
        "servo_commands": 400,
        "dead_man_holds": 200,
        "final_depth": 0.041,
    }
    pin = {
        "insertion_depth_error": 1e-5,
        "peak_insertion_torque": 5.7,
        "peak_drive_torque": 5.7,
        "torque_limit": 8.0,
        "duration": 16.0,
    }
    return {"realistic": arthroscopy, "ideal": arthroscopy, "pin": pin}


def test_the_check_finds_a_stale_row():
    text = script.replace_tables(PAGE, _runs(2.7e-4))
    assert script.stale_rows(text, _runs(2.7e-4)) == []
    assert len(script.stale_rows(text, _runs(3.1e-4))) == 1


@pytest.mark.slow
def test_the_page_tables_are_what_the_runs_give():
    stale = script.stale_rows(PAGE, script.measure())
    assert stale == [], (
        "docs/simulation.md's procedure tables are stale: run `python scripts/docs_procedures.py --write`"
    )
