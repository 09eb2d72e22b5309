"""The recipes end to end at tiny scale, two trials of each configuration:
each ends in a comparison of the configurations and their report, the
trials interleaved (A#1 B#1 A#2 B#2), the runs differ in the setting the
recipe varies, and the server's settings are as before afterwards."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from conftest import CLIENT_DIR, Server

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

RECIPES = CLIENT_DIR / "recipes"

# recipe, extra environment, (configuration A, configuration B), the setting
# that differs: (name, A, B)
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
    env.update(extra, RECIPE_TAG=tag, RECIPE_OUT=str(tmp_path / "report"), RECIPE_TRIALS="2",
               PG_CHRONICLE=f"{sys.executable} -m pg_chronicle",
               PYTHONPATH=str(CLIENT_DIR))
    p = subprocess.run([str(RECIPES / f"{recipe}.sh")], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    # ends in the comparison of the configurations: the terminal table and
    # the report of B against A
    assert f"trials: A = {a} (2 trials: {a}#1, {a}#2), B = {b} (2 trials: {b}#1, {b}#2)" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    html = (tmp_path / "report" / "index.html").read_text()
    assert f"{a}#" in html and f"{b}#" in html and '"id":"trials"' in html
    # every trial closed, with pgbench's transactions, interleaved: A#1 B#1 A#2 B#2
    labels = [f"{a}#1", f"{b}#1", f"{a}#2", f"{b}#2"]
    assert server.psql(
        "SELECT string_agg(r.label, ' ' ORDER BY r.started) FROM chronicle.run r WHERE r.label IN "
        f"('{a}#1', '{a}#2', '{b}#1', '{b}#2') AND r.ended IS NOT NULL AND EXISTS "
        "(SELECT FROM chronicle.app_transaction t WHERE t.run_id = r.run_id)") == " ".join(labels)
    if differs is not None:
        name, va, vb = differs
        for k in (1, 2):
            assert server.psql(f"SELECT value_a || '|' || value_b FROM chronicle.compare_settings("
                               f"'{a}#{k}', '{b}#{k}') WHERE name = '{name}'") == f"{va}|{vb}"
        assert server.psql(f"SELECT count(*) FROM chronicle.compare_settings('{a}#1', '{a}#2') "
                           f"WHERE name = '{name}'") == "0"
        assert "differ in settings" not in p.stdout
    else:
        assert server.psql(f"SELECT meta->>'clients' FROM chronicle.run WHERE label = '{b}#2'") == "4"
    # the settings as they were
    assert server.psql("SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings "
                       "WHERE name IN ('wal_compression', 'checkpoint_completion_target', "
                       "'checkpoint_timeout')") == before
