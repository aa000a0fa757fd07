"""The package is typed (py.typed ships with it): mypy --strict finds nothing in it, and a user's script
that uses its frames and answers (typed_usage.py) checks with concrete types, not Any: the same script
with one wrong type in it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tickhouse"
USAGE = Path(__file__).resolve().parent / "typed_usage.py"


def mypy(tmp_path: Path, *targets: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), *map(str, targets)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_mypy_strict_passes_on_the_package(tmp_path: Path) -> None:
    out = mypy(tmp_path, PACKAGE)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (PACKAGE / "py.typed").exists()


def test_a_users_script_checks_with_concrete_types(tmp_path: Path) -> None:
    # Checked against the installed package, as a user's script is.
    out = mypy(tmp_path, USAGE)
    assert out.returncode == 0, out.stdout + out.stderr
    # Were any of these Any, a wrong expectation would pass as well: each one must fail.
    source = USAGE.read_text()
    for right, wrong in [
        ("assert_type(ticks, pd.DataFrame)", "assert_type(ticks, pl.DataFrame)"),
        ('limit=24, as_="polars"), pl.DataFrame)', 'limit=24, as_="polars"), pd.DataFrame)'),
        ('via="parquet"), pa.Table)', 'via="parquet"), pd.DataFrame)'),
        ('assert_type(cost["average_price"], float | None)', 'assert_type(cost["average_price"], str)'),
        ('assert_type(event["price_changes"][0]["best_bid"], str)', 'assert_type(event["price_changes"][0]["best_bid"], float)'),
        ('fields="all", as_="polars"), pl.DataFrame)', 'fields="all", as_="polars"), pd.DataFrame)'),
        ('assert_type(instrument["fees"]["rate"], float | None)', 'assert_type(instrument["fees"]["rate"], str)'),
    ]:
        assert source.count(right) == 1, right
        broken = tmp_path / "broken_usage.py"
        broken.write_text(source.replace(right, wrong))
        out = mypy(tmp_path, broken)
        assert out.returncode == 1 and "[assert-type]" in out.stdout, (wrong, out.stdout)
