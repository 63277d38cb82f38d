"""One declaration per fact, derived (issue 20 item 1): the file schemas, the shipped files and the
loaders that fill RobotParameters, ControlConfig and the tasks agree.

- every key of every shipped {value, unit, source} file matches exactly one schema row (no row
  shadowed by another, no key two rows describe);
- every schema row matches a key of a shipped file (no row left over from a removed key);
- every number of the shipped files is read by a loader (SourcedReader.quantity, recorded while
  load_parameters, control_configuration and load_task run): a number the dataclasses do not
  take is a second, dead home for a fact. Text keys no loader reads are listed with who reads them.
"""

from __future__ import annotations

import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import TASK_NAMES, load_task
from quirobot_description.file_schema import CONTROL_FILE, PARAMETER_FILE, TASK_FILE
from quirobot_description.parameters import load_parameters
from quirobot_description.sourced_yaml import SourcedReader, _leaf_keys

SCHEMAS = {"quirobot.yaml": PARAMETER_FILE, "control.yaml": CONTROL_FILE}
SCHEMAS.update({f"{name}.yaml": TASK_FILE for name in TASK_NAMES})

#: Text keys the Python loaders do not read, and who does.
#: Schema rows of optional keys no shipped file uses (the loaders' tests give them).
OPTIONAL = {
    "no_go_zones.*.rpy": "a rotated box zone (test/control/axes/test_virtual_fixtures.py)",
    "no_go_zones.*.start": "a capsule zone (test/control/axes/test_virtual_fixtures.py)",
    "no_go_zones.*.end": "a capsule zone",
    "no_go_zones.*.radius": "a capsule zone",
}
READ_ELSEWHERE = {
    "schema_version": "SourcedReader's schema check",
    "task": "load_task's choice of the task kind",
    "colour": "the xacro (URDF materials)",
    "axis": "the xacro (the wrist pitch link's cylinder axis)",
    "description": "the reader of the file (documentation of the motor)",
    "order": "homing.order: the homing sequence, read as a list by hardware.homing",
    "inertia_formula": "report_model: documentation of the report's formula",
    "name": "bone layers and no-go zones: read as part of their list item",
    "source": "drive_mode.*.source: the source of a text choice",
    "gravity": "feedforward.gravity: a flag read as a node of the control file",
    "inverse_dynamics": "feedforward.inverse_dynamics: a flag read as a node of the control file",
}


def _matching_rows(schema, key: str) -> list[str]:
    parts = key.split(".")
    return [
        pattern
        for pattern in schema.keys
        if len(pattern.split(".")) == len(parts)
        and all(s in ("*", p) for s, p in zip(pattern.split("."), parts, strict=True))
    ]


@pytest.fixture(scope="module")
def loaded():
    """(reader, dotted keys read with quantity() or text()) of every shipped file, loaded."""
    recorded: dict[int, tuple[SourcedReader, set[str]]] = {}
    quantity, text = SourcedReader.quantity, SourcedReader.text

    def record(reader, key, root):
        keys = recorded.setdefault(id(reader), (reader, set()))[1]
        if root is None:
            keys.add(key)
        else:  # relative to a list item: the item's dotted prefix
            keys.add(f"{_prefixes(reader)[id(root)]}.{key}")

    def recording_quantity(self, key, root=None):
        record(self, key, root)
        return quantity(self, key, root)

    def recording_text(self, key, choices=None):
        record(self, key, None)
        return text(self, key, choices)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SourcedReader, "quantity", recording_quantity)
        patch.setattr(SourcedReader, "text", recording_text)
        params = load_parameters()
        control_configuration(params)
        for name in TASK_NAMES:
            load_task(name)
    files = {reader.label.split("/")[-1]: (reader, keys) for reader, keys in recorded.values()}
    assert set(files) >= set(SCHEMAS), f"not every shipped file was read: {sorted(files)}"
    return files


def _prefixes(reader, cache: dict = {}) -> dict[int, str]:  # noqa: B006  (a cache per reader)
    """id(sub-mapping or list item) -> its dotted key, for every container of the reader's file."""
    if id(reader) not in cache:
        found, stack = {}, [(reader.raw, "")]
        while stack:
            node, prefix = stack.pop()
            found[id(node)] = prefix
            items = (
                node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            )
            stack.extend((v, f"{prefix}.{k}" if prefix else str(k)) for k, v in items)
        cache[id(reader)] = found
    return cache[id(reader)]


@pytest.mark.parametrize("file", SCHEMAS)
def test_every_key_of_a_shipped_file_has_exactly_one_schema_row(file, loaded):
    reader, _ = loaded[file]
    schema = SCHEMAS[file]
    for key in _leaf_keys(reader.raw):
        rows = _matching_rows(schema, key)
        assert len(rows) == 1, f"{file}: {key} matches {rows or 'no row'} of the {schema.kind} schema"


@pytest.mark.parametrize("schema", [PARAMETER_FILE, CONTROL_FILE, TASK_FILE], ids=lambda s: s.kind)
def test_every_schema_row_describes_a_key_of_a_shipped_file(schema, loaded):
    keys = [
        k
        for file, (reader, _) in loaded.items()
        if SCHEMAS.get(file) is schema
        for k in _leaf_keys(reader.raw)
    ]
    used = {row for key in keys for row in _matching_rows(schema, key)}
    unused = [row for row in schema.keys if row not in used and row not in OPTIONAL]
    assert not unused, f"{schema.kind} schema rows no shipped file uses: {unused}"


@pytest.mark.parametrize("file", SCHEMAS)
def test_every_number_is_read_by_a_loader_and_every_text_has_a_reader(file, loaded):
    reader, read = loaded[file]
    schema = SCHEMAS[file]
    for key in _leaf_keys(reader.raw):
        if key in read:
            continue
        assert schema.expect(key).unit is None, f"{file}: the number {key} is read by no loader"
        assert key.split(".")[-1] in READ_ELSEWHERE, f"{file}: the text {key} is read by nobody"
