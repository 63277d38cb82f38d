"""Bounds on task files and DrillHole goals, and refusals that state the true limit (issue 19
item 12).

Each case found by the campaign below is pinned by a test of its own first: lists and names too
large for what the planner and the control cycle do with them, a planner refusal naming the hard
joint limit where the planner keeps to the soft one, a stroke refused as a duration, a goal
direction turned into a zero vector by an overflow. The campaign (hypothesis, derandomized) then
mutates the task file's structure and the goal's fields: every outcome loads or plans within the
bounds, or is refused in one line naming the key and, where it quotes a joint limit, the soft
limit of that joint from the parameter file (an independent read of the limits).
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from shipped_control import FEED_MASS

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.planning.drill_hole import INVALID, LIMIT, DrillGoal, GoalRejectedError, plan_drill_hole
from quirobot_control.planning.tasks import TaskError, load_task, plan_incision, task_file
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

DT = 0.002
SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RAW = yaml.safe_load(task_file("incision").read_text())
#: characters: a refusal is one short line (the longest, the unknown-key list, is about 250).
SHORT = 400


def _write(tmp_path, raw: dict):
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _leaf(value, unit):
    return {"value": value, "unit": unit, "source": "test"}


def _layers(count: int) -> list[dict]:
    shipped = RAW["bone"]["layers"]
    layers = []
    for index in range(count):
        layer = copy.deepcopy(shipped[index % len(shipped)])
        layer["name"] = f"layer_{index}"
        layer["thickness"]["value"] = 0.001
        layers.append(layer)
    return layers


def _zones(count: int) -> list[dict]:
    return [dict(copy.deepcopy(RAW["no_go_zones"][0]), name=f"zone_{index}") for index in range(count)]


@pytest.fixture(scope="module")
def limits(parameters):
    return JointLimits.from_parameters(parameters)


@pytest.fixture(scope="module")
def incision():
    return load_task("incision")


# --- task files: structure and size ------------------------------------------------------------
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r["bone"].update(layers=_layers(17)), "bone.layers: has 17 items, at most 16"),
        (lambda r: r.update(no_go_zones=_zones(9)), "no_go_zones: has 9 items, at most 8"),
        (
            lambda r: r["no_go_zones"][0].update(name="z" * 65),
            "no_go_zones.0.name: must be one line of at most 64 printable characters, got 65",
        ),
        (lambda r: r["no_go_zones"][0].update(name="table\nDROP"), "with a control character"),
        (lambda r: r["bone"]["layers"][1].update(name="near_cortex"), "a second layer named 'near_cortex'"),
        (lambda r: r["bone"]["layers"][1].update(name="  "), "bone.layers.1: must have a name"),
        (lambda r: r.update(task="x" * 10000), "task must be one of incision, line, got 'xxxxxxxx"),
    ],
    ids=["layers", "zones", "long-name", "control-character", "duplicate-layer", "blank-layer", "long-task"],
)
def test_oversized_or_malformed_structure_is_refused_in_one_short_line(tmp_path, edit, message):
    raw = copy.deepcopy(RAW)
    edit(raw)
    with pytest.raises(TaskError) as refused:
        load_task(_write(tmp_path, raw))
    text = str(refused.value)
    assert message in text and "\n" not in text and len(text) < SHORT, text


def test_the_bounds_themselves_load(tmp_path):
    raw = copy.deepcopy(RAW)
    raw["bone"]["layers"] = _layers(16)
    raw["no_go_zones"] = _zones(8)
    raw["no_go_zones"][0]["name"] = "z" * 64
    task = load_task(_write(tmp_path, raw))
    assert len(task.bone.layers) == 16 and len(task.no_go_zones) == 8


def test_an_unreachable_approach_names_the_soft_limit_the_planner_keeps(tmp_path, parameters, limits):
    """approach_distance 1 m puts the approach point above the gantry's top: the refusal quoted the
    hard limit 0 m, while the planner never goes above the soft limit 0.01 m."""
    raw = copy.deepcopy(RAW)
    raw["approach_distance"] = _leaf(1.0, "m")
    z = DRILL_AXES.index("gantry_z")
    with pytest.raises(PlanningError, match=rf"gantry_z .* below its lower limit {limits.soft_lower[z]:g} m"):
        plan_incision(load_task(_write(tmp_path, raw)), parameters, DT)


def test_a_standoff_beyond_the_stroke_is_refused_as_such(tmp_path, parameters, limits):
    """It was refused as a 385 s task (its feed at the feed rate), a planner-internal reason."""
    raw = copy.deepcopy(RAW)
    raw["standoff"] = _leaf(0.5, "m")
    with pytest.raises(PlanningError, match=r"exceeds the drill feed stroke 78 mm") as refused:
        plan_incision(load_task(_write(tmp_path, raw)), parameters, DT)
    assert limits.soft_upper[DRILL_AXES.index("drill_feed")] == pytest.approx(0.078)
    assert "would last" not in str(refused.value)


# --- DrillHole goals ---------------------------------------------------------------------------
def _goal(incision, **change) -> DrillGoal:
    return replace(
        DrillGoal(incision.entry, incision.direction, incision.depth, incision.feed_rate, 60.0), **change
    )


def test_a_huge_direction_is_a_direction(parameters, incision):
    """1e200 per component overflowed the norm: the goal was refused as a zero approach vector."""
    plan = plan_drill_hole(
        _goal(incision, direction=incision.direction * 1e200),
        incision.park,
        parameters,
        DT,
        feed_mass=FEED_MASS,
    )
    np.testing.assert_allclose(plan.task.direction, incision.direction, atol=1e-12)


@pytest.mark.parametrize(
    ("change", "kind", "message"),
    [
        (
            {"entry": np.array([1e300, 1.0, -1.35])},
            LIMIT,
            "entry 1e+300 m is outside the plausible range [-5, 5] m",
        ),
        ({"entry": [1.0, [2.0], 3.0]}, INVALID, "entry must be numeric"),
        ({"depth": "deep"}, INVALID, "depth must be numeric, got 'deep'"),
        ({"depth": np.ones(3)}, INVALID, "depth must be one number, got 3"),
        ({"max_thrust": 1e-300}, LIMIT, "above max_thrust 1e-300 N"),
    ],
)
def test_goal_fields_are_bounded_and_refused_in_one_line(parameters, incision, change, kind, message):
    with pytest.raises(GoalRejectedError) as refused:
        plan_drill_hole(_goal(incision, **change), incision.park, parameters, DT, feed_mass=FEED_MASS)
    assert refused.value.kind == kind
    assert message in str(refused.value) and "\n" not in str(refused.value)


# --- the campaign ------------------------------------------------------------------------------
JOINT_LIMIT = re.compile(
    r"(\w+) would be \S+ (m|deg), \S+ \2 (?:below|above) its (lower|upper) limit (\S+) \2"
)
RANGE_LIMIT = re.compile(r"(\w+) would be \S+ deg, \S+ deg outside its range \[(\S+) deg, (\S+) deg\]")


def check_quoted_limits(message: str, limits: JointLimits) -> None:
    """Every joint limit the message quotes is the planner's (soft) limit of that joint."""
    for joint, unit, side, value in JOINT_LIMIT.findall(message):
        j = DRILL_AXES.index(joint)
        expected = limits.soft_lower[j] if side == "lower" else limits.soft_upper[j]
        if unit == "deg":
            expected = np.degrees(expected)
        assert float(value) == pytest.approx(expected, rel=1e-5, abs=1e-9), message
    for joint, low, high in RANGE_LIMIT.findall(message):
        j = DRILL_AXES.index(joint)
        assert float(low) == pytest.approx(np.degrees(limits.soft_lower[j]), abs=0.5), message
        assert float(high) == pytest.approx(np.degrees(limits.soft_upper[j]), abs=0.5), message


NAMES = st.text(max_size=80) | st.sampled_from(["", " ", "a\nb", "table", "x" * 64, "x" * 65, "é" * 10])
RENAME = st.integers(0, 5).map(lambda k: k == 0)  # a sixth of the names changed


@st.composite
def structure(draw) -> dict:
    raw = copy.deepcopy(RAW)
    raw["bone"]["layers"] = _layers(draw(st.integers(0, 20)))
    for layer in raw["bone"]["layers"]:
        if draw(RENAME):
            layer["name"] = draw(NAMES)
    raw["no_go_zones"] = _zones(draw(st.integers(0, 10)))
    for zone in raw["no_go_zones"]:
        if draw(RENAME):
            zone["name"] = draw(NAMES)
    return raw


@SETTINGS
@given(raw=structure())
def test_task_structure_campaign(raw, tmp_path):
    try:
        task = load_task(_write(tmp_path, raw))
    except TaskError as error:
        text = str(error)
        assert "\n" not in text and len(text) < SHORT and text.startswith("task.yaml: "), text
        event("refused")
        return
    event("loaded")
    assert 1 <= len(task.bone.layers) <= 16 and len(task.no_go_zones) <= 8
    names = [layer.name for layer in task.bone.layers] + [zone.name for zone in task.no_go_zones]
    assert all(0 < len(name) <= 64 and name.isprintable() and name.strip() for name in names), names
    assert len({layer.name for layer in task.bone.layers}) == len(task.bone.layers)


@st.composite
def goals(draw, incision) -> DrillGoal:
    offset = np.array(draw(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3)))
    scale = draw(st.sampled_from([0.0, 0.01, 0.1, 1.0]))
    direction = np.array(draw(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)))
    if draw(st.booleans()):
        direction = incision.direction + 0.3 * direction
    return DrillGoal(
        entry=incision.entry + scale * offset,
        direction=direction * draw(st.sampled_from([1.0, 1e-200, 1e200])),
        depth=draw(st.floats(1e-6, 0.1)),
        feed_rate=draw(st.floats(1e-4, 0.02)),
        max_thrust=draw(st.floats(1.0, 120.0)),
    )


@SETTINGS
@given(data=st.data())
def test_goal_campaign(data, parameters, limits, incision):
    goal = data.draw(goals(incision))
    try:
        plan = plan_drill_hole(goal, incision.park, parameters, DT, feed_mass=FEED_MASS)
    except GoalRejectedError as error:
        text = str(error)
        assert error.kind in (INVALID, LIMIT)
        assert "\n" not in text and len(text) < SHORT, text
        check_quoted_limits(text, limits)
        event(f"refused ({error.kind})")
        return
    event("planned")
    safety = parameters.drilling.safety
    assert goal.depth <= incision.bone.thickness + safety.breakthrough_limit + 1e-12
    assert goal.feed_rate <= limits.velocity[DRILL_AXES.index("drill_feed")]
    assert plan.predicted_thrust <= goal.max_thrust <= safety.thrust_limit
    q = plan.trajectory.positions
    assert np.all(q >= limits.soft_lower - 1e-9) and np.all(q <= limits.soft_upper + 1e-9)
