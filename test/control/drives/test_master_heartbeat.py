"""The master's heartbeat cadence (drives.canopen_master.MasterHeartbeat) against the loop's jitter.

Ticked at each 2 ms SYNC with a little jitter, a 4 ms heartbeat goes out every second SYNC: its
intervals stay within a SYNC period's jitter of 4 ms, so the drives' 10 ms consumer time sees 2.5
of them and one lost frame passes (the parameter file's canopen.heartbeat_period). Before, a tick
due at 3.99 ms was skipped and the heartbeat went out every third SYNC (6 ms).
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.drives.canopen_master import CanopenConfigurationError, MasterHeartbeat


class Network:
    """Records what the heartbeat sends (the one call it makes on canopen.Network)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, bytes]] = []

    def send_message(self, cob_id: int, data: bytes) -> None:
        self.sent.append((cob_id, data))


def heartbeat_times(heartbeat: MasterHeartbeat, ticks: np.ndarray) -> np.ndarray:
    return np.array([t for t in ticks if heartbeat.tick(float(t))])


@pytest.mark.parametrize("seed", range(5))
def test_a_jittery_sync_sends_the_heartbeat_every_second_sync(seed):
    rng = np.random.default_rng(seed)
    sync, period = 0.002, 0.004  # s: canopen.sync_period, canopen.heartbeat_period
    ticks = np.arange(2000) * sync + rng.uniform(-50e-6, 50e-6, 2000)  # the cycle's jitter
    heartbeat = MasterHeartbeat(Network(), 127, period, early=0.5e-3)  # half the 1 ms control period
    intervals = np.diff(heartbeat_times(heartbeat, ticks))
    assert np.all(np.abs(intervals - period) <= 100e-6 + 1e-12), (intervals.min(), intervals.max())
    assert heartbeat.network.sent[0] == (0x77F, bytes([5]))  # node 127, operational


def test_a_late_heartbeat_does_not_delay_the_next_and_a_stall_restarts_the_grid():
    heartbeat = MasterHeartbeat(Network(), 127, 0.004, early=0.5e-3)
    ticks = [0.0, 0.002, 0.0049, 0.006, 0.008, 0.010, 0.030, 0.032, 0.034]  # late at 4.9 ms; stalled to 30
    assert heartbeat_times(heartbeat, np.array(ticks)).tolist() == [0.0, 0.0049, 0.008, 0.030, 0.034]


@pytest.mark.parametrize("early", [-1e-3, 0.004, float("nan")])
def test_a_lead_outside_the_period_is_refused(early):
    with pytest.raises(CanopenConfigurationError, match="heartbeat lead"):
        MasterHeartbeat(Network(), 127, 0.004, early=early)
