"""Typed exceptions, one per status and error code of the API contract (docs/API.md §6).

Every error body is ``{"detail": {"error": <code>, "message": <text>, ...extra}}`` (404 carries only
``message``); each class exposes the extra members that its code carries as attributes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any


class TickhouseError(Exception):
    """Any error answer of the service. ``status`` is the HTTP status, ``code`` ``detail.error``."""

    def __init__(self, status: int, detail: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.detail: dict[str, Any] = dict(detail)
        self.code: str | None = self.detail.get("error")
        self.message: str = str(self.detail.get("message", ""))
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        # A 500 names its request in the body; every answer carries it in X-Request-Id.
        self.request_id: str | None = self.detail.get("request_id") or self.headers.get("x-request-id")
        super().__init__(f"{status} {self.code or ''}: {self.message}".replace("  ", " "))


class InvalidParameter(TickhouseError):
    """400 ``invalid_parameter``: ``param`` names the first offending parameter."""

    @property
    def param(self) -> str | None:
        return self.detail.get("param")


class InvalidApiKey(TickhouseError):
    """401 ``invalid_api_key``: missing, malformed or unknown key."""


class DataAccessDenied(TickhouseError):
    """403 ``data_access_denied``: the request reaches before the plan's history window."""

    @property
    def plan(self) -> str | None:
        return self.detail.get("plan")

    @property
    def earliest_allowed(self) -> datetime | None:
        raw = self.detail.get("earliest_allowed")
        return datetime.fromisoformat(raw) if isinstance(raw, str) else None


class NotFound(TickhouseError):
    """404: no book at or before the requested time, or an unknown path."""


class PayloadTooLarge(TickhouseError):
    """413 ``payload_too_large``: request body over 16 KiB."""


class _RetryAfter(TickhouseError):
    @property
    def retry_after(self) -> int | None:
        """Seconds the service asks to wait (``Retry-After``), if it sent one."""
        raw = self.headers.get("retry-after")
        return int(raw) if raw is not None and raw.isdigit() else None


class RateLimitExceeded(_RetryAfter):
    """429 ``rate_limit_exceeded``: the daily request limit is used up until ``reset_at`` (UTC midnight).

    Never retried: waiting means waiting until the next UTC day.
    """

    @property
    def limit(self) -> int | None:
        return self.detail.get("limit")

    @property
    def plan(self) -> str | None:
        return self.detail.get("plan")

    @property
    def reset_at(self) -> datetime | None:
        raw = self.headers.get("x-ratelimit-reset")
        return datetime.fromtimestamp(int(raw), timezone.utc) if raw is not None and raw.isdigit() else None


class TooManyRegistrations(_RetryAfter):
    """429 ``too_many_registrations``: more than ``limit`` registrations from this IP in an hour."""

    @property
    def limit(self) -> int | None:
        return self.detail.get("limit")


class InternalError(TickhouseError):
    """500 ``internal_error``: a bug in the service; quote ``request_id`` when reporting it."""


class ServiceUnavailable(_RetryAfter):
    """503 ``service_unavailable``: ClickHouse or the account store is unreachable (raised after retries)."""


class ReplayClosed(Exception):
    """The replay WebSocket closed other than with 1000 ``replay complete`` (e.g. 1008 policy violation)."""

    def __init__(self, code: int | None, reason: str) -> None:
        self.code = code
        self.reason = reason
        super().__init__(f"replay closed with {code}: {reason}")


# (status, code) → class, as in docs/API.md §6; 404 has no code.
_BY_CODE: dict[str, tuple[int, type[TickhouseError]]] = {
    "invalid_parameter": (400, InvalidParameter),
    "invalid_api_key": (401, InvalidApiKey),
    "data_access_denied": (403, DataAccessDenied),
    "payload_too_large": (413, PayloadTooLarge),
    "rate_limit_exceeded": (429, RateLimitExceeded),
    "too_many_registrations": (429, TooManyRegistrations),
    "internal_error": (500, InternalError),
    "service_unavailable": (503, ServiceUnavailable),
}
_BY_STATUS: dict[int, type[TickhouseError]] = {
    400: InvalidParameter,
    401: InvalidApiKey,
    403: DataAccessDenied,
    404: NotFound,
    413: PayloadTooLarge,
    500: InternalError,
    503: ServiceUnavailable,
}


def error_from_response(status: int, body: bytes, headers: Mapping[str, str]) -> TickhouseError:
    """The typed exception for an error answer: by ``detail.error`` when it matches the status, else by status."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    detail = parsed["detail"] if isinstance(parsed, dict) and isinstance(parsed.get("detail"), dict) else {"message": body.decode("utf-8", "replace")}
    known = _BY_CODE.get(detail.get("error"))  # type: ignore[arg-type]
    cls = known[1] if known and known[0] == status else _BY_STATUS.get(status, TickhouseError)
    return cls(status, detail, headers)
