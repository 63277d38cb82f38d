"""bench/drive_loop.py for 5 s: drive_node's CANopen cycle against six simulated drives in other
processes (python-can's udp_multicast), with the issue's JSON keys and loose bounds.

The bounds are 5x the targets of the 60 s measurement (bench/results/drive_loop.txt, issue 18):
command -> RPDO p99 under 15 ms, SYNC period p99.9 within 5 ms of the 2 ms period; and no drive
may stop itself for a lost SYNC or heartbeat (a SYNC late by the drives' 10 ms), which is the
property itself. The cycle's CPU per SYNC cycle is judged against the master's own CPU with the
transport taken away (`--master-cpu`), measured in the same test: an absolute bound (1.5 ms) failed
CI on a host where the same code, an older commit too, measured 1.0 to 1.7 ms (2.6 to 4.4 times
the master's 0.39 ms; the 60 s table's runs were 1 to 2.3 times).

The last two are timing that the host decides before the software does: the bench measures, in
the same run, a bare SCHED_FIFO loop on 1 ms deadlines in a process of its own, above every thread
of the run (its "host floor"). Where that loop itself woke HOST_FLOOR_LIMIT or more late during the
run (a virtual machine whose hypervisor takes its CPUs away for ~10 ms every 100 ms under load,
as the machines here do), no thread of any design keeps a 10 ms watchdog fed, and those two are
reported as a skip naming the floor rather than asserted. Everything else is asserted always.
The run runs with the `canbus` tests, alone (not beside the xdist workers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.canbus

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drive_loop.py"
KEYS = {"sync_period", "late_cycles", "sync_loss_stops", "command_to_rpdo", "cycle_cpu"}
#: s: a bare real-time loop this late means the host, not the cycle, decides the SYNC timing.
HOST_FLOOR_LIMIT = 5e-3
#: The cycle's CPU per SYNC cycle over the master's alone (transport, polling and waiting on top
#: of the same safety layer and packing). Loose; bench/drive_loop.py's table is where the CPU is
#: judged. The ratio rises as the master gets faster, the transport's share staying: issue 36's
#: compiled safety layer took the master from 0.232 to 0.193 ms here (`--master-cpu`, 5c8eb67 and
#: 41847f7 in one sitting), and a clean-clone CI rehearsal then measured 8.2 (1.59 ms of cycle).
#: A cycle busy-waiting through its whole 2 ms period would be 10.4 times this master.
CYCLE_OVER_MASTER_CPU_LIMIT = 10.0


def run_bench(*arguments: str, cwd: Path) -> dict:
    """bench/drive_loop.py's last JSON line."""
    run = subprocess.run(
        [sys.executable, str(BENCH), *arguments, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_five_second_bench_meets_five_times_the_targets(parameters, tmp_path):
    pytest.importorskip("msgpack", reason="python-can's udp_multicast needs msgpack (requirements-test.txt)")
    master = run_bench("--master-cpu", cwd=tmp_path)["master_cpu"]
    result = run_bench("--seconds", "5", "--busy", "0", cwd=tmp_path)
    assert set(result) >= KEYS
    assert set(result["sync_period"]) == {"p50", "p99", "p999", "max"}
    assert set(result["command_to_rpdo"]) == set(result["cycle_cpu"]) == {"p50", "p99"}
    period = parameters.canopen.sync_period
    # The cycle's own work, whatever the host does.
    assert "buses read by the cycle thread" in result["realtime"], result["realtime"]
    assert result["cycles"] > 0.5 * 5.0 / 1e-3  # the cycle ran (1 kHz control periods)
    assert abs(result["sync_period"]["p50"] - period) < 0.5 * period
    ratio = result["cycle_cpu"]["p50"] / master["median"]
    assert 0.0 < ratio < CYCLE_OVER_MASTER_CPU_LIMIT, (result["cycle_cpu"], master)
    # The floor's stalls that outlast the drives' watchdog, beside the stops they explain (issue 32).
    watchdog = min(parameters.drive.master_timeout, parameters.canopen.sync_loss_periods * period)
    assert result["watchdog"] == watchdog
    for part in ("run", "window"):
        floor = result["host_floor"][part]
        assert 0 <= floor["over_watchdog"] <= floor["over_5ms"], (part, floor)
        assert (floor["over_watchdog"] > 0) == (floor["max"] > watchdog), (part, floor)
    # The run's stops, each attributed to a host stall longer than the watchdog or not.
    assert 0 <= result["stops_unexplained_run"] <= result["stops_run"] <= result["sync_loss_stops_run"]
    assert (result["stops_run"] > 0) == (result["sync_loss_stops_run"] > 0)
    # How long the drives were stopped in the window, and the stops an operator cleared there.
    assert 0.0 <= result["stopped_in_window"] <= 5.0
    assert all(isinstance(reason, str) and reason for reason in result["cleared_in_window"])
    # The host's timing.
    floor = result["host_floor"]["run"]
    stops = result["sync_loss_stops_run"]
    if floor["max"] >= HOST_FLOOR_LIMIT:
        pytest.skip(
            f"host floor: a bare SCHED_FIFO 1 ms loop woke up to {floor['max'] * 1e3:.1f} ms late "
            f"({floor['over_5ms']} wake-ups over 5 ms, {floor['over_watchdog']} later than the drives' "
            f"watchdog, steal {result['steal'] * 1e3:.0f} ms in the window): "
            f"the stop and SYNC p99.9 bounds are not asserted on this host (this run: {stops} stops, "
            f"SYNC p99.9 {result['sync_period']['p999'] * 1e3:.2f} ms)"
        )
    assert stops == 0, (result["emcy_codes"], result["stop_reason"])
    assert result["stop_reason"] is None
    assert result["stopped_in_window"] == 0.0 and result["cleared_in_window"] == []
    assert result["sync_period"]["p999"] < period + 5 * 1e-3
    # Measured from the first command on (issue 32: a window-only figure was "nan" once the drives
    # had stopped, whatever came before).
    assert result["command_to_rpdo_count"] > 0 and result["command_to_rpdo"]["p50"] > 0.0
    assert result["command_to_rpdo"]["p99"] < 5 * 3e-3
