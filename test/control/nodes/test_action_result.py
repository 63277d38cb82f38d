"""nodes.action_result.ResultRequest: a result whose answer is lost is asked for again once the goal
has ended, and delivered once. The futures are real (concurrent.futures), the clock a list of
times the test advances; over DDS the same class runs in task_node's motion port and the ROS
tier's clients (test/ros)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from quirobot_control.nodes.action_result import ResultRequest, ResultRequests


class Server:
    """An action server's get_result side: each request a future, answered by the test."""

    def __init__(self) -> None:
        self.requests: list[Future] = []
        self.ended = False

    def ask(self) -> Future:
        self.requests.append(Future())
        return self.requests[-1]


def make(server: Server, again_after: float = 10.0):
    now = [0.0]
    delivered: list = []
    again: list[int] = []
    request = ResultRequest(
        server.ask,
        lambda: server.ended,
        delivered.append,
        again_after,
        clock=lambda: now[0],
        on_again=again.append,
    )
    return request, now, delivered, again


def test_an_answer_to_the_first_request_is_delivered_and_nothing_is_asked_again():
    server = Server()
    request, now, delivered, again = make(server)
    assert len(server.requests) == 1 and not request.poll()
    server.ended = True
    server.requests[0].set_result("succeeded")
    now[0] = 100.0
    assert request.poll() and request.answered
    assert delivered == ["succeeded"] and again == [] and len(server.requests) == 1


def test_a_lost_answer_is_asked_for_again_once_the_goal_has_ended_for_again_after():
    server = Server()
    request, now, delivered, again = make(server, again_after=10.0)
    now[0] = 50.0
    assert not request.poll() and len(server.requests) == 1  # running: a long goal is not a lost answer
    server.ended = True
    assert not request.poll()  # the end seen at 50 s
    now[0] = 59.9
    assert not request.poll() and len(server.requests) == 1
    now[0] = 60.0
    assert not request.poll() and len(server.requests) == 2 and again == [1]
    now[0] = 70.0  # lost again: asked a third time, again_after after the second
    assert not request.poll() and len(server.requests) == 3 and again == [1, 2]
    server.requests[2].set_result("succeeded")
    assert request.poll() and delivered == ["succeeded"]
    server.requests[0].set_result("late")  # the first answer, arriving at last, is dropped
    assert delivered == ["succeeded"] and request.requests == 3


def test_an_answer_from_another_thread_is_delivered_once():
    server = Server()
    request, now, delivered, _ = make(server, again_after=1.0)
    server.ended = True
    request.poll()
    now[0] = 1.0
    request.poll()
    assert len(server.requests) == 2
    threads = [
        threading.Thread(target=f.set_result, args=(f"answer {i}",)) for i, f in enumerate(server.requests)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(delivered) == 1 and delivered[0] in ("answer 0", "answer 1")


def test_an_empty_answer_is_not_a_result():
    """rclpy completes a get_result future with None when the client is destroyed under it."""
    server = Server()
    request, _, delivered, _ = make(server)
    server.requests[0].set_result(None)
    assert not request.poll() and delivered == []


@pytest.mark.parametrize("again_after", [0.0, -1.0, float("nan")])
def test_again_after_must_be_a_positive_time(again_after):
    with pytest.raises(ValueError, match="again_after"):
        ResultRequest(Server().ask, lambda: True, print, again_after)


def test_the_awaited_results_drop_each_answered_one():
    servers = [Server(), Server()]
    requests = ResultRequests()
    for server in servers:
        requests.add(make(server)[0])
    assert requests.poll() == 2
    servers[1].requests[0].set_result("succeeded")
    assert requests.poll() == 1
    servers[0].requests[0].set_result("aborted")
    assert requests.poll() == 0
