"""Polymarket's own Python client (py-clob-client, unmodified, from PyPI) against the time machine.

With `host` = `<service>/v1/clob/<key>/at/<instant>`, every read method the client has returns
without error and equals the `/v1` answer for the same instant (docs/TIME-MACHINE.md §2). py-clob-client
has no prices-history method; that endpoint is read with the client's own HTTP helper.

Runs against the demo service the suite starts (conftest.py `live`), with its unlimited key.
"""

import json
import urllib.request
from datetime import datetime

import pytest
from py_clob_client.client import ClobClient
from py_clob_client.clob_types import BookParams
from py_clob_client.exceptions import PolyApiException
from py_clob_client.http_helpers.helpers import get as client_get

URL = ""
KEY = ""
NO_BOOK = "No orderbook exists for the requested token id"


@pytest.fixture(autouse=True)
def _service(live):
    """The suite's running service and its unlimited key."""
    global URL, KEY
    URL, KEY = live.url, live.key


def v1(path):
    """A /v1 answer's `data`, with the key as a Bearer header."""
    req = urllib.request.Request(URL + path, headers={"Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(req) as res:
        return json.load(res)["data"]


def client(instant):
    return ClobClient(f"{URL}/v1/clob/{KEY}/at/{instant}")


def asset(rank):
    """The asset with the `rank`-th most ticks, and the Unix ms of its first tick."""
    m = v1("/v1/markets?limit=3")[rank]
    first = datetime.strptime(m["first_seen"] + "+0000", "%Y-%m-%d %H:%M:%S.%f%z")
    return m["asset_id"], round(first.timestamp() * 1000)


def book_ticks(asset_id, first):
    """Times of the asset's first 2000 book-changing ticks."""
    ticks = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end=8640000000000000&limit=2000")
    return [t["t"] for t in ticks if t["event"] in ("book", "price_change")]


def instants(asset_id, first):
    """Inside bursts (an event's ms, 1 ms before it), between events: a few of the first ticks."""
    times = book_ticks(asset_id, first)
    burst = next((t for i, t in enumerate(times) if i > 0 and times[i - 1] == t), times[1])
    picks = [times[int(f * (len(times) - 1))] for f in (0.2, 0.5, 0.9)]
    return sorted({burst, burst - 1, *picks, picks[0] + 1, book_after_trade(asset_id, first)})


def book_after_trade(asset_id, first):
    """The time of the asset's first exchange `book` after its first trade: /book's last_trade_price is then the book's own."""
    trade = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end=8640000000000000&event_type=last_trade_price&limit=1")[0]["t"]
    return v1(f"/v1/ticks?asset_id={asset_id}&start={trade + 1}&end=8640000000000000&event_type=book&limit=1")[0]["t"]


def market_print_before(asset_id, first, t):
    """The demo's exchange books state their market's last print in their own outcome's terms (src/demo/frames.ts,
    as Polymarket's books do): the last trade on either token of the market at or before `t`, mirrored to 1 − p
    when it was reported on the other one."""
    market = next(m["market"] for m in v1("/v1/markets?limit=100") if m["asset_id"] == asset_id)
    tokens = [m["asset_id"] for m in v1("/v1/markets?limit=100") if m["market"] == market]
    prints = []
    for token in tokens:
        trades = v1(f"/v1/ticks?asset_id={token}&start={first}&end={t}&event_type=last_trade_price&fields=seq&limit=100000")
        if trades:
            p = trades[-1]["price"]
            prints.append((trades[-1]["t"], trades[-1]["seq"], p if token == asset_id else round(1 - p, 6)))
    return max(prints)[2]


def as_numbers(levels):
    return [{"price": float(level.price), "size": float(level.size)} for level in levels]


def check_book(asset_id, first, instant):
    c = client(instant)
    ts = "" if instant == "latest" else f"&timestamp={instant}"
    want = v1(f"/v1/orderbook?asset_id={asset_id}&limit=100{ts}")
    quote = v1(f"/v1/price?asset_id={asset_id}{ts}")
    assert len(want["bids"]) < 100 and len(want["asks"]) < 100

    book = c.get_order_book(asset_id)
    assert (book.market, book.asset_id, book.timestamp) == (want["market"], asset_id, str(want["timestamp"]))
    # Polymarket lists the best level last on both sides; /v1 lists it first.
    assert as_numbers(reversed(book.bids)) == want["bids"]
    assert as_numbers(reversed(book.asks)) == want["asks"]
    assert c.get_order_book_hash(book) == book.hash
    assert isinstance(book.neg_risk, bool)
    assert float(book.min_order_size) > 0 and float(book.tick_size) > 0

    assert c.get_price(asset_id, "BUY") == {"price": quote["best_bid"]}
    assert c.get_price(asset_id, "SELL") == {"price": quote["best_ask"]}
    assert float(c.get_midpoint(asset_id)["mid"]) == quote["midpoint"]
    assert float(c.get_spread(asset_id)["spread"]) == quote["spread"]
    assert c.get_tick_size(asset_id) == book.tick_size
    assert c.get_neg_risk(asset_id) == book.neg_risk

    last = c.get_last_trade_price(asset_id)
    end = 8640000000000000 if instant == "latest" else instant
    trades = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end={end}&event_type=last_trade_price&fields=seq&limit=100000")
    if trades:
        assert float(last["price"]) == trades[-1]["price"] and last["side"] in ("BUY", "SELL", "")
        # /book's last_trade_price is the newer of the last trade and the last exchange book's own
        # last_trade_price (TIME-MACHINE.md §2); the demo's books state the market's last print, which
        # may have been reported on the other outcome after this token's last trade.
        books = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end={end}&event_type=book&fields=seq&limit=100000")
        if books and (books[-1]["t"], books[-1]["seq"]) > (trades[-1]["t"], trades[-1]["seq"]):
            assert float(book.last_trade_price) == market_print_before(asset_id, first, books[-1]["t"])
            source = "book"
        else:
            assert book.last_trade_price == last["price"]
            source = "trade"
    elif book.last_trade_price:
        # No stored trade yet: the last exchange book's own last_trade_price, side "" (TIME-MACHINE.md §2).
        assert last == {"price": book.last_trade_price, "side": ""} and 0 < float(last["price"]) < 1
        source = "book"
    else:
        assert last == {"price": "0.5", "side": ""}
        source = "none"

    [again] = c.get_order_books([BookParams(token_id=asset_id)])
    assert again == book
    return source


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_book_methods_equal_v1(rank):
    asset_id, first = asset(rank)
    sources = {instant: check_book(asset_id, first, instant) for instant in instants(asset_id, first)}
    check_book(asset_id, first, "latest")
    # Both sources of /book's last_trade_price are exercised: a trade, and an exchange book newer than it.
    assert sources[book_after_trade(asset_id, first)] == "book" and "trade" in sources.values()


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_prices_history_equals_v1(rank):
    asset_id, first = asset(rank)
    for instant in instants(asset_id, first):
        start_ts = instant / 1000 - 3600.5
        for fidelity in (1, 5):
            got = client_get(
                f"{URL}/v1/clob/{KEY}/at/{instant}/prices-history?market={asset_id}&startTs={start_ts}&endTs={instant / 1000 + 600}&fidelity={fidelity}"
            )
            want = v1(f"/v1/prices-history?asset_id={asset_id}&start={round(start_ts * 1000)}&end={instant}&fidelity={fidelity * 60}&limit=10000")
            assert got == {"history": want}
            assert got["history"] and all(p["t"] * 1000 <= instant for p in got["history"])


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_before_the_first_book_is_polymarkets_404(rank):
    asset_id, first = asset(rank)
    c = client(book_ticks(asset_id, first)[0] - 1)
    for call in (lambda: c.get_order_book(asset_id), lambda: c.get_midpoint(asset_id), lambda: c.get_price(asset_id, "BUY"), lambda: c.get_spread(asset_id)):
        with pytest.raises(PolyApiException) as e:
            call()
        assert e.value.status_code == 404 and e.value.error_msg == {"error": NO_BOOK}
    with pytest.raises(PolyApiException) as e:
        c.get_tick_size(asset_id)
    assert e.value.status_code == 404 and e.value.error_msg == {"error": "market not found"}
    assert c.get_order_books([BookParams(token_id=asset_id)]) == []
