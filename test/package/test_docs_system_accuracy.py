"""docs/accuracy.md's system accuracy table is what scripts/system_accuracy.py computes now."""

from __future__ import annotations

from repo_scripts import load_script


def test_the_pages_table_matches_a_fresh_run():
    script = load_script("system_accuracy")
    text = script.PAGE.read_text()
    assert script.BEGIN in text and script.END in text
    assert script.page(text, script.table(script.budget())) == text, (
        "docs/accuracy.md's system table is stale: python scripts/system_accuracy.py --write"
    )
