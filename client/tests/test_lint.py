"""The client's code checked without a server: the type checker (mypy,
strict, pyproject's [tool.mypy]) over the package and the recipes' proxy,
the linter (ruff, pyproject's [tool.ruff]) over the package, the tests
and the recipes' Python, and the report
page's own script and stylesheet (report_assets/): the script parses
(node --check), neither can end the element it is inlined into, the
stylesheet is well-formed, and pip installs them (package-data)."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

CLIENT_DIR = pathlib.Path(__file__).resolve().parent.parent
ASSETS = CLIENT_DIR / "pg_chronicle" / "report_assets"


def _tool(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed in this Python (pip install './client[test]')")


def test_mypy() -> None:
    _tool("mypy")
    p = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", "/dev/null"], cwd=CLIENT_DIR,
                       capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ruff() -> None:
    _tool("ruff")
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "pg_chronicle", "tests",
                        "recipes"],
                       cwd=CLIENT_DIR, capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def test_report_js_parses() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node in PATH: the report's script is not checked (apt-get install nodejs)")
    p = subprocess.run([node, "--check", str(ASSETS / "report.js")], capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, p.stderr


def test_assets_cannot_end_their_element() -> None:
    """The script and the stylesheet are inlined into the page: no text in
    them that would end their element or make the parser skip past its end."""
    js = (ASSETS / "report.js").read_text("utf-8")
    css = (ASSETS / "report.css").read_text("utf-8")
    for bad in ("</script", "<script", "<!--"):
        assert bad not in js.lower(), bad
    for bad in ("</style", "<!--"):
        assert bad not in css.lower(), bad
    assert "'use strict';" in js


def test_report_css_is_well_formed() -> None:
    """Rules of selectors and declarations (no at-rules, no nesting), every
    declaration a property and a value, every brace closed."""
    css = re.sub(r"/\*.*?\*/", "", (ASSETS / "report.css").read_text("utf-8"), flags=re.S)
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", css)
    assert rules
    assert re.sub(r"[^{}]+\{[^{}]*\}", "", css).strip() == "", "text outside a rule, or a nested brace"
    for selector, body in rules:
        assert selector.strip() and "@" not in selector, selector
        decls = [d.strip() for d in body.split(";") if d.strip()]
        assert decls, f"empty rule {selector.strip()}"
        for d in decls:
            assert re.fullmatch(r"-?[a-z][a-z-]*\s*:\s*\S.*", d, re.S), (selector.strip(), d)


def test_assets_are_package_data() -> None:
    """pip installs every file the page needs: pyproject's package-data
    covers each file of report_assets/ and vendor/."""
    conf = tomllib.loads((CLIENT_DIR / "pyproject.toml").read_text("utf-8"))
    patterns = conf["tool"]["setuptools"]["package-data"]["pg_chronicle"]
    for folder in ("report_assets", "vendor"):
        for f in (CLIENT_DIR / "pg_chronicle" / folder).iterdir():
            rel = f.relative_to(CLIENT_DIR / "pg_chronicle")
            assert any(rel.match(pat) for pat in patterns), rel
    assert {f.name for f in ASSETS.iterdir()} >= {"page.html", "report.js", "report.css"}
