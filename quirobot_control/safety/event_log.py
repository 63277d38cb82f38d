"""`EventLog`: the safety layer's bounded, counted log of non-fatal events.

A condition that persists (a jog held at a soft limit, a watchdog hold) recurs every control
cycle; logging each would grow without bound (one string per cycle per joint, about 400 MB per hour
at 1 kHz). So each event has a `key` naming the condition (e.g. ("soft limit", "gantry_x")):
the first occurrence of an episode is logged, its repeats are only counted, and the episode ends
when a cycle passes without it (`end_cycle`), so the next occurrence is logged again. At most
`capacity` messages are kept (the oldest dropped, `dropped` counts them).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable

#: Messages kept (design assumption: hours of distinct events at the rate a session produces them,
#: a few hundred kB at most).
EVENT_LOG_CAPACITY = 1000


class EventLog:
    """See the module docstring. `messages` (oldest first), `counts[key]` (every occurrence)."""

    def __init__(self, capacity: int = EVENT_LOG_CAPACITY) -> None:
        self.messages: deque[str] = deque(maxlen=capacity)
        self.counts: Counter[Hashable] = Counter()
        self.dropped = 0
        self._active: set[Hashable] = set()  # keys seen in the current episode
        self._seen_this_cycle: set[Hashable] = set()

    def record(self, key: Hashable, message: str) -> None:
        """Count an occurrence of `key`; log `message` if it starts an episode."""
        self.counts[key] += 1
        self._seen_this_cycle.add(key)
        if key in self._active:
            return
        self._active.add(key)
        self.append(message)

    def append(self, message: str) -> None:
        """Log a one-off message (an acknowledgement, a state change)."""
        if len(self.messages) == self.messages.maxlen:
            self.dropped += 1
        self.messages.append(message)

    def end_cycle(self) -> None:
        """Close the episodes of the keys not recorded since the previous call."""
        if not (self._active or self._seen_this_cycle):  # each cycle's case: nothing to close
            return
        self._active &= self._seen_this_cycle
        self._seen_this_cycle = set()
