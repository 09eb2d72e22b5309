"""pip install ./client: the console script and the package data."""

from __future__ import annotations

import os
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
                       text=True, cwd=client, check=False)
    assert p.returncode == 0, p.stderr
    for cmd in ("bench", "report", "runs", "compare"):
        assert cmd in p.stdout


def test_installed_package_has_the_page_assets() -> None:
    """The installed package (not the checkout) holds the files the page is
    made of (package-data): it renders a page with its script and styles."""
    script = pathlib.Path(sys.executable).parent / "pg-chronicle"
    if not script.exists():
        pytest.skip("pg_chronicle is not pip-installed into this Python (tools/test.sh installs it)")
    client = pathlib.Path(__file__).resolve().parent.parent
    code = ("import sys, pg_chronicle, pg_chronicle.html as h\n"
            "assert not pg_chronicle.__file__.startswith(sys.argv[1]), pg_chronicle.__file__\n"
            "meta = {'run': 'r', 'vs': None, 'from': 'f', 'to': 't', 'intervals': 0,\n"
            "        'server_version': None, 'generated': 'g', 'headline': []}\n"
            "page = h.render(meta, [])\n"
            "for folder, name in (('report_assets', 'report.js'), ('report_assets', 'report.css'),\n"
            "                     ('vendor', 'uPlot.iife.min.js')):\n"
            "    assert h.asset(folder, name) in page, name\n"
            "print(len(page))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "-c", code, str(client)], capture_output=True, text=True,
                       cwd="/", env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) > 50000
