"""Polymarket's current Python CLOB client (py-clob-client-v2, unmodified, from PyPI) against the time machine.

With `host` = `<service>/v1/clob/<key>/at/<instant>`, every read call returns without error and equals the
`/v1` answer for the same instant (docs/TIME-MACHINE.md §2): books, prices, midpoints, spreads, last trades
(single and batch), tick size, neg risk, fee rate and exponent, the market info, prices history. The demo
dataset the suite's service loads has a v1 market, a v2 market (positionIds) and a v2 moneyline market;
each is read here.

Runs against the demo service the suite starts (conftest.py `live`), with its unlimited key.
"""

import json
import urllib.request
from datetime import datetime

import pytest
from py_clob_client_v2.client import ClobClient
from py_clob_client_v2.clob_types import BookParams, PricesHistoryParams
from py_clob_client_v2.exceptions import PolyApiException

URL = ""
KEY = ""
NO_BOOK = "No orderbook exists for the requested token id"
FAR = 8640000000000000


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
    return ClobClient(f"{URL}/v1/clob/{KEY}/at/{instant}", 137)


def ms(text):
    return round(datetime.strptime(text + "+0000", "%Y-%m-%d %H:%M:%S.%f%z").timestamp() * 1000)


def tokens_by_protocol():
    """One token per kind the demo holds: a v1 token, a v2 one and a moneyline one (v2, outcome named by its side)."""
    entries = v1("/v1/markets?limit=100")
    v1_token = next(e for e in entries if e["protocol_version"] == "v1")
    v2_tokens = [e for e in entries if e["protocol_version"] == "v2"]
    moneyline = next(e for e in v2_tokens if e["outcome"] in ("Real Madrid", "Bayern Munich"))
    plain_v2 = next(e for e in v2_tokens if e["outcome"] in ("Yes", "No"))
    return [(e["asset_id"], ms(e["first_seen"]), ms(e["last_seen"])) for e in (v1_token, plain_v2, moneyline)]


def instants(asset_id, first, last):
    """Instants after the token's first trade: at one of its events, 1 ms before one, and between events."""
    ticks = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end={last}&limit=100000")
    times = [t["t"] for t in ticks]
    trade = next(t["t"] for t in ticks if t["event"] == "last_trade_price")
    later = [t for t in times if t > trade]
    return [later[len(later) // 2], later[(3 * len(later)) // 4] - 1, later[-1] + 1]


def as_strings(levels):
    """/v1 levels (best first, numbers) as Polymarket lists them: best last, strings."""
    return [{"price": str(level["price"]), "size": str(level["size"])} for level in reversed(levels)]


def check(asset_id, first, instant):
    c = client(instant)
    want = v1(f"/v1/orderbook?asset_id={asset_id}&limit=100&timestamp={instant}")
    quote = v1(f"/v1/price?asset_id={asset_id}&timestamp={instant}")
    inst = v1(f"/v1/instruments?asset_id={asset_id}&timestamp={instant}")
    trades = v1(f"/v1/ticks?asset_id={asset_id}&start={first}&end={instant}&event_type=last_trade_price&fields=taker_side&limit=100000")
    assert len(want["bids"]) < 100 and len(want["asks"]) < 100

    book = c.get_order_book(asset_id)
    assert (book["market"], book["asset_id"], book["timestamp"]) == (want["market"], asset_id, str(want["timestamp"]))
    assert book["bids"] == as_strings(want["bids"]) and book["asks"] == as_strings(want["asks"])
    assert (book["min_order_size"], book["tick_size"], book["neg_risk"]) == (str(inst["min_order_size"]), str(inst["tick_size"]), inst["neg_risk"])
    assert c.get_order_book_hash(book) == book["hash"]
    assert c.get_order_books([BookParams(token_id=asset_id)]) == [book]

    assert c.get_price(asset_id, "BUY") == {"price": quote["best_bid"]}
    assert c.get_price(asset_id, "SELL") == {"price": quote["best_ask"]}
    assert c.get_prices([BookParams(token_id=asset_id, side="BUY"), BookParams(token_id=asset_id, side="SELL")]) == {
        asset_id: {"BUY": str(quote["best_bid"]), "SELL": str(quote["best_ask"])}
    }
    assert c.get_midpoint(asset_id) == {"mid": str(quote["midpoint"])}
    assert c.get_midpoints([BookParams(token_id=asset_id)]) == {asset_id: str(quote["midpoint"])}
    assert c.get_spread(asset_id) == {"spread": str(quote["spread"])}
    assert c.get_spreads([BookParams(token_id=asset_id)]) == {asset_id: str(quote["spread"])}

    last = {"price": str(trades[-1]["price"]), "side": trades[-1]["taker_side"].upper()}
    assert c.get_last_trade_price(asset_id) == last
    assert c.get_last_trades_prices([BookParams(token_id=asset_id)]) == [{"token_id": asset_id, **last}]

    assert c.get_tick_size(asset_id) == str(inst["tick_size"])
    assert c.get_neg_risk(asset_id) == inst["neg_risk"]
    assert c.get_fee_rate_bps(asset_id) == (inst["fees"]["taker_base_fee"] or 0)
    # markets-by-token, then clob-markets; no fee schedule in the demo: the client's default exponent.
    assert c.get_fee_exponent(asset_id) == (inst["fees"]["exponent"] or 0)
    info = c.get_clob_market_info(inst["market"])
    assert asset_id in [t["t"] for t in info["t"]]
    assert info["protocol_version"] == inst["protocol_version"]
    outcomes = {t["t"]: t["o"] for t in info["t"]}
    assert outcomes[asset_id] == inst["outcome"]

    start_ts = instant // 1000 - 7200
    history = c.get_prices_history(PricesHistoryParams(market=asset_id, start_ts=start_ts, end_ts=instant // 1000 + 600, fidelity=5))
    assert history == {"history": v1(f"/v1/prices-history?asset_id={asset_id}&start={start_ts * 1000}&end={instant}&fidelity=300&limit=10000")}


@pytest.mark.parametrize("kind", [0, 1, 2], ids=["v1", "v2", "moneyline"])
def test_read_calls_equal_v1(kind):
    asset_id, first, last = tokens_by_protocol()[kind]
    for instant in instants(asset_id, first, last):
        check(asset_id, first, instant)


def test_protocol_versions_and_moneyline_labels():
    kinds = [v1(f"/v1/instruments?asset_id={a}") for a, _, _ in tokens_by_protocol()]
    assert [i["protocol_version"] for i in kinds] == ["v1", "v2", "v2"]
    assert kinds[2]["outcome"] in ("Real Madrid", "Bayern Munich") and kinds[2]["source"]["protocol_version"] == "metadata"


def test_before_the_first_book_is_polymarkets_404():
    asset_id, first, _ = tokens_by_protocol()[1]
    c = client(first - 1)
    for call in (lambda: c.get_order_book(asset_id), lambda: c.get_midpoint(asset_id), lambda: c.get_spread(asset_id)):
        with pytest.raises(PolyApiException) as e:
            call()
        assert e.value.status_code == 404 and e.value.error_msg == {"error": NO_BOOK}
    assert c.get_order_books([BookParams(token_id=asset_id)]) == []
    assert c.get_midpoints([BookParams(token_id=asset_id)]) == {}
