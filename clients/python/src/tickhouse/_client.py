"""``Client``: one method per endpoint of the tickhouse API (docs/API.md, docs/TIME-MACHINE.md §1, §3, §4)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _frames
from ._book import Book
from ._export import ExportResult, Progress, write_stream
from ._frames import Frame, Output, TickFormat
from ._http import Transport
from ._replay import replay_events
from ._time import TimeLike, to_ms
from ._types import (
    Account,
    BillingStatus,
    Coverage,
    ExecutionPrice,
    Instrument,
    InvoiceCreated,
    MarketStats,
    PaidPlan,
    Price,
    Registration,
    ReplayEvent,
    Side,
)

if TYPE_CHECKING:
    import polars as pl

    from .hftbacktest import HftResult
    from .market_channel import MarketChannel
    from .nautilus import CatalogResult, NautilusData

EventType = Literal["price_change", "book", "last_trade_price"]
Resolution = Literal["1m", "5m", "15m", "1h", "4h", "1d"]
Via = Literal["auto", "json", "parquet", "csv", "jsonl"]
AssetId = str | int
# ``fields=`` of ticks: "all", "book_side,seq" or a list of names (docs/API.md §4).
TickFields = str | Sequence[str]

#: The environment variable the API key is read from when ``Client`` is given none.
API_KEY_ENV = "TICKHOUSE_API_KEY"

_RESOLUTION_MS = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000, "4h": 14_400_000, "1d": 86_400_000}
_MAX_TICKS_PAGE = 100_000  # /v1/ticks `limit` maximum
_MAX_CANDLES_PAGE = 1_000  # /v1/ohlcv `limit` maximum
_MAX_MARKETS_PAGE = 1_000  # /v1/markets `limit` maximum
# ticks(via="auto"): a range that fits in one JSON page of this size is answered by that page; a
# larger one is fetched as one Parquet export, several times faster than JSON pages beyond that.
AUTO_PROBE_ROWS = 10_000


@dataclass(frozen=True)
class TardisEndpoint:
    """The two endpoints Tardis's own clients take (docs/TARDIS.md): ``datasets`` for
    ``tardis_dev.download_datasets(..., endpoint=)``, ``replay`` for ``tardis_dev.replay(..., endpoint=)``."""

    datasets: str
    replay: str


class Client:
    """A client of one tickhouse service.

    Parameters
    ----------
    base_url : str, default "http://localhost:8080"
        The service's address.
    api_key : str, optional
        The key (``th_live_…``) sent as ``Authorization: Bearer``. Default: the ``TICKHOUSE_API_KEY``
        environment variable; without either, only public endpoints and :meth:`register` work.
    timeout : float, default 300
        Seconds to wait for an answer (connecting: at most 10).
    retries : int, default 4
        How often a transient failure is tried again: a 503 ``service_unavailable`` (honouring
        ``Retry-After``), a connection that could not be made, and, for GETs, a connection lost before
        the answer began.
    backoff, max_backoff : float, default 0.5 and 30
        Exponential backoff between retries, in seconds, and its ceiling.

    Notes
    -----
    Times are accepted as int Unix milliseconds, ``datetime``, ``pandas.Timestamp``, ``numpy.datetime64``
    or ISO 8601 text; a time without a zone is UTC. Ranges are inclusive at both ends. Every failure
    raises a subclass of :class:`tickhouse.TickhouseError` (see ``tickhouse.errors``).
    """

    def __init__(
        self,
        base_url: str = "http://localhost:8080",
        api_key: str | None = None,
        *,
        timeout: float = 300.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None
        self._t = Transport(base_url, key, timeout=timeout, retries=retries, backoff=backoff, max_backoff=max_backoff)

    @property
    def base_url(self) -> str:
        """The service's address, without a trailing slash."""
        return self._t.base_url

    @property
    def api_key(self) -> str | None:
        """The key this client sends (None: none)."""
        return self._t.api_key

    @property
    def tardis_endpoint(self) -> TardisEndpoint:
        """Where Tardis's clients find tickhouse: pass ``.datasets`` or ``.replay`` as their ``endpoint``
        (with ``api_key=client.api_key``) and they download and replay this service's history."""
        base = self._t.base_url.rstrip("/")
        return TardisEndpoint(datasets=f"{base}/v1/tardis/datasets", replay=f"{base}/v1/tardis")

    def close(self) -> None:
        """Closes the client's connections."""
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- accounts and billing -------------------------------------------------------------------

    def register(self, email: str | None = None) -> Registration:
        """Creates a free account (``POST /v1/register``) and switches this client to its key.

        Parameters
        ----------
        email : str, optional
            An address to keep with the account.

        Returns
        -------
        Registration
            ``api_key`` (shown this once: keep it), ``plan`` ("free"), ``message`` and ``example``.

        Raises
        ------
        TooManyRegistrations
            More than 20 registrations from this IP address within an hour.
        """
        body = {"email": email} if email is not None else {}
        registration = cast(Registration, self._t.call("POST", "/v1/register", body=body, auth=False)["data"])
        self._t.api_key = registration["api_key"]
        return registration

    def me(self) -> Account:
        """The account of the key (``GET /v1/me``): plan, its window and limit, today's count. Not counted.

        Returns
        -------
        Account
        """
        return cast(Account, self._t.call("GET", "/v1/me")["data"])

    def regenerate_key(self) -> str:
        """Replaces the key (``POST /v1/keys/regenerate``); the old one stops working at once.

        Returns
        -------
        str
            The new key, which this client uses from now on.
        """
        key = cast(str, self._t.call("POST", "/v1/keys/regenerate")["data"]["api_key"])
        self._t.api_key = key
        return key

    def billing_status(self) -> BillingStatus:
        """The plan, its expiry and the last 10 invoices (``GET /v1/billing/status``).

        Returns
        -------
        BillingStatus
        """
        return cast(BillingStatus, self._t.call("GET", "/v1/billing/status")["data"])

    def subscribe(self, plan: PaidPlan) -> InvoiceCreated:
        """An invoice for ``plan`` (``POST /v1/billing/subscribe``); the plan starts once it is paid.

        Parameters
        ----------
        plan : {"daily", "monthly", "unlimited"}

        Returns
        -------
        InvoiceCreated
            Pay at ``invoice_url``.

        Raises
        ------
        PaymentsUnavailable
            The service takes no payments (raised at once, not retried).
        """
        return cast(InvoiceCreated, self._t.call("POST", "/v1/billing/subscribe", body={"plan": plan})["data"])

    # --- markets --------------------------------------------------------------------------------

    def markets(self, search: str | None = None, *, limit: int | None = None, offset: int = 0) -> pd.DataFrame:
        """Tokens with data, most active first (``GET /v1/markets``, every page unless ``limit``). Public.

        Parameters
        ----------
        search : str, optional
            Case-insensitive substring of the condition id or the question.
        limit : int, optional
            At most this many rows (default: all).
        offset : int, default 0
            Rows to skip.

        Returns
        -------
        pandas.DataFrame
            ``market, asset_id, side, first_seen, last_seen, total_ticks, question, slug``;
            ``first_seen``/``last_seen`` as UTC timestamps, ``side`` the outcome label (``YES``, ``NO``, …).

        Warns
        -----
        UserWarning
            While a first start's demo dataset is still loading (counts are partial).
        """
        rows: list[dict[str, Any]] = []
        while True:
            page = min(limit - len(rows), _MAX_MARKETS_PAGE) if limit is not None else _MAX_MARKETS_PAGE
            answer = self._t.call("GET", "/v1/markets", params={"search": search, "limit": page, "offset": offset + len(rows)}, auth=False)
            rows += answer["data"]
            if answer["meta"].get("loading"):
                warnings.warn("the service is still loading its demo dataset: these counts are partial (its /readyz says when it is done)", stacklevel=2)
            if answer["meta"]["count"] < page or (limit is not None and len(rows) >= limit):
                break
        frame = pd.DataFrame(rows, columns=["market", "asset_id", "side", "first_seen", "last_seen", "total_ticks", "question", "slug"])
        for column in ("first_seen", "last_seen"):
            frame[column] = pd.to_datetime(frame[column], format="%Y-%m-%d %H:%M:%S.%f", utc=True).astype("datetime64[ms, UTC]")
        frame["total_ticks"] = frame["total_ticks"].astype("int64")
        return frame

    def market_stats(self) -> MarketStats:
        """Totals over all stored data (``GET /v1/markets/stats``). Public.

        Returns
        -------
        MarketStats
        """
        return cast(MarketStats, self._t.call("GET", "/v1/markets/stats", auth=False)["data"])

    # --- order books and prices -----------------------------------------------------------------

    def book(self, asset_id: AssetId, at: TimeLike | None = None, *, limit: int | None = None) -> Book:
        """The L2 book as it was at ``at`` (``GET /v1/orderbook``): every change up to then applied.

        Parameters
        ----------
        asset_id : str or int
        at : time, optional
            Default: the latest book.
        limit : int, optional
            Levels per side, 1–100 (the service's default: 20).

        Returns
        -------
        Book

        Raises
        ------
        NotFound
            The asset has no book at or before ``at``.
        """
        params = {"asset_id": str(asset_id), "timestamp": _ms(at, "at"), "limit": limit}
        return Book.from_json(self._t.call("GET", "/v1/orderbook", params=params)["data"])

    def book_range(
        self, asset_id: AssetId, since: TimeLike, until: TimeLike, *, limit: int | None = None, depth: int | None = None, interval: int | None = None
    ) -> list[Book]:
        """The exchange's snapshots in ``[since, until]``, or the book every ``interval`` ms (``GET /v1/orderbook/range``).

        Parameters
        ----------
        asset_id : str or int
        since, until : time
        limit : int, optional
            At most this many books, 1–1000 (default 100).
        depth : int, optional
            Levels per side, 1–100 (default 20).
        interval : int, optional
            Milliseconds ≥ 1000 between sampled books; without it, the exchange's own ``book`` events.

        Returns
        -------
        list of Book
        """
        params = {
            "asset_id": str(asset_id),
            "since": to_ms(since, "since"),
            "until": to_ms(until, "until"),
            "limit": limit,
            "depth": depth,
            "interval": interval,
        }
        return [Book.from_json(b) for b in self._t.call("GET", "/v1/orderbook/range", params=params)["data"]]

    @overload
    def books(
        self, asset_id: AssetId, start: TimeLike, end: TimeLike, depth: int = ..., interval: int | None = ..., *, as_: Literal["pandas"] = ...
    ) -> pd.DataFrame: ...
    @overload
    def books(
        self, asset_id: AssetId, start: TimeLike, end: TimeLike, depth: int = ..., interval: int | None = ..., *, as_: Literal["polars"]
    ) -> pl.DataFrame: ...
    @overload
    def books(self, asset_id: AssetId, start: TimeLike, end: TimeLike, depth: int = ..., interval: int | None = ..., *, as_: Literal["arrow"]) -> pa.Table: ...
    def books(self, asset_id: AssetId, start: TimeLike, end: TimeLike, depth: int = 25, interval: int | None = None, *, as_: Output = "pandas") -> Frame:
        """The book dataset (``GET /v1/orderbook/export``, docs/TIME-MACHINE.md §3) as a frame.

        One row per millisecond in ``[start, end]`` in which the book changed (the book after all of
        that millisecond's events), or one at every multiple of ``interval`` ms; each row is what
        :meth:`book` returns for its time with ``limit=depth``. Counts as one request.

        Parameters
        ----------
        asset_id : str or int
        start, end : time
        depth : int, default 25
            Levels per side, 1–100.
        interval : int, optional
            Sample every ``interval`` ms (since the Unix epoch) instead.
        as_ : {"pandas", "polars", "arrow"}, default "pandas"

        Returns
        -------
        pandas.DataFrame, polars.DataFrame or pyarrow.Table
            ``timestamp`` (UTC), ``best_bid``, ``best_ask``, then ``bid_price_0``, ``bid_size_0``, …,
            ``ask_price_0``, ``ask_size_0``, … best first; absent levels null.
        """
        params = {
            "asset_id": str(asset_id),
            "start": to_ms(start, "start"),
            "end": to_ms(end, "end"),
            "depth": depth,
            "interval": interval,
            "format": "parquet",
        }
        body = self._download("/v1/orderbook/export", params, "parquet")
        return _frames.convert(_frames.conform(pq.read_table(pa.BufferReader(body)), _frames.book_schema(depth)), as_)

    def price(self, asset_id: AssetId, at: TimeLike | None = None) -> Price:
        """Best bid and ask, midpoint and spread as of ``at`` (``GET /v1/price``).

        Parameters
        ----------
        asset_id : str or int
        at : time, optional
            Default: latest.

        Returns
        -------
        Price

        Raises
        ------
        NotFound
            The asset has no book at or before ``at``.
        """
        return cast(Price, self._t.call("GET", "/v1/price", params={"asset_id": str(asset_id), "timestamp": _ms(at, "at")})["data"])

    def prices_history(self, asset_id: AssetId, start: TimeLike, end: TimeLike, *, fidelity: int | None = None, limit: int | None = None) -> pd.DataFrame:
        """Midpoint per ``fidelity``-second bucket that has a tick (``GET /v1/prices-history``).

        Parameters
        ----------
        asset_id : str or int
        start, end : time
        fidelity : int, optional
            Bucket width in seconds, 1–86400 (default 60).
        limit : int, optional
            The first buckets only, 1–10000 (default 1000).

        Returns
        -------
        pandas.DataFrame
            ``t`` (bucket start, UTC timestamp; the API answers Unix seconds) and ``p`` (midpoint after
            the bucket's last tick).
        """
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end"), "fidelity": fidelity, "limit": limit}
        data = self._t.call("GET", "/v1/prices-history", params=params)["data"]
        return pd.DataFrame(
            {"t": pd.to_datetime(pd.Series([p["t"] for p in data], dtype="int64"), unit="s", utc=True), "p": pd.Series([p["p"] for p in data], dtype="float64")}
        )

    def execution_price(self, asset_id: AssetId, side: Side, amount: float, at: TimeLike | None = None) -> ExecutionPrice:
        """What a market order of ``amount`` shares would have cost at ``at`` (``GET /v1/execution-price``).

        Parameters
        ----------
        asset_id : str or int
        side : {"BUY", "SELL"}
            ``BUY`` walks the asks up, ``SELL`` the bids down, through every level.
        amount : float
            Shares, at least 0.000001.
        at : time, optional
            Default: now, i.e. the latest book (the API itself takes an explicit time only).

        Returns
        -------
        ExecutionPrice
            Average and best price, slippage (a cost, never negative) in price and bps, what was filled.

        Raises
        ------
        NotFound
            The asset has no book at or before ``at``.
        """
        timestamp = to_ms(at, "at") if at is not None else time.time_ns() // 1_000_000
        params = {"asset_id": str(asset_id), "side": side, "amount": amount, "timestamp": timestamp}
        return cast(ExecutionPrice, self._t.call("GET", "/v1/execution-price", params=params)["data"])

    # --- ticks ----------------------------------------------------------------------------------

    @overload
    def ticks(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        event_type: EventType | None = ...,
        *,
        as_: Literal["pandas"] = ...,
        via: Via = ...,
        fields: TickFields | None = ...,
    ) -> pd.DataFrame: ...
    @overload
    def ticks(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        event_type: EventType | None = ...,
        *,
        as_: Literal["polars"],
        via: Via = ...,
        fields: TickFields | None = ...,
    ) -> pl.DataFrame: ...
    @overload
    def ticks(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        event_type: EventType | None = ...,
        *,
        as_: Literal["arrow"],
        via: Via = ...,
        fields: TickFields | None = ...,
    ) -> pa.Table: ...
    def ticks(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        event_type: EventType | None = None,
        *,
        as_: Output = "pandas",
        via: Via = "auto",
        fields: TickFields | None = None,
    ) -> Frame:
        """Every tick of ``asset_id`` in ``[start, end]``, ascending (``GET /v1/ticks``, ``/v1/ticks/export``).

        Parameters
        ----------
        asset_id : str or int
        start, end : time
            Inclusive.
        event_type : {"price_change", "book", "last_trade_price"}, optional
            Only ticks of this type.
        as_ : {"pandas", "polars", "arrow"}, default "pandas"
        via : {"auto", "json", "parquet", "csv", "jsonl"}, default "auto"
            ``auto`` answers a range of up to 10,000 ticks from one JSON page and a larger one from one
            Parquet export (one request, several times faster); ``json`` walks ``/v1/ticks`` pages by
            ``next_cursor``; the others read that export format. Every path gives the same frame.
        fields : "all", str or sequence of str, optional
            Opt-in columns appended in this order (docs/API.md §4): ``book_side`` (``bid``/``ask`` of a
            price change), ``taker_side`` (``buy``/``sell`` of a trade, ``""`` otherwise), ``local_t``
            (when the frame was received, UTC timestamp in µs), ``seq`` (arrival order). ``"all"`` names
            all four; ``"book_side,seq"`` or a list names some.

        Returns
        -------
        pandas.DataFrame, polars.DataFrame or pyarrow.Table
            ``t`` (UTC timestamp, ms), ``event``, ``side`` (the outcome label), ``best_bid``, ``best_ask``
            (after the tick), ``price``, ``size`` (the level's new total for a price_change; the trade's
            for a last_trade_price; 0 for a book), then the ``fields`` asked for.
        """
        names = _frames.tick_fields(fields)
        schema = _frames.tick_schema(names)
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end"), "event_type": event_type}
        if names:
            params["fields"] = ",".join(names)
        if via in ("parquet", "csv", "jsonl"):
            table = self._ticks_export(params, via, schema)
        elif via == "json":
            table = self._ticks_pages(params, _MAX_TICKS_PAGE, schema)
        elif via == "auto":
            first = self._t.call("GET", "/v1/ticks", params={**params, "limit": AUTO_PROBE_ROWS})
            complete = first["meta"]["next_cursor"] is None
            table = _frames.ticks_from_rows(first["data"], schema) if complete else self._ticks_export(params, "parquet", schema)
        else:
            raise ValueError(f'via must be "auto", "json", "parquet", "csv" or "jsonl"; got {via!r}')
        return _frames.convert(table, as_)

    def _ticks_pages(self, params: dict[str, Any], limit: int, schema: pa.Schema = _frames.TICK_SCHEMA) -> pa.Table:
        tables = []
        cursor = None
        while True:
            answer = self._t.call("GET", "/v1/ticks", params={**params, "limit": limit, "cursor": cursor})
            tables.append(_frames.ticks_from_rows(answer["data"], schema))
            cursor = answer["meta"]["next_cursor"]
            if cursor is None:
                return pa.concat_tables(tables).combine_chunks()

    def _ticks_export(self, params: dict[str, Any], format: TickFormat, schema: pa.Schema = _frames.TICK_SCHEMA) -> pa.Table:
        return _frames.read_ticks(self._download("/v1/ticks/export", {**params, "format": format}, format), format, schema)

    def _download(self, path: str, params: dict[str, Any], format: str) -> bytes:
        # Parquet is compressed already: a second compression would only cost CPU on both ends.
        headers = {"Accept-Encoding": "identity"} if format == "parquet" else None
        with self._t.stream("GET", path, params=params, headers=headers) as response:
            # One join of the chunks: a BytesIO written chunk by chunk, then copied out, cost ~30%.
            return self._t.read(response)

    def export(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        path: str | Path,
        format: TickFormat = "csv",
        event_type: EventType | None = None,
        *,
        fields: TickFields | None = None,
        progress: bool | None = None,
    ) -> ExportResult:
        """Streams ``GET /v1/ticks/export`` to a file.

        The file appears under ``path`` only once complete; an interrupted transfer raises and leaves
        nothing behind.

        Parameters
        ----------
        asset_id : str or int
        start, end : time
        path : str or Path
        format : {"csv", "jsonl", "parquet"}, default "csv"
        event_type : {"price_change", "book", "last_trade_price"}, optional
        fields : "all", str or sequence of str, optional
            Opt-in columns, as for :meth:`ticks`.
        progress : bool, optional
            A progress line (MB, rows, MB/s) on stderr; default: when stderr is a terminal.

        Returns
        -------
        ExportResult
            ``path``, ``bytes`` and ``rows`` written.
        """
        target = Path(path)
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end"), "event_type": event_type, "format": format}
        names = _frames.tick_fields(fields)
        if names:
            params["fields"] = ",".join(names)
        # Parquet is compressed already: a second compression would only cost CPU on both ends.
        headers = {"Accept-Encoding": "identity"} if format == "parquet" else None
        with self._t.stream("GET", "/v1/ticks/export", params=params, headers=headers) as response:
            return write_stream(self._t.chunks(response), target, format, Progress(target.name, progress))

    @overload
    @staticmethod
    def read_export(path: str | Path, format: TickFormat | None = ..., *, as_: Literal["pandas"] = ...) -> pd.DataFrame: ...
    @overload
    @staticmethod
    def read_export(path: str | Path, format: TickFormat | None = ..., *, as_: Literal["polars"]) -> pl.DataFrame: ...
    @overload
    @staticmethod
    def read_export(path: str | Path, format: TickFormat | None = ..., *, as_: Literal["arrow"]) -> pa.Table: ...
    @staticmethod
    def read_export(path: str | Path, format: TickFormat | None = None, *, as_: Output = "pandas") -> Frame:
        """A file written by :meth:`export` as the frame :meth:`ticks` returns.

        Parameters
        ----------
        path : str or Path
        format : {"csv", "jsonl", "parquet"}, optional
            Default: from the file's extension.
        as_ : {"pandas", "polars", "arrow"}, default "pandas"

        Returns
        -------
        pandas.DataFrame, polars.DataFrame or pyarrow.Table
        """
        target = Path(path)
        fmt = format or target.suffix.lstrip(".")
        if fmt not in ("csv", "jsonl", "parquet"):
            raise ValueError(f'format must be "csv", "jsonl" or "parquet"; {target.name} says {fmt!r}')
        return _frames.convert(_frames.read_ticks(target.read_bytes(), cast(TickFormat, fmt)), as_)

    # --- candles and coverage -------------------------------------------------------------------

    @overload
    def candles(
        self,
        asset_id: AssetId,
        resolution: Resolution = ...,
        start: TimeLike | None = ...,
        end: TimeLike | None = ...,
        *,
        limit: int | None = ...,
        as_: Literal["pandas"] = ...,
    ) -> pd.DataFrame: ...
    @overload
    def candles(
        self,
        asset_id: AssetId,
        resolution: Resolution = ...,
        start: TimeLike | None = ...,
        end: TimeLike | None = ...,
        *,
        limit: int | None = ...,
        as_: Literal["polars"],
    ) -> pl.DataFrame: ...
    @overload
    def candles(
        self,
        asset_id: AssetId,
        resolution: Resolution = ...,
        start: TimeLike | None = ...,
        end: TimeLike | None = ...,
        *,
        limit: int | None = ...,
        as_: Literal["arrow"],
    ) -> pa.Table: ...
    def candles(
        self,
        asset_id: AssetId,
        resolution: Resolution = "1h",
        start: TimeLike | None = None,
        end: TimeLike | None = None,
        *,
        limit: int | None = None,
        as_: Output = "pandas",
    ) -> Frame:
        """OHLCV candles of the best bid (``GET /v1/ohlcv``).

        Built from ``price_change`` ticks only: ``open``/``high``/``low``/``close`` are the best bid
        after the bucket's first / highest / lowest / last such tick, and ``volume`` is the **number of
        price_change ticks** in the bucket, not traded shares (trades are the ``last_trade_price``
        ticks of :meth:`ticks`). Buckets are UTC-aligned; empty ones are left out.

        Parameters
        ----------
        asset_id : str or int
        resolution : {"1m", "5m", "15m", "1h", "4h", "1d"}, default "1h"
        start, end : time, optional
            With ``start`` and no ``limit``: every candle from ``start`` to ``end`` (pages of 1,000).
            Otherwise the service's selection (docs/API.md §4): the last ``limit`` up to ``end`` (now).
        limit : int, optional
            1–1000.
        as_ : {"pandas", "polars", "arrow"}, default "pandas"

        Returns
        -------
        pandas.DataFrame, polars.DataFrame or pyarrow.Table
            ``timestamp`` (bucket start, UTC), ``open``, ``high``, ``low``, ``close``, ``volume`` (int64), ascending.
        """
        params = {"asset_id": str(asset_id), "resolution": resolution, "start": _ms(start, "start"), "end": _ms(end, "end")}
        rows: list[dict[str, Any]] = []
        if start is None or limit is not None:
            rows = self._t.call("GET", "/v1/ohlcv", params={**params, "limit": limit})["data"]
        else:
            while True:
                page = self._t.call("GET", "/v1/ohlcv", params={**params, "limit": _MAX_CANDLES_PAGE})["data"]
                rows += page
                if len(page) < _MAX_CANDLES_PAGE:
                    break
                params["start"] = page[-1]["timestamp"] + _RESOLUTION_MS[resolution]
        return _frames.convert(_frames.candles_from_rows(rows), as_)

    def instrument(self, asset_id: AssetId, at: TimeLike | None = None) -> Instrument:
        """A token's trading rules, fees and status as they were at ``at`` (``GET /v1/instruments``).

        Tick size, minimum order, neg-risk, fees, open/resolved and winner (docs/TIME-MACHINE.md §5).

        Parameters
        ----------
        asset_id : str or int
        at : time, optional
            Default: now. A time after now + 1 minute is answered as of then (``as_of`` says so).

        Returns
        -------
        Instrument
            The fields, and in ``source`` where each comes from: ``history`` (the stored market channel
            at or before ``at``), ``metadata`` (Gamma's, describing the market today) or ``default``
            (Polymarket's: tick 0.01, minimum order 5).

        Raises
        ------
        NotFound
            Neither history nor metadata knows the token.
        DataAccessDenied
            ``at`` is before the plan's window.
        """
        params = {"asset_id": str(asset_id), "timestamp": _ms(at, "at")}
        return cast(Instrument, self._t.call("GET", "/v1/instruments", params=params)["data"])

    def coverage(self, asset_id: AssetId, start: TimeLike, end: TimeLike) -> Coverage:
        """What the recorder captured of ``asset_id`` in ``[start, end]`` (``GET /v1/coverage``, docs/TIME-MACHINE.md §4).

        Parameters
        ----------
        asset_id : str or int
        start, end : time

        Returns
        -------
        Coverage
            Captured intervals, gaps and their reasons, reconnects, exchange books verified or drifted,
            and a condition per UTC day (``available``, ``degraded``, ``missing``, ``unknown``).
        """
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end")}
        return cast(Coverage, self._t.call("GET", "/v1/coverage", params=params)["data"])

    # --- backtesting engines (optional extras) ---------------------------------------------------

    def market_channel(self, asset_id: AssetId, start: TimeLike, end: TimeLike, *, progress: bool | None = None) -> MarketChannel:
        """One token's stored market channel over ``[start, end]``: the data object the converters read.

        Reads the book just before ``start``, downloads the range's ticks (every field) to a temporary
        Parquet file and pages through its exchange books as it is read; convert it with
        ``.to_nautilus()``, ``.to_hftbacktest(path)`` or ``.to_pandas()``, then ``close()`` it (or use
        it in a ``with`` block) to delete the file.

        Parameters
        ----------
        asset_id : str or int
        start, end : time
            Inclusive.
        progress : bool, optional
            A progress line while the ticks download (default: when stderr is a terminal).

        Returns
        -------
        tickhouse.MarketChannel
        """
        from .market_channel import MarketChannel

        return MarketChannel(self, asset_id, start, end, progress=progress)

    def to_nautilus(
        self, asset_ids: AssetId | Sequence[AssetId], start: TimeLike, end: TimeLike, catalog_path: str | Path, *, progress: bool | None = None
    ) -> CatalogResult:
        """Deprecated (goes in 0.3): ``market_channel(asset_id, start, end).to_nautilus(catalog_path)`` per token.

        Writes each token's ``BinaryOption``, order book deltas and trades to the NautilusTrader catalog
        at ``catalog_path`` (needs ``tickhouse[nautilus]``), one token's channel at a time.

        Parameters
        ----------
        asset_ids : str, int or a sequence of them
        start, end : time
            Inclusive.
        catalog_path : str or Path
            The catalog's folder (a token it already holds is refused).
        progress : bool, optional
            A progress line on stderr (default: when stderr is a terminal).

        Returns
        -------
        tickhouse.nautilus.CatalogResult
        """
        from . import nautilus

        _deprecated("to_nautilus", "market_channel(asset_id, start, end).to_nautilus(catalog_path)")
        return nautilus.to_catalog(self._channels(asset_ids, start, end, progress), catalog_path, progress=progress)

    def nautilus_data(self, asset_ids: AssetId | Sequence[AssetId], start: TimeLike, end: TimeLike) -> NautilusData:
        """Deprecated (goes in 0.3): ``market_channel(asset_id, start, end).to_nautilus()`` per token.

        Parameters
        ----------
        asset_ids : str, int or a sequence of them
        start, end : time
            Inclusive.

        Returns
        -------
        tickhouse.nautilus.NautilusData
        """
        from . import nautilus

        _deprecated("nautilus_data", "market_channel(asset_id, start, end).to_nautilus()")
        return nautilus.nautilus_data(self._channels(asset_ids, start, end, False))

    def to_hftbacktest(
        self, asset_id: AssetId, start: TimeLike, end: TimeLike, path: str | Path, *, local: Literal["receive", "exchange"] = "receive"
    ) -> HftResult:
        """Deprecated (goes in 0.3): ``market_channel(asset_id, start, end).to_hftbacktest(path, local=local)``.

        Parameters
        ----------
        asset_id : str or int
        start, end : time
            Inclusive.
        path : str or Path
            The ``.npz`` file.
        local : {"receive", "exchange"}, default "receive"
            What ``local_ts`` holds.

        Returns
        -------
        tickhouse.hftbacktest.HftResult
        """
        _deprecated("to_hftbacktest", "market_channel(asset_id, start, end).to_hftbacktest(path)")
        with self.market_channel(asset_id, start, end, progress=False) as channel:
            return channel.to_hftbacktest(path, local=local)

    def _channels(self, asset_ids: AssetId | Sequence[AssetId], start: TimeLike, end: TimeLike, progress: bool | None) -> Iterator[MarketChannel]:
        """Each token's channel in turn, closed before the next one opens (one temporary file at a time)."""
        for asset_id in [asset_ids] if isinstance(asset_ids, str | int) else asset_ids:
            with self.market_channel(asset_id, start, end, progress=progress) as channel:
                yield channel

    # --- replay ---------------------------------------------------------------------------------

    def replay(self, assets: Sequence[AssetId], start: TimeLike, end: TimeLike, speed: float | Literal["max"] = 1) -> Iterator[ReplayEvent]:
        """History replayed in Polymarket's market-channel protocol (the replay WebSocket, docs/TIME-MACHINE.md §1).

        Parameters
        ----------
        assets : sequence of str or int
            At most 500.
        start, end : time
            The replay covers events with ``start < t ≤ end``.
        speed : float or "max", default 1
            Multiple of real time, in (0, 10000]; ``"max"``: as fast as this loop reads.

        Yields
        ------
        ReplayEvent
            First the ``book`` of every asset that has one at ``start`` (one at a time), then every
            ``book``, ``price_change`` and ``last_trade_price`` in order, as Polymarket sends them
            (numbers as text). Narrow on ``event["event_type"]``.

        Raises
        ------
        ReplayClosed
            The service closed the socket other than with ``1000 replay complete``.
        TickhouseError
            A refusal before the upgrade (e.g. :class:`DataAccessDenied`), or :class:`ConnectionFailed`.
        """
        return replay_events(self._t, [str(a) for a in assets], to_ms(start, "start"), to_ms(end, "end"), speed)


def _ms(value: TimeLike | None, name: str) -> int | None:
    return None if value is None else to_ms(value, name)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"Client.{old} is deprecated and goes in tickhouse 0.3: use Client.{new}", DeprecationWarning, stacklevel=3)
