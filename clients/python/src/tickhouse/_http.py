"""One HTTP session with the service: auth header, typed errors, retries on 503 and lost connections."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from .errors import error_from_response

# Failures where the request never reached the service: safe to send again whatever the method.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Failures after sending: only a GET (no side effects) is sent again.
_LOST = (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout, httpx.WriteError)


class Transport:
    def __init__(self, base_url: str, api_key: str | None, *, timeout: float, retries: int, backoff: float, max_backoff: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._http = httpx.Client(
            base_url=self.base_url, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), headers={"User-Agent": "tickhouse-python/0.1"}
        )

    def close(self) -> None:
        self._http.close()

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def json(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None, auth: bool = True) -> Any:
        """The parsed JSON answer of a request (the whole envelope); errors raise typed exceptions."""
        with self.stream(method, path, params=params, body=body, auth=auth) as response:
            response.read()
        return response.json()

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
            except _NOT_SENT:
                if attempt >= self.retries:
                    raise
            except _LOST:
                if method != "GET" or attempt >= self.retries:
                    raise
            else:
                if response.status_code < 400:
                    try:
                        yield response
                    finally:
                        response.close()
                    return
                error = error_from_response(response.status_code, response.read(), response.headers)
                response.close()
                # 503 is the service saying "retry shortly"; every other error (a daily 429 above all) is final.
                if response.status_code != 503 or attempt >= self.retries:
                    raise error
                retry_after = response.headers.get("retry-after")
                if retry_after and retry_after.isdigit():
                    time.sleep(min(float(retry_after), self.max_backoff))
                    attempt += 1
                    continue
            time.sleep(min(self.backoff * 2**attempt * (1 + random.random() / 2), self.max_backoff))
            attempt += 1
