"""`quirobot simulate --inject` against the second adversarial campaign (issue 19 item 11), and an
early breakthrough through the whole run (item 7).

Before: a bone fault injected before the feed ended the run 0.5 s later and reported 229 mm
"deeper after the fault" (the transfer towards the bone); the same kind in the medulla was called
unsafe; a time after the run's end was silently not applied and reported safe; a repeated --inject
kept only the last; `drive-fault:@5` was accepted. Closed-loop runs on the ideal plant.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from quirobot_control.models.bone import BoneLayer
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.faults import EXTRA_DEPTH_LIMIT, FaultError, Injection
from quirobot_control.simulation.incision import run_task

SHORT_DEPTH = 0.003  # m, a short incision into the near cortex
BEFORE_THE_FEED = 1.0  # s: the arm is moving to the approach point (the feed starts at 3.36 s)


def test_a_bone_fault_before_the_feed_acts_when_the_bit_cuts_and_repeated_injections_all_apply(
    tmp_path, capsys
):
    """bone-harder during the approach, then an estop the run never reaches (the thrust limit ended
    it first): the bone fault ends in the thrust-limit stop in the near cortex, its extra depth
    counted from that stop in the bone; the estop is reported not applied."""
    from quirobot_cli.cli import main

    code = main(
        [
            "simulate",
            "--plant",
            "ideal",
            "--depth",
            str(SHORT_DEPTH),
            "--inject",
            f"bone-harder@{BEFORE_THE_FEED}",
            "--inject",
            "estop@9",
            "--json",
            "--no-progress",
            "--output",
            str(tmp_path),
        ]
    )
    document = json.loads(capsys.readouterr().out)
    harder, estop = document["faults"]
    assert document["fault"] == harder
    metrics = document["metrics"]
    assert metrics["feed_end"] == "thrust limit" and metrics["stop_reason"].startswith("thrust limit")
    assert harder["kind"] == "bone-harder" and harder["not_applied"] is None
    assert harder["detected_after"] > 3.36 - BEFORE_THE_FEED  # noticed once the bit cut, not at once
    assert 0.0 <= harder["extra_depth"] <= EXTRA_DEPTH_LIMIT  # before: 229 mm of transfer counted
    assert estop["kind"] == "estop" and estop["extra_depth"] is None
    assert estop["not_applied"].startswith("the run ended at")
    assert metrics["unsafe"] == [] and code == 0


THIN_BONE = (
    BoneLayer("near_cortex", 0.001, 1.0),
    BoneLayer("medullary_canal", 0.003, 0.15),
    BoneLayer("far_cortex", 0.0015, 1.0),
)


@pytest.fixture(scope="module")
def thin_task():
    task = load_task("incision")
    return replace(task, depth=0.0057, feed_rate=0.002, bone=replace(task.bone, layers=THIN_BONE))


def test_a_harder_bone_injected_in_the_medulla_ends_in_the_thrust_limit_stop(parameters, thin_task):
    """Mid-feed, in the canal (3x its thrust is under the limit): drilling goes on until the far
    cortex' tripled thrust trips the limit (before: the run ended 0.5 s after the injection with
    the bit moving, reported unsafe, no stop reason)."""
    from quirobot_cli.simulation_commands import exit_status

    plan_feed_start = 3.36  # s, the feed's start (the plan's phases)
    in_the_canal = round(plan_feed_start + (0.002 + 0.0025) / 0.002, 3)  # the tip 2.5 mm deep
    result = run_task(thin_task, parameters, plant="ideal", injection=Injection("bone-harder", in_the_canal))
    fault = result.fault
    depth = (result.log.tip - thin_task.entry) @ thin_task.direction
    at = int(round(in_the_canal / 0.001))
    assert 0.001 < depth[at] < 0.004  # in the canal when the bone turned harder
    assert result.metrics.incision.feed_end == "thrust limit"
    assert result.log.drilling_event.depth > 0.004  # in the far cortex
    assert fault.extra_depth <= EXTRA_DEPTH_LIMIT and fault.stopped_after is not None
    assert result.unsafe == [] and exit_status(result, injected=True) == 0


def test_an_injection_after_the_runs_end_is_refused_naming_the_end(parameters):
    with pytest.raises(FaultError, match=r"estop@1000: the run ends at 11\.350 s"):
        run_task(
            "incision", parameters, depth=SHORT_DEPTH, plant="ideal", injection=Injection("estop", 1000.0)
        )


# --- item 7: an early breakthrough through the whole run -----------------------------------------
def test_an_early_breakthrough_retracts_and_exits_1_with_the_reason(parameters):
    """The bone as imaged has a 3 mm far cortex; the one drilled has a porous band 1.4 mm into it:
    the detector fires at the band, more than 1 mm before the imaged exit. The feed stops and the task
    retracts (the bit leaves the bone), but the run is no success: the reason, exit status 1
    (before: a breakthrough, a success, exit 0, with a unicortical hole)."""
    from quirobot_cli.simulation_commands import exit_status

    task = load_task("incision")
    imaged = (
        BoneLayer("near_cortex", 0.001, 1.0),
        BoneLayer("canal", 0.003, 0.15),
        BoneLayer("far", 0.003, 1.0),
    )
    drilled = (
        *imaged[:2],
        BoneLayer("far_outer", 0.0014, 1.0),
        BoneLayer("porous_band", 0.0006, 0.5),
        BoneLayer("far_inner", 0.001, 1.0),
    )
    task = replace(task, depth=0.0072, feed_rate=0.002, bone=replace(task.bone, layers=imaged))
    result = run_task(task, parameters, plant="ideal", bone=replace(task.bone, layers=drilled))
    run, m = result.metrics.run, result.metrics.incision
    assert m.feed_end == "early breakthrough"
    assert "short of the imaged far cortex exit at 7.00 mm" in run.stop_reason
    assert result.log.drilling_event.depth < 0.007 - parameters.drilling.safety.breakthrough_exit_tolerance
    depth = (result.log.tip - task.entry) @ task.direction
    assert depth[-1] < 0.0  # retracted and withdrawn: the bit left the bone
    assert not run.completed and result.unsafe == []
    assert exit_status(result, injected=False) == 1
