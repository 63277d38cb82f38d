"""Hostile parameter, control and task files (issue 11, items 8 and 9): units checked, keys and
versions refused, plausible ranges, and loaders that never crash or hang.

Each case runs the real loader (and the real CLI in-process) on a file written here; the expected
conversion factors are computed independently of the loader's unit table (1 mm = 0.001 m).
"""

from __future__ import annotations

import copy
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_control.hardware.control_config import (
    CONTROL_CONFIG_FILE,
    ControlConfigError,
    load_control_config,
)
from quirobot_control.planning.tasks import TaskError, load_task, task_file
from quirobot_description.data_files import find_data_file
from quirobot_description.file_schema import CONTROL_FILE, PARAMETER_FILE, TASK_FILE
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, axes_for, load_parameters
from quirobot_description.sourced_yaml import SourcedReader, _leaf_keys, parse_unit

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")


def params_raw() -> dict:
    return yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())


def task_raw(name: str = "incision") -> dict:
    return yaml.safe_load(task_file(name).read_text())


def write(tmp_path: Path, data: dict, name: str = "file.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


CURRENTS = dict.fromkeys(DRILL_AXES, 1.0)


# --- item 8: units are checked ---------------------------------------------------------------------
def test_a_task_value_in_millimetres_is_converted_to_metres(tmp_path):
    raw = task_raw()
    metres = raw["depth"]["value"]
    raw["depth"] = {"value": metres * 1000.0, "unit": "mm", "source": "test: the depth in mm"}
    raw["feed_rate"]["value"] *= 60_000.0  # m/s -> mm/min
    raw["feed_rate"]["unit"] = "mm/min"
    task = load_task(write(tmp_path, raw))
    reference = load_task("incision")
    assert task.depth == pytest.approx(metres, rel=1e-12)
    assert task.feed_rate == pytest.approx(reference.feed_rate, rel=1e-12)


def test_a_task_angle_in_degrees_in_a_mixed_pose_is_converted(tmp_path):
    raw = task_raw()
    park = raw["park"]["value"]
    raw["park"] = {
        "value": [park[0] * 1000.0, *park[1:3], math.degrees(park[3]), *park[4:]],
        "unit": "mm, m, m, deg, rad, m",
        "source": "test",
    }
    np.testing.assert_allclose(load_task(write(tmp_path, raw)).park, park, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("key", "unit"),
    [("depth", "s"), ("feed_rate", "m"), ("dwell", "m/s"), ("depth", "furlong"), ("park", "m")],
)
def test_a_task_value_in_a_unit_of_another_kind_is_refused_by_name(tmp_path, key, unit):
    raw = task_raw()
    raw[key]["unit"] = unit
    with pytest.raises(TaskError, match=rf"{key}: unit '{unit}' is not the expected"):
        load_task(write(tmp_path, raw))


def test_the_parameter_file_refuses_2000_mm_for_a_limit_rather_than_reading_2000_m(tmp_path):
    raw = params_raw()
    raw["joints"]["gantry_x"]["upper"] = {"value": 2000.0, "unit": "mm", "source": "test"}
    with pytest.raises(ParameterError, match=r"joints.gantry_x.upper: unit 'mm' is not the expected 'm'"):
        load_parameters(write(tmp_path, raw))


def every_number_key(raw: dict, schema) -> list[str]:
    return [k for k in _leaf_keys(raw) if schema.expect(k) is not None and schema.expect(k).unit is not None]


def test_every_number_of_the_parameter_file_with_a_wrong_unit_is_refused(tmp_path):
    """All of them (the issue found 322 of 322 accepted): 's' for lengths, 'm' for the rest."""
    raw = params_raw()
    keys = every_number_key(raw, PARAMETER_FILE)
    assert len(keys) > 150
    accepted = []
    for key in keys:
        broken = copy.deepcopy(raw)
        node = broken
        for part in key.split("."):
            node = node[part] if isinstance(node, dict) else node[int(part)]
        node["unit"] = "kg*s" if node["unit"] != "kg*s" else "m"
        try:  # the loader reads every key through quantity() (test_parameters checks it records all)
            SourcedReader(broken, "wrong-unit.yaml", ParameterError, PARAMETER_FILE).quantity(key)
        except ParameterError as error:
            assert key in str(error), (key, str(error))
        else:
            accepted.append(key)
    assert accepted == []


@pytest.mark.parametrize(
    ("section", "key", "value", "name"),
    [
        ("drive", "brake_engage_time", 10.0, "drive.brake_engage_time"),
        ("drive", "control_rate", 10.0, "drive.control_rate"),
        ("links", "z_ram", None, "links.z_ram.mass"),
    ],
)
def test_implausible_parameter_values_are_refused_naming_the_key(tmp_path, section, key, value, name):
    raw = params_raw()
    if value is None:  # a mass times 1e9
        raw[section][key]["mass"]["value"] *= 1e9
    else:
        raw[section][key]["value"] = value
    with pytest.raises(ParameterError, match=rf"{name}: .* outside the plausible range"):
        load_parameters(write(tmp_path, raw))


def test_the_control_configuration_holds_no_control_rate(tmp_path):
    """One control rate (issue 35): the parameter file's drive.control_rate; control.yaml's own
    `rate` (1000 Hz, the same fact a second time) is refused as unknown, the loop runs at the
    parameter file's (a 10 Hz one is refused there: test_implausible_parameter_values_...)."""
    raw = yaml.safe_load(find_data_file(CONTROL_CONFIG_FILE).read_text())
    assert load_control_config(write(tmp_path, raw), max_currents=CURRENTS).rate == (
        load_parameters().drive.control_rate
    )
    raw["rate"] = {"value": 1000.0, "unit": "Hz", "source": "a second declaration"}
    with pytest.raises(ControlConfigError, match=r"unknown key rate"):
        load_control_config(write(tmp_path, raw), max_currents=CURRENTS)


def test_duplicate_keys_are_refused(tmp_path):
    text = DEFAULT_PARAMETER_FILE.read_text()
    text = text.replace("schema_version: 1\n", "schema_version: 1\ngravity: 1\n", 1)
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    with pytest.raises(ParameterError, match="duplicate key 'gravity'"):
        load_parameters(path)


@pytest.mark.parametrize(
    ("version", "message"), [(None, "schema_version: missing"), (2, "schema_version: 2 is not known")]
)
def test_a_missing_or_unknown_schema_version_is_refused(tmp_path, version, message):
    for loader, raw, error in (
        (load_parameters, params_raw(), ParameterError),
        (load_task, task_raw(), TaskError),
        (
            lambda p: load_control_config(p, max_currents=CURRENTS),
            yaml.safe_load(find_data_file(CONTROL_CONFIG_FILE).read_text()),
            ControlConfigError,
        ),
    ):
        raw.pop("schema_version")
        if version is not None:
            raw["schema_version"] = version
        with pytest.raises(error, match=message):
            loader(write(tmp_path, raw))


def test_unknown_keys_are_refused_by_name(tmp_path):
    raw = params_raw()
    raw["joints"]["gantry_x"]["veloctiy"] = {"value": 1.0, "unit": "m/s", "source": "typo"}
    with pytest.raises(ParameterError, match="unknown key joints.gantry_x.veloctiy"):
        load_parameters(write(tmp_path, raw))
    raw = yaml.safe_load(find_data_file(CONTROL_CONFIG_FILE).read_text())
    raw["safety"]["watchdog_timout"] = raw["safety"]["watchdog_timeout"]
    with pytest.raises(ControlConfigError, match="unknown key safety.watchdog_timout"):
        load_control_config(write(tmp_path, raw), max_currents=CURRENTS)


def test_the_shipped_files_match_their_schemas():
    """Every key of the shipped files has a schema entry (else they would not load) and no entry
    is left over (a stale entry would hide a missing key)."""
    for schema, path in (
        (PARAMETER_FILE, DEFAULT_PARAMETER_FILE),
        (CONTROL_FILE, find_data_file(CONTROL_CONFIG_FILE)),
        (TASK_FILE, task_file("incision")),
    ):
        keys = _leaf_keys(yaml.safe_load(path.read_text()))
        assert all(schema.expect(k) is not None for k in keys), path
    load_parameters()
    load_task("incision")
    load_task("line")


def test_units_parse_into_base_units_and_factors():
    assert parse_unit("mm/s^2") == ({"m": 1, "s": -2}, pytest.approx(1e-3))
    assert parse_unit("A/(m*s)") == ({"A": 1, "m": -1, "s": -1}, 1.0)
    assert parse_unit("1/s") == ({"s": -1}, 1.0)
    dims, factor = parse_unit("rpm")
    assert dims == {"rad": 1, "s": -1} and factor == pytest.approx(2 * math.pi / 60)
    assert parse_unit("m$") is None


# --- item 9: loaders never crash or hang -----------------------------------------------------------
def hostile_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, words the one-line error must hold)."""
    files = {}

    def put(name: str, data: bytes, words: str) -> None:
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(data)
        files[name] = (path, words)

    digits = b"9" * 100_000
    put("huge_integer", b"schema_version: 1\ngravity: {value: " + digits + b", unit: m, source: x}\n", "")
    put("deep_nesting", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper")
    put("deep_mapping", b"a: " + b"{b: " * 5000 + b"1" + b"}" * 5000 + b"\n", "nested deeper")
    put("not_utf8", b"schema_version: 1\ngravity: \xff\xfe\n", "is not UTF-8")
    put("binary", bytes(range(256)) * 4, "")
    put("alias_bomb", b"a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" * 1, "")
    put("too_big", b"# " + b"x" * 2_000_000 + b"\n", "larger than")
    put("list", b"[1, 2, 3]\n", "mapping at the top level")
    put("empty", b"", "mapping at the top level")
    return files


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("verb", [["size", "--model", "report"], ["check", "--samples", "4"]])
def test_hostile_parameter_files_give_one_line_errors_naming_the_file(tmp_path, capsys, verb):
    for name, (path, words) in hostile_files(tmp_path).items():
        code, err = run_cli([*verb, "--parameter-file", str(path)], capsys)
        assert code == 2, (name, err)
        assert err.count("\n") == 1 and str(path) in err or path.name in err, (name, err)
        assert words in err, (name, err)


def test_hostile_task_files_give_one_line_errors(tmp_path):
    for name, (path, words) in hostile_files(tmp_path).items():
        with pytest.raises(TaskError) as error:
            load_task(path)
        assert "\n" not in str(error.value) and words in str(error.value), name


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_and_dev_zero_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    results: dict[str, str] = {}

    def load(name: str, path: Path) -> None:
        try:
            load_parameters(path)
        except ParameterError as error:
            results[name] = str(error)

    threads = [threading.Thread(target=load, args=item, daemon=True) for item in (("fifo", fifo),)]
    if Path("/dev/zero").exists():
        threads.append(threading.Thread(target=load, args=("zero", Path("/dev/zero")), daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10.0)  # a bound on a hang, never reached when it works
    assert "not a regular file" in results.get("fifo", "hung"), results
    if Path("/dev/zero").exists():
        assert "not a regular file" in results.get("zero", "hung"), results


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for folder in ("quirobot_description", "config", "examples")
        for p in (Path(__file__).parents[2] / folder).rglob("*.yaml")
    ),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_libyaml_reads_every_shipped_file_as_the_pure_python_parser_does(path):
    """read_yaml_mapping parses with libyaml where PyYAML has it (six times faster); PyYAML's own
    pure-Python parser, with the same resolvers and duplicate-key check, gives the same values."""
    from quirobot_description import sourced_yaml

    if sourced_yaml._SAFE_LOADER is yaml.SafeLoader:
        pytest.skip("PyYAML without libyaml: read_yaml_mapping uses the pure-Python parser")
    text = path.read_text()
    for fast in (sourced_yaml._UniqueKeyLoader, sourced_yaml._Yaml12FloatLoader):
        pure = type("Pure", (sourced_yaml._UniqueKeys, yaml.SafeLoader), {})
        pure.yaml_implicit_resolvers = fast.yaml_implicit_resolvers
        values = []
        for loader_class in (fast, pure):
            loader = loader_class(text)
            try:
                values.append(loader.construct_document(loader.get_single_node()))
            finally:
                loader.dispose()
        assert repr(values[0]) == repr(values[1]), (path, fast.__name__)
