"""tickhouse: Polymarket ticks, order books and candles from a tickhouse service, as DataFrames."""

from ._client import AUTO_PROBE_ROWS, Book, Client, TardisEndpoint
from ._export import ExportResult
from ._time import to_ms
from .errors import (
    DataAccessDenied,
    InternalError,
    InvalidApiKey,
    InvalidParameter,
    NotFound,
    PayloadTooLarge,
    RateLimitExceeded,
    ReplayClosed,
    ServiceUnavailable,
    TickhouseError,
    TooManyRegistrations,
)

__all__ = [
    "AUTO_PROBE_ROWS",
    "Book",
    "Client",
    "DataAccessDenied",
    "ExportResult",
    "InternalError",
    "InvalidApiKey",
    "InvalidParameter",
    "NotFound",
    "PayloadTooLarge",
    "RateLimitExceeded",
    "ReplayClosed",
    "ServiceUnavailable",
    "TardisEndpoint",
    "TickhouseError",
    "TooManyRegistrations",
    "to_ms",
]
