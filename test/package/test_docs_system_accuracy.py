"""docs/accuracy.md's system accuracy table is what scripts/system_accuracy.py computes now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("system_accuracy", ROOT / "scripts" / "system_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_table_matches_a_fresh_run():
    script = _script()
    text = script.PAGE.read_text()
    assert script.BEGIN in text and script.END in text
    assert script.page(text, script.table(script.budget())) == text, (
        "docs/accuracy.md's system table is stale: python scripts/system_accuracy.py --write"
    )
