"""Every typed exception, raised by the status and code the live service answers (docs/API.md §6), and the
retry policy: a transient 503 and lost connections are retried; a daily 429 and a permanent 503 never are."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from conftest import Live
from service import REPO, RedisServer, Service, create_account, free_port

import tickhouse
from tickhouse import errors
from tickhouse.errors import error_from_response


def next_utc_midnight() -> datetime:
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today + timedelta(days=1)


def test_400_invalid_parameter_names_the_parameter(client: tickhouse.Client, big_asset: dict[str, Any]) -> None:
    with pytest.raises(tickhouse.InvalidParameter) as raised:
        client.book(big_asset["asset_id"], limit=0)
    e = raised.value
    assert (e.status, e.code, e.param) == (400, "invalid_parameter", "limit")
    assert e.message == "limit must be an integer between 1 and 100"
    assert e.request_id


def test_401_invalid_api_key(live: Live) -> None:
    with tickhouse.Client(live.url, "th_live_" + "A" * 43) as c, pytest.raises(tickhouse.InvalidApiKey) as raised:
        c.me()
    assert (raised.value.status, raised.value.code) == (401, "invalid_api_key")


def test_403_data_access_denied_carries_plan_and_earliest_allowed(live: Live, big_asset: dict[str, Any]) -> None:
    with tickhouse.Client(live.url, live.free_key) as c, pytest.raises(tickhouse.DataAccessDenied) as raised:
        c.ticks(big_asset["asset_id"], big_asset["first"], big_asset["last"])
    e = raised.value
    assert (e.status, e.code, e.plan) == (403, "data_access_denied", "free")
    assert e.earliest_allowed == next_utc_midnight() - timedelta(days=1)
    assert e.message == "Your plan (free) only allows access to the last 0 day(s) of data."


def test_404_not_found_before_the_first_book(client: tickhouse.Client, big_asset: dict[str, Any]) -> None:
    # The body holds only `message` (docs/API.md §6); the client names the code itself.
    with pytest.raises(tickhouse.NotFound) as raised:
        client.book(big_asset["asset_id"], at=big_asset["first"] - 1)
    assert (raised.value.status, raised.value.code, raised.value.detail) == (404, "not_found", {"message": raised.value.message})
    assert raised.value.message and raised.value.request_id


def test_413_payload_too_large(client: tickhouse.Client) -> None:
    with pytest.raises(tickhouse.PayloadTooLarge) as raised:
        client.subscribe("x" * 17_000)  # type: ignore[arg-type]
    assert (raised.value.status, raised.value.code) == (413, "payload_too_large")


def test_429_daily_limit_is_raised_at_once_with_reset_at(live: Live, big_asset: dict[str, Any]) -> None:
    with tickhouse.Client(live.url) as anonymous:
        key = anonymous.register()["api_key"]
    with tickhouse.Client(live.url, key, retries=4) as c:
        for _ in range(100):  # plan free: 100 data requests a day
            c.price(big_asset["asset_id"])
        started = time.monotonic()
        with pytest.raises(tickhouse.RateLimitExceeded) as raised:
            c.price(big_asset["asset_id"])
        assert time.monotonic() - started < 2  # not waited out, not retried
    e = raised.value
    assert (e.status, e.code, e.limit, e.plan) == (429, "rate_limit_exceeded", 100, "free")
    assert e.reset_at == next_utc_midnight()
    assert e.retry_after is not None and abs(e.retry_after - (next_utc_midnight() - datetime.now(timezone.utc)).total_seconds()) < 5
    assert e.message == "Daily request limit (100) exceeded."


def test_500_maps_to_internal_error_with_the_request_id() -> None:
    # The service has no known way to answer 500 on purpose (it is the bug status), so this one is
    # checked on a contract-shaped body instead of a live answer.
    e = error_from_response(500, b'{"detail":{"error":"internal_error","message":"Internal error.","request_id":"r-1"}}', {"X-Request-Id": "r-1"})
    assert isinstance(e, tickhouse.InternalError) and (e.status, e.code, e.request_id) == (500, "internal_error", "r-1")


# --- a second service on a real Redis: registration flood, 503 and retries -----------------------


@pytest.fixture(scope="module")
def redis_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, RedisServer, str]]:
    if not RedisServer.available():
        if os.environ.get("TEST_REQUIRE_REDIS") == "1":
            pytest.fail("redis-server is not installed but TEST_REQUIRE_REDIS=1")
        pytest.skip("redis-server is not installed: the 503 and registration-flood tests need it")
    redis = RedisServer(tmp_path_factory.mktemp("redis"))
    redis.start()
    service = Service(tmp_path_factory.mktemp("redis-service") / "data", {"REDIS_URL": redis.url, "DEMO_DATA": "0"})
    try:
        key = create_account(service.env, "unlimited")
        yield service, redis, key
    finally:
        service.stop()
        redis.stop()


def started(service: Service) -> None:
    if service.process is None:  # the connection-retry test starts it; when run alone, start it here
        service.start()


def test_connection_errors_are_retried_until_the_service_is_up(redis_service: tuple[Service, RedisServer, str]) -> None:
    service, _, key = redis_service
    answers: list[Any] = []
    with tickhouse.Client(service.url, key, retries=30, backoff=0.2, max_backoff=1.0) as c:
        worker = threading.Thread(target=lambda: answers.append(c.me()))
        worker.start()  # nothing listens on the port yet: connection refused, retried
        service.start()
        worker.join(60)
    assert answers and answers[0]["plan"] == "unlimited"


def test_503_is_retried_then_raised_with_retry_after(redis_service: tuple[Service, RedisServer, str]) -> None:
    service, redis, key = redis_service
    started(service)
    assert redis.process is not None
    os.kill(redis.process.pid, signal.SIGSTOP)  # the account store stops answering
    try:
        with tickhouse.Client(service.url, key, retries=2, max_backoff=0.1) as c, pytest.raises(tickhouse.ServiceUnavailable) as raised:
            c.me()
        e = raised.value
        assert (e.status, e.code, e.retry_after) == (503, "service_unavailable", 5)

        answers: list[Any] = []
        with tickhouse.Client(service.url, key, retries=20, max_backoff=0.5) as c:
            worker = threading.Thread(target=lambda: answers.append(c.me()))
            worker.start()
            time.sleep(3)
            os.kill(redis.process.pid, signal.SIGCONT)  # back: a retry now succeeds
            worker.join(60)
        assert answers and answers[0]["plan"] == "unlimited"
    finally:
        os.kill(redis.process.pid, signal.SIGCONT)


def test_429_too_many_registrations_carries_the_limit(redis_service: tuple[Service, RedisServer, str]) -> None:
    service, _, _ = redis_service
    started(service)
    with tickhouse.Client(service.url, retries=4) as c:
        for _ in range(20):  # 20 registrations per IP per hour
            c.register()
        with pytest.raises(tickhouse.TooManyRegistrations) as raised:
            c.register()
    e = raised.value
    assert (e.status, e.code, e.limit) == (429, "too_many_registrations", 20)
    assert e.retry_after is not None and 0 < e.retry_after <= 3600


def test_429_too_many_concurrent_requests_is_retried_then_raised(redis_service: tuple[Service, RedisServer, str], tmp_path: Any) -> None:
    """A free key runs one heavy request at a time, counted in Redis (issue 35): a replay WebSocket
    holds the slot; an export meanwhile is retried, then raised; once the replay ends it goes through."""
    service, _, _ = redis_service
    started(service)
    key = create_account(service.env, "free")
    now = int(time.time() * 1000)
    midnight = now - now % 86_400_000
    replay = socket.create_connection(("127.0.0.1", service.port))
    try:
        replay.sendall(
            (
                f"GET /v1/replay/market?from={midnight}&to={now}&speed=1&key={key} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            ).encode()
        )
        assert replay.recv(4096).startswith(b"HTTP/1.1 101 ")
        with tickhouse.Client(service.url, key, retries=2, max_backoff=0.1) as c:
            with pytest.raises(tickhouse.TooManyConcurrentRequests) as raised:
                c.export("1001", midnight, now, tmp_path / "refused.csv")
            assert c.me()["requests_today"] == 1  # the replay only: refusals are not counted
        e = raised.value
        assert (e.status, e.code, e.limit, e.plan, e.retry_after) == (429, "too_many_concurrent_requests", 1, "free", 2)
        assert not (tmp_path / "refused.csv").exists()
    finally:
        replay.close()
    with tickhouse.Client(service.url, key, retries=20, max_backoff=0.5) as c:
        done = c.export("1001", midnight, now, tmp_path / "after.csv")
        assert done.path.read_text().startswith("timestamp,event_type,side,")
        assert c.me()["requests_today"] == 2


def test_503_payments_unavailable_is_raised_at_once(redis_service: tuple[Service, RedisServer, str]) -> None:
    # With REDIS_URL and no provider the service takes no payments: a 503 that lasts, never retried.
    service, _, key = redis_service
    started(service)
    counter = 'tickhouse_http_requests_total{route="/v1/billing/subscribe",method="POST",status="503"}'

    def answered() -> int:
        text = httpx.get(service.url + "/metrics", timeout=10).text
        found = re.search(re.escape(counter) + r" (\d+)", text)
        return int(found.group(1)) if found else 0

    before = answered()
    with tickhouse.Client(service.url, key, retries=4) as c, pytest.raises(tickhouse.PaymentsUnavailable) as raised:
        c.subscribe("monthly")
    e = raised.value
    assert (e.status, e.code, type(e).__mro__[1]) == (503, "payments_unavailable", tickhouse.ApiError)
    assert not isinstance(e, tickhouse.ServiceUnavailable)
    assert answered() == before + 1  # one request: no retry


# --- every code the server can answer, and failures without an answer -----------------------------


def server_error_status() -> dict[str, int]:
    """The server's closed list of error codes and their statuses (src/http/errors.ts ERROR_STATUS)."""
    script = "import { ERROR_STATUS } from './src/http/errors.ts'; process.stdout.write(JSON.stringify(ERROR_STATUS))"
    out = subprocess.run(["node", "--import", "tsx", "--input-type=module", "-e", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    table: dict[str, int] = json.loads(out.stdout)
    return table


def test_every_server_error_code_has_its_class() -> None:
    table = server_error_status()
    assert len(table) >= 17
    assert table == errors.ERROR_STATUS
    for code, status in table.items():
        # A 404 body carries no code; every other error body names its code (docs/API.md §6).
        body = {"message": "m"} if status == 404 else {"error": code, "message": "m"}
        e = error_from_response(status, json.dumps({"detail": body}).encode(), {"X-Request-Id": "r"})
        assert type(e) is errors.ERROR_CLASSES[code] and type(e) is not tickhouse.ApiError, code
        assert (e.status, e.code, e.message, e.request_id) == (status, code, "m", "r")
        assert isinstance(e, tickhouse.TickhouseError) and getattr(tickhouse, type(e).__name__) is type(e)
    # A code this client does not know (a newer service) falls back to its status's class.
    e = error_from_response(503, b'{"detail":{"error":"brand_new","message":"x"}}', {})
    assert (type(e), e.code) == (tickhouse.ServiceUnavailable, "brand_new")


def test_a_service_that_cannot_be_reached_raises_connection_failed() -> None:
    with tickhouse.Client(f"http://127.0.0.1:{free_port()}", "k", retries=0) as c, pytest.raises(tickhouse.ConnectionFailed) as raised:
        c.me()
    assert isinstance(raised.value, tickhouse.TransportError) and isinstance(raised.value, tickhouse.TickhouseError)
    assert isinstance(raised.value.__cause__, httpx.ConnectError) and raised.value.status is None
    with pytest.raises(tickhouse.ConnectionFailed):
        next(tickhouse.Client(f"http://127.0.0.1:{free_port()}", "k").replay(["1"], 0, 1))


def test_an_answer_cut_midway_raises_connection_lost() -> None:
    # A server that sends the head of a 200 and half its body, then hangs up.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"success": true, "data": {')

    worker = threading.Thread(target=serve)
    worker.start()
    try:
        with tickhouse.Client(f"http://127.0.0.1:{port}", retries=0) as c, pytest.raises(tickhouse.ConnectionLost) as raised:
            c.market_stats()
    finally:
        worker.join(10)
        listener.close()
    assert isinstance(raised.value, tickhouse.TransportError) and isinstance(raised.value.__cause__, httpx.TransportError)


def test_replay_closed_is_a_tickhouse_error() -> None:
    e = tickhouse.ReplayClosed(1008, "too many assets")
    assert isinstance(e, tickhouse.TickhouseError) and (e.close_code, e.reason, e.status) == (1008, "too many assets", None)


def test_a_body_not_from_the_service_raises_by_status() -> None:
    # E.g. a reverse proxy's own pages: a 503 is still worth a retry; a 502 says nothing about payments.
    e = error_from_response(503, b"<html>unavailable</html>", {})
    assert (type(e), e.code, e.message) == (tickhouse.ServiceUnavailable, "service_unavailable", "<html>unavailable</html>")
    e = error_from_response(502, b"<html>bad gateway</html>", {})
    assert (type(e), e.code, e.message) == (tickhouse.ApiError, None, "<html>bad gateway</html>")
