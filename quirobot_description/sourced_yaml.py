"""YAML files whose numbers are {value, unit, source} leaves: read them and check every leaf.

The robot parameter file, the task files and the control configuration all store each
physical number as {value: <number or list>, unit: <SI unit>, source: <where it comes from>}.
This module is the one reader of that form: a malformed file or leaf raises the caller's error
type (a ValueError subclass) naming the file and the dotted key, never a half-read value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml


@dataclass(frozen=True)
class Quantity:
    """One physical number of a file, with its unit and source."""

    value: float | tuple[float, ...]
    unit: str
    source: str


def one_line(error: Exception) -> str:
    """An exception's message folded onto one line (YAML errors span several)."""
    return " ".join(str(error).split())


def read_yaml_mapping(path: Path, error: type[ValueError], what: str) -> dict[str, Any]:
    """Parse `path` as YAML holding a mapping; failures raise `error` naming `what` and the path."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML: {one_line(exc)}") from exc
    if not isinstance(raw, dict):
        raise error(f"{what} {path} must hold a mapping at the top level")
    return raw


def _is_finite_number(item: Any) -> bool:
    return not isinstance(item, bool) and isinstance(item, (int, float)) and math.isfinite(item)


class SourcedReader:
    """Reads checked leaves from a parsed YAML mapping by dotted key.

    Every leaf read is recorded in `quantities` (dotted key -> Quantity), so callers can trace a
    number back to its source. `root=` reads relative to a sub-mapping (e.g. one list item).
    """

    def __init__(self, raw: dict[str, Any], label: str, error: type[ValueError]) -> None:
        self.raw = raw
        self.label = label
        self.error = error
        self.quantities: dict[str, Quantity] = {}

    def fail(self, key: str, message: str) -> ValueError:
        return self.error(f"{self.label}: {key}: {message}")

    def node(self, key: str, root: Any = None) -> Any:
        node: Any = self.raw if root is None else root
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.fail(key, "missing")
            node = node[part]
        return node

    def text(self, key: str, choices: tuple[str, ...] | None = None) -> str:
        value = self.node(key)
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {value!r}")
        if choices is not None and value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def quantity(self, key: str, root: Any = None) -> Quantity:
        leaf = self.node(key, root)
        if not isinstance(leaf, dict) or not {"value", "unit", "source"} <= set(leaf):
            raise self.fail(key, "must be a mapping with value, unit and source")
        source = leaf["source"]
        if not isinstance(source, str) or not source.strip():
            raise self.fail(key, "has no source: say where the number comes from")
        unit = leaf["unit"]
        if not isinstance(unit, str) or not unit.strip():
            raise self.fail(key, f'needs a unit (an SI unit, "1" if dimensionless), got {unit!r}')
        raw_value = leaf["value"]
        values = raw_value if isinstance(raw_value, list) else [raw_value]
        for item in values:
            if not _is_finite_number(item):
                raise self.fail(key, f"value must be a finite number, got {item!r}")
        value = tuple(float(v) for v in values) if isinstance(raw_value, list) else float(raw_value)
        quantity = Quantity(value=value, unit=unit, source=source)
        if root is None:
            self.quantities[key] = quantity
        return quantity

    def number(
        self, key: str, *, positive: bool = False, non_negative: bool = False, root: Any = None
    ) -> float:
        value = self.quantity(key, root).value
        if isinstance(value, tuple):
            raise self.fail(key, f"must be a single number, got a list {list(value)}")
        if positive and value <= 0.0:
            raise self.fail(key, f"must be > 0, got {value}")
        if non_negative and value < 0.0:
            raise self.fail(key, f"must be >= 0, got {value}")
        return value

    def vector(self, key: str, length: int, *, positive: bool = False) -> np.ndarray:
        """(length,) array from a list leaf."""
        value = self.quantity(key).value
        if not isinstance(value, tuple) or len(value) != length:
            raise self.fail(key, f"must be a list of {length} finite numbers, got {value!r}")
        array = np.array(value)
        if positive and np.any(array <= 0.0):
            raise self.fail(key, f"every element must be > 0, got {list(value)}")
        return array

    def whole(self, key: str, lowest: int, highest: int) -> int:
        value = self.number(key)
        if value != int(value) or not lowest <= value <= highest:
            raise self.fail(key, f"must be a whole number in [{lowest}, {highest}], got {value}")
        return int(value)
