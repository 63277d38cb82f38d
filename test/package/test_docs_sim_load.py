"""docs/drive_from_another_node.md's load-test table is bench/results/sim_load.txt's, as
scripts/docs_sim_load.py writes it (the numbers come from the ROS tier's load test, not by hand)."""

from __future__ import annotations

from repo_scripts import load_script

script = load_script("docs_sim_load")


def test_the_page_holds_the_table_of_the_saved_run():
    page = script.PAGE.read_text()
    assert script.BLOCK.of(page) == script.markdown(script.RESULTS.read_text())


def test_a_changed_run_changes_the_table():
    """The check can fail: one digit of one run's depth changes the table and its spread."""
    text = script.RESULTS.read_text()
    lines = text.splitlines()
    run = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    fields = lines[run].split(", ")
    fields[4] = f"{float(fields[4]) + 0.000002:.6f}"  # the true depth, 2 nm deeper
    lines[run] = ", ".join(fields)
    changed = script.markdown("\n".join(lines) + "\n")
    assert changed != script.markdown(text)
    assert fields[4] in changed
