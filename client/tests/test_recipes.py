"""The recipes end to end at tiny scale: each ends in a comparison report,
the runs it recorded differ in the setting it varies, and the server's
settings are as before afterwards."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from conftest import CLIENT_DIR, Server

RECIPES = CLIENT_DIR / "recipes"

# recipe, extra environment, (run A, run B), the setting that differs: (name, A, B)
CASES = {
    "wal-compression": ({"RECIPE_TIME": "2", "RECIPE_CLIENTS": "2"},
                        ("walcomp-off-T", "walcomp-lz4-T"), ("wal_compression", "off", "lz4")),
    "checkpoint-spread": ({"RECIPE_TIME": "2", "RECIPE_CLIENTS": "2", "RECIPE_RATE": "100",
                           "RECIPE_CHECKPOINT_TIMEOUT": "30s"},
                          ("ckpt-0.9-T", "ckpt-0.1-T"),
                          ("checkpoint_completion_target", "0.9", "0.1")),
    "hot-spot": ({"RECIPE_TIME": "2", "RECIPE_CLIENT_COUNTS": "1 4"},
                 ("hotspot-c1-T", "hotspot-c4-T"), None),
}


@pytest.mark.parametrize("recipe", sorted(CASES))
def test_recipe(server: Server, recipe: str, tmp_path: pathlib.Path) -> None:
    extra, (a, b), differs = CASES[recipe]
    tag = f"r{recipe[:4]}"
    a, b = a.replace("T", tag), b.replace("T", tag)
    if recipe == "wal-compression" and server.psql(
            "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'wal_compression'") != "t":
        pytest.skip("this server was built without lz4")
    before = server.psql("SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings "
                         "WHERE name IN ('wal_compression', 'checkpoint_completion_target', "
                         "'checkpoint_timeout')")
    env = server.env()
    env.update(extra, RECIPE_TAG=tag, RECIPE_OUT=str(tmp_path / "report"),
               PG_CHRONICLE=f"{sys.executable} -m pg_chronicle",
               PYTHONPATH=str(CLIENT_DIR))
    p = subprocess.run([str(RECIPES / f"{recipe}.sh")], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    # ends in the comparison: the terminal table and the report of B against A
    assert f"load profile: A = {a}, B = {b}" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    html = (tmp_path / "report" / "index.html").read_text()
    assert a in html and b in html
    # both runs closed, with pgbench's transactions
    assert server.psql(
        "SELECT count(*) FROM chronicle.run r WHERE r.label IN "
        f"('{a}', '{b}') AND r.ended IS NOT NULL AND EXISTS "
        "(SELECT FROM chronicle.app_transaction t WHERE t.run_id = r.run_id)") == "2"
    if differs is not None:
        name, va, vb = differs
        assert server.psql(f"SELECT value_a || '|' || value_b FROM chronicle.compare_settings('{a}', '{b}') "
                           f"WHERE name = '{name}'") == f"{va}|{vb}"
    else:
        assert server.psql(f"SELECT meta->>'clients' FROM chronicle.run WHERE label = '{b}'") == "4"
    # the settings as they were
    assert server.psql("SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings "
                       "WHERE name IN ('wal_compression', 'checkpoint_completion_target', "
                       "'checkpoint_timeout')") == before
