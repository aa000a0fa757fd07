"""Every exception the client raises derives from :class:`TickhouseError`.

- :class:`ApiError` and its subclasses: the service answered with an error status. There is one class
  per error code of the API contract (docs/API.md §6, and the codes of the billing, replay and HTTP
  layers); each exposes the extra members its code carries as attributes. The body is
  ``{"detail": {"error": <code>, "message": <text>, ...extra}}``, except a 404, whose ``detail`` holds
  only ``message``: the client raises :class:`NotFound` for any 404 and sets its ``code`` to
  ``"not_found"`` itself.
- :class:`TransportError`: no answer came: the service could not be reached
  (:class:`ConnectionFailed`) or the connection broke or timed out (:class:`ConnectionLost`).
- :class:`ReplayClosed`: the replay WebSocket closed other than with ``1000 replay complete``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any


class TickhouseError(Exception):
    """Base class of every error the client raises.

    Attributes
    ----------
    status : int or None
        HTTP status of the answer; None when there was no answer (transport failures, replay closes).
    code : str or None
        The error code (``detail.error`` of the body), e.g. ``"invalid_parameter"``.
    message : str
        Human-readable text.
    detail : dict
        The answer's ``detail`` object as sent (empty without an answer).
    headers : dict
        The answer's headers, names in lower case (empty without an answer).
    request_id : str or None
        The service's id of the request (``X-Request-Id``), to quote when reporting a problem.
    """

    status: int | None = None
    code: str | None = None

    def __init__(self, message: str, *, status: int | None = None, detail: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.detail: dict[str, Any] = dict(detail or {})
        raw_code = self.detail.get("error")
        self.code = raw_code if isinstance(raw_code, str) else type(self).code
        self.message = message
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        request_id = self.detail.get("request_id") or self.headers.get("x-request-id")
        self.request_id: str | None = str(request_id) if request_id else None
        super().__init__(" ".join(str(part) for part in (status, self.code and f"{self.code}:", message) if part))


# --- error answers ----------------------------------------------------------------------------------


class ApiError(TickhouseError):
    """The service answered with an error status (4xx or 5xx)."""

    status: int

    def __init__(self, status: int, detail: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(detail.get("message", "")), status=status, detail=detail, headers=headers)


class _RetryAfter(ApiError):
    @property
    def retry_after(self) -> int | None:
        """Seconds the service asks to wait (``Retry-After``), if it sent one."""
        raw = self.headers.get("retry-after")
        return int(raw) if raw is not None and raw.isdigit() else None


class InvalidParameter(ApiError):
    """400 ``invalid_parameter``: a missing, malformed or out-of-range parameter; ``param`` names it."""

    code = "invalid_parameter"

    @property
    def param(self) -> str | None:
        """The first offending parameter (``"body"`` for a body that is not JSON)."""
        value = self.detail.get("param")
        return value if isinstance(value, str) else None


class BadRequest(ApiError):
    """400 ``bad_request``: HTTP the service could not read (a bad request target, Host or framing)."""

    code = "bad_request"


class InvalidApiKey(ApiError):
    """401 ``invalid_api_key``: the key is missing, malformed, unknown or was regenerated."""

    code = "invalid_api_key"


class InvalidSignature(ApiError):
    """401 ``invalid_signature``: a payment callback whose signature does not verify (billing)."""

    code = "invalid_signature"


class DataAccessDenied(ApiError):
    """403 ``data_access_denied``: the request reaches before the plan's history window."""

    code = "data_access_denied"

    @property
    def plan(self) -> str | None:
        """The account's plan."""
        value = self.detail.get("plan")
        return value if isinstance(value, str) else None

    @property
    def earliest_allowed(self) -> datetime | None:
        """The first instant the plan may read (UTC midnight, ``data_access_days`` ago)."""
        raw = self.detail.get("earliest_allowed")
        return datetime.fromisoformat(raw) if isinstance(raw, str) else None


class NotFound(ApiError):
    """404: no book at or before the requested time, no such invoice, or an unknown path.

    The body of a 404 carries no code (docs/API.md §6); the client sets ``code`` to ``"not_found"``.
    """

    code = "not_found"


class RequestTimeout(ApiError):
    """408 ``request_timeout``: the request did not reach the service completely within 300 s."""

    code = "request_timeout"


class PayloadTooLarge(ApiError):
    """413 ``payload_too_large``: a request body over 16 KiB."""

    code = "payload_too_large"


class MethodNotAllowed(ApiError):
    """405 ``method_not_allowed``: a method the path does not take (``GET /mcp``: MCP's streamable HTTP is POST only here)."""

    code = "method_not_allowed"


class ExpectationFailed(ApiError):
    """417 ``expectation_failed``: an ``Expect`` header other than ``100-continue``."""

    code = "expectation_failed"


class UpgradeRequired(ApiError):
    """426 ``upgrade_required``: a plain HTTP request to the replay WebSocket's path."""

    code = "upgrade_required"


class HeaderTooLarge(ApiError):
    """431 ``header_too_large``: request headers over 16 KiB."""

    code = "header_too_large"


class RateLimitExceeded(_RetryAfter):
    """429 ``rate_limit_exceeded``: the daily request limit is used up until ``reset_at`` (next UTC midnight).

    Never retried: waiting means waiting until the next UTC day.
    """

    code = "rate_limit_exceeded"

    @property
    def limit(self) -> int | None:
        """The plan's daily request limit."""
        value = self.detail.get("limit")
        return value if isinstance(value, int) else None

    @property
    def plan(self) -> str | None:
        """The account's plan."""
        value = self.detail.get("plan")
        return value if isinstance(value, str) else None

    @property
    def reset_at(self) -> datetime | None:
        """When the counter resets (``X-RateLimit-Reset``, Unix seconds), as an aware UTC datetime."""
        raw = self.headers.get("x-ratelimit-reset")
        return datetime.fromtimestamp(int(raw), timezone.utc) if raw is not None and raw.isdigit() else None


class TooManyRegistrations(_RetryAfter):
    """429 ``too_many_registrations``: more than ``limit`` registrations from this IP address in an hour."""

    code = "too_many_registrations"

    @property
    def limit(self) -> int | None:
        """Registrations allowed per IP address and hour."""
        value = self.detail.get("limit")
        return value if isinstance(value, int) else None


class TooManyConcurrentRequests(_RetryAfter):
    """429 ``too_many_concurrent_requests``: the plan's heavy requests (exports, Tardis files and slices,
    replays) are all running; one more may start once one of them ends.

    Retried (``retries``, honouring ``Retry-After``) before it is raised.
    """

    code = "too_many_concurrent_requests"

    @property
    def limit(self) -> int | None:
        """Heavy requests the plan runs at once."""
        value = self.detail.get("limit")
        return value if isinstance(value, int) else None

    @property
    def plan(self) -> str | None:
        """The account's plan."""
        value = self.detail.get("plan")
        return value if isinstance(value, str) else None


class InternalError(ApiError):
    """500 ``internal_error``: a bug in the service; quote ``request_id`` when reporting it."""

    code = "internal_error"


class PaymentProviderError(ApiError):
    """502 ``payment_provider_error``: the payment processor failed; nothing was recorded. Not retried."""

    code = "payment_provider_error"


class ServiceUnavailable(_RetryAfter):
    """503 ``service_unavailable``: ClickHouse or the account store is unreachable for a moment.

    Retried (``retries``, honouring ``Retry-After``) before it is raised.
    """

    code = "service_unavailable"


class PaymentsUnavailable(ApiError):
    """503 ``payments_unavailable``: this service takes no payments (no provider configured).

    Permanent until its operator configures one, so it is raised at once, never retried.
    """

    code = "payments_unavailable"


# --- no answer ----------------------------------------------------------------------------------------


class TransportError(TickhouseError):
    """No answer: the service could not be reached, or the connection broke or timed out.

    Raised once the client's retries are spent; ``__cause__`` holds the underlying exception.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ConnectionFailed(TransportError):
    """The service could not be reached (connection refused, DNS failure, connect timeout): nothing was sent."""


class ConnectionLost(TransportError):
    """The connection broke or timed out after the request was sent, possibly in the middle of the answer."""


class ReplayClosed(TickhouseError):
    """The replay WebSocket closed other than with ``1000 replay complete`` (e.g. 1008 policy violation).

    ``close_code`` and ``reason`` are the WebSocket close frame's (``close_code`` None when the
    connection ended without one).
    """

    def __init__(self, close_code: int | None, reason: str) -> None:
        self.close_code = close_code
        self.reason = reason
        super().__init__(f"replay closed with {close_code}: {reason}")


# code → class; each class's status comes from the table below. A code the client does not know (a
# newer service) falls back to the class of its status, then to ApiError.
ERROR_CLASSES: dict[str, type[ApiError]] = {
    "invalid_parameter": InvalidParameter,
    "bad_request": BadRequest,
    "invalid_api_key": InvalidApiKey,
    "invalid_signature": InvalidSignature,
    "data_access_denied": DataAccessDenied,
    "not_found": NotFound,
    "request_timeout": RequestTimeout,
    "method_not_allowed": MethodNotAllowed,
    "payload_too_large": PayloadTooLarge,
    "expectation_failed": ExpectationFailed,
    "upgrade_required": UpgradeRequired,
    "header_too_large": HeaderTooLarge,
    "rate_limit_exceeded": RateLimitExceeded,
    "too_many_registrations": TooManyRegistrations,
    "too_many_concurrent_requests": TooManyConcurrentRequests,
    "internal_error": InternalError,
    "payment_provider_error": PaymentProviderError,
    "service_unavailable": ServiceUnavailable,
    "payments_unavailable": PaymentsUnavailable,
}
# The status each code is answered with (src/http/errors.ts ERROR_STATUS; a test compares the two).
ERROR_STATUS: dict[str, int] = {
    "invalid_parameter": 400,
    "bad_request": 400,
    "invalid_api_key": 401,
    "invalid_signature": 401,
    "data_access_denied": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "payload_too_large": 413,
    "expectation_failed": 417,
    "upgrade_required": 426,
    "header_too_large": 431,
    "rate_limit_exceeded": 429,
    "too_many_registrations": 429,
    "too_many_concurrent_requests": 429,
    "internal_error": 500,
    "payment_provider_error": 502,
    "service_unavailable": 503,
    "payments_unavailable": 503,
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidParameter,
    401: InvalidApiKey,
    403: DataAccessDenied,
    404: NotFound,
    408: RequestTimeout,
    413: PayloadTooLarge,
    417: ExpectationFailed,
    426: UpgradeRequired,
    431: HeaderTooLarge,
    500: InternalError,
    503: ServiceUnavailable,
}


def error_from_response(status: int, body: bytes, headers: Mapping[str, str]) -> ApiError:
    """The typed exception for an error answer.

    Parameters
    ----------
    status : int
        The HTTP status.
    body : bytes
        The answer's body (``{"detail": {...}}``; anything else becomes ``detail.message``).
    headers : Mapping[str, str]
        The answer's headers.

    Returns
    -------
    ApiError
        The class of ``detail.error`` when it is known and answered with ``status``; else the class of
        ``status`` (every 404 is :class:`NotFound`; a 502 only with its code, since proxies answer 502
        too); else :class:`ApiError`.
    """
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    detail: dict[str, Any] = (
        parsed["detail"] if isinstance(parsed, dict) and isinstance(parsed.get("detail"), dict) else {"message": body.decode("utf-8", "replace")}
    )
    code = detail.get("error")
    known = ERROR_CLASSES.get(code) if isinstance(code, str) and ERROR_STATUS.get(code) == status else None
    cls = known or _BY_STATUS.get(status, ApiError)
    return cls(status, detail, headers)
