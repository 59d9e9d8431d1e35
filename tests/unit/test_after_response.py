"""app.after_response: requests handed from the request threads to one background thread, in
order, to every consumer; nothing lost at a drain, a failing consumer does not stop the others."""

from __future__ import annotations

import threading
import time

from app.after_response import AfterResponse, FinishedRequest


def finished(i: int) -> FinishedRequest:
    return FinishedRequest(
        1_700_000_000.0 + i, 0.001 * i, "GET", "/v1/routing", 200, f"rid-{i}", None, ("routing", "gateway")
    )


def test_add_only_queues_and_drain_hands_every_request_in_order_to_each_consumer():
    after = AfterResponse(interval_s=60)  # the background thread never ticks within the test
    first: list[str] = []
    second: list[str] = []
    after.subscribe(lambda f: first.append(f.request_id))
    after.subscribe(lambda f: second.append(f.request_id))
    for i in range(5):
        after.add(finished(i))
    assert first == [] and second == []
    after.drain()
    assert first == second == [f"rid-{i}" for i in range(5)]
    after.drain()
    assert len(first) == 5


def test_background_thread_drains_without_being_asked():
    after = AfterResponse(interval_s=0.02)
    seen = threading.Event()
    after.subscribe(lambda f: seen.set())
    after.add(finished(1))
    assert seen.wait(2.0)


def test_a_failing_consumer_does_not_keep_the_request_from_the_others(caplog):
    after = AfterResponse(interval_s=60)
    got: list[str] = []

    def broken(_f: FinishedRequest) -> None:
        raise RuntimeError("disk full")

    after.subscribe(broken)
    after.subscribe(lambda f: got.append(f.request_id))
    after.add(finished(1))
    after.add(finished(2))
    after.drain()
    assert got == ["rid-1", "rid-2"]
    assert sum(1 for r in caplog.records if r.exc_info and str(r.exc_info[1]) == "disk full") == 2


def test_requests_added_by_many_threads_while_draining_are_all_handed_over_once():
    after = AfterResponse(interval_s=0.001)
    got: list[str] = []
    after.subscribe(lambda f: got.append(f.request_id))

    def client(t: int) -> None:
        for i in range(500):
            after.add(finished(t * 1000 + i))

    threads = [threading.Thread(target=client, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.monotonic() + 5
    while len(got) < 2000 and time.monotonic() < deadline:
        time.sleep(0.01)
    after.drain()
    assert sorted(got) == sorted(f"rid-{t * 1000 + i}" for t in range(4) for i in range(500))
