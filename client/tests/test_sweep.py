"""pg-chronicle sweep and sweep-report against a real server: a --clients
sweep records one run per value (labels, meta, pgbench's command line),
prints one row per value whose tps and latencies are those of the run's
pgbench transactions (computed here from chronicle.app_transaction, not by
the extension), and draws one point per value on every curve (the SVG's
marked lines, the page's JSON); a --rate sweep passes -R; --trials gives
each point the median of its trials; --vs overlays two sweeps; every bad
input exits 2 with one line and records nothing.  The option scanner and
the value lists are checked without a server."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import xml.etree.ElementTree as ET

import pytest

from pg_chronicle import sweep
from pg_chronicle.db import ClientError

from conftest import Server, cli

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

PGBENCH = ["-T", "2", "-S", "-n"]
CPUS = os.cpu_count() or 1


# ---------------------------------------------------------------------------
# Without a server

def test_pgbench_options() -> None:
    opts = sweep.pgbench_options
    assert opts(["-c", "4", "-T", "2"]) == [("c", "4"), ("T", "2")]
    assert opts(["-c4", "-nS"]) == [("c", "4"), ("n", None), ("S", None)]
    assert opts(["-nc4"]) == [("n", None), ("c", "4")]
    assert opts(["-nc", "4", "-j2"]) == [("n", None), ("c", "4"), ("j", "2")]
    # long, with "=" or not, abbreviated when unambiguous (--c: client or connect; --ra:
    # rate or random-seed)
    assert opts(["--client=4", "--jobs", "2"]) == [("c", "4"), ("j", "2")]
    assert opts(["--cl=4", "--rat", "10", "--c", "--ra", "5"]) == [("c", "4"), ("R", "10")]
    # option arguments are not options; "--" ends them
    assert opts(["-f", "-c.sql", "-D", "x=-R", "--", "-c", "4"]) == [("f", "-c.sql"), ("D", "x=-R")]
    assert opts(["postgres", "-R", "5"]) == [("R", "5")]


def test_parse_values() -> None:
    assert sweep.parse_values("clients", "1,2,4, 8") == [1, 2, 4, 8]
    assert sweep.parse_values("clients", "16,1") == [16, 1]
    assert sweep.parse_values("rate", "100,250.5,1e3") == [100, 250.5, 1000]
    for var, spec, why in [("clients", "", "comma-separated"), ("clients", "1,,2", "comma-separated"),
                           ("clients", "1,", "comma-separated"), ("clients", "x", "whole number"),
                           ("clients", "1.5", "whole number"), ("clients", "0", "not above 0"),
                           ("clients", "-2", "not above 0"), ("clients", "1,2,1", "twice"),
                           ("rate", "10,abc", "not a number"), ("rate", "inf", "finite"),
                           ("rate", "nan", "finite"), ("rate", "0", "not above 0"),
                           ("rate", "10,10.0", "twice")]:
        with pytest.raises(ClientError, match=why):
            sweep.parse_values(var, spec)


def test_point_args() -> None:
    assert sweep.point_args("clients", 8, ["-T", "2"]) == ["-c", "8", "-j", str(min(8, CPUS)), "-T", "2"]
    assert sweep.point_args("clients", 1, ["-T", "2"]) == ["-c", "1", "-j", "1", "-T", "2"]
    assert sweep.point_args("clients", 8, ["-j", "3"]) == ["-c", "8", "-j", "3"]
    assert sweep.point_args("clients", 8, ["--jobs=3"]) == ["-c", "8", "--jobs=3"]
    assert sweep.point_args("rate", 12.5, ["-c", "2"]) == ["-R", "12.5", "-c", "2"]
    assert sweep.point_label("s", "rate", 200.0) == "s@rate=200"
    for bad in ("a@b", "a#1", ""):
        with pytest.raises(ClientError):
            sweep.check_name(bad)


# ---------------------------------------------------------------------------
# Against the server

@dataclasses.dataclass
class Recorded:
    proc: subprocess.CompletedProcess[str]
    out: pathlib.Path | None


def _runs(server: Server) -> int:
    return int(server.psql("SELECT count(*) FROM chronicle.run"))


@pytest.fixture(scope="module")
def clients_sweep(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    out = tmp_path_factory.mktemp("sweep") / "out"
    p = cli(server, "sweep", "--label", "sw-c", "--clients", "1,2", "--meta", "purpose=test",
            "-o", str(out), "--", *PGBENCH, check=True)
    return Recorded(p, out)


@pytest.fixture(scope="module")
def rate_sweep(server: Server) -> Recorded:
    return Recorded(cli(server, "sweep", "--label", "sw-r", "--rate", "40,20", "--",
                        "-c", "2", *PGBENCH, check=True), None)


@pytest.fixture(scope="module")
def vs_sweep(server: Server, clients_sweep: Recorded,
             tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Two trials per point, overlaid on sw-c."""
    out = tmp_path_factory.mktemp("sweepvs") / "out"
    p = cli(server, "sweep", "--label", "sw-t", "--clients", "3,1", "--trials", "2", "--vs", "sw-c",
            "-o", str(out), "--", *PGBENCH, check=True)
    return Recorded(p, out)


def _meta(server: Server, prefix: str) -> dict[str, dict]:
    rows = server.psql(f"SELECT label, meta FROM chronicle.run WHERE label LIKE '{prefix}@%' "
                       "ORDER BY started").splitlines()
    return {r.split("|", 1)[0]: json.loads(r.split("|", 1)[1]) for r in rows}


def _reference(server: Server, label: str) -> dict[str, float]:
    """tps (ok transactions over the time from the first one's start to the
    last one's end) and nearest-rank p50 and p99 (ms) of a run, from its
    app_transaction rows."""
    rows = server.psql(
        "SELECT t.status, t.latency_us, extract(epoch FROM t.ts)::numeric "
        "  FROM chronicle.app_transaction t JOIN chronicle.run r ON r.run_id = t.run_id "
        f" WHERE r.label = '{label}'").splitlines()
    fields = [r.split("|") for r in rows]
    ends = [float(f[2]) for f in fields]
    starts = [float(f[2]) - (int(f[1]) / 1e6 if f[1] else 0) for f in fields]
    lat = sorted(int(f[1]) for f in fields if f[0] == "ok")
    assert len(lat) > 0

    def pct(p: float) -> float:
        return lat[max(math.ceil(p * len(lat)), 1) - 1] / 1000.0

    return {"tps": len(lat) / (max(ends) - min(starts)), "p50": pct(0.5), "p99": pct(0.99)}


def _table(stdout: str, name: str) -> tuple[list[str], list[list[str]]]:
    """The sweep's table in bench's stdout: its header and rows."""
    lines = stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(f"sweep {name}:"))
    head = re.split(r"\s{2,}", lines[i + 1].strip())
    assert set(lines[i + 2].replace(" ", "")) == {"-"}
    rows = []
    for line in lines[i + 3:]:
        if not re.match(r"\s*[0-9]", line):
            break
        rows.append(line.split())
    return head, rows


def _shown(cell: str) -> float:
    return float(cell.replace(",", ""))


def _close(shown: str, exact: float) -> bool:
    """A number as text.num() prints it (3 significant digits, integers
    from 1,000) matches exact."""
    return abs(_shown(shown) - exact) <= max(0.005 * abs(exact), 0.5 if exact >= 1000 else 0)


def _page(index: pathlib.Path) -> dict:
    m = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>',
                  index.read_text("utf-8"), re.S)
    assert m is not None
    return json.loads(m.group(1))


SVG = "{http://www.w3.org/2000/svg}"


def _svg_points(svg: pathlib.Path) -> dict[str, int]:
    """Per element id (gid) of the figure: the markers drawn in it (one
    <use> per point of a line with markers)."""
    root = ET.parse(svg).getroot()
    return {g.get("id", ""): len(g.findall(f".//{SVG}use")) for g in root.iter(f"{SVG}g")
            if (g.get("id") or "").startswith("sweep-")}


def test_clients_sweep_records_one_run_per_value(server: Server, clients_sweep: Recorded) -> None:
    meta = _meta(server, "sw-c")
    assert list(meta) == ["sw-c@clients=1", "sw-c@clients=2"]
    for v in (1, 2):
        m = meta[f"sw-c@clients={v}"]
        assert m["sweep"] == "sw-c" and m["sweep_var"] == "clients" and m["sweep_value"] == v
        assert m["tool"] == "pg-chronicle sweep" and m["purpose"] == "test"
        assert m["pgbench"] == f"pgbench -c {v} -j {min(v, CPUS)} -T 2 -S -n"
        assert m["clients"] == v
    assert "sw-c: point 1 of 2, clients = 1" in clients_sweep.proc.stderr


def test_clients_sweep_table(server: Server, clients_sweep: Recorded) -> None:
    """One row per value, in value order; tps and latency are the run's
    pgbench transactions'; the sessions are chronicle.run_summary()'s
    active sessions, the classes add up to them."""
    head, rows = _table(clients_sweep.proc.stdout, "sw-c")
    assert head == ["clients", "tps", "p50 ms", "p99 ms", "sessions", "CPU", "IO", "Lock", "LWLock",
                    "IPC", "Client", "Timeout", "other"]
    assert [r[0] for r in rows] == ["1", "2"]
    for r in rows:
        label = f"sw-c@clients={r[0]}"
        ref = _reference(server, label)
        assert _close(r[1], ref["tps"]), (r, ref)
        assert _close(r[2], ref["p50"]) and _close(r[3], ref["p99"]), (r, ref)
        active = float(server.psql(f"SELECT value FROM chronicle.run_summary('{label}') "
                                   "WHERE metric = 'active_processes'"))
        assert _close(r[4], active), (r, active)
        assert abs(sum(_shown(c) for c in r[5:]) - _shown(r[4])) <= 0.01 * _shown(r[4]) + 0.01


def test_clients_sweep_pictures(server: Server, clients_sweep: Recorded) -> None:
    out = clients_sweep.out
    assert out is not None
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = _svg_points(out / "sweep.svg")
    for curve in ("tps", "p50", "p99", "sessions"):
        assert points[f"sweep-{curve}-A"] == 2, points
    assert not any(k.endswith("-B") for k in points)
    assert "sweep-waits-A-CPU" in points
    data = _page(out / "index.html")
    assert [s["name"] for s in data["sweeps"]] == ["sw-c"]
    pts = data["sweeps"][0]["points"]
    assert [p["value"] for p in pts] == [1, 2]
    assert [p["runs"] for p in pts] == [["sw-c@clients=1"], ["sw-c@clients=2"]]
    for p in pts:
        ref = _reference(server, p["config"])
        assert math.isclose(p["tps"], ref["tps"], rel_tol=1e-6), (p, ref)
        assert math.isclose(p["p99"], ref["p99"], rel_tol=1e-9)
    page = (out / "index.html").read_text("utf-8")
    assert "data:image/svg+xml;base64," in page and "<script src" not in page
    assert f"report: {out / 'index.html'}" in clients_sweep.proc.stdout


def test_rate_sweep_passes_rate(server: Server, rate_sweep: Recorded) -> None:
    meta = _meta(server, "sw-r")
    assert list(meta) == ["sw-r@rate=40", "sw-r@rate=20"]       # in the order given
    for v in (40, 20):
        m = meta[f"sw-r@rate={v}"]
        assert m["pgbench"] == f"pgbench -R {v} -c 2 -T 2 -S -n"
        assert m["argv"][:2] == ["-R", str(v)] and m["sweep_var"] == "rate" and m["sweep_value"] == v
    head, rows = _table(rate_sweep.proc.stdout, "sw-r")
    assert head[0] == "rate (tps)"
    assert [r[0] for r in rows] == ["20", "40"]                 # the table by value
    for r in rows:
        assert _close(r[1], _reference(server, f"sw-r@rate={r[0]}")["tps"])


def test_trials_and_vs(server: Server, vs_sweep: Recorded) -> None:
    """--trials 2: two runs per point, the point's numbers the median of
    its trials; --vs: both sweeps in the page and the figure, one point
    per value on each of their curves."""
    meta = _meta(server, "sw-t")
    assert sorted(meta) == ["sw-t@clients=1#1", "sw-t@clients=1#2", "sw-t@clients=3#1", "sw-t@clients=3#2"]
    assert meta["sw-t@clients=3#2"]["pgbench"] == f"pgbench -c 3 -j {min(3, CPUS)} -T 2 -S -n"
    head, rows = _table(vs_sweep.proc.stdout, "sw-t")
    assert head[:3] == ["clients", "trials", "tps"]
    assert [r[:2] for r in rows] == [["1", "2"], ["3", "2"]]
    assert vs_sweep.out is not None
    data = _page(vs_sweep.out / "index.html")
    assert [s["name"] for s in data["sweeps"]] == ["sw-t", "sw-c"]
    for r, p in zip(rows, data["sweeps"][0]["points"], strict=True):
        refs = [_reference(server, f"sw-t@clients={r[0]}#{k}")["tps"] for k in (1, 2)]
        assert p["runs"] == [f"sw-t@clients={r[0]}#1", f"sw-t@clients={r[0]}#2"]
        assert math.isclose(p["tps"], statistics.median(refs), rel_tol=1e-6)
        assert _close(r[2], statistics.median(refs))
    points = _svg_points(vs_sweep.out / "sweep.svg")
    for curve in ("tps", "p50", "p99", "sessions"):
        assert points[f"sweep-{curve}-A"] == 2 and points[f"sweep-{curve}-B"] == 2, points


def test_sweep_report(server: Server, clients_sweep: Recorded, vs_sweep: Recorded,
                      tmp_path: pathlib.Path) -> None:
    """sweep-report draws recorded sweeps and records nothing."""
    before = _runs(server)
    out = tmp_path / "rep"
    p = cli(server, "sweep-report", "sw-c", "--vs", "sw-t", "-o", str(out), check=True)
    assert _runs(server) == before
    assert [r[0] for r in _table(p.stdout, "sw-c")[1]] == ["1", "2"]
    assert [r[0] for r in _table(p.stdout, "sw-t")[1]] == ["1", "3"]
    assert [s["name"] for s in _page(out / "index.html")["sweeps"]] == ["sw-c", "sw-t"]
    assert (out / "sweep.png").exists()
    # the same numbers as when recorded
    assert _table(p.stdout, "sw-c")[1] == _table(clients_sweep.proc.stdout, "sw-c")[1]
    # found from the meta alone too: a run relabelled out of the NAME@ prefix stays a point
    server.psql("UPDATE chronicle.run SET label = 'sw-c-two' WHERE label = 'sw-c@clients=2'")
    try:
        p2 = cli(server, "sweep-report", "sw-c", "-o", str(tmp_path / "rep2"), check=True)
        assert _table(p2.stdout, "sw-c")[1] == _table(clients_sweep.proc.stdout, "sw-c")[1]
    finally:
        server.psql("UPDATE chronicle.run SET label = 'sw-c@clients=2' WHERE label = 'sw-c-two'")


BAD = [
    (["--clients", "1,2", "--", "-c", "4", *PGBENCH], "set -c/--client already"),
    (["--clients", "1", "--", "--client=4", *PGBENCH], "set -c/--client already"),
    (["--clients", "1", "--", "-nc4", "-T", "2"], "set -c/--client already"),
    (["--clients", "1", "--", "--cl", "4", "-T", "2"], "set -c/--client already"),
    (["--rate", "10", "--", "-R", "5", *PGBENCH], "set -R/--rate already"),
    (["--rate", "10", "--", "--rate=5", *PGBENCH], "set -R/--rate already"),
    (["--clients", "", "--", *PGBENCH], "comma-separated list"),
    (["--clients", "1,,2", "--", *PGBENCH], "comma-separated list"),
    (["--clients", "1,x", "--", *PGBENCH], "not a whole number"),
    (["--clients", "1,2,1", "--", *PGBENCH], "given twice"),
    (["--clients", "0,1", "--", *PGBENCH], "not above 0"),
    (["--clients=-1", "--", *PGBENCH], "not above 0"),
    (["--rate", "10,-5", "--", *PGBENCH], "not above 0"),
    (["--rate", "nan", "--", *PGBENCH], "not a finite number"),
    (["--clients", "1", "--trials", "0", "--", *PGBENCH], "--trials wants 1 or more"),
    (["--clients", "1", "--", "-i"], "initialise with pgbench -i first"),
    (["--clients", "1", "--vs", "nosuch", "--", *PGBENCH], 'no sweep "nosuch"'),
    (["--clients", "1", "--rate", "5", "--", *PGBENCH], "not allowed with argument"),
    (["--", *PGBENCH], "one of the arguments --clients --rate is required"),
]


@pytest.mark.parametrize(("args", "why"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input(server: Server, args: list[str], why: str) -> None:
    before = _runs(server)
    p = cli(server, "sweep", "--label", "sw-bad", *args)
    assert p.returncode == 2, p.stderr
    assert why in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert _runs(server) == before


@pytest.mark.parametrize("label", ["a@b", "a#1"])
def test_bad_label(server: Server, label: str) -> None:
    before = _runs(server)
    p = cli(server, "sweep", "--label", label, "--clients", "1", "--", *PGBENCH)
    assert p.returncode == 2 and "cannot hold" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert _runs(server) == before


def test_bad_against_recorded(server: Server, clients_sweep: Recorded, rate_sweep: Recorded,
                              tmp_path: pathlib.Path) -> None:
    """A sweep name taken, a point's label taken, --vs of another variable,
    sweep-report of nothing: exit 2, nothing recorded."""
    before = _runs(server)
    server.psql("SELECT chronicle.run_begin('sw-x@clients=2'), chronicle.run_end('sw-x@clients=2')")
    try:
        for args, why in [
            (["--label", "sw-c", "--clients", "4"], 'sweep "sw-c" exists already'),
            (["--label", "sw-y", "--clients", "4", "--vs", "sw-r"], "only sweeps of one variable"),
            (["--label", "sw-x", "--clients", "1,2"], 'sweep "sw-x" exists already'),
        ]:
            p = cli(server, "sweep", *args, "--", *PGBENCH)
            assert p.returncode == 2 and why in p.stderr and "Traceback" not in p.stderr, p.stderr
        p = cli(server, "sweep-report", "nosuch", "-o", str(tmp_path / "x"))
        assert p.returncode == 2 and 'no sweep "nosuch"' in p.stderr, p.stderr
        p = cli(server, "sweep-report", "sw-c", "--vs", "sw-r", "-o", str(tmp_path / "y"))
        assert p.returncode == 2 and "only sweeps of one variable" in p.stderr, p.stderr
        assert _runs(server) == before + 1
    finally:
        server.psql("SELECT chronicle.run_delete('sw-x@clients=2')")


def test_hostile_name(server: Server, tmp_path: pathlib.Path) -> None:
    """A sweep's name is data: escaped in the page, visible() on the
    terminal, plain text in the pictures."""
    name = "</script><b>x\x1b[31m"
    label = f"{name}@clients=1"
    lit = f"convert_from(decode('{label.encode().hex()}', 'hex'), 'UTF8')"
    server.psql(f"SELECT chronicle.run_label({lit}, now() - interval '5 s', now() - interval '1 s')")
    try:
        p = cli(server, "sweep-report", name, "-o", str(tmp_path / "h"), check=True)
        assert "\x1b" not in p.stdout and "\\x1b[31m" in p.stdout
        page = (tmp_path / "h" / "index.html").read_text("utf-8")
        assert "<b>x" not in page and page.count("</script>") == 1
        assert _page(tmp_path / "h" / "index.html")["sweeps"][0]["name"] == name
    finally:
        server.psql(f"SELECT chronicle.run_delete({lit})")
