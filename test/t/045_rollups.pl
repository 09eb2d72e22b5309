# Rollups written by the collector's housekeeping (src/sql/60_rollups.sql):
# every complete minute is rolled up by the running collector without
# stopping the recording; what it wrote equals what chronicle.rollup()
# computes again from the raw rows, and the per-interval functions summed
# over the same minutes (an independent reference), and the timeline's CPU
# by process type at minute resolution equals the raw one; the raw rows
# follow chronicle.retention and the rollups chronicle.rollup_retention; a run
# again changes nothing.
#
# one_version: the rollups are the extension's own SQL over every source's
# history, alike on every version: tools/test.sh runs this file against the
# last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_true);

$ENV{PGOPTIONS} = '-c statement_timeout=60s';

my $node = chronicle_node('rollups', conf => q{
chronicle.snapshot_interval = '1s'
chronicle.retention = '3d'
chronicle.rollup_retention = '20d'
# The housekeeper rolls up at its start and then every 10 s (not every 5
# minutes): a start-time run that found the rollup busy (the previous
# collector's housekeeper finishing its own) is retried within the wait.
chronicle.debug_housekeeping_interval = '10s'
# Relations read every 70 s: minutes in which that source is recorded but
# none of its rows changes (its first reading is a baseline), which must
# still roll up alike alone and within a longer window (below).
chronicle.relations_interval = '70s'
});

sub query { return $node->safe_psql('postgres', $_[0]); }

# Poll by the clock until the query returns true.
# Some load, so that the counters move: a table written every second.
query('CREATE TABLE load (i int)');

# The collector rolls up the complete minutes when it starts, then every
# 5 minutes: once a whole minute is recorded, restart it (the postmaster
# starts it again after 10 s) and wait for that minute rolled up by it.
my $deadline = time() + 150;
while (time() < $deadline)
{
	query('INSERT INTO load SELECT generate_series(1, 1000)');
	# (55 snapshots: the rollup waited for below wants a minute of 50
	# intervals, and a minute the recording started in, at :10 say, has 50
	# snapshots but 49 intervals; the minute after the restart's gap may
	# have fewer too, and the next one can come after the wait)
	last if query(q{
		SELECT count(*) >= 55 FROM chronicle.snapshot
		 WHERE ts > date_trunc('minute', now() - interval '70 s')
		   AND ts <= date_trunc('minute', now() - interval '10 s')}) eq 't';
	sleep 1;
}
my $pid = query('SELECT pid FROM chronicle.status()');
query("SELECT pg_terminate_backend($pid)");
$deadline = time() + 120;
while (time() < $deadline)
{
	query('INSERT INTO load SELECT generate_series(1, 1000)');
	last if query(q{SELECT count(*) >= 1 FROM chronicle.rollup_minute
	                 WHERE source = 'intervals' AND intervals >= 50}) eq 't';
	sleep 1;
}
my $rolled = query(q{SELECT count(*) FROM chronicle.rollup_minute
                      WHERE source = 'intervals' AND intervals >= 50});
# A minute rolled up with its intervals but without any source's rows is
# rolled up again by the next run (10 s here).
my $whole = q{SELECT NOT EXISTS (
	SELECT FROM chronicle.rollup_minute i
	 WHERE i.source = 'intervals'
	   AND NOT EXISTS (SELECT FROM chronicle.rollup_minute o
	                    WHERE o.ts = i.ts AND o.source NOT IN ('intervals', 'app')))};
$deadline = time() + 60;
sleep 1 while query($whole) ne 't' && time() < $deadline;
is(query($whole), 't', 'every minute rolled up has its sources\' rows');
cmp_ok($rolled, '>=', 1, "the collector rolled up complete minutes ($rolled)");
is(query(q{SELECT done_until IS NOT NULL FROM chronicle.rollup_state}), 't',
	'rollup_state says how far');
like(query(q{SELECT string_agg(DISTINCT source, ',' ORDER BY source) FROM chronicle.rollup_minute}),
	qr/^bgwriter,buffers,checkpointer,database,intervals,io,.*wait_sampler,wal$/,
	'every source is rolled up');
is(query(q{SELECT count(*) FROM chronicle.rollup_hour}) > 0 ? 't' : 'f', 't', 'and the hours');
is(query(q{SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'}), '0',
	'nobody waits for a lock');
unlike(slurp_file($node->logfile), qr/rollup failed/, 'no rollup failed');

# The collector's rows against a computation again of the same minutes
# (chronicle._rollup_compute, nothing written), and the commits of the
# rollups against database_deltas() summed per minute.
my $win = q{(SELECT min(ts) FROM chronicle.rollup_minute WHERE source = 'intervals'),
            (SELECT max(ts) + interval '1 minute' FROM chronicle.rollup_minute WHERE source = 'intervals')};
my $differ = qq{
	(SELECT 'written' AS side, ts, source, key, seconds, intervals, resets, vals::text FROM chronicle.rollup_minute
	 EXCEPT
	 SELECT 'written', ts, source, key, seconds, intervals, resets, vals::text FROM chronicle._rollup_compute($win))
	UNION ALL
	(SELECT 'computed', ts, source, key, seconds, intervals, resets, vals::text FROM chronicle._rollup_compute($win)
	 EXCEPT
	 SELECT 'computed', ts, source, key, seconds, intervals, resets, vals::text FROM chronicle.rollup_minute)};
is(query("SELECT count(*) FROM ($differ) d"), '0', 'the rows the collector wrote are those of the raw rows now')
  or diag(query(qq{SELECT side, ts, source, count(*) FROM ($differ) d GROUP BY 1, 2, 3 ORDER BY 2, 3, 1}) . "\n"
	  . query(qq{SELECT * FROM (SELECT DISTINCT ON (source, side) * FROM ($differ) d ORDER BY source, side, ts, key) d ORDER BY source, side}) . "\n"
	  . query(q{SELECT ts, segment, keyframe FROM chronicle.snapshot WHERE keyframe OR ts = segment ORDER BY ts}));
# A minute's rows are its own: each minute computed alone equals the same
# minute computed within the whole window (the relations source, whose
# first reading comes after its segment's start, once had a "recorded"
# row in a minute only when the window held a change of it elsewhere).
my $alone = query(qq{
	WITH w AS (SELECT * FROM chronicle._rollup_compute($win)),
	     m AS (SELECT DISTINCT ts FROM w),
	     a AS (SELECT c.* FROM m, chronicle._rollup_compute(m.ts, m.ts + interval '1 minute') c)
	SELECT count(*) FROM ((SELECT ts, source, key, seconds, intervals, resets, vals::text FROM w
	                       EXCEPT ALL SELECT ts, source, key, seconds, intervals, resets, vals::text FROM a)
	                      UNION ALL
	                      (SELECT ts, source, key, seconds, intervals, resets, vals::text FROM a
	                       EXCEPT ALL SELECT ts, source, key, seconds, intervals, resets, vals::text FROM w)) d});
is($alone, '0', 'every minute computed alone equals that minute computed within the window');
like(query(q{SELECT string_agg(DISTINCT source, ',') FROM chronicle.rollup_minute WHERE key = '{}'}),
	qr/relation/, 'and the relations source is rolled up (its "recorded" rows)');

my $commits = query(qq{
	SELECT count(*) FILTER (WHERE r.c IS DISTINCT FROM d.c) || ' of ' || count(*)
	  FROM (SELECT ts, sum(chronicle._rv(chronicle._rollup_vals(source, vals), 'xact_commit')) AS c FROM chronicle.rollup_minute
	         WHERE source = 'database' AND key <> '{}' GROUP BY ts) r
	  FULL JOIN (SELECT date_trunc('minute', interval_end - interval '1 microsecond') AS ts,
	                    sum(xact_commit) AS c
	               FROM chronicle.database_deltas($win, changed_only => true)
	              WHERE interval_end NOT IN (SELECT interval_end FROM chronicle.database_deltas($win) WHERE reset)
	              GROUP BY 1 HAVING sum(xact_commit) <> 0) d USING (ts)});
like($commits, qr/^0 of [1-9]/, "commits per minute equal database_deltas() summed ($commits)");
cmp_ok(query(q{SELECT sum(chronicle._rv(chronicle._rollup_vals(source, vals), 'xact_commit')) FROM chronicle.rollup_minute
                WHERE source = 'database'}), '>', 100, 'and they are not all zero');

# The timeline's CPU of the server's processes (os_process_cpu) from the
# minutes the collector rolled up against the raw intervals of each minute
# weighted by their seconds (those of a reset left out, NULL in the raw
# timeline); one statement, one snapshot of the history.
my $pcpu = query(qq{
	WITH m AS (
		SELECT * FROM chronicle.timeline($win, detail => true, resolution => 'minute')
	), raw AS (
		SELECT date_trunc('minute', r.interval_end - interval '1 microsecond') AS b, r.*
		  FROM chronicle.timeline($win, detail => true, resolution => 'raw') r
	), agg AS (
		SELECT b, sum(postgres_cpu * seconds) / sum(seconds) FILTER (WHERE postgres_cpu IS NOT NULL) AS cpu,
		       sum(client_cpu * seconds) / sum(seconds) FILTER (WHERE client_cpu IS NOT NULL) AS client,
		       sum(walwriter_cpu * seconds) / sum(seconds) FILTER (WHERE walwriter_cpu IS NOT NULL) AS walw,
		       sum(postgres_cpu_wait * seconds) / sum(seconds) FILTER (WHERE postgres_cpu_wait IS NOT NULL) AS wait,
		       sum(coalesce((cpu_by_backend -> 'background worker' ->> 'cpu')::float8, 0) * seconds)
		           / sum(seconds) FILTER (WHERE cpu_by_backend IS NOT NULL) AS bgworker
		  FROM raw GROUP BY b
	)
	SELECT count(*) FILTER (WHERE m.postgres_cpu IS NULL OR a.b IS NULL
	                           OR abs(m.postgres_cpu - a.cpu) > 1e-9 OR abs(m.client_cpu - a.client) > 1e-9
	                           OR abs(m.walwriter_cpu - a.walw) > 1e-9
	                           OR (m.postgres_cpu_wait IS NULL) <> (a.wait IS NULL)
	                           OR abs(m.postgres_cpu_wait - a.wait) > 1e-9
	                           OR abs(coalesce((m.cpu_by_backend -> 'background worker' ->> 'cpu')::float8, 0)
	                                  - a.bgworker) > 1e-9)
	       || ' of ' || count(*) || ', ' || (sum(m.postgres_cpu * m.seconds) > 0)
	  FROM m LEFT JOIN agg a ON a.b = m.interval_start});
like($pcpu, qr/^0 of [1-9]\d*, true$/,
	"the minutes' CPU by process type equals the raw timeline's per minute ($pcpu)");

# Idempotent: rolling the same minutes up again changes no row.
my $digest = q{SELECT md5(string_agg(r::text, '|' ORDER BY ts, source, key)) FROM chronicle.rollup_minute r
                WHERE ts < (SELECT done_until FROM chronicle.rollup_state) - interval '1 minute'};
my $before = query($digest);
query(qq{SELECT chronicle.rollup($win)});
is(query($digest), $before, 'rolling up again changes nothing');

# Retention: raw day partitions older than chronicle.retention (3 days)
# go, rollup ones only after chronicle.rollup_retention (20 days).
query(q{SELECT chronicle.ensure_partitions(now() - interval '25 days', now() - interval '5 days')});
sub day { return query("SELECT to_char((now() - interval '$_[0] days') AT TIME ZONE 'UTC', 'YYYYMMDD')"); }
my ($d5, $d25) = (day(5), day(25));
query('SELECT chronicle.maintain()');
is(query("SELECT to_regclass('chronicle.snapshot_p$d5') IS NULL"), 't', 'raw rows of 5 days ago dropped');
is(query("SELECT to_regclass('chronicle.rollup_minute_p$d5') IS NOT NULL
             AND to_regclass('chronicle.rollup_hour_p$d5') IS NOT NULL"), 't',
	'rollups of 5 days ago kept');
is(query("SELECT to_regclass('chronicle.rollup_minute_p$d25') IS NULL
             AND to_regclass('chronicle.rollup_hour_p$d25') IS NULL"), 't',
	'rollups of 25 days ago dropped');
is(query("SELECT count(*) > 0 FROM chronicle.rollup_minute"), 't', 'the recent rollups stay');

# The collector started twice (at the server's start, and again after it
# was terminated): two recordings start, two marks say so.  (The minute
# waited for above may have been rolled up by the first collector's
# housekeeper, every 10 s here, before the second one started: wait for
# the second one's first snapshot.)
poll_true($node, qq{SELECT count(*) > 0 FROM chronicle.snapshot s, chronicle.status() st
              WHERE st.pid <> $pid AND s.ts = s.segment
                AND s.ts > (SELECT min(ts) FROM chronicle.snapshot)})
  or diag 'the collector did not start again';
is(query(q{SELECT count(*) FROM chronicle.marks((SELECT min(ts) - interval '1 s' FROM chronicle.snapshot), now()) WHERE kind = 'recording_start'}),
	'2', 'each start of the collector is a mark');

# Recording went on all along.
my $n = query('SELECT count(*) FROM chronicle.snapshot');
ok(poll_true($node, "SELECT count(*) >= $n + 3 FROM chronicle.snapshot"), 'recording goes on');

$node->stop;
done_testing();
