"""YAML files whose numbers are {value, unit, source} leaves: read them and check every leaf.

The robot parameter file, the task files and the control configuration all store each
physical number as {value: <number or list>, unit: <SI unit>, source: <where it comes from>}.
This module is the one reader of that form: a malformed file or leaf raises the caller's error
type (a ValueError subclass) naming the file and the dotted key, never a half-read value.

With a `file_schema.FileSchema` (every shipped kind of file has one) the reader also refuses a
missing or other schema_version and unknown keys, checks each number's unit (converted to the
expected SI unit where the schema allows, e.g. mm -> m, else refused by name) and its plausible
range. The file itself must be a regular file of at most MAX_FILE_BYTES of UTF-8 YAML, nested at
most MAX_DEPTH deep, without duplicate keys: anything else is refused in one line, never a
crash or a hang (a FIFO or /dev/zero would block or never end).
"""

from __future__ import annotations

import math
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from quirobot_description.file_schema import FileSchema
from quirobot_description.shown_numbers import compared, shown

#: bytes: the largest file read (the parameter file is about 40 kB).
MAX_FILE_BYTES = 1_000_000
#: nesting depth of mappings and lists (the parameter file needs 4).
MAX_DEPTH = 20


@dataclass(frozen=True)
class Quantity:
    """One physical number of a file, with its unit and source."""

    value: float | tuple[float, ...]
    unit: str
    source: str


def one_line(error: Exception) -> str:
    """An exception's message folded onto one line (YAML errors span several)."""
    return " ".join(str(error).split())


#: libyaml's parser where PyYAML was built with it (PyPI's wheels are), the pure-Python one else:
#: the same nodes and values, about six times faster (a CLI run reads several files).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeys:
    """A loader mixin that refuses a key given twice in one mapping (plain YAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _UniqueKeyLoader(_UniqueKeys, _SAFE_LOADER):
    """SafeLoader that refuses a key given twice in one mapping."""


class _Yaml12FloatLoader(_UniqueKeyLoader):
    """_UniqueKeyLoader that also reads YAML 1.2's floats which YAML 1.1 (PyYAML) takes as text: an
    exponent without a dot or without a sign (2e-2, 1e3, 1.5e3). YAML 1.1's own pattern, tried
    first, keeps every other float and integer."""


_Yaml12FloatLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _depth(node: yaml.Node, limit: int) -> int:
    """Nesting depth of a composed YAML node, stopping (iteratively) once above `limit`."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        if isinstance(item, yaml.MappingNode):
            stack.extend((child, level + 1) for pair in item.value for child in pair)
        elif isinstance(item, yaml.SequenceNode):
            stack.extend((child, level + 1) for child in item.value)
    return deepest


def read_yaml_mapping(
    path: Path, error: type[ValueError], what: str, *, as_xacro: bool = False
) -> dict[str, Any]:
    """Parse `path` as YAML holding a mapping; failures raise `error` naming `what` and the path.

    Numbers such as 2e-2 and 1e3 are floats (YAML 1.2), unless `as_xacro`: a file xacro also reads
    (the parameter file, a calibration file) is read as xacro reads it, YAML 1.1, where they are
    text, so that both see the same values (SourcedReader then says how to write such a number).
    """
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{what} {path} is not a regular file")
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or one_line(exc)}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path} is not UTF-8 text: byte {exc.start} is 0x{data[exc.start]:02X}") from exc
    try:
        loader = (_UniqueKeyLoader if as_xacro else _Yaml12FloatLoader)(text)
        try:
            node = loader.get_single_node()
            if node is not None and _depth(node, MAX_DEPTH) > MAX_DEPTH:
                raise error(f"{what} {path} is nested deeper than {MAX_DEPTH} levels")
            raw = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit (1000 levels)
            raise error(f"{what} {path} is nested deeper than {MAX_DEPTH} levels") from exc
        raise error(f"{what} {path} is not valid YAML: {one_line(exc)}") from exc
    except RecursionError as exc:  # deeper than the pure-Python composer's recursion can go
        raise error(f"{what} {path} is nested deeper than {MAX_DEPTH} levels") from exc
    except (ValueError, OverflowError) as exc:  # e.g. an integer of 5000 digits
        if isinstance(exc, error):
            raise
        raise error(f"{what} {path} cannot be read: {one_line(exc)}") from exc
    if not isinstance(raw, dict):
        raise error(f"{what} {path} must hold a mapping at the top level")
    return raw


#: Units that convert to an SI unit: name -> (SI base units with exponents, factor to SI).
_UNIT_FACTORS: dict[str, tuple[dict[str, int], float]] = {
    "mm": ({"m": 1}, 1e-3),
    "cm": ({"m": 1}, 1e-2),
    "um": ({"m": 1}, 1e-6),
    "km": ({"m": 1}, 1e3),
    "deg": ({"rad": 1}, math.pi / 180.0),
    "ms": ({"s": 1}, 1e-3),
    "us": ({"s": 1}, 1e-6),
    "min": ({"s": 1}, 60.0),
    "g": ({"kg": 1}, 1e-3),
    "kHz": ({"Hz": 1}, 1e3),
    "MHz": ({"Hz": 1}, 1e6),
    "kN": ({"N": 1}, 1e3),
    "mN": ({"N": 1}, 1e-3),
    "mA": ({"A": 1}, 1e-3),
    "mH": ({"H": 1}, 1e-3),
    "mohm": ({"ohm": 1}, 1e-3),
    "kbit": ({"bit": 1}, 1e3),
    "Mbit": ({"bit": 1}, 1e6),
    "rpm": ({"rad": 1, "s": -1}, 2.0 * math.pi / 60.0),
}
_UNIT_TOKEN = re.compile(r"^([A-Za-z]+)(?:\^(-?\d+))?$")


def parse_unit(unit: str) -> tuple[dict[str, int], float] | None:
    """'mm/s^2' -> ({'m': 1, 's': -2}, 1e-3): base units with exponents and the factor to them.

    Products with '*', one '/' (the rest is the denominator, parentheses allowed), '^n'
    exponents, '1' for dimensionless; None if the text is not of that form.
    """
    numerator, _, denominator = unit.replace(" ", "").partition("/")
    dims: dict[str, int] = {}
    factor = 1.0
    for text, sign in ((numerator, 1), (denominator.strip("()"), -1)):
        for token in text.split("*") if text else []:
            if token == "1":
                continue
            match = _UNIT_TOKEN.match(token)
            if match is None:
                return None
            name, power = match.group(1), int(match.group(2) or 1) * sign
            base, scale = _UNIT_FACTORS.get(name, ({name: 1}, 1.0))
            factor *= scale**power
            for base_name, exponent in base.items():
                dims[base_name] = dims.get(base_name, 0) + exponent * power
    return {k: v for k, v in dims.items() if v != 0}, factor


def unit_factor(given: str, expected: str) -> float | None:
    """Factor turning a value in unit `given` into unit `expected`; None if they differ in kind."""
    if given == expected:
        return 1.0
    parsed_given, parsed_expected = parse_unit(given), parse_unit(expected)
    if parsed_given is None or parsed_expected is None or parsed_given[0] != parsed_expected[0]:
        return None
    return parsed_given[1] / parsed_expected[1]


def _leaf_keys(node: Any, prefix: str = "", leaf_extras: tuple[str, ...] | None = None) -> list[str]:
    """Dotted keys of every leaf of a parsed file ({value, unit, source} mappings are leaves);
    with `leaf_extras` also the dotted keys of any other key inside a leaf (unknown ones)."""
    if isinstance(node, dict) and not {"value", "unit", "source"} <= set(node):
        return [
            key
            for k, v in node.items()
            for key in _leaf_keys(v, f"{prefix}.{k}" if prefix else str(k), leaf_extras)
        ]
    if isinstance(node, list) and node and all(isinstance(item, dict) for item in node):
        return [key for i, item in enumerate(node) for key in _leaf_keys(item, f"{prefix}.{i}", leaf_extras)]
    if isinstance(node, dict) and leaf_extras is not None:
        extras = [k for k in node if k not in ("value", "unit", "source", *leaf_extras)]
        return [prefix, *(f"{prefix}.{k}" for k in extras)]
    return [prefix]


def _shown(key: str) -> str:
    """A dotted key as a message shows it: list indices in brackets (bone.layers[1].thickness)."""
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", key)


def _is_finite_number(item: Any) -> bool:
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        return False
    try:
        return math.isfinite(float(item))
    except OverflowError:  # an integer beyond float range
        return False


def _how_to_write(item: Any) -> str:
    """For text YAML 1.1 did not take as a number (2e-2, in a file xacro reads): how to write it."""
    try:
        number = float(item) if isinstance(item, str) else math.nan
    except ValueError:
        return ""
    if not math.isfinite(number):
        return ""
    return (
        f" (text in YAML 1.1, as xacro reads this file: write {number!r} or with a dot and a signed "
        "exponent, 2.0e-2)"
    )


class SourcedReader:
    """Reads checked leaves from a parsed YAML mapping by dotted key.

    Every leaf read is recorded in `quantities` (dotted key -> Quantity), so callers can trace a
    number back to its source. `root=` reads relative to a sub-mapping (e.g. one list item).
    """

    def __init__(
        self, raw: dict[str, Any], label: str, error: type[ValueError], schema: FileSchema | None = None
    ) -> None:
        self.raw = raw
        self.label = label
        self.error = error
        self.schema = schema
        self.quantities: dict[str, Quantity] = {}
        if schema is not None:
            self._check_schema(schema)

    def _check_schema(self, schema: FileSchema) -> None:
        """schema_version present and known; every key of the file is one of the schema's."""
        version = self.raw.get("schema_version")
        if version is None:
            raise self.fail(
                "schema_version", f"missing (this {schema.kind} format is schema_version: {schema.version})"
            )
        if isinstance(version, bool) or version != schema.version:
            raise self.fail(
                "schema_version",
                f"{version!r} is not known (this reader reads schema_version: {schema.version})",
            )
        for key, most in schema.max_items.items():
            node: Any = self.raw
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, list) and len(node) > most:
                raise self.fail(key, f"has {len(node)} items, at most {most}")
        takes, hint = None, ""
        if schema.variant_key is not None:
            variant = self.raw.get(schema.variant_key)
            takes = schema.variants.get(variant) if isinstance(variant, str) else None
            if takes is not None:
                hint = f" ({schema.variant_key}: {variant} takes {', '.join(takes)})"
        unknown: list[str] = []
        for key in _leaf_keys(self.raw, leaf_extras=schema.leaf_extras):
            top = key.split(".")[0]
            if takes is not None and top not in takes:
                key = top  # a key of another variant: named once, not leaf by leaf
            if (schema.expect(key) is None or key == top and takes is not None and top not in takes) and (
                key not in unknown
            ):
                unknown.append(key)
        if unknown:
            names = [_shown(key) for key in unknown]
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            raise self.error(f"{self.label}: unknown key{'s' if len(names) > 1 else ''} {shown}{hint}")
        if schema.max_text is not None:
            for key in _leaf_keys(self.raw, leaf_extras=schema.leaf_extras):
                value = self.node(key)
                if isinstance(value, str) and (len(value) > schema.max_text or not value.isprintable()):
                    raise self.fail(
                        key,
                        f"must be one line of at most {schema.max_text} printable characters, "
                        f"got {len(value)} characters"
                        + ("" if value.isprintable() else " with a control character"),
                    )

    def fail(self, key: str, message: str) -> ValueError:
        return self.error(f"{self.label}: {key}: {message}")

    def node(self, key: str, root: Any = None) -> Any:
        """The value at dotted `key` (a digit segment indexes a list)."""
        node: Any = self.raw if root is None else root
        for part in key.split("."):
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise self.fail(key, "missing")
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
                raise self.fail(key, f"value must be a finite number, got {item!r}{_how_to_write(item)}")
        numbers = [float(v) for v in values]
        if self.schema is not None and root is None:
            numbers, unit = self._checked(key, numbers, unit)
        value = tuple(numbers) if isinstance(raw_value, list) else numbers[0]
        quantity = Quantity(value=value, unit=unit, source=source)
        if root is None:
            self.quantities[key] = quantity
        return quantity

    def _checked(self, key: str, numbers: list[float], unit: str) -> tuple[list[float], str]:
        """The numbers in the schema's unit (converted if allowed), each within the key's range."""
        expect = self.schema.expect(key)
        if expect is None or expect.unit is None:
            raise self.fail(key, "is not a number in this file's schema")
        expected_units = [u.strip() for u in expect.unit.split(",")]
        given_units = [u.strip() for u in unit.split(",")]
        if len(given_units) == 1 and len(expected_units) > 1 and given_units[0] == expect.unit:
            given_units = expected_units
        if len(given_units) != len(expected_units):
            raise self.fail(key, f"unit {unit!r} is not the expected {expect.unit!r}")
        per_item = expected_units if len(expected_units) > 1 else expected_units * len(numbers)
        given_items = given_units if len(given_units) > 1 else given_units * len(numbers)
        if len(per_item) != len(numbers):
            raise self.fail(key, f"has {len(numbers)} values for the units {expect.unit!r}")
        converted = []
        for number, given, wanted in zip(numbers, given_items, per_item, strict=True):
            factor = unit_factor(given, wanted)
            if factor is None:
                raise self.fail(key, f"unit {unit!r} is not the expected {expect.unit!r}")
            if factor != 1.0 and not self.schema.convert_units:
                raise self.fail(
                    key,
                    f"unit {unit!r} is not the expected {expect.unit!r}: give the value in {expect.unit} "
                    f"(this {self.schema.kind} is also read raw by xacro, so it is not converted)",
                )
            converted.append(number * factor)
        return converted, expect.unit

    def _check_range(self, key: str, numbers: list[float]) -> None:
        """Each number within the schema's plausible range for `key` (after the callers' sign checks)."""
        expect = self.schema.expect(key) if self.schema is not None else None
        if expect is None:
            return
        unit = "" if expect.unit == "1" else f" {expect.unit}"
        for number in numbers:
            if not expect.low <= number <= expect.high:
                low, high = shown(expect.low), shown(expect.high)
                if number > expect.high:
                    given, high = compared(number, expect.high)
                else:
                    given, low = compared(number, expect.low)
                raise self.fail(key, f"{given}{unit} is outside the plausible range [{low}, {high}]{unit}")

    def number(
        self,
        key: str,
        *,
        positive: bool = False,
        non_negative: bool = False,
        root: Any = None,
        check_range: bool = True,
    ) -> float:
        value = self.quantity(key, root).value
        if isinstance(value, tuple):
            raise self.fail(key, f"must be a single number, got a list {list(value)}")
        if positive and value <= 0.0:
            raise self.fail(key, f"must be > 0, got {value}")
        if non_negative and value < 0.0:
            raise self.fail(key, f"must be >= 0, got {value}")
        if root is None and check_range:
            self._check_range(key, [value])
        return value

    def vector(self, key: str, length: int, *, positive: bool = False) -> np.ndarray:
        """(length,) array from a list leaf."""
        value = self.quantity(key).value
        if not isinstance(value, tuple) or len(value) != length:
            raise self.fail(key, f"must be a list of {length} finite numbers, got {value!r}")
        array = np.array(value)
        if positive and np.any(array <= 0.0):
            raise self.fail(key, f"every element must be > 0, got {list(value)}")
        self._check_range(key, list(value))
        return array

    def whole(self, key: str, lowest: int, highest: int) -> int:
        value = self.number(key, check_range=False)
        if value != int(value) or not lowest <= value <= highest:
            raise self.fail(key, f"must be a whole number in [{lowest}, {highest}], got {value}")
        self._check_range(key, [value])
        return int(value)
