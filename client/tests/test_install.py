"""pip install ./client: the console script and the package data."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import pg_chronicle


def test_console_script_is_installed() -> None:
    script = pathlib.Path(sys.executable).parent / "pg-chronicle"
    if not script.exists():
        pytest.skip("pg_chronicle is not pip-installed into this Python (tools/test.sh installs it)")
    p = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True,
                       cwd="/")
    assert p.stdout.strip() == f"pg-chronicle {pg_chronicle.__version__}"


def test_module_runs_from_the_checkout() -> None:
    client = pathlib.Path(__file__).resolve().parent.parent
    p = subprocess.run([sys.executable, "-m", "pg_chronicle", "--help"], capture_output=True,
                       text=True, cwd=client)
    assert p.returncode == 0, p.stderr
    for cmd in ("bench", "report", "runs", "compare"):
        assert cmd in p.stdout
