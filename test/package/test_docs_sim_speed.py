"""docs/development.md's simulation-speed section is bench/results/sim_speed.txt's, as
scripts/docs_sim_speed.py writes it (the numbers come from bench/sim_speed.py, not by hand)."""

from __future__ import annotations

from repo_scripts import load_script

script = load_script("docs_sim_speed")


def test_the_page_holds_the_saved_run():
    page = script.PAGE.read_text()
    assert script.BLOCK.of(page) == script.markdown(script.RESULTS.read_text())


def test_a_changed_run_changes_the_section():
    """The check can fail: another figure in the file is another section."""
    text = script.RESULTS.read_text()
    changed = text.replace("0.", "9.", 1)
    assert changed != text
    assert script.markdown(changed) != script.markdown(text)
