"""``Client``: one method per endpoint of the tickhouse API (docs/API.md, docs/TIME-MACHINE.md §1, §3, §4)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlencode

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import _frames
from ._export import ExportResult, Progress, write_stream
from ._frames import Output, TickFormat
from ._http import Transport
from ._time import TimeLike, to_ms
from .errors import ReplayClosed, error_from_response

EventType = Literal["price_change", "book", "last_trade_price"]
Resolution = Literal["1m", "5m", "15m", "1h", "4h", "1d"]
Via = Literal["auto", "json", "parquet", "csv", "jsonl"]
AssetId = str | int

_RESOLUTION_MS = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000, "4h": 14_400_000, "1d": 86_400_000}
_MAX_TICKS_PAGE = 100_000  # /v1/ticks `limit` maximum
_MAX_CANDLES_PAGE = 1_000  # /v1/ohlcv `limit` maximum
_MAX_MARKETS_PAGE = 1_000  # /v1/markets `limit` maximum
# ticks(via="auto"): a range that fits in one JSON page of this size is answered by that page; a
# larger one is fetched as one Parquet export, several times faster than JSON pages beyond that.
AUTO_PROBE_ROWS = 10_000


@dataclass(frozen=True)
class Book:
    """An L2 book as ``/v1/orderbook`` returns it; ``bids`` descending, ``asks`` ascending (``price``, ``size``)."""

    market: str
    asset_id: str
    timestamp: pd.Timestamp
    best_bid: float
    best_ask: float
    bids: pd.DataFrame
    asks: pd.DataFrame

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Book:
        def levels(rows: list[dict[str, Any]]) -> pd.DataFrame:
            return pd.DataFrame(
                {"price": pd.Series([r["price"] for r in rows], dtype="float64"), "size": pd.Series([r["size"] for r in rows], dtype="float64")}
            )

        return cls(
            market=data["market"],
            asset_id=data["asset_id"],
            timestamp=pd.Timestamp(data["timestamp"], unit="ms", tz="UTC"),
            best_bid=data["best_bid"],
            best_ask=data["best_ask"],
            bids=levels(data["bids"]),
            asks=levels(data["asks"]),
        )


class Client:
    """A tickhouse API client.

    Times are accepted as int Unix milliseconds, ``datetime``, ``pandas.Timestamp`` or ISO 8601 text;
    a time without a time zone is taken as UTC. Errors raise the exceptions of ``tickhouse.errors``.
    A 503 or a lost connection is retried ``retries`` times with exponential backoff (honouring
    ``Retry-After``); a daily 429 is raised at once (``RateLimitExceeded.reset_at`` says when it ends).
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
        self._t = Transport(base_url, api_key, timeout=timeout, retries=retries, backoff=backoff, max_backoff=max_backoff)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    @property
    def api_key(self) -> str | None:
        return self._t.api_key

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- accounts and billing -------------------------------------------------------------------

    def register(self, email: str | None = None) -> dict[str, Any]:
        """``POST /v1/register``: a new free account; ``["api_key"]`` is shown this once."""
        return _object(self._t.json("POST", "/v1/register", body={"email": email} if email is not None else {}, auth=False)["data"])

    def me(self) -> dict[str, Any]:
        return _object(self._t.json("GET", "/v1/me")["data"])

    def regenerate_key(self) -> str:
        """``POST /v1/keys/regenerate``: the old key stops working at once; this client switches to the new one."""
        key: str = self._t.json("POST", "/v1/keys/regenerate")["data"]["api_key"]
        self._t.api_key = key
        return key

    def billing_status(self) -> dict[str, Any]:
        return _object(self._t.json("GET", "/v1/billing/status")["data"])

    def subscribe(self, plan: Literal["daily", "monthly", "unlimited"]) -> dict[str, Any]:
        """``POST /v1/billing/subscribe``: an invoice (``invoice_url``) for ``plan``."""
        return _object(self._t.json("POST", "/v1/billing/subscribe", body={"plan": plan})["data"])

    # --- markets --------------------------------------------------------------------------------

    def markets(self, search: str | None = None, *, limit: int | None = None, offset: int = 0) -> pd.DataFrame:
        """``GET /v1/markets``: every matching token (all pages unless ``limit``), most active first;
        ``first_seen``/``last_seen`` as UTC timestamps."""
        rows: list[dict[str, Any]] = []
        while True:
            page = min(limit - len(rows), _MAX_MARKETS_PAGE) if limit is not None else _MAX_MARKETS_PAGE
            answer = self._t.json("GET", "/v1/markets", params={"search": search, "limit": page, "offset": offset + len(rows)}, auth=False)
            rows += answer["data"]
            if answer["meta"]["count"] < page or (limit is not None and len(rows) >= limit):
                break
        frame = pd.DataFrame(rows, columns=["market", "asset_id", "side", "first_seen", "last_seen", "total_ticks", "question", "slug"])
        for column in ("first_seen", "last_seen"):
            frame[column] = pd.to_datetime(frame[column], format="%Y-%m-%d %H:%M:%S.%f", utc=True).astype("datetime64[ms, UTC]")
        frame["total_ticks"] = frame["total_ticks"].astype("int64")
        return frame

    def market_stats(self) -> dict[str, Any]:
        return _object(self._t.json("GET", "/v1/markets/stats", auth=False)["data"])

    # --- order books and prices -----------------------------------------------------------------

    def book(self, asset_id: AssetId, at: TimeLike | None = None, *, limit: int | None = None) -> Book:
        """``GET /v1/orderbook``: the reconstructed book as of ``at`` (default: latest)."""
        params = {"asset_id": str(asset_id), "timestamp": _ms(at, "at"), "limit": limit}
        return Book.from_json(self._t.json("GET", "/v1/orderbook", params=params)["data"])

    def book_range(
        self, asset_id: AssetId, since: TimeLike, until: TimeLike, *, limit: int | None = None, depth: int | None = None, interval: int | None = None
    ) -> list[Book]:
        """``GET /v1/orderbook/range``: exchange snapshots in ``[since, until]``, or the book every ``interval`` ms."""
        params = {
            "asset_id": str(asset_id),
            "since": to_ms(since, "since"),
            "until": to_ms(until, "until"),
            "limit": limit,
            "depth": depth,
            "interval": interval,
        }
        return [Book.from_json(b) for b in self._t.json("GET", "/v1/orderbook/range", params=params)["data"]]

    def books(self, asset_id: AssetId, start: TimeLike, end: TimeLike, depth: int = 25, interval: int | None = None, *, as_: Output = "pandas") -> Any:
        """``GET /v1/orderbook/export`` (docs/TIME-MACHINE.md §3) as a frame: the top ``depth`` levels after
        every book-changing event in ``[start, end]``, or at every multiple of ``interval`` ms.
        Columns ``timestamp`` (UTC), ``best_bid``, ``best_ask``, ``bid_price_0``, ``bid_size_0``, …,
        ``ask_price_0``, ``ask_size_0``, … (best first; absent levels null)."""
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

    def price(self, asset_id: AssetId, at: TimeLike | None = None) -> dict[str, Any]:
        """``GET /v1/price``: best bid/ask, midpoint and spread as of ``at`` (default: latest)."""
        return _object(self._t.json("GET", "/v1/price", params={"asset_id": str(asset_id), "timestamp": _ms(at, "at")})["data"])

    def prices_history(self, asset_id: AssetId, start: TimeLike, end: TimeLike, *, fidelity: int | None = None, limit: int | None = None) -> pd.DataFrame:
        """``GET /v1/prices-history``: midpoint per ``fidelity``-second bucket; ``t`` as UTC timestamps."""
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end"), "fidelity": fidelity, "limit": limit}
        data = self._t.json("GET", "/v1/prices-history", params=params)["data"]
        return pd.DataFrame(
            {"t": pd.to_datetime(pd.Series([p["t"] for p in data], dtype="int64"), unit="s", utc=True), "p": pd.Series([p["p"] for p in data], dtype="float64")}
        )

    def execution_price(self, asset_id: AssetId, side: Literal["BUY", "SELL"], amount: float, at: TimeLike) -> dict[str, Any]:
        """``GET /v1/execution-price``: what a market order of ``amount`` shares would have cost at ``at``."""
        return _object(
            self._t.json("GET", "/v1/execution-price", params={"asset_id": str(asset_id), "side": side, "amount": amount, "timestamp": to_ms(at, "at")})["data"]
        )

    # --- ticks ----------------------------------------------------------------------------------

    def ticks(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        event_type: EventType | None = None,
        *,
        as_: Output = "pandas",
        via: Via = "auto",
        fields: str | Sequence[str] | None = None,
    ) -> Any:
        """Every tick of ``asset_id`` in ``[start, end]`` (inclusive), ascending, as a frame with
        columns ``t`` (UTC timestamp, ms), ``event``, ``side``, ``best_bid``, ``best_ask``, ``price``, ``size``.

        ``fields="all"`` (or some of ``"book_side"``, ``"taker_side"``, ``"local_t"``, ``"seq"``) appends
        those columns (docs/API.md §4): ``book_side`` ``bid``/``ask`` of a price change, ``taker_side``
        ``buy``/``sell`` of a trade (``""`` otherwise), ``local_t`` when the frame was received (UTC
        timestamp, µs), ``seq`` the arrival order.

        ``via="auto"`` answers a range of up to 10,000 ticks from one JSON page and a larger one
        from one Parquet export; ``"json"`` walks ``/v1/ticks`` pages by ``next_cursor``; ``"parquet"``,
        ``"csv"`` and ``"jsonl"`` read that export format. All give the same frame.
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
            first = self._t.json("GET", "/v1/ticks", params={**params, "limit": AUTO_PROBE_ROWS})
            complete = first["meta"]["next_cursor"] is None
            table = _frames.ticks_from_rows(first["data"], schema) if complete else self._ticks_export(params, "parquet", schema)
        else:
            raise ValueError(f'via must be "auto", "json", "parquet", "csv" or "jsonl"; got {via!r}')
        return _frames.convert(table, as_)

    def _ticks_pages(self, params: dict[str, Any], limit: int, schema: pa.Schema = _frames.TICK_SCHEMA) -> pa.Table:
        tables = []
        cursor = None
        while True:
            answer = self._t.json("GET", "/v1/ticks", params={**params, "limit": limit, "cursor": cursor})
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
            return b"".join(response.iter_bytes(1 << 20))

    def export(
        self,
        asset_id: AssetId,
        start: TimeLike,
        end: TimeLike,
        path: str | Path,
        format: TickFormat = "csv",
        event_type: EventType | None = None,
        *,
        progress: bool | None = None,
    ) -> ExportResult:
        """``GET /v1/ticks/export`` streamed to ``path``, with a progress line (bytes, rows) on stderr
        when it is a terminal (``progress=True``/``False`` forces it). The file appears only once
        complete; an interrupted transfer raises and leaves nothing behind."""
        target = Path(path)
        params = {"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end"), "event_type": event_type, "format": format}
        headers = {"Accept-Encoding": "identity"} if format == "parquet" else None
        with self._t.stream("GET", "/v1/ticks/export", params=params, headers=headers) as response:
            return write_stream(response.iter_bytes(1 << 20), target, format, Progress(target.name, progress))

    @staticmethod
    def read_export(path: str | Path, format: TickFormat | None = None, *, as_: Output = "pandas") -> Any:
        """A file written by ``export`` as the frame ``ticks`` returns (format from the extension by default)."""
        target = Path(path)
        fmt = format or target.suffix.lstrip(".")
        with open(target, "rb") as f:
            return _frames.convert(_frames.read_ticks(f.read(), fmt), as_)  # type: ignore[arg-type]

    # --- candles and coverage -------------------------------------------------------------------

    def candles(
        self,
        asset_id: AssetId,
        resolution: Resolution = "1h",
        start: TimeLike | None = None,
        end: TimeLike | None = None,
        *,
        limit: int | None = None,
        as_: Output = "pandas",
    ) -> Any:
        """``GET /v1/ohlcv``: columns ``timestamp`` (bucket start, UTC), ``open``, ``high``, ``low``,
        ``close``, ``volume``, ascending. With ``start`` and no ``limit``, every candle from ``start``
        to ``end`` (pages of 1,000); otherwise the service's selection (docs/API.md: the last ``limit`` up to ``end``)."""
        params = {"asset_id": str(asset_id), "resolution": resolution, "start": _ms(start, "start"), "end": _ms(end, "end")}
        rows: list[dict[str, Any]] = []
        if start is None or limit is not None:
            rows = self._t.json("GET", "/v1/ohlcv", params={**params, "limit": limit})["data"]
        else:
            while True:
                page = self._t.json("GET", "/v1/ohlcv", params={**params, "limit": _MAX_CANDLES_PAGE})["data"]
                rows += page
                if len(page) < _MAX_CANDLES_PAGE:
                    break
                params["start"] = page[-1]["timestamp"] + _RESOLUTION_MS[resolution]
        columns = {f.name: [r[f.name] for r in rows] for f in _frames.CANDLE_SCHEMA}
        table = pa.Table.from_arrays(
            [pa.array(columns["timestamp"], pa.int64()).cast(_frames.UTC_MS)] + [pa.array(columns[f.name], f.type) for f in list(_frames.CANDLE_SCHEMA)[1:]],
            schema=_frames.CANDLE_SCHEMA,
        )
        return _frames.convert(table, as_)

    def instrument(self, asset_id: AssetId, at: TimeLike | None = None) -> dict[str, Any]:
        """``GET /v1/instruments`` (docs/TIME-MACHINE.md §5): tick size, minimum order, neg-risk, fees,
        status and winner of ``asset_id`` as they were at ``at`` (default now), with ``source`` naming
        where each comes from (``history``, ``metadata`` or ``default``)."""
        return _object(self._t.json("GET", "/v1/instruments", params={"asset_id": str(asset_id), "timestamp": _ms(at, "at")})["data"])

    def coverage(self, asset_id: AssetId, start: TimeLike, end: TimeLike) -> dict[str, Any]:
        """``GET /v1/coverage`` (docs/TIME-MACHINE.md §4): captured intervals, gaps, reconnects, book
        verification counts, drift and a condition per UTC day, as the service returns them."""
        return _object(
            self._t.json("GET", "/v1/coverage", params={"asset_id": str(asset_id), "start": to_ms(start, "start"), "end": to_ms(end, "end")})["data"]
        )

    # --- backtesting engines (optional extras) ---------------------------------------------------

    def to_nautilus(
        self, asset_ids: AssetId | Sequence[AssetId], start: TimeLike, end: TimeLike, catalog_path: str | Path, *, progress: bool | None = None
    ) -> Any:
        """NautilusTrader's ``ParquetDataCatalog`` at ``catalog_path`` filled with each token's ``BinaryOption``,
        order book deltas and trades in ``[start, end]``, in bounded chunks (``tickhouse[nautilus]``;
        mapping in ``tickhouse.nautilus``). Returns a ``tickhouse.nautilus.CatalogResult``."""
        from . import nautilus

        return nautilus.to_catalog(self, asset_ids, start, end, catalog_path, progress=progress)

    def nautilus_data(self, asset_ids: AssetId | Sequence[AssetId], start: TimeLike, end: TimeLike) -> Any:
        """The objects ``to_nautilus`` writes, in memory (small ranges): a ``tickhouse.nautilus.NautilusData``."""
        from . import nautilus

        return nautilus.nautilus_data(self, asset_ids, start, end)

    def to_hftbacktest(self, asset_id: AssetId, start: TimeLike, end: TimeLike, path: str | Path, *, local: Literal["receive", "exchange"] = "receive") -> Any:
        """hftbacktest's event array of ``asset_id`` in ``[start, end]`` saved to ``path`` (``.npz``, key
        ``data``; rows in ``tickhouse.hftbacktest``; ``local_ts`` the receive time, or the exchange time with
        ``local="exchange"``). Returns a ``tickhouse.hftbacktest.HftResult``."""
        from . import hftbacktest

        return hftbacktest.to_hftbacktest(self, asset_id, start, end, path, local=local)

    # --- replay ---------------------------------------------------------------------------------

    def replay(self, assets: Sequence[AssetId], start: TimeLike, end: TimeLike, speed: float | Literal["max"] = 1) -> Iterator[dict[str, Any]]:
        """The replay WebSocket (docs/TIME-MACHINE.md §1): Polymarket market-channel events of ``assets``
        from ``start`` to ``end`` paced at ``speed`` × real time (``"max"``: as fast as read).

        Yields each event as a dict: first the ``book`` of every asset that has one at ``start`` (the
        initial array, one book at a time), then ``book``, ``price_change`` and ``last_trade_price``
        events in order. Ends when the service closes with ``replay complete``; any other close raises
        ``ReplayClosed``; a refusal before the upgrade raises the usual typed exception.
        """
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        from websockets.sync.client import connect

        query = urlencode({"from": to_ms(start, "start"), "to": to_ms(end, "end"), "speed": speed})
        url = self._t.base_url.replace("http", "ws", 1) + "/v1/replay/market?" + query
        try:
            ws = connect(url, additional_headers=self._t.auth_headers(), max_size=None, open_timeout=30)
        except InvalidStatus as refused:
            raise error_from_response(refused.response.status_code, bytes(refused.response.body or b""), dict(refused.response.headers.raw_items())) from None
        with ws:
            ws.send(json.dumps({"assets_ids": [str(a) for a in assets], "type": "market"}))
            try:
                for frame in ws:
                    message = json.loads(frame)
                    if isinstance(message, list):
                        yield from message
                    else:
                        yield message
            except ConnectionClosed as closed:
                raise ReplayClosed(closed.rcvd.code if closed.rcvd else None, closed.rcvd.reason if closed.rcvd else "") from None
            received = ws.close_code, ws.close_reason
            if received != (1000, "replay complete"):
                raise ReplayClosed(received[0], received[1] or "")


def _object(value: Any) -> dict[str, Any]:
    """A JSON object of an answer (the contract says which members are objects)."""
    return cast("dict[str, Any]", value)


def _ms(value: TimeLike | None, name: str) -> int | None:
    return None if value is None else to_ms(value, name)
