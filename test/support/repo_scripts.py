"""`load_script(name)`: one of the repository's scripts/ (not a package) as a module, for the
tests that check the docs and README tables those scripts write."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/`name`.py, executed as a module named `name`; scripts/ on sys.path, as when the
    script runs (its `import docs_block`)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.append(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
