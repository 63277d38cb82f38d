"""`quirobot simulate --task arthroscopy` and `--task pin` through the CLI: the `--json` keys and
the issue's targets (issue 22), checked against bounds written here and the task files' own
numbers read as raw YAML (not the procedures' target tables).

Targets: the portal drift (rcm_error, the scope axis' largest distance from the portal) and the
pin's depth error within 0.5 mm; the pin's drive torque within the task's torque limit. The
arthroscopy runs on the ideal plant (deterministic) and, marked slow, on the realistic default.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_description.data_files import find_data_file

BOUND = 0.5e-3  # m: the portal drift and pin depth targets
REST = 1e-6  # m/s: the pin at rest at the end (the bound pin_procedure states)


def _simulate(tmp_path, *argv: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["simulate", *argv, "--json", "--no-progress", "--output", str(tmp_path)])
    return status, json.loads(out.getvalue())


def _raw(name: str) -> dict:
    return yaml.safe_load(find_data_file(f"config/tasks/{name}.yaml").read_text())


def test_pin_reaches_its_depth_under_the_torque_limit(tmp_path):
    status, document = _simulate(tmp_path, "--task", "pin")
    raw = _raw("pin")
    assert status == 0
    assert list(document) == ["pin", "metrics", "log", "plot"]
    assert document["pin"] == {
        "depth": raw["depth"]["value"],
        "pitch": raw["pitch"]["value"],
        "diameter": raw["diameter"]["value"],
    }
    metrics = document["metrics"]
    assert metrics["completed"] and metrics["stop_reason"] is None
    assert metrics["insertion_depth_error"] <= BOUND
    assert abs(metrics["final_depth"] - raw["depth"]["value"]) <= BOUND
    limit = raw["torque_limit"]["value"]
    assert metrics["torque_limit"] == limit
    assert 0.0 < metrics["peak_insertion_torque"] <= limit
    assert metrics["peak_drive_torque"] <= limit
    assert not metrics["stopped_on_torque"]
    assert metrics["targets_met"] == {"insertion_depth_error": True}
    assert document["log"] is None and document["plot"] is None  # no arm motion to log


def test_pin_in_a_harder_bone_stops_on_the_torque_limit_and_exits_1(tmp_path):
    status, document = _simulate(tmp_path, "--task", "pin", "--bone-factor", "3")
    metrics = document["metrics"]
    assert status == 1
    assert metrics["stopped_on_torque"] and not metrics["completed"]
    assert "above the limit" in metrics["stop_reason"]
    assert metrics["insertion_depth_error"] > BOUND


def _check_arthroscopy(status: int, document: dict, plant: str) -> None:
    raw = _raw("arthroscopy")
    assert status == 0
    assert list(document) == ["arthroscopy", "metrics", "log", "plot"]
    assert document["arthroscopy"]["portal"] == raw["portal"]["value"]
    metrics = document["metrics"]
    assert metrics["plant"] == plant and metrics["completed"]
    assert 0.0 <= metrics["rcm_error"] <= BOUND
    assert metrics["rcm_error_commanded"] <= 1e-9  # the servo's commands hold the portal exactly
    # One message per 1/servo_rate s of every segment that sends; the silent one trips the dead-man.
    rate = raw["servo_rate"]["value"]
    sent = [s["duration"]["value"] for s in raw["servo"] if s.get("send", True)]
    assert metrics["servo_commands"] == pytest.approx(sum(sent) * rate, abs=len(sent))
    silent = sum(s["duration"]["value"] for s in raw["servo"] if not s.get("send", True))
    # Past the timeout the servo brakes (its rate limits), then holds: at most the silence's cycles.
    held = (silent - raw["timeout"]["value"]) / 1e-3  # control cycles at 1 kHz past the timeout
    assert 0 < metrics["dead_man_holds"] <= held
    depth = raw["depth"]["value"]
    assert raw["min_depth"]["value"] <= metrics["final_depth"] <= raw["max_depth"]["value"]
    assert metrics["final_depth"] != depth  # the stream moved the scope along its axis
    assert metrics["targets_met"]["rcm_error"]
    assert document["log"].endswith("arthroscopy.mcap") and document["plot"].endswith("arthroscopy.png")


def test_arthroscopy_holds_the_portal_on_the_ideal_plant(tmp_path):
    _check_arthroscopy(*_simulate(tmp_path, "--task", "arthroscopy", "--plant", "ideal"), "ideal")


@pytest.mark.slow
def test_arthroscopy_holds_the_portal_on_the_realistic_plant(tmp_path):
    _check_arthroscopy(*_simulate(tmp_path, "--task", "arthroscopy"), "realistic")


def _deeper_start(raw: dict) -> None:
    raw["depth"]["value"] = 0.1


def _an_hour_of_segments(raw: dict) -> None:
    first = raw["servo"][0]
    raw["servo"] = [{**first, "duration": {**first["duration"], "value": 60.0}} for _ in range(64)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_deeper_start, "knee.yaml: depth: 100.0 mm is outside the task's own depth range 15.0-80.0 mm"),
        (
            _an_hour_of_segments,
            "knee.yaml: servo: the task would last 3841 s (two settles and 64 segments), more than "
            "the 300 s limit",
        ),
    ],
    ids=["start depth outside the range", "3,840 s of segments"],
)
def test_an_arthroscopy_task_file_refused_is_one_line_and_exit_2(tmp_path, change, expected):
    # Before: both were accepted; the long one planned 3.8 million control periods.
    raw = _raw("arthroscopy")
    change(raw)
    path = tmp_path / "knee.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["simulate", "--task", str(path), "--json", "--no-progress", "--output", str(tmp_path)])
    lines = err.getvalue().splitlines()
    assert status == 2 and len(lines) == 1 and expected in lines[0]


def _pin_depth(value: float):
    def change(raw: dict) -> None:
        raw["depth"]["value"] = value

    return change


def _pin_fast_feed(raw: dict) -> None:
    raw["pitch"]["value"] = 0.01
    raw["speed"]["value"] = 200.0


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            _pin_depth(0.080),
            "pin_bad.yaml: depth: 80.0 mm is past the bone's far side (25.0 mm, the layers) by more "
            "than protrusion_limit 2.0 mm (at most 27.0 mm)",
        ),
        (_pin_depth(0.150), "pin_bad.yaml: depth: 150.0 mm is past the bone's far side (25.0 mm"),
        (
            _pin_fast_feed,
            "pin_bad.yaml: speed: the feed pitch x speed is 318.3 mm/s, above the drill feed's "
            "velocity limit 10.0 mm/s",
        ),
    ],
    ids=["80 mm through 25 mm of bone", "150 mm", "318 mm/s feed"],
)
def test_a_pin_task_file_refused_is_one_line_and_exit_2(tmp_path, change, expected):
    # Issue 33 item 12: each ran and reported success (exit 0).
    raw = _raw("pin")
    change(raw)
    path = tmp_path / "pin_bad.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["simulate", "--task", str(path), "--json", "--no-progress", "--output", str(tmp_path)])
    lines = err.getvalue().splitlines()
    assert status == 2 and len(lines) == 1 and expected in lines[0]


def test_the_pin_run_ends_at_rest(tmp_path):
    status, document = _simulate(tmp_path, "--task", "pin")
    metrics = document["metrics"]
    assert status == 0 and metrics["completed"]
    assert 0.0 <= metrics["final_feed_speed"] <= REST
