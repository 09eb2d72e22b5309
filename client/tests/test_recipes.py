"""The recipes end to end at tiny scale.  wal-compression, checkpoint-spread
and hot-spot with two trials of each configuration: each ends in a
comparison of the configurations and their report, the trials interleaved
(A#1 B#1 A#2 B#2), the runs differ in the setting the recipe varies, and
the server's settings are as before afterwards.  network-latency (and its
delay proxy alone), client-scaling and brin with one trial of a few
seconds: the direction of each one's finding, from what was recorded.
versions with the other PostgreSQL version when tools/test.sh gives it; initdb
with this build (its direction from pg_stat_io on 18)."""

from __future__ import annotations

import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import psycopg
import pytest

from conftest import CLIENT_DIR, Server, _bindir, other_pg_config, running_server

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


def run_recipe(server: Server, recipe: str, tmp_path: pathlib.Path, extra: dict[str, str],
               **env_vars: str) -> subprocess.CompletedProcess[str]:
    """Runs client/recipes/<recipe>.sh against server, its report into
    tmp_path/report; checks that it succeeded."""
    env = server.env()
    env.update(extra, RECIPE_OUT=str(tmp_path / "report"), PG_CHRONICLE=f"{sys.executable} -m pg_chronicle",
               PYTHONPATH=str(CLIENT_DIR), PYTHON=sys.executable, **env_vars)
    p = subprocess.run([str(RECIPES / f"{recipe}.sh")], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    return p


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
    p = run_recipe(server, recipe, tmp_path, extra, RECIPE_TAG=tag, RECIPE_TRIALS="2")
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


def profile(server: Server, run: str, metric: str, column: str = "per_second") -> float:
    """chronicle.load_profile(run)'s metric (per second or per transaction)."""
    v = server.psql(f"SELECT {column} FROM chronicle.load_profile('{run}') WHERE metric = '{metric}'")
    assert v != "", f"{run}: no {metric}"
    return float(v)


def _select1_ms(conninfo: str, n: int = 40) -> float:
    """The median time of SELECT 1 on one connection, in ms."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for _ in range(5):
            conn.execute("SELECT 1")
        times = []
        for _ in range(n):
            t = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000.0


def test_delay_proxy(server: Server) -> None:
    """delay_proxy.py forwards everything in order (a 1 MB answer, through
    the server's Unix socket) and adds 2 D to a round trip: measured with
    SELECT 1 through a proxy adding D = 5 ms each way, against one adding
    none (the proxy's own cost) and directly; at least 2 D, and less than
    a second delay of each chunk would give."""
    delay = 5.0
    procs = []
    ports = []
    try:
        for d in (0.0, delay):
            pr = subprocess.Popen([sys.executable, str(RECIPES / "delay_proxy.py"), "--delay-ms", str(d),
                                   "--target", f"{server.sockdir}/.s.PGSQL.{server.port}"],
                                  stdout=subprocess.PIPE, text=True)
            procs.append(pr)
            assert pr.stdout is not None
            ports.append(int(pr.stdout.readline()))
        through = [f"host=127.0.0.1 port={port} user=postgres dbname=postgres" for port in ports]
        with psycopg.connect(through[1], autocommit=True) as conn:
            row = conn.execute("SELECT string_agg(i::text, ',' ORDER BY i) "
                               "FROM generate_series(1, 200000) i").fetchone()
            assert row is not None and row[0] == ",".join(str(i) for i in range(1, 200001))
        direct = _select1_ms(server.conninfo)
        none, delayed = _select1_ms(through[0]), _select1_ms(through[1])
        added = delayed - none
        assert 2 * delay <= added < 3 * 2 * delay, (direct, none, delayed)
        assert none - direct < 2 * delay, (direct, none, delayed)
    finally:
        for pr in procs:
            pr.terminate()
            pr.wait(timeout=10)
            assert pr.stdout is not None
            pr.stdout.close()


def test_network_latency(server: Server, tmp_path: pathlib.Path) -> None:
    """network-latency.sh: with the delay each TPC-B transaction takes at
    least its 7 round trips' added delay longer, tps falls, and a larger
    share of the client backends' time is Client:ClientRead (idle in
    transaction, the next statement on its way); the comparison's Client
    waits per transaction rise.  The proxies are gone afterwards."""
    delay = 3
    tag = "rnetl"
    a, b = f"netlat-0ms-{tag}", f"netlat-{delay}ms-{tag}"
    p = run_recipe(server, "network-latency", tmp_path,
                   {"RECIPE_TIME": "3", "RECIPE_CLIENTS": "2", "RECIPE_DELAY_MS": str(delay)},
                   RECIPE_TAG=tag, RECIPE_TRIALS="1")
    assert f"trials: A = {a} (1 trial: {a}#1), B = {b} (1 trial: {b}#1)" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    assert "ClientRead" in (tmp_path / "report" / "index.html").read_text()
    ra, rb = f"{a}#1", f"{b}#1"
    assert server.psql(f"SELECT meta->>'proxy_delay_ms' FROM chronicle.run WHERE label = '{rb}'") \
        == str(delay)
    mean = {r: float(server.psql(f"SELECT latency_mean_ms FROM chronicle.app_summary('{r}')"))
            for r in (ra, rb)}
    assert mean[rb] - mean[ra] >= 7 * 2 * delay, mean
    assert profile(server, rb, "pgbench tps") < profile(server, ra, "pgbench tps")

    def client_read(run: str) -> float:
        return float(server.psql(f"SELECT coalesce(sum(share), 0) FROM chronicle.run_wait_profile("
                                 f"'{run}', 'client backend') WHERE wait_event = 'ClientRead'"))
    assert client_read(rb) > client_read(ra) > 0
    row = next(line for line in p.stdout.splitlines() if line.startswith("Client waits "))
    _, _, unit, _, _, _, _, ratio, *_ = row.split()   # metric, unit, A, range, B, range, B/A
    assert unit == "session-seconds/tx" and float(ratio) > 1, row
    for r in (ra, rb):
        port = server.psql(f"SELECT meta->'argv'->>1 FROM chronicle.run WHERE label = '{r}'")
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(port)), timeout=5):
            pass


def test_client_scaling(server: Server, tmp_path: pathlib.Path) -> None:
    """client-scaling.sh: a -S sweep over 1, the cores and 8 times the
    cores: from the cores to 8 times as many clients tps grows by much less
    than the clients (under half their ratio) while the time processes
    spend waiting for a CPU rises (not the average active sessions: a -S
    backend woken by its next query shows idle until it gets a core, so the
    sampler does not count the queue; docs/client.md says so)."""
    cores = os.cpu_count() or 1
    tag = "rscal"
    p = run_recipe(server, "client-scaling", tmp_path,
                   {"RECIPE_TIME": "3", "RECIPE_CLIENT_COUNTS": f"1 {cores} {8 * cores}"},
                   RECIPE_TAG=tag, RECIPE_TRIALS="1")
    assert f"sweep scaling-{tag}: 3 point(s) of clients (3 runs)" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == f"report: {tmp_path / 'report' / 'index.html'}"
    run = {c: f"scaling-{tag}@clients={c}#1" for c in (cores, 8 * cores)}
    assert server.psql(f"SELECT meta->>'recipe' || ' ' || (meta->>'clients') FROM chronicle.run "
                       f"WHERE label = '{run[8 * cores]}'") == f"client-scaling {8 * cores}"
    assert " -S " in server.psql(f"SELECT meta->>'pgbench' FROM chronicle.run WHERE label = '{run[cores]}'")
    tps = {c: profile(server, r, "pgbench tps") for c, r in run.items()}
    waiting = {c: profile(server, r, "waiting for a CPU") for c, r in run.items()}
    assert tps[8 * cores] / tps[cores] < 8 / 2, tps
    assert waiting[8 * cores] > 2 * waiting[cores], waiting


@pytest.fixture(scope="module")
def small_server() -> Iterator[Server]:
    """A server whose shared_buffers (16MB) a small table can outgrow."""
    with running_server("shared_buffers = 16MB\n") as srv:
        yield srv


def test_brin(small_server: Server, tmp_path: pathlib.Path) -> None:
    """brin.sh on a table twice shared_buffers: B-tree runs an index scan,
    BRIN a bitmap heap scan; BRIN reads more bytes per query, in
    pg_stat_io's normal context as B-tree does (no bulkread ring); on 18+
    (reads counted as operations, read_bytes as bytes) BRIN's reads are
    several blocks long, B-tree's one block.  The table is dropped
    afterwards."""
    srv = small_server
    tag = "rbrin"
    a, b = f"brin-btree-{tag}#1", f"brin-brin-{tag}#1"
    p = run_recipe(srv, "brin", tmp_path, {"RECIPE_TIME": "3", "RECIPE_CLIENTS": "2"},
                   RECIPE_TAG=tag, RECIPE_TRIALS="1")
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    plans = p.stderr.split("=== index: brin")
    assert "Index Scan using recipe_brin_ts" in plans[0] and "Bitmap Heap Scan" not in plans[0], p.stderr
    assert "Bitmap Heap Scan on recipe_brin" in plans[1], p.stderr
    assert srv.psql("SELECT to_regclass('recipe_brin') IS NULL") == "t"
    assert srv.psql(f"SELECT meta->>'index' FROM chronicle.run WHERE label = '{b}'") == "brin"

    def reads(run: str) -> tuple[float, float, float]:
        """The client backends' relation reads: operations and bytes per
        transaction, and the normal context's share of the bytes."""
        ops, nbytes, normal = srv.psql(
            "SELECT sum(reads), sum(read_bytes), sum(read_bytes) FILTER (WHERE context = 'normal') "
            f"FROM chronicle.io_run_totals('{run}', 'client backend', 'relation')").split("|")
        n = float(srv.psql(f"SELECT transactions FROM chronicle.app_summary('{run}')"))
        return float(ops) / n, float(nbytes) / n, float(normal) / float(nbytes)

    ops_a, bytes_a, normal_a = reads(a)
    ops_b, bytes_b, normal_b = reads(b)
    assert bytes_b > 2 * bytes_a, (bytes_a, bytes_b)
    assert normal_a > 0.9 and normal_b > 0.9, (normal_a, normal_b)
    if int(srv.psql("SHOW server_version_num")) >= 180000:
        block = int(srv.psql("SHOW block_size"))
        assert bytes_a / ops_a < 1.5 * block < 2 * block < bytes_b / ops_b, (bytes_a / ops_a, bytes_b / ops_b)


def test_versions(server: Server, tmp_path: pathlib.Path) -> None:
    """versions.sh at tiny scale: this build and the other version's, each in
    a fresh initdb, one trial each, the archives imported into the test
    server (a repository here), the comparison and the report --vs; the
    settings that differ hold the server version and a default that
    changed between 17 and 18 (effective_io_concurrency 1 -> 16)."""
    other = other_pg_config()
    this = str(_bindir() / "pg_config")
    versions = {cfg: subprocess.run([cfg, "--version"], capture_output=True, text=True,
                                    check=True).stdout.split()[1].split(".")[0] for cfg in (this, other)}
    a, b = sorted(versions, key=lambda c: int(versions[c]))      # the older first
    assert versions[a] == "17" and versions[b] == "18", versions
    p = run_recipe(server, "versions", tmp_path,
                   {"RECIPE_TIME": "2", "RECIPE_CLIENTS": "2", "RECIPE_SCALE": "1"},
                   RECIPE_TAG="rv", RECIPE_TRIALS="1", RECIPE_PG_CONFIG_A=a, RECIPE_PG_CONFIG_B=b,
                   RECIPE_ARCHIVES=str(tmp_path / "archives"))
    assert sorted(f.name for f in (tmp_path / "archives").iterdir()) == ["pg17-rv_1.pgca", "pg18-rv_1.pgca"]
    # both runs imported, each from its own server, none recorded here
    assert server.psql("SELECT string_agg(r.label || ':' || o.server_version, ' ' ORDER BY r.label)"
                       " FROM chronicle.run r JOIN chronicle.origin o ON o.origin_id = r.origin"
                       " WHERE r.label LIKE 'pg1_-rv#1'").startswith("pg17-rv#1:17.")
    assert server.psql("SELECT count(DISTINCT origin) FROM chronicle.run WHERE label LIKE 'pg1_-rv#1'") == "2"
    settings = dict(line.split("|", 1) for line in server.psql(
        "SELECT name, coalesce(value_a, '-') || '|' || coalesce(value_b, '-')"
        " FROM chronicle.compare_settings('pg17-rv#1', 'pg18-rv#1')"
        " WHERE name IN ('server_version', 'effective_io_concurrency', 'io_method')").splitlines())
    assert settings["server_version"].startswith("17.") and "|18." in settings["server_version"]
    assert settings["effective_io_concurrency"] == "1|16" and settings["io_method"].startswith("-|")
    assert "effective_io_concurrency" in p.stdout and "server_version" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    html = (tmp_path / "report" / "index.html").read_text()
    assert "pg17-rv#1" in html and "pg18-rv#1" in html



def test_initdb(server: Server, tmp_path: pathlib.Path) -> None:
    """initdb.sh at tiny scale with this build: one trial, the COPY load
    right after initdb (fresh) and again on the same cluster (warm), both
    archived and imported into the test server, the comparison and the
    report --vs.  The finding's direction: the fresh cluster creates and
    zero-fills WAL segments (pg_stat_io object 'wal', context 'init'), the
    warm one recycles the segments the first load left and creates none.
    18 only: 17 has no counter of it, and the sampler sees none of the two
    zero-fills of a run this small (0 WALInitWrite/WALInitSync samples
    measured on 18), so the direction can only be checked on 18."""
    if int(server.psql("SHOW server_version_num")) < 180000:
        pytest.skip("pg_stat_io counts WAL segment initialisation from 18 on; at this scale the "
                    "sampler sees no WALInitWrite/WALInitSync")
    p = run_recipe(server, "initdb", tmp_path, {"RECIPE_ROWS": "200000", "RECIPE_CLIENTS": "1",
                                                "RECIPE_COPIES": "2"},
                   RECIPE_TAG="ri", RECIPE_TRIALS="1", RECIPE_PG_CONFIG=str(_bindir() / "pg_config"),
                   RECIPE_ARCHIVES=str(tmp_path / "archives"))
    assert sorted(f.name for f in (tmp_path / "archives").iterdir()) == ["fresh-ri_1.pgca", "warm-ri_1.pgca"]
    # both runs imported (an origin each) from one server, not this one, each with its two COPYs
    assert server.psql("SELECT count(DISTINCT o.system_identifier) || '|' || bool_and(o.system_identifier <> "
                       "(SELECT system_identifier FROM pg_control_system()))"
                       " FROM chronicle.run r JOIN chronicle.origin o ON o.origin_id = r.origin"
                       " WHERE r.label IN ('fresh-ri#1', 'warm-ri#1')") == "1|true"
    for run in ("fresh-ri#1", "warm-ri#1"):
        assert server.psql(f"SELECT transactions FROM chronicle.app_summary('{run}')") == "2"
    # the same amount of WAL in both (the same load)
    wal = [float(server.psql(f"SELECT wal_bytes FROM chronicle.wal_run_totals('{run}')"))
           for run in ("fresh-ri#1", "warm-ri#1")]
    assert 0.8 < wal[0] / wal[1] < 1.25 and wal[1] > 20e6, wal

    def inits(run: str) -> float:
        """The bytes every process zero-filled creating WAL segments."""
        return float(server.psql(f"SELECT coalesce(sum(write_bytes), 0) FROM chronicle.io_run_totals('{run}')"
                                 " WHERE object = 'wal' AND context = 'init'"))

    fresh, warm = inits("fresh-ri#1"), inits("warm-ri#1")
    # at least one whole segment (initdb's default size, 16 MB) after initdb, none when warm
    assert fresh >= 16 * 1024 * 1024 and warm == 0, (fresh, warm)
    assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "report" / "index.html")
    html = (tmp_path / "report" / "index.html").read_text()
    assert "fresh-ri#1" in html and "warm-ri#1" in html
