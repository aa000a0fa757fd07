"""The JSON answers the client returns as dicts, typed (``TypedDict``) after the API's own schemas
(``/v1/openapi.json``; docs/API.md §4, docs/TIME-MACHINE.md §1 and §4).

Times are Unix milliseconds (int) unless the name says otherwise; ``datetime`` members are text
``YYYY-MM-DD HH:MM:SS.mmm`` in UTC without a zone suffix; ``*_at`` members are ISO 8601 with ``+00:00``.
"""

from __future__ import annotations

from typing import Literal, TypedDict

Plan = Literal["free", "daily", "monthly", "unlimited"]
PaidPlan = Literal["daily", "monthly", "unlimited"]
Side = Literal["BUY", "SELL"]


class Registration(TypedDict):
    """``POST /v1/register``: a new account on plan free. The key is shown this once."""

    api_key: str
    plan: Literal["free"]
    message: str
    example: str


class Account(TypedDict):
    """``GET /v1/me``."""

    id: str
    email: str | None
    plan: Plan
    plan_active: bool
    plan_expires_at: str | None
    data_access_days: int
    rate_limit_daily: int
    requests_today: int


class Invoice(TypedDict):
    """One of ``BillingStatus.invoices``."""

    payment_id: str
    plan: PaidPlan
    amount_usd: float
    status: str
    created_at: str


class BillingStatus(TypedDict):
    """``GET /v1/billing/status``: the plan and the last 10 invoices."""

    plan: Plan
    active: bool
    expires_at: str | None
    data_access_days: int
    rate_limit_daily: int
    requests_today: int
    invoices: list[Invoice]


class InvoiceCreated(TypedDict):
    """``POST /v1/billing/subscribe``: pay at ``invoice_url``."""

    invoice_url: str
    payment_id: str
    amount_usd: float
    plan: PaidPlan


class EventCounts(TypedDict):
    price_change: int
    book: int
    last_trade_price: int


class MarketStats(TypedDict):
    """``GET /v1/markets/stats``: totals over all stored data (timestamps None when empty)."""

    total_markets: int
    total_assets: int
    total_ticks: int
    total_snapshots: int
    first_timestamp: int | None
    last_timestamp: int | None
    ticks_last_24h: int
    events: EventCounts


class Price(TypedDict):
    """``GET /v1/price``: the top of the book (``best_bid`` 0 / ``best_ask`` 1 for an empty side)."""

    asset_id: str
    timestamp: int
    datetime: str
    best_bid: float
    best_ask: float
    midpoint: float
    spread: float


class Level(TypedDict):
    price: float
    size: float


class ExecutionPrice(TypedDict):
    """``GET /v1/execution-price``: a market order walked through the whole book (price fields None for an empty side)."""

    side: Side
    requested_amount: float
    filled_amount: float
    average_price: float | None
    best_price: float | None
    slippage: float | None
    slippage_bps: float | None
    fully_filled: bool
    fills: list[Level]


# `from` is a Python keyword: these use TypedDict's functional form.
Interval = TypedDict("Interval", {"from": int, "to": int})
Gap = TypedDict("Gap", {"from": int, "to": int, "reason": Literal["not_recording", "disconnected", "not_subscribed", "source_missing", "unknown"]})


class Reconnect(TypedDict):
    t: int
    resynced: bool


class BookChecks(TypedDict):
    exchange: int
    verified: int
    drifted: int


class Drift(TypedDict):
    t: int
    levels_differing: int


class CoverageDay(TypedDict):
    date: str
    condition: Literal["available", "degraded", "missing", "unknown"]
    ticks: int
    gap_ms: int


CoverageImport = TypedDict(
    "CoverageImport",
    {"format": Literal["frames", "recorder", "pmxt", "pmxt-kalshi", "tardis"], "unit": str, "from": int, "to": int, "events": int, "imported_at": int},
)


class Coverage(TypedDict):
    """``GET /v1/coverage`` (docs/TIME-MACHINE.md §4): what the recorder captured, and whether rebuilt books matched."""

    asset_id: str
    start: int
    end: int
    captured: list[Interval]
    gaps: list[Gap]
    reconnects: list[Reconnect]
    books: BookChecks
    drift: list[Drift]
    days: list[CoverageDay]
    imports: list[CoverageImport]


Source = Literal["history", "metadata", "default"]


class Fees(TypedDict):
    """``Instrument.fees``: what is known of the fee schedule (None = stated nowhere). Taker fee =
    size × rate × (p × (1 − p)) ** exponent USDC (docs/TIME-MACHINE.md §5)."""

    enabled: bool | None
    taker_base_fee: float | None
    maker_base_fee: float | None
    rate: float | None
    exponent: float | None
    taker_only: bool | None
    rebate_rate: float | None


class Winner(TypedDict):
    asset_id: str
    outcome: str


class InstrumentSources(TypedDict):
    """Where each ``Instrument`` field comes from: stored history as of the instant, market metadata (today's), or Polymarket's default."""

    market: Source
    outcome: Source
    question: Source
    tick_size: Source
    min_order_size: Source
    neg_risk: Source
    fees: Source
    status: Source
    protocol_version: Source


class Instrument(TypedDict):
    """``GET /v1/instruments`` (docs/TIME-MACHINE.md §5): a token's trading rules, fees and status as of ``as_of``."""

    asset_id: str
    market: str
    question: str
    outcome: str
    tick_size: float
    min_order_size: float
    neg_risk: bool
    fees: Fees
    status: Literal["open", "resolved"]
    winner: Winner | None
    resolved_at: int | None
    source: InstrumentSources
    as_of: int
    protocol_version: Literal["v1", "v2"] | None
    """The market's Polymarket protocol (Gamma's ``version``): ``v1`` a CTF outcome token, ``v2`` a Protocol V2 position; None when no metadata states it."""


# --- the replay's events, in Polymarket's market-channel shapes (numbers as text) ------------------


class WireLevel(TypedDict):
    price: str
    size: str


class BookEvent(TypedDict):
    event_type: Literal["book"]
    market: str
    asset_id: str
    timestamp: str
    hash: str
    bids: list[WireLevel]
    asks: list[WireLevel]


class PriceChangeItem(TypedDict):
    asset_id: str
    price: str
    size: str
    side: Side
    best_bid: str
    best_ask: str


class PriceChangeEvent(TypedDict):
    event_type: Literal["price_change"]
    market: str
    timestamp: str
    price_changes: list[PriceChangeItem]


class LastTradePriceEvent(TypedDict):
    event_type: Literal["last_trade_price"]
    market: str
    asset_id: str
    price: str
    side: Literal["BUY", "SELL", ""]
    size: str
    timestamp: str


# Narrow on ``event["event_type"]``. Event types the service may add later arrive as the dicts they are.
ReplayEvent = BookEvent | PriceChangeEvent | LastTradePriceEvent
