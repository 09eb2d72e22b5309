"""Trials: a configuration recorded as a series of runs.

The trials of a configuration NAME are the runs labelled NAME#1, NAME#2,
... (k a positive integer without leading zeros): ordinary runs, each with
its own window and pgbench log, so that every SQL function taking a run
works on each; `pg-chronicle bench --trials N` records them, and so does
any series of run_begin('NAME#k') ... run_end() from SQL.  Where the client
takes a run (compare, report), NAME names the configuration when runs
NAME#k exist (a run labelled NAME as well is an error: ambiguous), else the
run NAME itself, a configuration of one run.

A configuration's number for a metric is the median of its trials (the
mean of the middle two for an even count), with their range (min .. max)
as its spread.  Two configurations A and B are compared per metric by the
ratio of the medians B/A and an interval: the lowest and the highest ratio
b_i / a_j over every pair of a B trial and an A trial, i.e. (min B / max A,
max B / min A).  The interval excludes 1 exactly when the two ranges do
not overlap (every B trial above every A trial, or below): "beyond the
trials' spread"; else "within noise".  If the trials are exchangeable
(independent, same machine, steady state) and the configurations do not
differ, that happens by chance with probability 2 / C(n + m, n) for n and
m trials (chance()): 10 % for 3 and 3, 2.9 % for 4 and 4.  With one trial
on each side no spread is known.  docs/client.md#trials says why this
method and what it assumes.

The statistics (spread, compare_values, verdict_text, chance) need no
server; the rest reads chronicle.run and chronicle.load_profile(), one
call per trial.
"""

from __future__ import annotations

import math
import re
import statistics
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from pg_chronicle import text
from pg_chronicle.db import RUN_OF_SERVER, ClientError, query, run_window
from pg_chronicle.model import Cell, Panel, Table

SEP = "#"
_TRIAL = re.compile(r"^(?P<name>.+)#(?P<k>[1-9][0-9]*)$", re.S)


def trial_label(name: str, k: int) -> str:
    """The label of trial k of configuration name: name#k."""
    return f"{name}{SEP}{k}"


def parse_trial(label: str) -> tuple[str, int] | None:
    """(configuration, k) of a trial's label, None for a label that is not one."""
    m = _TRIAL.match(label)
    return (m.group("name"), int(m.group("k"))) if m else None


# ---------------------------------------------------------------------------
# The statistics (no server)

@dataclass(frozen=True)
class Spread:
    """A configuration's trials of one metric: their median and range."""

    n: int
    median: float
    low: float
    high: float

    @property
    def relative(self) -> float | None:
        """(high - low) / median: the spread as a share of the median."""
        return None if self.median == 0 else (self.high - self.low) / abs(self.median)


def spread(values: Sequence[float]) -> Spread | None:
    """Median (of the middle two, their mean) and range; None for no values."""
    if not values:
        return None
    return Spread(n=len(values), median=float(statistics.median(values)),
                  low=float(min(values)), high=float(max(values)))


Verdict = Literal["beyond", "within", "no spread", "no values"]


@dataclass(frozen=True)
class Comparison:
    """B against A for one metric."""

    a: Spread | None
    b: Spread | None
    ratio: float | None     # median B / median A (None when median A is 0)
    low: float | None       # min B / max A: the lowest pairwise ratio b_i / a_j
    high: float | None      # max B / min A: the highest (None, and low too, when min A is 0)
    verdict: Verdict


def compare_values(a: Sequence[float], b: Sequence[float]) -> Comparison:
    """B against A from each configuration's trials of one metric (values
    of 0 or more): the ratio of the medians, the range of the pairwise
    ratios (none when an A trial is 0), and the verdict: "beyond" when the
    ranges do not overlap (the interval excludes 1; equal values overlap),
    "within" when they do, "no spread" with one trial on each side, "no
    values" when a side has none."""
    sa, sb = spread(a), spread(b)
    if sa is None or sb is None:
        return Comparison(sa, sb, None, None, None, "no values")
    ratio = sb.median / sa.median if sa.median != 0 else None
    if sa.n == 1 and sb.n == 1:
        return Comparison(sa, sb, ratio, None, None, "no spread")
    # no ratio to an A trial of 0: no interval, the verdict from the ranges
    low, high = (sb.low / sa.high, sb.high / sa.low) if sa.low > 0 else (None, None)
    beyond = sb.low > sa.high or sb.high < sa.low
    return Comparison(sa, sb, ratio, low, high, "beyond" if beyond else "within")


def chance(n: int, m: int) -> float:
    """How often two sets of n and m exchangeable trials do not overlap by
    chance alone (all of one above all of the other, either way):
    2 / C(n + m, n), at most 1."""
    return min(1.0, 2 / math.comb(n + m, n))


def verdict_text(c: Comparison, faster: bool = False) -> str:
    """The verdict in words: "B is 4.1 % faster, beyond the trials' spread",
    "within noise", "no spread known (one trial each)".  faster: the metric
    is a throughput (higher is faster), else higher/lower."""
    if c.verdict == "no values":
        return "no values"
    if c.verdict == "no spread":
        return "no spread known (one trial each)"
    if c.verdict == "within":
        return "within noise"
    assert c.a is not None and c.b is not None
    up = c.b.median > c.a.median
    word = ("faster" if up else "slower") if faster else ("higher" if up else "lower")
    if c.ratio is None:
        change = f"{word} (A's median is 0)"
    elif c.ratio >= 2:
        change = f"{c.ratio:.2f} times A" + (" (faster)" if faster else "")
    else:
        change = f"{abs(c.ratio - 1) * 100:.1f} % {word}"
    return f"B is {change}, beyond the trials' spread"


# ---------------------------------------------------------------------------
# Configurations on the server

@dataclass(frozen=True)
class Config:
    """What a name given to compare or report stands for."""

    name: str
    labels: list[str]       # its runs, in trial order
    trials: bool            # runs name#k (False: the one run named name)

    def describe(self) -> str:
        if not self.trials:
            return f"{self.name} (one run)"
        n = len(self.labels)
        if n == 1:
            return f"{self.name} (1 trial: {self.labels[0]})"
        if n <= 4:
            return f"{self.name} ({n} trials: {', '.join(self.labels)})"
        return f"{self.name} ({n} trials: {self.labels[0]} .. {self.labels[-1]})"


# SQL: a run of this label, of the server read (a label names one server's
# run on a central database, db.RUN_OF_SERVER)
_A_RUN = "SELECT 1 FROM chronicle.run r WHERE r.label = %s AND " + RUN_OF_SERVER


def _trial_rows(conn: psycopg.Connection[Any], name: str) -> list[dict[str, Any]]:
    rows = query(conn,
                 "SELECT r.label, r.ended IS NULL AS open FROM chronicle.run r "
                 " WHERE left(r.label, length(%(n)s) + 1) = %(n)s || '#'"
                 "   AND " + RUN_OF_SERVER, {"n": name})
    found = []
    for r in rows:
        p = parse_trial(r["label"])
        if p is not None and p[0] == name:
            found.append({**r, "k": p[1]})
    return sorted(found, key=lambda r: r["k"])


def resolve(conn: psycopg.Connection[Any], name: str) -> Config:
    """The configuration name stands for: its trials name#k when there are
    any (every one ended, each trial's window checked as `report` and
    `compare` check a run's: db.run_window), else the run name, unchecked
    (the caller checks its window: report's --from/--to may narrow it)."""
    rows = _trial_rows(conn, name)
    if not rows:
        return Config(name=name, labels=[name], trials=False)
    labels = [r["label"] for r in rows]
    if query(conn, _A_RUN, (name,)):
        raise ClientError(
            f'"{name}" is both a run and the configuration of the trials {", ".join(labels)}: '
            f"give a trial's label ({labels[0]}), or remove the run {name} "
            "(chronicle.run_delete) or the trials")
    still = [r["label"] for r in rows if r["open"]]
    if still:
        raise ClientError(f'trial {still[0]} of "{name}" is still open (a bench still running?): '
                          "end it first (chronicle.run_end)")
    for label in labels:
        run_window(conn, label)
    return Config(name=name, labels=labels, trials=True)


def check_new_labels(conn: psycopg.Connection[Any], label: str, trials: bool) -> None:
    """bench's check before it records anything, so that a name never is
    both a run and a configuration: with trials, neither label nor any
    label#k may exist; without, no label#k may exist, and a trial's label
    (name#k) not when a run name does."""
    existing = _trial_rows(conn, label)
    if existing:
        raise ClientError(
            f'runs {", ".join(r["label"] for r in existing)} exist already: "{label}" is their '
            "configuration; choose another label" + (
                "" if trials else f" (or the next trial's label, {label}#{existing[-1]['k'] + 1})"))
    if trials and query(conn, _A_RUN, (label,)):
        raise ClientError(f'a run labelled "{label}" exists already; its trials would be '
                          f'{label}#1, ...: choose another label')
    p = parse_trial(label)
    if not trials and p is not None and query(conn, _A_RUN,
                                              (p[0],)):
        raise ClientError(f'"{label}" would be a trial of "{p[0]}", which is a run: '
                          "choose another label")


# The metrics compared: pgbench's tps (per second), its latency p50 and p99,
# then every per-transaction figure of the load profile.
TPS = "pgbench tps"
FIRST = (TPS, "latency p50", "latency p99")


@dataclass(frozen=True)
class Metric:
    metric: str
    unit: str               # load_profile()'s unit ("bytes", "ms", "transactions", ...)
    values: list[float]     # one per trial that has a value

    @property
    def shown_unit(self) -> str:
        if self.metric == TPS:
            return "transactions/s"
        return self.unit if self.unit == "ms" else f"{self.unit}/tx"


@dataclass(frozen=True)
class TrialSet:
    """A configuration and its trials' load profiles."""

    config: Config
    profiles: list[list[dict[str, Any]]]   # per trial: load_profile() rows

    def metrics(self) -> list[Metric]:
        """The metrics compared, each with the trials' values (tps per
        second, the others per transaction), in FIRST's order, then the
        load profile's; a metric no trial has a value of is left out."""
        order: list[str] = []
        units: dict[str, str] = {}
        values: dict[str, list[float]] = {}
        for rows in self.profiles:
            for r in rows:
                m = r["metric"]
                if m not in units:
                    order.append(m)
                    units[m] = r["unit"] or ""
                    values[m] = []
                v = r["per_second"] if m == TPS else r["per_transaction"]
                if v is not None:
                    values[m].append(float(v))
        order = [m for m in FIRST if m in units] + [m for m in order if m not in FIRST]
        return [Metric(m, units[m], values[m]) for m in order if values[m]]

    def representative(self) -> str:
        """The trial whose pgbench tps (commits per second without a
        pgbench log) is the median of the trials' (the lower middle one for
        an even count; the earlier trial of equal ones): the run the
        report's panels show."""
        labels = self.config.labels
        if len(labels) == 1:
            return labels[0]

        def rate(i: int) -> float | None:
            for metric in (TPS, "commits"):
                v = next((r["per_second"] for r in self.profiles[i] if r["metric"] == metric), None)
                if v is not None:
                    return float(v)
            return None

        rates = [rate(i) for i in range(len(labels))]
        if any(v is None for v in rates):
            return labels[0]
        ranked = sorted(range(len(labels)), key=lambda i: (rates[i], i))
        return labels[ranked[(len(labels) - 1) // 2]]


def load(conn: psycopg.Connection[Any], config: Config) -> TrialSet:
    """The load profile of every trial (chronicle.load_profile)."""
    rows = query(conn,
                 "SELECT t.k, p.metric, p.unit, p.per_second, p.per_transaction "
                 "  FROM unnest(%s::text[]) WITH ORDINALITY AS t(label, k), "
                 "       LATERAL chronicle.load_profile(t.label) WITH ORDINALITY "
                 "               AS p(metric, unit, per_second, per_transaction, ord) "
                 " ORDER BY t.k, p.ord", (config.labels,))
    profiles: list[list[dict[str, Any]]] = [[] for _ in config.labels]
    for r in rows:
        profiles[r["k"] - 1].append(r)
    return TrialSet(config, profiles)


@dataclass(frozen=True)
class Row:
    metric: str
    unit: str               # as shown
    kind: str               # load_profile()'s unit, for formatting
    comparison: Comparison

    @property
    def verdict(self) -> str:
        return verdict_text(self.comparison, faster=self.metric == TPS)

    @property
    def zero(self) -> bool:
        """0 in every trial of both configurations."""
        return all(s is not None and s.low == s.high == 0
                   for s in (self.comparison.a, self.comparison.b))


def zero_note(rows: list[Row]) -> str | None:
    """The metrics left out of the tables for being 0 in every trial."""
    zero = [r.metric for r in rows if r.zero]
    return f"0 in every trial of both (left out): {', '.join(zero)}." if zero else None


def compare_sets(a: TrialSet, b: TrialSet) -> list[Row]:
    """Every metric either configuration has, B against A."""
    ma = {m.metric: m for m in a.metrics()}
    mb = {m.metric: m for m in b.metrics()}
    names = list(ma) + [m for m in mb if m not in ma]
    out = []
    for name in names:
        x, y = ma.get(name), mb.get(name)
        ref = x or y
        assert ref is not None
        out.append(Row(name, ref.shown_unit, ref.unit,
                       compare_values(x.values if x else [], y.values if y else [])))
    return out


def settings_within(conn: psycopg.Connection[Any], config: Config) -> list[dict[str, Any]]:
    """The settings in which a configuration's trials differ from its first
    (compare_settings of the first and each other trial): none when they
    are trials of one configuration."""
    if len(config.labels) < 2:
        return []
    return query(conn,
                 "SELECT t.label AS trial, s.name, s.value_a, s.value_b "
                 "  FROM unnest(%s::text[]) WITH ORDINALITY AS t(label, k), "
                 "       LATERAL chronicle.compare_settings(%s, t.label) s "
                 " ORDER BY t.k, s.name", (config.labels[1:], config.labels[0]))


# ---------------------------------------------------------------------------
# Text and the report's tables

def _value(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind.startswith("bytes"):
        return text.nbytes(v)
    return text.num(v)


def _range(s: Spread | None, kind: str) -> str:
    if s is None or s.n == 1:
        return "-"
    return f"{_value(s.low, kind)} .. {_value(s.high, kind)}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _interval(c: Comparison) -> str:
    if c.low is None or c.high is None:
        return "-"
    return f"{_ratio(c.low)} .. {_ratio(c.high)}"


def method_note(a: TrialSet, b: TrialSet) -> str:
    """What the columns mean, and how often "beyond" comes by chance."""
    n, m = len(a.config.labels), len(b.config.labels)
    if n == 1 and m == 1:
        return ("One trial on each side: no spread is known, the ratio is of the two runs "
                "(record trials with pg-chronicle bench --trials N).")
    return ("B/A: ratio of the medians of the trials; interval: the lowest and highest B/A "
            "of any pair of a B and an A trial; beyond the trials' spread when it excludes 1 "
            f"(no B trial within the range of A's). With {n} and {m} trials, a metric that "
            f"does not change is beyond by chance {100 * chance(n, m):.1f} % of the time "
            "(independent trials, same machine, steady state).")


def header(a: TrialSet, b: TrialSet) -> str:
    return f"trials: A = {a.config.describe()}, B = {b.config.describe()}"


def trials_table(rows: list[Row]) -> str:
    """The comparison as a terminal table."""
    return text.table(
        ["metric", "unit", "A median", "A min .. max", "B median", "B min .. max", "B/A",
         "interval", "verdict"],
        [[r.metric, r.unit, _value(r.comparison.a.median if r.comparison.a else None, r.kind),
          _range(r.comparison.a, r.kind),
          _value(r.comparison.b.median if r.comparison.b else None, r.kind),
          _range(r.comparison.b, r.kind), _ratio(r.comparison.ratio), _interval(r.comparison),
          r.verdict] for r in rows],
        right=[False, False, True, True, True, True, True, True, False])


def within_text(name: str, diffs: list[dict[str, Any]]) -> list[str]:
    """Lines warning that a configuration's trials differ in settings."""
    if not diffs:
        return []
    out = [f"warning: the trials of {name} differ in settings (first trial against each other):"]
    out += [f"  {d['trial']}: {d['name']} = {d['value_b']} (first: {d['value_a']})" for d in diffs]
    return out


def compare_text(conn: psycopg.Connection[Any], ca: Config, cb: Config) -> tuple[str, str, str]:
    """The comparison of two configurations in the terminal; with the
    representative trials of A and B (whose settings and environment the
    caller compares)."""
    a, b = load(conn, ca), load(conn, cb)
    rows = compare_sets(a, b)
    out = [header(a, b), *textwrap.wrap(method_note(a, b), 100),
           trials_table([r for r in rows if not r.zero])]
    zero = zero_note(rows)
    if zero:
        out += textwrap.wrap(zero, 100)
    for cfg in (ca, cb):
        warn = within_text(cfg.name, settings_within(conn, cfg))
        if warn:
            out += ["", *warn]
    return "\n".join(out), a.representative(), b.representative()


def config_text(ts: TrialSet) -> str:
    """A configuration's trials in the terminal (bench --trials): median and
    range of tps, latency and WAL per transaction."""
    metrics = {m.metric: m for m in ts.metrics()}
    shown = [metrics[m] for m in (*FIRST, "WAL", "full-page images") if m in metrics]
    rows = []
    for m in shown:
        s = spread(m.values)
        assert s is not None
        rel = s.relative
        rows.append([m.metric, m.shown_unit, _value(s.median, m.unit), _range(s, m.unit),
                     "-" if rel is None or s.n == 1 else f"{100 * rel:.1f} %"])
    return "\n".join([f"configuration {ts.config.describe()}: median and range of the trials",
                      text.table(["metric", "unit", "median", "min .. max", "spread"], rows,
                                 right=[False, False, True, True, True])])


def _g(v: float | None) -> Cell:
    if v is None or v == 0:
        return v
    return float(f"{v:.4g}")


def _trial_table(tid: str, ts: TrialSet, shown: str, side: str | None) -> Table:
    """Each trial's tps, latency and WAL per transaction, the one the other
    panels show named."""
    cols = [m for m in (*FIRST, "WAL") if any(r["metric"] == m for p in ts.profiles for r in p)]
    rows: list[list[Cell]] = []
    for label, prof in zip(ts.config.labels, ts.profiles, strict=True):
        by = {r["metric"]: r for r in prof}
        cells: list[Cell] = [label]
        for m in cols:
            r = by.get(m)
            v = None if r is None else (r["per_second"] if m == TPS else r["per_transaction"])
            cells.append(_g(None if v is None else float(v)))
        cells.append("shown" if label == shown else "")
        rows.append(cells)
    names = {TPS: "tps", "latency p50": "p50 ms", "latency p99": "p99 ms", "WAL": "WAL bytes/tx"}
    return {"id": tid, "title": (f"{side}: " if side else "") + f"the trials of {ts.config.name}",
            "columns": ["trial", *[names[c] for c in cols], "panels"], "rows": rows, "marked": [],
            "note": None}


def within_note(conn: psycopg.Connection[Any], configs: Sequence[Config]) -> str | None:
    """The settings in which each configuration's trials differ, in one
    line (None when they do not)."""
    notes = [" ".join(within_text(c.name, settings_within(conn, c))) for c in configs]
    return " ".join(n for n in notes if n) or None


def report_panel(a: TrialSet, b: TrialSet | None, shown_a: str, shown_b: str | None,
                 note: str | None = None) -> Panel:
    """The report's panel of trials: with B, the comparison (the rows beyond
    the trials' spread marked) and both configurations' trials; without,
    A's trials and their median and range.  note: within_note()."""
    tables: list[Table] = []
    if b is not None and shown_b is not None:
        all_rows = compare_sets(a, b)
        rows = [r for r in all_rows if not r.zero]
        tables.append({
            "id": "trials.compare", "title": f"B = {b.config.name} vs A = {a.config.name}",
            "columns": ["metric", "unit", "A median", "A min .. max", "B median", "B min .. max",
                        "B/A", "interval", "verdict"],
            "rows": [[r.metric, r.unit,
                      _g(r.comparison.a.median) if r.comparison.a else None,
                      _range(r.comparison.a, r.kind),
                      _g(r.comparison.b.median) if r.comparison.b else None,
                      _range(r.comparison.b, r.kind), _g(r.comparison.ratio),
                      _interval(r.comparison), r.verdict] for r in rows],
            "marked": [i for i, r in enumerate(rows) if r.comparison.verdict == "beyond"],
            "note": " ".join(x for x in (method_note(a, b), zero_note(all_rows)) if x)})
        tables.append(_trial_table("trials.a", a, shown_a, "A"))
        tables.append(_trial_table("trials.b", b, shown_b, "B"))
        about = (f"A = {a.config.describe()}, B = {b.config.describe()}. Each configuration's "
                 "number is the median of its trials. The other panels show one trial of each, "
                 f"the one with the median tps: {shown_a} and {shown_b}.")
    else:
        rows2: list[list[Cell]] = []
        zero: list[str] = []
        for m in a.metrics():
            s = spread(m.values)
            assert s is not None
            if s.low == s.high == 0:
                zero.append(m.metric)
                continue
            rows2.append([m.metric, m.shown_unit, _g(s.median), _range(s, m.unit),
                          None if s.relative is None or s.n == 1 else _g(s.relative)])
        tables.append({"id": "trials.spread", "title": f"{a.config.name}: median and range",
                       "columns": ["metric", "unit", "median", "min .. max", "spread (fraction)"],
                       "rows": rows2, "marked": [],
                       "note": f"0 in every trial (left out): {', '.join(zero)}." if zero else None})
        tables.append(_trial_table("trials.a", a, shown_a, None))
        about = (f"{a.config.describe()}. Its number is the median of its trials. The other "
                 f"panels show the trial with the median tps: {shown_a}.")
    panel: Panel = {"id": "trials", "title": "Trials", "about": about, "charts": [],
                    "tables": tables, "empty": None}
    if note:
        panel["note"] = note
    return panel
