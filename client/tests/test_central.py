"""A central repository's runs (docs/central.md, "Runs"): a run recorded on a
recording server reaches the central database that subscribes to it as that
server's run; pg-chronicle --server NAME reads it there, and its report
equals the report made on the server, panel by panel, and SERVER:RUN names
it whatever server is read; exported there, its
archive imports with the analyses of the run on the server; the central's
own run of the same label stays its own."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from pg_chronicle import sweep
from pg_chronicle.db import connect, set_server
from pg_chronicle.report import build

from conftest import Server, cli, running_server, wait_for
from test_archive import analyses

pytestmark = pytest.mark.one_version


@pytest.fixture(scope="module")
def source() -> Iterator[Server]:
    with running_server("wal_level = logical") as srv:
        yield srv


@pytest.fixture(scope="module")
def central() -> Iterator[Server]:
    """Not the session's server: it subscribes, and has a run "a"."""
    with running_server() as srv:
        yield srv


def report_data(conninfo: str, run: str, server: str | None = None) -> tuple[Any, Any]:
    """The data behind every panel of pg-chronicle [--server SERVER] report
    RUN (report.build()), and its header without the time it was made."""
    set_server(server)
    try:
        with connect(conninfo) as conn:
            meta, panel_list, _ = build(conn, run, None, None, None)
    finally:
        set_server(None)
    assert meta.pop("generated")
    return meta, panel_list


def test_runs_of_a_subscribed_server(central: Server, source: Server, tmp_path: pathlib.Path) -> None:
    name = source.psql("SELECT name FROM chronicle.server()")
    source.psql("SELECT chronicle.publish()")
    # with its history from before: the keyframe before the run (a key's
    # value in the run reads back to it)
    central.psql(f"SELECT chronicle.subscribe('{name}', '{source.conninfo}', backfill => '1 hour')")
    # the central's own run "a" (a label the source's run has too)
    central.psql("SELECT chronicle.run_label('a', now() - interval '5 s', now())")

    cli(source, "bench", "--label", "a", "--", "-T", "5", "-c", "2", "-n", check=True)
    n_tx = source.psql("SELECT count(*) FROM chronicle.app_transaction")
    assert int(n_tx) > 100
    wait_for(lambda: central.psql(
        "SELECT count(*) FROM chronicle.run r JOIN chronicle.app_transaction t USING (run_id)"
        " WHERE r.label = 'a' AND r.ended IS NOT NULL AND r.server <> 0") == n_tx,
        "the source's run a, ended, with its pgbench log, on the central side")
    # and the snapshots after its end (its last interval reads them)
    wait_for(lambda: source.psql("SELECT max(s.ts) > r.ended + interval '1 s' FROM chronicle.snapshot s,"
                                 " chronicle.run r WHERE r.label = 'a' GROUP BY r.ended") == "t",
             "a snapshot after the end of run a")
    last = source.psql("SELECT max(ts) FROM chronicle.snapshot")
    wait_for(lambda: central.psql(f"SELECT max(ts) >= '{last}' FROM chronicle.archive_snapshot") == "t",
             "the source's snapshots after run a on the central side")

    # runs: every server's on the central, each with its server; --server: one's
    listing = cli(central, "runs", check=True).stdout
    assert sum(1 for line in listing.splitlines() if line.startswith("a ")) == 2, listing
    assert name in listing
    one = cli(central, "--server", name, "runs", check=True).stdout
    assert [line.split()[:2] for line in one.splitlines() if line.startswith("a ")] == [["a", name]], one
    assert one.splitlines()[2:] == [line for line in cli(source, "runs", check=True).stdout.splitlines()[2:]
                                    if line.startswith("a ")], (one, listing)

    # the report of the source's run a on the central side, panel by panel
    meta, want = report_data(source.conninfo, "a")
    assert meta["intervals"] >= 4 and any(c["series"] for p in want for c in p["charts"])
    got_meta, got = report_data(central.conninfo, "a", name)
    assert got_meta == meta
    for p, q in zip(got, want, strict=True):
        assert p == q, p["id"]
    # without --server, run a is the central's own
    own_meta, _ = report_data(central.conninfo, "a")
    assert own_meta["from"] != meta["from"]
    assert (cli(central, "--server", name, "compare", "a", "a", check=True).stdout
            == cli(source, "compare", "a", "a", check=True).stdout)
    # server:label names the source's run whatever server the session reads:
    # its report as on the source, and beside the central's own run a
    q_meta, q_panels = report_data(central.conninfo, f"{name}:a")
    assert q_meta == {**meta, "run": f"{name}:a"}
    assert (json.dumps(q_panels, default=str).replace(f'"{name}:a"', '"a"')
            == json.dumps(want, default=str))
    assert (cli(central, "compare", f"{name}:a", f"{name}:a", check=True).stdout.replace(f"{name}:a", "a")
            == cli(source, "compare", "a", "a", check=True).stdout)

    # trials and sweeps name a server's runs: the source's t#1 and t#2, not
    # the central's own t#1; the source's s@clients=1 and 2, not the
    # central's s@clients=4
    source.psql("SELECT chronicle.run_label(l, started, ended) FROM chronicle.run,"
                " unnest(ARRAY['t#1', 't#2', 's@clients=1', 's@clients=2']) l WHERE label = 'a'")
    central.psql("SELECT chronicle.run_label(l, now() - interval '5 s', now())"
                 " FROM unnest(ARRAY['t#1', 's@clients=4']) l")
    wait_for(lambda: central.psql("SELECT count(*) FROM chronicle.run"
                                  " WHERE label ~ '^(t#|s@)' AND server <> 0") == "4",
             "the source's trials and sweep runs on the central side")
    assert (cli(central, "--server", name, "compare", "t", "a", check=True).stdout
            == cli(source, "compare", "t", "a", check=True).stdout)
    set_server(name)
    try:
        with connect(central.conninfo) as conn:
            assert [r["label"] for r in sweep._runs_of(conn, "s")] == ["s@clients=1", "s@clients=2"]
    finally:
        set_server(None)

    # the source's run a exported from the central side: its archive imports
    # into another database with the analyses of run a on the source
    archive = tmp_path / "a.pgca"
    cli(central, "--server", name, "export", "a", "-o", str(archive), check=True)
    central.psql("CREATE DATABASE repo")
    central.psql("CREATE EXTENSION pg_chronicle", dbname="repo")
    repo = central.conninfo.replace("dbname=postgres", "dbname=repo")
    cli(central, "-d", repo, "import", str(archive), check=True)
    assert central.psql("SELECT server_name FROM chronicle.origin", dbname="repo") == name
    assert analyses(central, "a", dbname="repo") == analyses(source, "a")
    # and into the central's own runs under a label only the source's runs
    # have there: a label is taken per server
    cli(central, "import", str(archive), "--rename", "t#2", check=True)
    assert analyses(central, "t#2") == analyses(source, "a")

    # an unknown server, and --server where it does not apply
    p = cli(central, "--server", "nope", "runs")
    assert p.returncode == 2 and 'no subscribed server named "nope"' in p.stderr, p.stderr
    p = cli(central, "--server", name, "mark", "x")
    assert p.returncode == 2 and "--server" in p.stderr, p.stderr
