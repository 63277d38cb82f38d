"""bench/drive_loop.py for 5 s (opt-in, QUIROBOT_REALTIME_TESTS=1: it does not pass on a loaded
2-core machine, docs/canopen.md): drive_node's CANopen cycle against six simulated drives in other
processes (python-can's udp_multicast), with the issue's JSON keys and loose bounds.

The bounds are 5x the targets of the 60 s measurement (bench/results/drive_loop.txt, issue 18):
SYNC period p99.9 within 5 ms of the 2 ms period, command -> RPDO p99 under 15 ms, CPU per SYNC
cycle p50 under 1.5 ms; and no drive may stop itself for a lost SYNC or heartbeat, which is the
property itself (a SYNC late by the drives' 10 ms). No wall-clock speed is asserted beyond those.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drive_loop.py"
KEYS = {"sync_period", "late_cycles", "sync_loss_stops", "command_to_rpdo", "cycle_cpu"}


@pytest.mark.skipif(
    os.environ.get("QUIROBOT_REALTIME_TESTS") != "1",
    reason="opt-in (QUIROBOT_REALTIME_TESTS=1): fails on a loaded 2-core machine, drive_node's process "
    "needs more than a core with udp_multicast and real-time throttling leaves 40-60 ms SYNC gaps: the "
    "drives stop themselves (issue 18 open, docs/canopen.md)",
)
def test_a_five_second_bench_meets_five_times_the_targets(parameters, tmp_path):
    pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (requirements-test.txt)")
    run = subprocess.run(
        [sys.executable, str(BENCH), "--seconds", "5", "--busy", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(result) >= KEYS
    assert set(result["sync_period"]) == {"p50", "p99", "p999", "max"}
    assert set(result["command_to_rpdo"]) == set(result["cycle_cpu"]) == {"p50", "p99"}
    period = parameters.canopen.sync_period
    assert result["sync_loss_stops"] == 0, result["emcy_codes"]
    assert result["stop_reason"] is None
    assert result["cycles"] > 0.5 * 5.0 / 1e-3  # the cycle ran (1 kHz control periods)
    assert abs(result["sync_period"]["p50"] - period) < 0.5 * period
    assert result["sync_period"]["p999"] < period + 5 * 1e-3
    assert result["command_to_rpdo"]["p99"] < 5 * 3e-3
    assert result["cycle_cpu"]["p50"] < 5 * 300e-6
