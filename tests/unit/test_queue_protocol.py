"""The queue protocol (queueing/protocol.py): every record type survives the round trip through
its stored bytes, the claim script answers, refuses, queues or joins in one round trip, the store
script hands the record to every waiter, and each message the web sends binds to the
parameters of the task that receives it."""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

import pytest
import redis
from celery import Task

from engine.errors import ErrorKind, MeridianError
from engine.geofence.webhooks import Delivery, delivery
from engine.results import BinaryResult
from engine.services.geocoding import GeocodeParams
from queueing import protocol
from queueing.protocol import ErrorRecord, HeavyCall, JsonText, pack, read_result, unpack

DOCUMENTS = [
    {"type": "FeatureCollection", "features": [{"properties": {"name": "Hämeentie", "value": 1.5}}]},
    {},
    {"list": [1, None, True, "x\ny"], "nested": {"a": {"b": []}}},
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_json_document_round_trip(document):
    raw = pack(document)
    record = unpack(raw)
    assert isinstance(record, JsonText)
    assert record.data == document
    assert json.loads(record.body) == document  # the bytes sent as stored
    assert read_result(raw).data == document


@pytest.mark.parametrize(
    "binary",
    [
        BinaryResult("image/png", b"\x89PNG\r\n\x1a\n" + bytes(range(256))),
        BinaryResult("image/jpeg", b"\n\nJ{" + b"\x00" * 10),  # newlines and a JSON-looking start
        BinaryResult("application/octet-stream", b""),
    ],
)
def test_binary_round_trip(binary):
    record = unpack(pack(binary))
    assert isinstance(record, BinaryResult)
    assert record == binary
    assert read_result(pack(binary)) == binary


@pytest.mark.parametrize(
    "error",
    [
        ErrorRecord(ErrorKind.INVALID_PARAMETER, "lat: expected a number", "lat"),
        ErrorRecord(ErrorKind.UNAVAILABLE, "the computation ran over its time limit"),
        ErrorRecord(ErrorKind.INTERNAL, "internal error in a worker", None),
        ErrorRecord(ErrorKind.NOT_FOUND, "no route — ünïcode"),
    ],
)
def test_error_round_trip_and_raise(error):
    raw = pack(error)
    assert unpack(raw) == error
    with pytest.raises(MeridianError) as caught:
        read_result(raw)
    assert (caught.value.kind, caught.value.message, caught.value.parameter) == (
        error.kind,
        error.message,
        error.parameter,
    )
    assert ErrorRecord.of(caught.value) == error


def test_records_are_told_apart_by_their_bytes():
    raws = [pack({"a": 1}), pack(BinaryResult("image/png", b"x")), pack(ErrorRecord(ErrorKind.INTERNAL, "m"))]
    assert [type(unpack(r)) for r in raws] == [JsonText, BinaryResult, ErrorRecord]
    assert len({r[:1] for r in raws}) == 2  # errors are JSON documents of their own shape


def test_cache_key_depends_on_every_part():
    call = HeavyCall("isochrone", "engine.services.isochrone:run", GeocodeParams(query="a", limit=1))
    key = protocol.cache_key("ns", call, "v1")
    assert key.startswith("ns:cache:isochrone:") and protocol.kind_of(key) == "isochrone"
    assert key == protocol.cache_key(
        "ns", HeavyCall(call.kind, call.service_ref, GeocodeParams(query="a", limit=1)), "v1"
    )
    others = [
        protocol.cache_key("other", call, "v1"),
        protocol.cache_key("ns", call, "v2"),
        protocol.cache_key("ns", HeavyCall(call.kind, call.service_ref, GeocodeParams(query="b", limit=1)), "v1"),
        protocol.cache_key("ns", HeavyCall(call.kind, "engine.services.geometry:run", call.params), "v1"),
    ]
    assert key not in others and len(set(others)) == len(others)


@pytest.mark.integration
def test_store_wakes_every_waiter_and_clears_the_marker(redis_url):
    client = redis.Redis.from_url(redis_url)
    key = protocol.cache_key("meridiantest", HeavyCall("staticmap", "engine.services.staticmap:run", {}), "t")
    client.delete(key)
    client.set(protocol.inflight_key(key), "1")
    wakes = [protocol.new_wake_key(key) for _ in range(3)]
    client.sadd(protocol.waiters_key(key), *wakes)
    woken: list[Any] = []
    threads = [threading.Thread(target=lambda w=w: woken.append(client.blpop([w], timeout=10))) for w in wakes]
    for t in threads:
        t.start()
    image = BinaryResult("image/png", b"\x89PNG...")
    assert protocol.store_result(client, key, image, 60) == 3
    for t in threads:
        t.join(15)
    assert len(woken) == 3 and all(w is not None for w in woken)
    assert all(read_result(w[1]) == image for w in woken)  # the record itself: no second read
    assert read_result(client.get(key)) == image
    assert 0 < client.ttl(key) <= 60
    assert not client.exists(protocol.inflight_key(key), protocol.waiters_key(key))


@pytest.mark.integration
def test_claim_queues_joins_refuses_and_answers_in_one_script(redis_url):
    client = redis.Redis.from_url(redis_url)
    call = HeavyCall("isochrone", "engine.services.isochrone:run", {"claim": 1})
    key, other = protocol.cache_key("meridiantest", call, "a"), protocol.cache_key("meridiantest", call, "b")
    lists = ["meridiantest-claim-queue", "meridiantest-claim-queue\x06\x163"]
    client.delete(key, other, *lists, *(protocol.waiters_key(k) for k in (key, other)))
    client.delete(*(protocol.inflight_key(k) for k in (key, other)))
    try:
        first, second = protocol.new_wake_key(key), protocol.new_wake_key(key)
        assert protocol.claim(client, key, first, lists, 2).outcome == "queue"
        assert 0 < client.ttl(protocol.inflight_key(key)) <= protocol.CLAIM_TTL_S  # until the send extends it
        client.rpush(lists[0], "t1")
        client.rpush(lists[1], "t2")  # depth 2: full for a new task ...
        assert protocol.claim(client, key, second, lists, 2).outcome == "join"  # ... not for a joiner
        assert client.smembers(protocol.waiters_key(key)) == {first.encode(), second.encode()}
        refused = protocol.claim(client, other, protocol.new_wake_key(other), lists, 2)
        assert (refused.outcome, refused.depth) == ("full", 2)
        assert not client.exists(protocol.waiters_key(other), protocol.inflight_key(other))
        assert protocol.claim(client, other, protocol.new_wake_key(other), lists, 0).outcome == "queue"  # unbounded

        document = {"type": "FeatureCollection", "features": []}
        assert protocol.store_result(client, key, document, 60) == 2
        hit = protocol.claim(client, key, protocol.new_wake_key(key), lists, 2)
        assert hit.outcome == "hit" and hit.record is not None
        result = read_result(hit.record)
        assert isinstance(result, JsonText) and result.data == document
        assert not client.exists(protocol.waiters_key(key))  # a hit registers nothing
    finally:
        client.delete(key, other, *lists, *(protocol.waiters_key(k) for k in (key, other)))
        client.delete(*(protocol.inflight_key(k) for k in (key, other)))


class RecordingSender:
    def __init__(self) -> None:
        self.sent: list[tuple[str, list[Any], dict[str, Any]]] = []

    def send_task(self, name: str, args: Any = None, **options: Any) -> None:
        self.sent.append((name, args, options))


def _task_function(name: str):
    from tasks import batch, heavy, webhooks

    tasks: dict[str, Task[Any, Any]] = {
        protocol.HEAVY_TASK: heavy.run_heavy,
        protocol.HEAVY_JOB_TASK: batch.heavy_job,
        protocol.GEOCODE_CHUNK_TASK: batch.geocode_chunk,
        webhooks.TASK_NAME: webhooks.deliver,
    }
    task = tasks[name]
    assert task.name == name
    return task


def test_messages_bind_to_the_tasks_parameters():
    """What the web sends is what the task takes: same name, queue and arguments."""
    from tasks import webhooks

    sender = RecordingSender()
    call = HeavyCall("staticmap", "engine.services.staticmap:run", GeocodeParams(query="x", limit=2))
    protocol.send_heavy(sender, call, "k", "v1")
    protocol.send_heavy_job(sender, call, "k", "v1", "ns:job:1", 60)
    protocol.send_geocode_chunk(sender, "ns:job:2", 0, ["a", "b"], 1, 60)
    hook = delivery(
        fence_id="gf_1",
        fence_name=None,
        account_id=3,
        device="d",
        transition="enter",
        lat=1,
        lng=2,
        distance=0.5,
        url="u",
    )
    webhooks.enqueue(sender, hook)
    queues = ["staticmap", "staticmap", protocol.BATCH_QUEUE, webhooks.QUEUE]
    assert [options["queue"] for _, _, options in sender.sent] == queues
    for name, args, _ in sender.sent:
        task = _task_function(name)
        run = task.run
        parameters = inspect.signature(run).parameters
        bound = inspect.signature(run).bind(*args)  # raises TypeError on a mismatch
        assert len(bound.arguments) == len(args) <= len(parameters)
    json.dumps([args for _, args, _ in sender.sent])  # Celery's JSON serializer takes them
    assert Delivery(**sender.sent[-1][1][0]) == hook


def test_messages_label_their_arguments_briefly():
    """Every queue message names its call in ``argsrepr`` (the function and the cache key or job)
    instead of Celery's ``saferepr`` of the parameters: a third of ``send_task``'s CPU in the
    waiting request, and a batch's addresses stay out of Flower."""
    sender = RecordingSender()
    call = HeavyCall("isochrone", "engine.services.isochrone:run", GeocodeParams(query="secret street 1", limit=2))
    protocol.send_heavy(sender, call, "ns:cache:isochrone:abc", "v1")
    protocol.send_heavy_job(sender, call, "ns:cache:isochrone:abc", "v1", "ns:job:1", 60)
    protocol.send_matrix_job(sender, call, "ns:job:3", 100, 60, "v1")
    protocol.send_geocode_chunk(sender, "ns:job:2", 4, ["secret street 1", "b"], 1, 60)
    labels = [options["argsrepr"] for _, _, options in sender.sent]
    assert labels == [
        "('engine.services.isochrone:run', 'ns:cache:isochrone:abc', ...)",
        "('engine.services.isochrone:run', 'ns:job:1', ...)",
        "('ns:job:3', 100, ...)",
        "('ns:job:2', 4, ...)",
    ]
    assert all(options["kwargsrepr"] == "{}" for _, _, options in sender.sent)
    assert not any("secret" in label for label in labels)


def test_a_delivery_payload_describes_the_transition():
    hook = delivery(
        fence_id="gf_1",
        fence_name="Depot",
        account_id=7,
        device="truck-17",
        transition="exit",
        lat=60.123456789,
        lng=24.9,
        distance=12.5,
        url="https://example.com/h",
    )
    body = json.loads(hook.payload)
    assert body == {
        "id": hook.id,
        "event": "geofence.exit",
        "occurred_at": hook.occurred_at,
        "fence": {"id": "gf_1", "name": "Depot"},
        "device": "truck-17",
        "transition": "exit",
        "point": {"lat": 60.1234568, "lng": 24.9},
        "distance": 12.5,
    }
    assert hook.occurred_at.endswith("Z") and len(hook.id) == 32
    with pytest.raises(ValueError):
        delivery(
            fence_id="f",
            fence_name=None,
            account_id=1,
            device="d",
            transition="inside",
            lat=0,
            lng=0,
            distance=0,
            url="u",
        )


@pytest.mark.integration
def test_a_large_record_is_stored_once_and_every_waiter_reads_it(redis_url):
    """Above PUSH_RECORD_MAX_BYTES (a 1,000 x 1,000 matrix) the record is stored by a plain SET
    and each waiter gets a bare wake-up, then reads the key: two requests waiting on one task
    both answer with the stored bytes, and nothing of the wait is left in Redis; a later request
    reads it from the cache with a GET (not through the claim script's reply)."""
    from marshmallow import Schema

    from app.dispatch import Dispatcher
    from app.registry import Function

    client = redis.Redis.from_url(redis_url)
    document = {"durations": [[i + 0.1] * 2000 for i in range(20)]}
    assert len(pack(document)) > protocol.PUSH_RECORD_MAX_BYTES
    function = Function(
        service="matrix", cmd="largerecordtest", core_schema=Schema, queue="matrix", service_ref="engine.services.x:run"
    )
    keys: list[str] = []

    class Worker:  # stores the result once both requests wait
        def send_task(self, name: str, args: Any = None, **options: Any) -> None:
            keys.append(args[2])
            threading.Timer(0.5, lambda: protocol.store_result(client, args[2], document, 60)).start()

    dispatcher = Dispatcher(client, Worker(), "meridiantest", wait_timeout_s=10)
    answers: list[Any] = []
    threads = [
        threading.Thread(target=lambda: answers.append(dispatcher.run(function, {"large": 1}, "t"))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    try:
        assert len(keys) == 1 and len(answers) == 2
        assert all(isinstance(a, JsonText) and a.body == pack(document)[1:] for a in answers)
        assert read_result(client.get(keys[0])).data == document
        assert not client.keys(keys[0] + ":*")  # no waiters, marker or wake-up list left
        # a later identical request: the claim says it is stored, the record is read with a GET
        assert protocol.claim(client, keys[0], protocol.new_wake_key(keys[0]), [], 0).outcome == "stored"
        again = dispatcher.run(function, {"large": 1}, "t")
        assert isinstance(again, JsonText) and again.body == pack(document)[1:] and len(keys) == 1
        assert not client.keys(keys[0] + ":*")
    finally:
        client.delete(*keys)


@pytest.mark.integration
def test_a_large_record_wakes_its_waiters_bare(redis_url):
    client = redis.Redis.from_url(redis_url)
    key = protocol.cache_key("meridiantest", HeavyCall("matrix", "engine.services.x:run", {"bare": 1}), "t")
    wake = protocol.new_wake_key(key)
    client.sadd(protocol.waiters_key(key), wake)
    client.set(protocol.inflight_key(key), "1")
    document = {"rows": list(range(40_000))}
    try:
        assert protocol.store_result(client, key, document, 60) == 1
        assert client.lrange(wake, 0, -1) == [protocol.WAKE_UP] and not protocol.is_record(protocol.WAKE_UP)
        assert read_result(client.get(key)).data == document and 0 < client.ttl(key) <= 60
        assert not client.exists(protocol.inflight_key(key), protocol.waiters_key(key))
    finally:
        client.delete(key, wake)
