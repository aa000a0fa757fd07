"""One HTTP session with the service: auth header, typed errors, retries on a transient 503 and lost connections."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from .errors import ConnectionFailed, ConnectionLost, ServiceUnavailable, TooManyConcurrentRequests, TransportError, error_from_response

# Failures where the request never reached the service: safe to send again whatever the method.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
# Failures after sending: only a GET (no side effects) is sent again.
_LOST = (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout, httpx.WriteError, httpx.WriteTimeout)


def transport_error(err: httpx.TransportError, base_url: str) -> TransportError:
    """The client's exception for an httpx transport failure (raised ``from`` it)."""
    if isinstance(err, _NOT_SENT):
        return ConnectionFailed(f"could not connect to {base_url}: {err or type(err).__name__}")
    return ConnectionLost(f"the connection to {base_url} broke or timed out: {err or type(err).__name__}")


class Transport:
    def __init__(self, base_url: str, api_key: str | None, *, timeout: float, retries: int, backoff: float, max_backoff: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        # gzip, never zstd: a service on Node 20 streams zstd as one frame per chunk (valid, RFC 8878;
        # on Node 22.15+ it is one frame), and httpx 0.28's zstd decoder, on as soon as `zstandard` is
        # installed (nautilus_trader and tardis-dev pull it in), raises "cannot use a decompressobj
        # multiple times" when a network read ends exactly at a frame's end.
        headers = {"User-Agent": "tickhouse-python/0.1", "Accept-Encoding": "gzip"}
        self._http = httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), headers=headers)

    def close(self) -> None:
        self._http.close()

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None, auth: bool = True) -> Any:
        """The parsed JSON answer of a request (the whole envelope); errors raise typed exceptions."""
        with self.stream(method, path, params=params, body=body, auth=auth) as response:
            return json.loads(self.read(response))

    def read(self, response: httpx.Response) -> bytes:
        """The rest of a streamed body; a transfer cut midway raises ConnectionLost."""
        try:
            return b"".join(response.iter_bytes(1 << 20))
        except httpx.TransportError as err:
            raise transport_error(err, self.base_url) from err

    def chunks(self, response: httpx.Response) -> Iterator[bytes]:
        """A streamed body chunk by chunk; a transfer cut midway raises ConnectionLost."""
        try:
            yield from response.iter_bytes(1 << 20)
        except httpx.TransportError as err:
            raise transport_error(err, self.base_url) from err

    @contextmanager
    def stream(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None, auth: bool = True, headers: Mapping[str, str] | None = None
    ) -> Iterator[httpx.Response]:
        """A successful response whose body is not read yet. Retries happen before the first body byte
        only: a transfer cut later raises (never a silently short result)."""
        request_headers = {**(self.auth_headers() if auth else {}), **(headers or {})}
        query = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            request = self._http.build_request(method, path, params=query, json=body, headers=request_headers)
            try:
                response = self._http.send(request, stream=True)
            except _NOT_SENT as err:
                if attempt >= self.retries:
                    raise transport_error(err, self.base_url) from err
            except httpx.TransportError as err:
                if method != "GET" or attempt >= self.retries or not isinstance(err, _LOST):
                    raise transport_error(err, self.base_url) from err
            else:
                if response.status_code < 400:
                    try:
                        yield response
                    finally:
                        response.close()
                    return
                try:
                    content = response.read()
                except httpx.TransportError as err:
                    raise transport_error(err, self.base_url) from err
                finally:
                    response.close()
                error = error_from_response(response.status_code, content, response.headers)
                # Only service_unavailable and too_many_concurrent_requests (a slot frees when another
                # request of the account ends) mean "retry shortly"; every other error (a daily 429, or
                # payments_unavailable, a 503 that lasts until the operator configures payments) is final.
                if not isinstance(error, (ServiceUnavailable, TooManyConcurrentRequests)) or attempt >= self.retries:
                    raise error
                if error.retry_after is not None:
                    time.sleep(min(float(error.retry_after), self.max_backoff))
                    attempt += 1
                    continue
            time.sleep(min(self.backoff * 2**attempt * (1 + random.random() / 2), self.max_backoff))
            attempt += 1
