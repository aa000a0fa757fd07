"""Every ``python`` block of the repository's README.md, its guides (docs/guides/) and this client's README.md, run as printed
against the suite's demo service, as test/readme-examples.test.ts runs the others.

The environment is set the way the README tells a reader to: its quick-start block that exports
``TICKHOUSE_API_KEY`` and ``ASSET`` runs in bash with the key filled in for ``th_live_...``. Only the
service's address replaces ``localhost:8080``. Each block runs in a directory of its own, as a script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Live
from service import REPO

GUIDES = [
    "api",
    "python",
    "typescript",
    "polymarket-clients",
    "replay",
    "tardis",
    "backtesting",
    "mcp",
    "import",
    "recorder",
    "operating",
    "threat-model",
    "development",
]
READMES = [REPO / "README.md", *(REPO / "docs" / "guides" / f"{g}.md" for g in GUIDES), REPO / "clients" / "python" / "README.md"]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def blocks(lang: str) -> list[tuple[str, str]]:
    """(``file:line``, code) of every block in ``lang``."""
    found = []
    for readme in READMES:
        text = readme.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                found.append((f"{readme.relative_to(REPO)}:{text[: m.start()].count(chr(10)) + 1}", m.group(2)))
    return found


PYTHON = blocks("python")


def test_there_are_python_blocks_in_the_readmes_and_guides() -> None:
    assert {where.split(":")[0] for where, _ in PYTHON} == {
        "README.md",
        "docs/guides/python.md",
        "docs/guides/polymarket-clients.md",
        "docs/guides/tardis.md",
        "docs/guides/backtesting.md",
        "docs/guides/mcp.md",
        "clients/python/README.md",
    }
    assert len(PYTHON) >= 5


@pytest.fixture(scope="module")
def reader_env(live: Live, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment after the README's quick-start exports, run in bash as printed."""
    [setup] = [code for _, code in blocks("sh") if code.startswith("export TICKHOUSE_API_KEY=th_live_...")]
    script = setup.replace("th_live_...", live.key, 1).replace("localhost:8080", live.url.removeprefix("http://"))
    script += '\nprintf "\\nKEY=%s ASSET=%s\\n" "$TICKHOUSE_API_KEY" "$ASSET"\n'
    out = subprocess.run(["bash", "-eo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path_factory.mktemp("setup"))
    assert out.returncode == 0, out.stderr
    found = re.search(r"^KEY=(\S+) ASSET=(\S+)$", out.stdout, re.M)
    assert found, out.stdout
    key, asset = found.groups()
    assert key == live.key and asset.isdigit()
    return {**os.environ, "TICKHOUSE_API_KEY": key, "ASSET": asset}


@pytest.mark.parametrize("where,code", PYTHON, ids=[where for where, _ in PYTHON])
def test_block_runs_as_printed_and_shows_data(where: str, code: str, live: Live, reader_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(code.replace("http://localhost:8080", live.url))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=reader_env)
    assert (out.returncode, out.stderr) == (0, ""), f"{where}\n{out.stdout}\n{out.stderr}"
    assert out.stdout.strip(), f"{where} printed nothing"
    assert "Empty DataFrame" not in out.stdout and "None" not in out.stdout.split()
