"""Virtual fixtures (issue 8 item 6): no-go zones and the tip-speed limit near the entry point.

The geometry is checked against brute force (dense samples of both segments, points tested in
the grown box), the tool's segments against the URDF chain (link_frames), the plan check on the
shipped incision with zones a surgeon might draw, and the task file's zone keys by name.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from shipped_control import FEED_MASS

from quirobot_control.axes.limits import PlanningError
from quirobot_control.axes.virtual_fixtures import (
    NoGoZone,
    ToolGeometry,
    VirtualFixtures,
    _segment_distance,
    _segment_distance_one,
    tool_points_one,
    tool_segments,
    zone_violation_one,
)
from quirobot_control.planning.fixture_check import check_plan
from quirobot_control.planning.tasks import (
    NearEntrySpeed,
    TaskError,
    load_task,
    plan_incision,
    plan_line_task,
    task_fixtures,
)
from quirobot_kinematics import link_frames

DT = 0.001


def _leaf(value, unit):
    return {"value": value, "unit": unit, "source": "test"}


TABLE = {"name": "operating_table", "shape": "box", "center": _leaf([1.0, 1.0, -1.5], "m")}
TABLE["size"] = _leaf([2.0, 2.0, 0.1], "m")


def _task(tmp_path, edit, name="incision"):
    raw = yaml.safe_load(load_task(name).path.read_text())
    edit(raw)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_task(path)


@pytest.fixture(scope="module")
def tool(parameters):
    return ToolGeometry.from_parameters(parameters)


@pytest.fixture(scope="module")
def incision_plan(parameters):
    task = load_task("incision")
    return task, plan_incision(task, parameters, DT)


def test_segment_distance_matches_brute_force():
    rng = np.random.default_rng(8)
    s = np.linspace(0.0, 1.0, 201)
    for _ in range(200):
        a = rng.normal(size=3)
        b = a + rng.normal(size=3) * rng.choice([0.0, 1.0])  # degenerate segments too
        p = rng.normal(size=3)
        q = p + rng.normal(size=3) * rng.choice([0.0, 1.0])
        points_ab = a + s[:, None] * (b - a)
        points_pq = p + s[:, None] * (q - p)
        brute = np.min(np.linalg.norm(points_ab[:, None, :] - points_pq[None, :, :], axis=2))
        exact = _segment_distance(a[None], b[None], p, q)[0]
        # The samples are 1/200 of each segment apart: brute force is at most that much above.
        step = (np.linalg.norm(b - a) + np.linalg.norm(q - p)) / 200
        assert brute - step - 1e-12 <= exact <= brute + 1e-9
        assert _segment_distance_one(a, b, p, q) == pytest.approx(exact, abs=1e-12)


def test_box_hits_match_points_in_the_grown_box():
    """A segment hits the box grown by its radius iff one of its points lies inside that box
    (checked on 2001 points per segment in the box frame); the per-cycle version agrees."""
    rng = np.random.default_rng(3)
    box = NoGoZone.box("b", [0.2, -0.1, 0.3], [0.4, 0.2, 0.6], rpy=[0.3, -0.2, 1.1])
    s = np.linspace(0.0, 1.0, 2001)
    agree = hits = 0
    for _ in range(400):
        a = box.center + rng.uniform(-0.6, 0.6, 3)
        b = a + rng.normal(size=3) * 0.3
        radius = float(rng.choice([0.0, 0.05]))
        local = (a + s[:, None] * (b - a) - box.center) @ box.rotation
        brute = bool(np.any(np.all(np.abs(local) <= box.size / 2 + radius, axis=1)))
        exact = bool(box.hits(a[None], b[None], radius)[0])
        hits += exact
        agree += exact == brute
        assert box.hits_one(a.tolist(), b.tolist(), radius) == exact
    # Both outcomes are met; a near-tangent sample may differ between the two.
    assert agree >= 398 and 40 < hits < 360, (agree, hits)


def test_capsule_hits_agree_per_cycle_and_batched():
    rng = np.random.default_rng(5)
    capsule = NoGoZone.capsule("c", [0.0, 0.0, 0.0], [0.5, 0.2, -0.1], 0.1)
    a = rng.uniform(-0.4, 0.6, (300, 3))
    b = a + rng.normal(size=(300, 3)) * 0.3
    batched = capsule.hits(a, b, 0.02)
    assert 10 < batched.sum() < 290, batched.sum()
    assert [
        capsule.hits_one(x.tolist(), y.tolist(), 0.02) for x, y in zip(a, b, strict=True)
    ] == batched.tolist()


def test_tool_segments_follow_the_urdf_chain(parameters, tool):
    """tool body from the wrist_pitch axis to tool0, bit from tool0 to the tip: the same points as
    the URDF's joint transforms composed one by one (link_frames), an independent path."""
    rng = np.random.default_rng(2)
    model = tool.model
    for _ in range(20):
        q5 = rng.uniform(model.lower, model.upper)
        feed = rng.uniform(model.feed_lower, model.feed_upper)
        frames = link_frames(q5, model, feed=feed)
        segments = tool_segments(np.append(q5, feed)[None], tool)
        np.testing.assert_allclose(segments["tool body"][0][0], frames["wrist_pitch_link"][:3, 3], atol=1e-12)
        np.testing.assert_allclose(segments["tool body"][1][0], frames["tool0"][:3, 3], atol=1e-12)
        np.testing.assert_allclose(segments["drill tip"][1][0], frames["drill_tip"][:3, 3], atol=1e-12)
        one = tool_points_one(np.append(q5, feed).tolist(), tool)
        for (part, start, end, radius), name in zip(
            one, ("drill tip", "drill bit", "tool body"), strict=True
        ):
            assert part == name and radius == segments[name][2]
            np.testing.assert_allclose(start, segments[name][0][0], atol=1e-12)
            np.testing.assert_allclose(end, segments[name][1][0], atol=1e-12)


def test_the_shipped_incision_plans_with_a_table_zone_below_the_limb(tmp_path, parameters):
    task = _task(tmp_path, lambda d: d.update(no_go_zones=[TABLE]))
    assert [zone.name for zone in task.no_go_zones] == ["operating_table"]
    plan_incision(task, parameters, DT)  # does not raise: the tool stays above z = -1.45 m


def test_a_plan_crossing_a_no_go_zone_is_refused_naming_the_zone(tmp_path, parameters):
    """The table drawn 80 mm higher reaches into the drilling corridor: the plan is refused naming
    the zone, the tool part, the phase and the time."""
    raised = dict(TABLE, center=_leaf([1.0, 1.0, -1.42], "m"))
    task = _task(tmp_path, lambda d: d.update(no_go_zones=[raised]))
    with pytest.raises(
        PlanningError, match=r"incision: the tool body enters no-go zone 'operating_table' in phase align"
    ):
        plan_incision(task, parameters, DT)


def test_a_capsule_zone_across_the_line_refuses_the_line_task(tmp_path, parameters):
    line = load_task("line")
    middle = plan_line_task(line, parameters, DT).positions[1000]
    tip = tool_segments(middle[None], ToolGeometry.from_parameters(parameters))["drill tip"][1][0]
    capsule = {
        "name": "instrument_tray",
        "shape": "capsule",
        "start": _leaf((tip - [0.0, 0.0, 0.2]).tolist(), "m"),
        "end": _leaf((tip + [0.0, 0.0, 0.2]).tolist(), "m"),
        "radius": _leaf(0.01, "m"),
    }
    task = _task(tmp_path, lambda d: d.update(no_go_zones=[capsule]), name="line")
    with pytest.raises(
        PlanningError, match=r"line: the tool body enters no-go zone 'instrument_tray' in phase line"
    ):
        plan_line_task(task, parameters, DT)


def test_the_tip_speed_limit_near_the_entry_refuses_a_fast_align(tmp_path, parameters):
    """The shipped align runs at 50 mm/s: a 30 mm/s limit within 50 mm of the entry refuses it."""
    limit = {"radius": _leaf(50.0, "mm"), "speed": _leaf(30.0, "mm/s")}
    task = _task(tmp_path, lambda d: d.update(entry_speed_limit=limit))
    assert task.entry_speed_limit.radius == pytest.approx(0.05)
    with pytest.raises(
        PlanningError, match=r"50 mm/s within 50 mm of the entry in phase align.*limit 30 mm/s"
    ):
        plan_incision(task, parameters, DT)
    loose = {"radius": _leaf(0.05, "m"), "speed": _leaf(0.05, "m/s")}
    plan_incision(_task(tmp_path, lambda d: d.update(entry_speed_limit=loose)), parameters, DT)


def test_the_feed_is_held_to_the_feed_rate(incision_plan, parameters):
    task, plan = incision_plan
    fixtures = task_fixtures(replace(task, entry_speed_limit=NearEntrySpeed(0.05, 0.05)), parameters)
    assert fixtures.speed_limit.feed_rate == task.feed_rate
    check_plan(plan, fixtures)
    slower = replace(fixtures.speed_limit, feed_rate=task.feed_rate / 2)
    with pytest.raises(PlanningError, match=r"in phase feed .* above the feed rate 0.75 mm/s"):
        check_plan(plan, replace(fixtures, speed_limit=slower))


def test_a_derived_task_is_limited_around_its_own_entry_and_feed_rate(incision_plan, parameters):
    """DrillHole goals and the accuracy budget derive tasks with another entry and feed rate
    (dataclasses.replace): the limit follows them."""
    task, _ = incision_plan
    base = replace(task, entry_speed_limit=NearEntrySpeed(0.05, 0.05))
    derived = replace(base, entry=task.entry + [0.05, 0.0, 0.0], feed_rate=0.002)
    limit = task_fixtures(derived, parameters).speed_limit
    np.testing.assert_allclose(limit.entry, derived.entry)
    assert limit.feed_rate == 0.002 and limit.radius == 0.05 and limit.speed == 0.05
    plan_incision(derived, parameters, DT)


def test_per_cycle_check_finds_what_the_plan_check_finds(incision_plan, parameters):
    task, plan = incision_plan
    zone = NoGoZone.box("table", [1.0, 1.0, -1.42], [2.0, 2.0, 0.1])
    fixtures = VirtualFixtures((zone,), ToolGeometry.from_parameters(parameters))
    batched = tool_segments(plan.positions[::50], fixtures.tool)
    inside = np.zeros(len(plan.positions[::50]), dtype=bool)
    for start, end, radius in batched.values():
        inside |= zone.hits(start, end, radius)
    per_cycle = [
        zone_violation_one(q.tolist(), (zone,), fixtures.tool) is not None for q in plan.positions[::50]
    ]
    assert per_cycle == inside.tolist() and 0 < sum(per_cycle) < len(per_cycle)


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        (dict(TABLE, shape="sphere"), r"no_go_zones.0.shape: must be one of box, capsule, got 'sphere'"),
        (dict(TABLE, radius=_leaf(0.1, "m")), r"no_go_zones.0.radius: is not a dimension of a box"),
        (dict(TABLE, size=_leaf([2.0, 0.0, 0.1], "m")), r"no_go_zones.0.size: every element must be > 0"),
        (dict(TABLE, centre=_leaf([1.0, 1.0, 1.0], "m")), r"unknown key no_go_zones\[0\].centre"),
        (dict(TABLE, size=_leaf([2000.0, 2000.0, 100.0], "mm")), None),
        ({k: v for k, v in TABLE.items() if k != "name"}, r"no_go_zones.0: must have a name"),
    ],
    ids=["shape", "wrong-dimension", "flat", "typo", "mm", "unnamed"],
)
def test_zone_keys_are_read_and_refused_by_name(tmp_path, zone, message):
    if message is None:
        task = _task(tmp_path, lambda d: d.update(no_go_zones=[zone]))
        np.testing.assert_allclose(task.no_go_zones[0].size, [2.0, 2.0, 0.1])
        return
    with pytest.raises(TaskError, match=message):
        _task(tmp_path, lambda d: d.update(no_go_zones=[zone]))


def test_a_key_of_the_other_task_kind_is_refused_by_the_schema(tmp_path):
    with pytest.raises(TaskError, match=r"unknown key depth \(task: line takes task, start"):
        _task(tmp_path, lambda d: d.update(depth=_leaf(0.01, "m")), name="line")
    with pytest.raises(TaskError, match=r"unknown key entry_speed_limit \(task: line takes"):
        _task(tmp_path, lambda d: d.update(entry_speed_limit={"radius": _leaf(0.05, "m")}), name="line")


def test_a_goal_starting_near_the_entry_is_planned_slowly_not_refused(incision_plan, parameters):
    """A DrillHole goal whose start is near the entry (the robot stopped in the standoff after a
    cancelled goal): the joint-space approach is slowed until its tip keeps the limit near the
    entry, instead of the goal being refused (the ROS tier's cancel-then-goal sequence)."""
    from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
    from quirobot_control.planning.fixture_check import FEED_PHASE

    task, plan = incision_plan
    assert task.entry_speed_limit is not None  # the shipped incision has one
    start = plan.positions[int(round(plan.phase(FEED_PHASE).start_time / DT))]  # at the standoff
    goal = DrillGoal(task.entry + [0.0, 0.01, 0.0], task.direction, task.depth, task.feed_rate, 60.0)
    drill = plan_drill_hole(
        goal, start, parameters, DT, feed_mass=FEED_MASS
    )  # check_plan inside: refused if over
    fixtures = task_fixtures(drill.task, parameters)
    tip = tool_segments(drill.trajectory.positions, fixtures.tool)["drill tip"][1]
    approach = drill.trajectory.phase("approach")
    k0, k1 = int(round(approach.start_time / DT)), int(round(approach.end_time / DT))
    speed = np.linalg.norm(np.diff(tip[k0 : k1 + 1], axis=0), axis=1) / DT
    near = np.linalg.norm(tip[k0:k1] - fixtures.speed_limit.entry, axis=1) <= fixtures.speed_limit.radius
    assert near.any() and speed[near].max() <= fixtures.speed_limit.speed
    assert speed.max() > 0.5 * fixtures.speed_limit.speed  # slowed, not crawling
