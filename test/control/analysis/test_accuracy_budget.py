"""`quirobot accuracy`: the Monte-Carlo accuracy budget's contract, its bounds and its pieces.

The 200-sample figure (p95 lateral deviation <= 0.2 mm) is too long for CI (a few seconds of
wall time per sample): bench/accuracy.py runs it; here two samples check the contract.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from quirobot_control.analysis.accuracy import MAX_SAMPLES, axis_angle_error, short_incision
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task


def _no_local_cluster(*args, **kwargs):
    raise AssertionError("a local Dask cluster was started")


def test_json_contract_with_two_samples(tmp_path, capsys, monkeypatch):
    import sys

    import distributed

    from quirobot_cli.cli import main

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar shows on a terminal only
    # By default two samples run in this process: a cluster's start-up would outweigh its gain.
    monkeypatch.setattr("quirobot_cli.accuracy_commands.idle_cores", lambda: 8)
    monkeypatch.setattr(distributed, "LocalCluster", _no_local_cluster)
    plot = tmp_path / "accuracy.png"
    code = main(["accuracy", "--samples", "2", "--json", "--plot", str(plot)])
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert code == 0
    assert "accuracy" in captured.err  # the progress bar
    assert document["samples"] == 2 and document["completed"] == 2
    for metric in ("entry_error", "lateral_deviation", "axis_angle_error", "depth_error"):
        stats = document[metric]
        assert set(stats) == {"p50", "p95", "max"}
        assert 0.0 <= stats["p50"] <= stats["p95"] <= stats["max"]
    assert document["lateral_deviation"]["max"] < 1e-3  # m: sub-millimetre, not a unit slip
    assert list(document["system"]) == ["uncalibrated", "calibrated", "registered"]
    for stage in document["system"].values():
        assert set(stage) == {"entry_error", "axis_angle_error"}
        for stats in stage.values():
            assert set(stats) == {"p50", "p95", "max"}
            assert 0.0 < stats["p50"] <= stats["p95"] <= stats["max"]
    assert set(document["tre_predicted"]) == {"p50", "p95"}
    # The closed loop's entry error is part of every stage (added as a bound).
    assert document["system"]["calibrated"]["entry_error"]["max"] >= document["entry_error"]["p50"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path, capsys):
    from quirobot_cli.cli import main

    code = main(["accuracy", "--samples", "1", "--workers", "0", "--json", "--plot", str(tmp_path / "a.png")])
    assert code == 0 and "incision" not in capsys.readouterr().err


def _runner_for(words: list[str]):
    from quirobot_cli.accuracy_commands import _runner
    from quirobot_cli.cli import build_parser

    return _runner(build_parser().parse_args(["accuracy", *words]))


def _cores(monkeypatch, count: int) -> None:
    """A machine with `count` cores for this process, for the runner's bound on workers."""
    import quirobot_cli.accuracy_commands as commands
    from quirobot_control.analysis import accuracy_cluster

    monkeypatch.setattr(commands, "local_cores", lambda: count)
    monkeypatch.setattr(accuracy_cluster, "local_cores", lambda: count)


def test_by_default_only_a_run_of_10_samples_with_2_idle_cores_goes_to_a_local_cluster(monkeypatch):
    import quirobot_cli.accuracy_commands as commands

    _cores(monkeypatch, 4)

    # docs/accuracy.md: ~1.2-1.9 s of start-up against ~0.65 s a sample, and a margin: 10 samples
    monkeypatch.setattr(commands, "idle_cores", lambda: 2)
    assert _runner_for(["--samples", "1"]) is None
    assert _runner_for(["--samples", "9"]) is None
    assert _runner_for(["--samples", "10"]).workers == 2
    monkeypatch.setattr(commands, "idle_cores", lambda: 3)
    assert _runner_for([]).workers == 3  # the default 20 samples, a worker per idle core
    monkeypatch.setattr(commands, "idle_cores", lambda: 1)  # the other cores busy: no gain
    assert _runner_for(["--samples", "1000"]) is None


def test_idle_cores_are_the_cores_less_the_load_average(monkeypatch):
    import os

    from quirobot_control.analysis import accuracy_cluster

    monkeypatch.setattr(accuracy_cluster, "local_cores", lambda: 4)
    for load, idle in ((0.2, 4), (1.4, 3), (2.6, 1), (9.0, 0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert accuracy_cluster.idle_cores() == idle


def test_workers_and_scheduler_force_dask_and_serial_forces_this_process(monkeypatch):
    import quirobot_cli.accuracy_commands as commands

    _cores(monkeypatch, 2)

    monkeypatch.setattr(commands, "idle_cores", lambda: 0)
    assert _runner_for(["--samples", "1", "--workers", "2"]).workers == 2
    assert _runner_for(["--samples", "1", "--workers", "1"]).workers == 1
    assert (
        _runner_for(["--samples", "1", "--scheduler", "tcp://127.0.0.1:8786"]).scheduler
        == "tcp://127.0.0.1:8786"
    )
    monkeypatch.setattr(commands, "idle_cores", lambda: 8)
    assert _runner_for(["--samples", "1000", "--serial"]) is None
    assert _runner_for(["--samples", "1000", "--workers", "0"]) is None


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--workers", "-1"], "--workers must be from 0"),
        (["--serial", "--scheduler", "tcp://127.0.0.1:8786"], "drop --serial"),
        (["--workers", "0", "--scheduler", "tcp://127.0.0.1:8786"], "drop --serial"),
    ],
)
def test_contradictory_runner_options_are_refused(words, message):
    with pytest.raises(ValueError, match=message):
        _runner_for(words)


@pytest.mark.parametrize("more", [1, 38], ids=["one more", "40 on 2 cores"])
def test_more_workers_than_cores_are_refused_before_any_process_starts(tmp_path, capsys, more):
    """issue 33 item 13: --workers 40 made 52 processes in 20 s on this 2-core machine."""
    from quirobot_cli.cli import main
    from quirobot_control.analysis.accuracy_cluster import DaskRunner, local_cores

    cores = local_cores()
    plot = tmp_path / "a.png"
    words = [
        "accuracy",
        "--samples",
        "1",
        "--workers",
        str(cores + more),
        "--no-progress",
        "--plot",
        str(plot),
    ]
    assert main(words) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert f"--workers must be from 0 (in this process) to {cores}" in captured.err
    assert f"got {cores + more}" in captured.err and not plot.exists()
    with pytest.raises(ValueError, match=f"takes 1 to {cores} workers"):
        DaskRunner(cores + more)


@pytest.mark.parametrize("samples", ["0", str(MAX_SAMPLES + 1)])
def test_absurd_sample_counts_are_refused_naming_the_limit(tmp_path, capsys, samples):
    from quirobot_cli.cli import main

    code = main(["accuracy", "--samples", samples, "--no-progress", "--plot", str(tmp_path / "a.png")])
    err = capsys.readouterr().err
    assert code == 2 and f"from 1 to {MAX_SAMPLES}" in err and err.count("\n") == 1


def test_axis_angle_error_of_a_tilted_line():
    task = load_task("incision")
    tilt = 2e-3  # rad
    side = np.cross(task.direction, [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    axis = math.cos(tilt) * task.direction + math.sin(tilt) * side
    s = np.linspace(0.0, 0.003, 200)[:, None]
    assert axis_angle_error(task, task.entry + s * axis) == pytest.approx(tilt, rel=1e-9)
    assert math.isnan(axis_angle_error(task, task.entry - s * axis))  # never in the bone


def test_short_incision_starts_at_rest_at_the_standoff_and_keeps_the_feed(parameters):
    task = load_task("incision")
    plan = short_incision(task, parameters, control_configuration(parameters))
    trajectory = plan.trajectory
    # A DrillHole goal's plan: the hole the drive side runs comes with it.
    assert plan.hole_context("g").depth == task.depth and plan.hole_context("g").bone is not None
    assert np.all(trajectory.velocities[0] == 0.0)
    names = [phase.name for phase in trajectory.phases]
    assert names == ["settle", "feed", "dwell"]
    assert trajectory.phase("dwell").end_time == pytest.approx(trajectory.duration)


def test_a_dask_run_with_two_workers_equals_the_serial_run(parameters):
    pytest.importorskip("distributed")
    from quirobot_control.analysis.accuracy import run_accuracy
    from quirobot_control.analysis.accuracy_cluster import DaskRunner

    serial = run_accuracy(parameters, 2, seed=5)
    done = []
    clustered = run_accuracy(parameters, 2, seed=5, runner=DaskRunner(workers=2), progress=done.append)
    assert sorted(done) == [1, 2]
    assert serial.as_json() == clustered.as_json()
    for a, b in zip(serial.samples, clustered.samples, strict=True):
        assert a.metrics == b.metrics
        assert a.entry.tolist() == b.entry.tolist()
    assert [s.errors for s in serial.system] == [s.errors for s in clustered.system]


def test_the_runner_says_where_the_samples_run_and_why(monkeypatch):
    """The rule (a local cluster only with 2 idle cores and DASK_MIN_SAMPLES samples) is printed
    with the numbers it was applied to, so a run in this process on a busy machine says why."""
    import quirobot_cli.accuracy_commands as commands
    from quirobot_cli.cli import build_parser

    _cores(monkeypatch, 4)

    def reason(words: list[str]) -> str:
        return commands._runner_and_reason(build_parser().parse_args(["accuracy", *words]))[1]

    monkeypatch.setattr(commands, "idle_cores", lambda: 2)
    assert reason(["--samples", "3"]) == (
        "in this process: a local Dask cluster pays with 2 idle cores or more and 10 samples or more "
        "(its start-up against the samples' time); here 2 idle of 4 cores (the cores less the load "
        "average), 3 samples"
    )
    assert reason(["--samples", "10"]).startswith("on a local Dask cluster of 2 processes, one per idle core")
    monkeypatch.setattr(commands, "idle_cores", lambda: 1)
    assert "here 1 idle of 4 cores" in reason(["--samples", "100"])
    assert reason(["--serial"]) == "in this process (asked: --serial or --workers 0)"
    assert reason(["--workers", "3"]) == "on a local Dask cluster of 3 processes (asked: --workers)"
