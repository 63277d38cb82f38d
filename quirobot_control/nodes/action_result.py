"""An action goal's result that a lost answer cannot hold back: asked for again once the goal has
ended and no answer came.

A get_result request is a service exchange, and DDS can lose a service response: a response
written before the server has matched the client's response reader is dropped (the rmw layers
guard against it only in part: ros2/rmw_cyclonedds#187, ros2/ros2#1253). The result itself is
not lost: the action server keeps it (result_timeout, 15 min by default) and answers a fresh
request at once. Seen in CI on a loaded machine: a DrillHole client waited 25 minutes for the
result of a goal that task_node had ended SUCCEEDED, and a new request was answered at once. In
task_node the same loss would leave a trajectory controller's motion ACTIVE after its goal ended:
the DrillHole goal would wait forever at the end of its plan.

`ResultRequest` is ROS-free: it is handed how to ask (a function returning a future), how to tell
that the goal has ended (its status from the action's status topic, which is a separate topic and
arrives on its own) and a clock, and `poll()` is called periodically (a steady timer, a spin
loop). `goal_result_request(handle, deliver)` builds one for an rclpy ClientGoalHandle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: s (wall) between a goal's end, as its status says, and asking again for a result that has not
#: come. A transport timeout, not a simulated one: the answer is due at once (the server answers a
#: request for an ended goal from its stored result), and 10 s is far beyond a loaded machine's
#: service latency (about 0.1 s under CI's load tests).
RESULT_AGAIN_AFTER = 10.0


class ResultRequest:
    """A result asked for with `ask()` and delivered once to `deliver(response)`; asked again by
    `poll()` when `ended()` has been true for `again_after` s of `clock` without an answer, each time
    after telling `on_again(requests so far)` (a log line) if given.

    Thread-safe: a response may arrive on any thread, `poll` may run on another; the first answer
    is delivered and later ones (the original request's, answered late) are dropped."""

    def __init__(
        self,
        ask: Callable[[], Any],
        ended: Callable[[], bool],
        deliver: Callable[[Any], None],
        again_after: float = RESULT_AGAIN_AFTER,
        clock: Callable[[], float] = time.monotonic,
        on_again: Callable[[int], None] | None = None,
    ) -> None:
        if not again_after > 0.0:
            raise ValueError(f"again_after must be a positive number of seconds, got {again_after!r}")
        self._ask, self._ended, self._deliver = ask, ended, deliver
        self.again_after, self._clock, self._on_again = again_after, clock, on_again
        self._lock = threading.Lock()
        self._answered = False
        self._ended_at: float | None = None
        #: how many times the result was asked for (1: the first request only)
        self.requests = 0
        self._request()

    @property
    def answered(self) -> bool:
        with self._lock:
            return self._answered

    def poll(self) -> bool:
        """Ask again if the goal ended `again_after` s ago and no answer came; True once answered."""
        with self._lock:
            if self._answered:
                return True
            if not self._ended():
                return False
            now = self._clock()
            if self._ended_at is None:
                self._ended_at = now
                return False
            if now - self._ended_at < self.again_after:
                return False
            self._ended_at = now
            requests = self.requests
        if self._on_again is not None:
            self._on_again(requests)
        self._request()
        return False

    def _request(self) -> None:
        with self._lock:
            self.requests += 1
        self._ask().add_done_callback(self._on_answer)

    def _on_answer(self, future) -> None:
        response = future.result()
        with self._lock:
            if self._answered or response is None:
                return
            self._answered = True
        self._deliver(response)


class ResultRequests:
    """The results a client still awaits: `add` each, `poll()` periodically (each answered one is
    dropped). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[ResultRequest] = []

    def add(self, request: ResultRequest) -> None:
        with self._lock:
            self._waiting.append(request)

    def poll(self) -> int:
        """Poll each awaited result (action_result's retry); how many are still awaited."""
        with self._lock:
            waiting = list(self._waiting)
        answered = {id(request) for request in waiting if request.poll()}
        with self._lock:
            self._waiting = [request for request in self._waiting if id(request) not in answered]
            return len(self._waiting)


def goal_result_request(
    handle,
    deliver: Callable[[Any], None],
    again_after: float = RESULT_AGAIN_AFTER,
    on_again: Callable[[int], None] | None = None,
) -> ResultRequest:
    """A `ResultRequest` for an rclpy ClientGoalHandle: `deliver(response)` gets the get_result
    response (`.status`, `.result`) once; `poll()` it periodically."""
    from action_msgs.msg import GoalStatus

    ended = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_ABORTED)
    return ResultRequest(
        handle.get_result_async, lambda: handle.status in ended, deliver, again_after, on_again=on_again
    )
