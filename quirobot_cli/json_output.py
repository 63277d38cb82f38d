"""Strict JSON on stdout: never NaN or Infinity (which JSON does not have)."""

from __future__ import annotations

import json
import math
from typing import Any


def check_finite(values: Any, what: str) -> None:
    """ValueError naming `what` if any number in the (nested) `values` is NaN or infinite."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{what} is not finite ({item}): the input overflows double precision")


def print_json(document: Any, what: str, **options: Any) -> None:
    """Print `document` as strict JSON; a non-finite number is a ValueError naming `what`."""
    check_finite(document, what)
    print(json.dumps(document, allow_nan=False, **options))
