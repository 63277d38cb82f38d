"""Fuzz campaign over every CLI verb and over mutated parameter and task files (issue 11).

Properties, for any generated input:
- no traceback: `quirobot_cli.cli.main` returns 0, 1 or 2 (argparse's own usage errors exit 2),
  and an error (exit 2) is exactly one line on stderr;
- no hang: every call finishes within HANG_LIMIT s (SIGALRM, a bound never reached when it works);
- strict JSON: with --json and exit 0, stdout parses with NaN/Infinity refused;
- no silently accepted wrong unit: a leaf whose unit is changed to one of another kind is refused
  naming its key; one changed to a convertible unit (task files: mm, deg, ms) loads as the value
  times the factor computed here, independently of the loader's table.

Verbs run in-process (main(argv)); each expensive verb is only given inputs it must refuse
before its work starts, or small work (bounded by the verb's own limits).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quirobot_cli.cli import main
from quirobot_control.planning.tasks import TaskError, load_task, task_file
from quirobot_description.file_schema import PARAMETER_FILE, TASK_FILE
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, load_parameters
from quirobot_description.sourced_yaml import _leaf_keys

HANG_LIMIT = 30  # s per call
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same campaign on every run: a failure is reproducible
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _alarm(signum, frame):
    raise TimeoutError(f"hang: a call ran longer than {HANG_LIMIT} s")


@contextlib.contextmanager
def hang_guard():
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    with hang_guard():
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse: usage errors
            code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def check_outcome(argv: list[str], code, out: str, err: str) -> None:
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2 and not err.startswith("usage:"):
        assert err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    if code == 0 and "--json" in argv:
        json.loads(out, parse_constant=lambda name: pytest.fail(f"{argv}: {name} in JSON"))


# --- hostile values ---------------------------------------------------------------------------------
NUMBERS = (
    st.sampled_from(
        ["0", "-1", "1e308", "-1e308", "1e999", "nan", "inf", "-inf", "1" * 400, "0x10", "", "abc", "1e-320"]
    )
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
    | st.integers(-(10**30), 10**30).map(str)
)
WORDS = st.sampled_from(["drill", "arthroscope", "mock", "real", "all", "", "../../etc/passwd", "\x00", "é"])


@st.composite
def verb_argv(draw) -> list[str]:
    verb = draw(
        st.sampled_from(["urdf", "fk", "ik", "workspace", "size", "simulate", "render", "check", "accuracy"])
    )
    n = draw(NUMBERS)
    if verb == "urdf":
        return ["urdf", "--tool", draw(WORDS)]
    if verb == "fk":
        return ["fk", *draw(st.lists(NUMBERS, min_size=0, max_size=6)), "--json", "--feed", n][
            : draw(st.integers(1, 9))
        ]
    if verb == "ik":
        return [
            "ik",
            "--position",
            *draw(st.lists(NUMBERS, min_size=3, max_size=3)),
            "--approach",
            "0",
            "0",
            n,
            "--json",
        ]
    if verb == "workspace":
        small = draw(st.sampled_from(["10", "1000", n, "1000001", "1e12"]))
        return ["workspace", "--samples", small, "--json", "--approach", "0", n, "-1"]
    if verb == "size":  # bounded: refused values, or the report model (one pose)
        return draw(
            st.sampled_from(
                [
                    ["size", "--poses", n],
                    ["size", "--poses", "100001"],
                    ["size", "--model", "report", "--json"],
                    ["size", "--model", draw(WORDS)],
                ]
            )
        )
    if verb == "simulate":  # only inputs refused before the run (a run takes seconds)
        return draw(
            st.sampled_from(
                [
                    ["simulate", "--feed-rate", "1e-9", "--no-progress", "--depth", "0.004"],
                    [
                        "simulate",
                        "--feed-rate",
                        draw(st.sampled_from(["nan", "-1", "0", "inf"])),
                        "--no-progress",
                    ],
                    [
                        "simulate",
                        "--depth",
                        draw(st.sampled_from(["nan", "-1", "0", "1e999"])),
                        "--no-progress",
                    ],
                    ["simulate", "--task", draw(WORDS), "--no-progress"],
                    ["simulate", "--plant", draw(WORDS), "--no-progress"],
                    # Issue 19: malformed, never-reached and repeated injections; an unseen breakthrough.
                    ["simulate", "--inject", draw(st.sampled_from(INJECTIONS)), "--no-progress"],
                    ["simulate", "--inject", "estop@5", "--inject", draw(WORDS), "--no-progress"],
                    ["simulate", "--depth", "0.0259", "--feed-rate", "0.003", "--no-progress"],
                ]
            )
        )
    if verb == "render":
        return [
            "render",
            "/nonexistent-dir/x.png",
            "--dpi",
            draw(st.sampled_from(["0", "-5", "100000", "5"])),
        ]
    if verb == "check":
        return ["check", "--samples", draw(st.sampled_from(["0", "-1", "1000001", "10**9"]))]
    return ["accuracy", "--samples", draw(st.sampled_from(["0", "-1", "100000", "abc"]))]


#: --inject values refused before the run: malformed, or after the run's end.
INJECTIONS = ["drive-fault:@5", "estop@nan", "estop@1e999", "estop@5_0", "estop@-1", "estop@99999", "@", ":@"]


@SETTINGS
@given(argv=verb_argv())
def test_every_verb_refuses_hostile_arguments_cleanly(argv, capsys):
    code, out, err = run(argv, capsys)
    check_outcome(argv, code, out, err)


def test_fk_never_prints_infinity(capsys):
    argv = ["fk", "1.7e308", "0", "0", "0", "0", "--feed", "1.7e308", "--json"]  # x + feed overflows
    code, out, err = run(argv, capsys)
    assert code == 2 and "overflows" in err and out == ""


# --- mutated files ----------------------------------------------------------------------------------
#: unit -> (kind, factor to the kind's SI unit), written here independently of the loader.
UNITS = {
    "m": ("length", 1.0),
    "mm": ("length", 1e-3),
    "rad": ("angle", 1.0),
    "deg": ("angle", math.pi / 180.0),
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "kg": ("mass", 1.0),
    "N": ("force", 1.0),
    "m/s": ("speed", 1.0),
    "Hz": ("rate", 1.0),
}
PARAMS_RAW = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
TASK_RAW = yaml.safe_load(task_file("incision").read_text())


def leaf(raw: dict, key: str) -> dict:
    node = raw
    for part in key.split("."):
        node = node[part] if isinstance(node, dict) else node[int(part)]
    return node


def number_keys(raw: dict, schema) -> list[str]:
    return [k for k in _leaf_keys(raw) if (e := schema.expect(k)) is not None and e.unit in UNITS]


@st.composite
def mutation(draw, raw: dict, schema):
    """(mutated raw, key, new unit or None)."""
    mutated = copy.deepcopy(raw)
    key = draw(st.sampled_from(number_keys(raw, schema)))
    node = leaf(mutated, key)
    kind = draw(st.sampled_from(["unit", "value", "delete", "extra"]))
    if kind == "unit":
        node["unit"] = draw(st.sampled_from(sorted(UNITS)))
        return mutated, key, node["unit"]
    if kind == "value":
        node["value"] = draw(
            st.floats(allow_nan=True, allow_infinity=True)
            | st.integers(-(10**400), 10**400)
            | st.text(max_size=5)
        )
    elif kind == "delete":
        del node[draw(st.sampled_from(["value", "unit", "source"]))]
    else:
        node[draw(st.sampled_from(["valeu", "units"]))] = 1
    return mutated, key, None


def write(tmp_path: Path, raw: dict, name: str) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@SETTINGS
@given(case=mutation(PARAMS_RAW, PARAMETER_FILE))
def test_mutated_parameter_files_load_right_or_are_refused_by_key(case, tmp_path):
    raw, key, unit = case
    path = write(tmp_path, raw, "mutated.yaml")
    expected = PARAMETER_FILE.expect(key).unit
    with hang_guard():
        try:
            params = load_parameters(path)
        except ParameterError as error:
            assert "\n" not in str(error)
            return
    if unit is not None:  # the parameter file converts nothing: only the same unit loads
        assert unit == expected, f"{key}: {unit} accepted where {expected} is expected"
        assert params.quantities[key].unit == expected


@SETTINGS
@given(case=mutation(TASK_RAW, TASK_FILE))
def test_mutated_task_files_load_right_or_are_refused_by_key(case, tmp_path):
    raw, key, unit = case
    path = write(tmp_path, raw, "mutated.yaml")
    expected = TASK_FILE.expect(key).unit
    try:
        task = load_task(path)
    except (TaskError, ValueError) as error:
        assert "\n" not in str(error)
        if unit is not None and UNITS[unit][0] != UNITS[expected][0]:
            assert key in str(error)
        return
    if unit is None:
        return
    assert UNITS[unit][0] == UNITS[expected][0], f"{key}: {unit} accepted where {expected} is expected"
    original = leaf(TASK_RAW, key)["value"]
    factor = UNITS[unit][1] / UNITS[expected][1]
    field = key.split(".")[-1] if not key.startswith(("bone", "line")) else None
    if field is not None and hasattr(task, field):
        loaded = getattr(task, field)
        expected_value = [v * factor for v in original] if isinstance(original, list) else original * factor
        assert loaded == pytest.approx(expected_value, rel=1e-12), key


@SETTINGS
@given(case=mutation(PARAMS_RAW, PARAMETER_FILE))
def test_verbs_on_mutated_parameter_files_give_json_or_one_line(case, tmp_path, capsys):
    raw, _, _ = case
    path = write(tmp_path, raw, "mutated.yaml")
    for argv in (
        ["fk", "0.5", "0.5", "0.5", "0", "0", "--json", "--parameter-file", str(path)],
        ["size", "--model", "report", "--json", "--parameter-file", str(path)],
    ):
        code, out, err = run(argv, capsys)
        check_outcome(argv, code, out, err)
