"""The official Python MCP client (`mcp` from PyPI, unmodified) against the service's `POST /mcp` (docs/MCP.md).

Its high-level `Client` in its default mode (it first asks for the 2026 protocol revision, then falls back
to what the server speaks) lists the tools, and `get_price` answers exactly what `/v1/price` answers at the
same instants; a free key outside its window gets the REST API's 403 body as a tool error.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
from conftest import Live
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOOLS = [
    "search_markets",
    "get_market",
    "get_order_book",
    "get_price",
    "get_execution_price",
    "get_candles",
    "get_tick_summary",
    "get_coverage",
    "get_export_link",
]


async def session(live: Live, key: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[str, list[str], list[Any]]:
    """Connects with `key`, lists the tools and makes `calls`: the protocol version, the tool names and the results."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=300))
    async with http, Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        results = [await client.call_tool(name, arguments) for name, arguments in calls]
        return str(client.protocol_version), names, results


def test_get_price_equals_v1_price(live: Live, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    asset = str(big_asset["asset_id"])
    first, last = int(big_asset["first"]), int(big_asset["last"])
    instants = [first + (last - first) * n // 7 for n in range(8)]
    calls = [("get_price", {"asset_id": asset, "timestamp": t}) for t in instants] + [("get_price", {"asset_id": asset})]
    version, names, results = anyio.run(session, live, live.key, calls)
    assert version == "2025-11-25"
    assert names == TOOLS
    for (_, arguments), result in zip(calls, results, strict=True):
        query = {"asset_id": asset, **({"timestamp": arguments["timestamp"]} if "timestamp" in arguments else {})}
        expected = raw.get("/v1/price", params=query).json()["data"]
        assert result.is_error is False
        assert result.structured_content == expected
        assert json.loads(result.content[0].text) == expected


def test_free_key_outside_its_window_gets_the_window_error(live: Live, raw: httpx.Client, big_asset: dict[str, Any]) -> None:
    asset = str(big_asset["asset_id"])
    yesterday = int(big_asset["last"]) - 2 * 86_400_000
    _, _, [result] = anyio.run(session, live, live.free_key, [("get_price", {"asset_id": asset, "timestamp": yesterday})])
    rest = httpx.get(f"{live.url}/v1/price", params={"asset_id": asset, "timestamp": yesterday}, headers={"Authorization": f"Bearer {live.free_key}"})
    assert rest.status_code == 403
    assert result.is_error is True
    assert result.structured_content is None
    assert result.meta is not None and result.meta["tickhouse/error"] == "data_access_denied" and result.meta["tickhouse/status"] == 403
    assert json.loads(result.content[0].text) == rest.json()
