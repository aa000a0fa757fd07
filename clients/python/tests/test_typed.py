"""The package is typed (py.typed ships with it): mypy --strict finds nothing in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tickhouse"


def test_mypy_strict_passes_on_the_package(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--cache-dir", str(tmp_path), str(PACKAGE)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (PACKAGE / "py.typed").exists()
