"""Run archives (pg-chronicle export / import, docs/runs.md "Run archives"):
a run recorded on one server, imported into another that recorded a run of
its own at the same time, reads there as on its origin, row by row; the same
archive twice is one run; bad archives are refused and change nothing."""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import tarfile
import threading
from collections.abc import Iterator

import pytest

from conftest import Server, cli, running_server, wait_for

pytestmark = pytest.mark.one_version

# What the analyses of a run give, each as the rows psql prints (every value
# as the server writes it): the reference an import must reproduce.
ANALYSES = {
    "run_summary": "SELECT * FROM chronicle.run_summary('{run}')",
    "load_profile": "SELECT * FROM chronicle.load_profile('{run}')",
    "slowest_intervals": "SELECT * FROM chronicle.slowest_intervals('{run}', 5)",
    "app_summary": "SELECT * FROM chronicle.app_summary('{run}')",
    "app_intervals": "SELECT * FROM chronicle.app_intervals('{run}')",
    # a time-based function over the run: run_window() makes the run's
    # origin the one read for the rest of the statement
    "timeline": "SELECT t.* FROM chronicle.run_window('{run}') w,"
                " chronicle.timeline(w.run_from, w.run_to, detail => true) t",
    "io_run_totals": "SELECT * FROM chronicle.io_run_totals('{run}') ORDER BY 1, 2, 3",
    "run_marks": "SELECT ts, kind, event FROM chronicle.run_marks('{run}')",
}


def analyses(srv: Server, run: str, app: bool = True) -> dict[str, list[str]]:
    """app: the run has a pgbench log (slowest_intervals and app_* read it)."""
    return {name: srv.psql(q.format(run=run)).splitlines() for name, q in ANALYSES.items()
            if app or not (name.startswith("app_") or name == "slowest_intervals")}


def bench(srv: Server, label: str) -> None:
    cli(srv, "bench", "--label", label, "--", "-T", "5", "-c", "2", "-n", check=True)


@pytest.fixture(scope="module")
def second() -> Iterator[Server]:
    with running_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def runs(server: Server, second: Server, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Run "a" on the first server and "b" on the second, at the same time;
    each exported; a mark in a's window."""
    d = tmp_path_factory.mktemp("archives")
    t = threading.Thread(target=bench, args=(second, "b"))
    t.start()
    bench(server, "a")
    t.join()
    server.psql("SELECT chronicle.mark('in a', (SELECT started + interval '2 s' FROM chronicle.run"
                " WHERE label = 'a'))")
    cli(server, "export", "a", "-o", str(d / "a.pgca"), check=True)
    cli(second, "export", "b", "-o", str(d / "b.pgca"), check=True)
    return d


def repository_state(srv: Server) -> str:
    return srv.psql("SELECT (SELECT count(*) FROM chronicle.run), (SELECT count(*) FROM chronicle.origin),"
                    " (SELECT count(*) FROM chronicle.archive_snapshot),"
                    " (SELECT count(*) FROM chronicle.archive_history),"
                    " (SELECT count(*) FROM chronicle.app_transaction),"
                    " (SELECT count(*) FROM chronicle.mark)")


def test_round_trip_and_overlapping_origins(server: Server, second: Server, runs: pathlib.Path) -> None:
    a_there = analyses(server, "a")
    b_here = analyses(second, "b")
    assert len(a_there["timeline"]) >= 4 and a_there["app_summary"] and len(b_here["timeline"]) >= 4
    assert any("in a" in line for line in a_there["run_marks"])

    p = cli(second, "import", str(runs / "a.pgca"), check=True)
    assert "run a" in p.stdout
    # b imported into its own server under another label: the same
    # history as an origin of its own, overlapping the local one in time
    cli(second, "import", str(runs / "b.pgca"), "--rename", "b-copy", check=True)
    assert second.psql("SELECT count(*) FROM chronicle.origin") == "2"
    assert second.psql("SELECT tstzrange(r.started, r.ended) && (SELECT tstzrange(b.started, b.ended)"
                       " FROM chronicle.run b WHERE b.label = 'b') FROM chronicle.run r"
                       " WHERE r.label = 'a'") == "t"

    # every analysis of each run as on its origin, row by row
    assert analyses(second, "a") == a_there
    assert analyses(second, "b-copy") == b_here
    assert analyses(second, "b") == b_here           # the local run reads no imported row

    # settings, environment and version travel with the run
    assert second.psql("SELECT count(*) FROM chronicle.compare_settings('b', 'b-copy')") == "0"
    assert second.psql("SELECT count(*) FROM chronicle.compare_environment('b', 'b-copy')") == "0"
    listing = cli(second, "runs", check=True).stdout
    assert "server" in listing and "version" in listing

    # the same archive again: one run, said so
    before = repository_state(second)
    p = cli(second, "import", str(runs / "a.pgca"), check=True)
    assert "imported already" in p.stdout
    assert repository_state(second) == before

    # an imported run exports again as it was imported, and reads the same
    cli(second, "export", "b-copy", "-o", str(runs / "b2.pgca"), check=True)
    cli(server, "import", str(runs / "b2.pgca"), check=True)
    assert analyses(server, "b-copy") == b_here


def members(path: pathlib.Path) -> dict[str, list[list[str]]]:
    """The CSV members of an archive, as rows of fields."""
    import csv
    with tarfile.open(path, "r:xz") as tar:
        return {m.name: list(csv.reader(io.TextIOWrapper(tar.extractfile(m), "utf-8")))  # type: ignore[arg-type]
                for m in tar.getmembers() if m.name.endswith(".csv")}


def test_window_holds_the_run(server: Server, second: Server, runs: pathlib.Path) -> None:
    """A run without a pgbench log that starts after the segment's keyframe
    and spans a restart: the archive starts at the snapshot at or before its start,
    which it holds as a keyframe of every key, and reads as on its origin."""
    snaps = "SELECT count(*) FROM chronicle.snapshot"
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 3, "three more snapshots")
    start = second.psql("SELECT now()")
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 2, "two snapshots in the run")
    # -l: the new server must not hold our pipes open
    subprocess.run([str(second.bindir / "pg_ctl"), "-D", str(second.datadir), "-l", str(second.logfile),
                    "-m", "fast", "-w", "restart"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 3, "three snapshots after the restart")
    second.psql(f"SELECT chronicle.run_label('restarted', '{start}', now())")
    path = runs / "restarted.pgca"
    cli(second, "export", "restarted", "-o", str(path), check=True)

    first, keyframes, segments = second.psql(
        f"SELECT max(ts) FILTER (WHERE ts <= '{start}'), count(*) FILTER (WHERE keyframe AND ts <= '{start}'),"
        f" count(DISTINCT segment) FROM chronicle.snapshot").split("|")
    assert keyframes == "1" and segments == "2"   # the run starts after the keyframe
    got = members(path)
    snap = got["snapshot.csv"]
    col = {c: i for i, c in enumerate(snap[0])}
    assert second.psql(f"SELECT '{snap[1][col['ts']]}'::timestamptz = '{first}'") == "t"
    assert snap[1][col["keyframe"]] == "t"
    assert len({r[col["segment"]] for r in snap[1:]}) == 2
    # every io key at the first snapshot, whether it changed there or not
    io = got["history/io.csv"]
    at_first = [r for r in io[1:] if r[0] == snap[1][col["ts"]]]
    assert len(at_first) == int(second.psql(
        f"SELECT count(DISTINCT (backend_type, object, context)) FROM chronicle.io_history"
        f" WHERE ts <= '{first}'"))

    here = analyses(second, "restarted", app=False)
    assert len(here["timeline"]) >= 4     # two intervals in each segment
    cli(server, "import", str(path), check=True)
    assert analyses(server, "restarted", app=False) == here


def _retar(src: pathlib.Path, dst: pathlib.Path, manifest_edit=None, member_edit=None) -> None:  # type: ignore[no-untyped-def]
    with tarfile.open(src, "r:xz") as tin, tarfile.open(dst, "w:xz") as tout:
        for m in tin.getmembers():
            f = tin.extractfile(m)
            assert f is not None
            data = f.read()
            if m.name == "manifest.json" and manifest_edit:
                man = json.loads(data)
                manifest_edit(man)
                data = json.dumps(man).encode()
            elif m.name == "snapshot.csv" and member_edit:
                data = member_edit(data)
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tout.addfile(info, io.BytesIO(data))


def test_bad_archives(server: Server, second: Server, runs: pathlib.Path) -> None:
    a = runs / "a.pgca"
    bad = runs / "bad"
    bad.mkdir(exist_ok=True)
    (bad / "truncated.pgca").write_bytes(a.read_bytes()[: a.stat().st_size // 2])
    (bad / "text.pgca").write_text("not an archive\n")
    _retar(a, bad / "checksum.pgca", member_edit=lambda d: d.replace(b",t,", b",f,", 1))
    _retar(a, bad / "newer.pgca", manifest_edit=lambda m: m.update(format_version=99))

    def set_label(m: dict) -> None:  # type: ignore[type-arg]
        m["run"]["label"] = "taken"
        m["archive_id"] = "another"
    _retar(a, bad / "taken.pgca", manifest_edit=set_label)
    server.psql("SELECT chronicle.run_label('taken', now() - interval '1 min', now())")

    before = repository_state(server)
    expect = {"truncated.pgca": "truncated", "text.pgca": "not a pg_chronicle run archive",
              "checksum.pgca": "checksum", "newer.pgca": "newer",
              "taken.pgca": "exists already with other content"}
    for name, words in expect.items():
        p = cli(server, "import", str(bad / name))
        assert p.returncode == 2, (name, p.stdout, p.stderr)
        assert words in p.stderr, (name, p.stderr)
        assert repository_state(server) == before, name
    assert "--rename" in cli(server, "import", str(bad / "taken.pgca")).stderr

    # an open run is not exported
    server.psql("SELECT chronicle.run_begin('open')")
    try:
        p = cli(server, "export", "open", "-o", str(bad / "open.pgca"))
        assert p.returncode == 2 and "still open" in p.stderr
        assert not (bad / "open.pgca").exists()
    finally:
        server.psql("SELECT chronicle.run_end()")

    # a role that may not write runs may not import
    before = repository_state(server)
    server.psql("CREATE ROLE reader LOGIN IN ROLE pg_read_all_stats")
    env = server.env() | {"PGUSER": "reader"}
    p = cli(server, "import", str(a), "--rename", "by-reader", env=env)
    assert p.returncode == 2 and "permission denied for function _import_run" in p.stderr, p.stderr
    assert repository_state(server) == before
