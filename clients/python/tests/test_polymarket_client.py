"""polymarket-client (PyPI 0.14), Polymarket's unified Python SDK: no supported way to point it at another host.

docs/guides/polymarket-clients.md says so plainly; these checks keep that sentence true. The
package's clients take an `Environment`, and the only one it offers is `PRODUCTION` (Polymarket's hosts); the
`Environment` type refuses construction ("Environment instances are provided by the SDK") and its module
exports nothing else. Building one from `polymarket._internal` would work, but that is the package's private
code, free to change in any release: not a way we document. Should a release add a public way, the first
test fails and the guide can name it.
"""

import dataclasses

import polymarket
import polymarket.environments
import pytest


def test_only_production_is_public():
    assert polymarket.environments.__all__ == ["Environment", "PRODUCTION"]
    assert polymarket.PRODUCTION.name == "production"
    with pytest.raises(TypeError, match="Environment instances are provided by the SDK"):
        polymarket.Environment()
    exported = {name for name in dir(polymarket) if "environment" in name.lower() or "fork" in name.lower()}
    assert exported == {"Environment", "environments"}


def test_production_points_at_polymarkets_hosts():
    config = polymarket.PRODUCTION._config  # read only: what the only public environment uses
    assert dataclasses.replace(config).clob_url == "https://clob.polymarket.com"
    assert config.clob_market_ws_url == "wss://ws-subscriptions-clob.polymarket.com/ws/market"
    assert config.gamma_url == "https://gamma-api.polymarket.com"
