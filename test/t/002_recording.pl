# What the collector records under load: one snapshot per interval, values
# equal to the views at the same moment, per-interval deltas that add up to
# the views' difference, stats resets, reloads of the interval, sources
# switched off, and chronicle.start()/stop() refused on a preloaded server.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node more_worker_snapshots poll_until worker_recording);

my $node = chronicle_node('recording', conf => q{
chronicle.snapshot_interval = '500ms'
track_io_timing = on
track_wal_io_timing = on
});
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ],
	'pgbench -i');

# The views at the moment of a snapshot taken from SQL: with
# stats_fetch_consistency = snapshot, chronicle.snapshot() and the views
# read afterwards in the same transaction see the same statistics snapshot.
sub snapshot_with_views
{
	my ($suffix) = @_;
	return $node->safe_psql('postgres', qq{
SET stats_fetch_consistency = snapshot;
BEGIN;
SELECT chronicle.snapshot();
CREATE TABLE view_io_$suffix AS SELECT * FROM pg_stat_io;
CREATE TABLE view_wal_$suffix AS SELECT * FROM pg_stat_wal;
CREATE TABLE view_db_$suffix AS SELECT * FROM pg_stat_database WHERE datname = current_database();
COMMIT;
});
}

# The worker's recording is under way before the first SQL snapshot, which
# then joins its segment.
worker_recording($node, 2, 'the worker records');
my $t1 = snapshot_with_views('1');

# A short pgbench run.
$node->command_ok(
	[ 'pgbench', '-T', '6', '-c', '4', '-j', '2', 'postgres' ],
	'pgbench -T 6 -c 4');

my $t2 = snapshot_with_views('2');

# Snapshots arrive once per interval: about 2 a second over the run.
my ($nworker, $seconds) = split /\|/, $node->safe_psql('postgres', qq{
	SELECT count(*), extract(epoch FROM '$t2'::timestamptz - '$t1')
	  FROM chronicle.snapshot
	 WHERE collector = 'worker' AND ts > '$t1' AND ts < '$t2'});
my $expected = $seconds * 2;
ok($nworker >= 0.6 * $expected && $nworker <= $expected + 2,
	"one worker snapshot per 500 ms interval under pgbench ($nworker in $seconds s)");
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.snapshot
	 WHERE ts BETWEEN '$t1' AND '$t2' AND errors > 0}),
	'0', 'no snapshot had an error');
is($node->safe_psql('postgres', qq{
	SELECT count(DISTINCT segment) FROM chronicle.snapshot WHERE ts BETWEEN '$t1' AND '$t2'}),
	'1', 'the run is one segment');

# Recorded values equal the views read at the same moment.
my $io_cols = 'reads, writes, writebacks, extends, hits, evictions, reuses, fsyncs, '
  . 'read_time, write_time, writeback_time, extend_time, fsync_time, stats_reset';
my $io_cols_v = join(', ', map { "v.$_" } split /, /, $io_cols);
my $io_cols_h = join(', ', map { "h.$_" } split /, /, $io_cols);
for my $s ([ '1', $t1 ], [ '2', $t2 ])
{
	my ($suffix, $ts) = @$s;
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM view_io_$suffix v
		  LEFT JOIN chronicle.io_history h
		    ON h.ts = '$ts' AND h.backend_type = v.backend_type
		   AND h.object = v.object AND h.context = v.context
		 WHERE h.ts IS NULL OR ($io_cols_v) IS DISTINCT FROM ($io_cols_h)}),
		'0', "pg_stat_io equals io_history at snapshot $suffix, every row and column");
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM view_wal_$suffix v
		  JOIN chronicle.wal_history h ON h.ts = '$ts'
		 WHERE (v.wal_records, v.wal_fpi, v.wal_bytes::bigint, v.wal_buffers_full, v.stats_reset)
		       IS NOT DISTINCT FROM
		       (h.wal_records, h.wal_fpi, h.wal_bytes, h.wal_buffers_full, h.stats_reset)}),
		'1', "pg_stat_wal equals wal_history at snapshot $suffix");
}

# Summed per-interval deltas over the run equal the views' difference.  The
# value of a key at each snapshot of the segment is its latest row at or
# before it (carry-forward of the sparse rows); deltas with lag().
my $io_sum = $node->safe_psql('postgres', qq{
WITH snaps AS (
	SELECT ts FROM chronicle.snapshot WHERE ts BETWEEN '$t1' AND '$t2'),
keys AS (
	SELECT DISTINCT backend_type, object, context FROM chronicle.io_history WHERE ts = '$t1'),
cf AS (
	SELECT s.ts, k.backend_type, k.object, k.context, h.reads, h.writes, h.extends, h.hits,
	       h.evictions, h.fsyncs
	  FROM snaps s CROSS JOIN keys k
	  CROSS JOIN LATERAL (
		SELECT * FROM chronicle.io_history h
		 WHERE h.backend_type = k.backend_type AND h.object = k.object
		   AND h.context = k.context AND h.ts <= s.ts AND h.ts >= '$t1'
		 ORDER BY h.ts DESC LIMIT 1) h),
deltas AS (
	SELECT backend_type, object, context,
	       reads - lag(reads) OVER w AS reads, writes - lag(writes) OVER w AS writes,
	       extends - lag(extends) OVER w AS extends, hits - lag(hits) OVER w AS hits,
	       evictions - lag(evictions) OVER w AS evictions, fsyncs - lag(fsyncs) OVER w AS fsyncs
	  FROM cf WINDOW w AS (PARTITION BY backend_type, object, context ORDER BY ts)),
sums AS (
	SELECT backend_type, object, context, sum(reads) AS reads, sum(writes) AS writes,
	       sum(extends) AS extends, sum(hits) AS hits, sum(evictions) AS evictions,
	       sum(fsyncs) AS fsyncs
	  FROM deltas GROUP BY 1, 2, 3)
SELECT count(*) AS keys,
       count(*) FILTER (WHERE
         (s.reads, s.writes, s.extends, s.hits, s.evictions, s.fsyncs) IS DISTINCT FROM
         (v2.reads - v1.reads, v2.writes - v1.writes, v2.extends - v1.extends,
          v2.hits - v1.hits, v2.evictions - v1.evictions, v2.fsyncs - v1.fsyncs)) AS mismatches,
       coalesce(sum(s.hits), 0) > 0 AS moved
  FROM sums s
  JOIN view_io_1 v1 USING (backend_type, object, context)
  JOIN view_io_2 v2 USING (backend_type, object, context)});
my ($nkeys, $mismatches, $moved) = split /\|/, $io_sum;
cmp_ok($nkeys, '>', 10, "deltas computed for every pg_stat_io key ($nkeys)");
is($mismatches, 0, 'summed pg_stat_io deltas equal the views\' difference');
is($moved, 't', 'the run moved the counters');

my $wal_sum = $node->safe_psql('postgres', qq{
WITH cf AS (
	SELECT s.ts, h.wal_records, h.wal_bytes, h.wal_fpi
	  FROM chronicle.snapshot s
	  CROSS JOIN LATERAL (
		SELECT * FROM chronicle.wal_history h
		 WHERE h.ts <= s.ts AND h.ts >= '$t1' ORDER BY h.ts DESC LIMIT 1) h
	 WHERE s.ts BETWEEN '$t1' AND '$t2'),
d AS (
	SELECT wal_records - lag(wal_records) OVER w AS records,
	       wal_bytes - lag(wal_bytes) OVER w AS bytes,
	       wal_fpi - lag(wal_fpi) OVER w AS fpi
	  FROM cf WINDOW w AS (ORDER BY ts))
SELECT (sum(records), sum(bytes), sum(fpi)) =
       (min(v2.wal_records - v1.wal_records), min((v2.wal_bytes - v1.wal_bytes)::bigint),
        min(v2.wal_fpi - v1.wal_fpi)),
       sum(bytes) > 0
  FROM d, view_wal_1 v1, view_wal_2 v2});
is($wal_sum, 't|t', 'summed WAL deltas equal pg_stat_wal\'s difference');

my $db_sum = $node->safe_psql('postgres', qq{
WITH cf AS (
	SELECT s.ts, h.xact_commit
	  FROM chronicle.snapshot s
	  CROSS JOIN LATERAL (
		SELECT * FROM chronicle.database_history h
		 WHERE h.datname = current_database() AND h.ts <= s.ts AND h.ts >= '$t1'
		 ORDER BY h.ts DESC LIMIT 1) h
	 WHERE s.ts BETWEEN '$t1' AND '$t2'),
d AS (SELECT xact_commit - lag(xact_commit) OVER (ORDER BY ts) AS commits FROM cf)
SELECT sum(commits) = (SELECT v2.xact_commit - v1.xact_commit FROM view_db_1 v1, view_db_2 v2),
       sum(commits) > 100
  FROM d});
is($db_sum, 't|t', 'summed commits equal pg_stat_database\'s difference');

# Sparse: between keyframes, most io rows are not written again.
my ($written, $possible) = split /\|/, $node->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.io_history h JOIN chronicle.snapshot s USING (ts)
	         WHERE s.ts > '$t1' AND s.ts < '$t2' AND NOT s.keyframe),
	       (SELECT count(*) FROM chronicle.snapshot s
	         WHERE s.ts > '$t1' AND s.ts < '$t2' AND NOT s.keyframe)
	       * (SELECT count(*) FROM view_io_1)});
cmp_ok($written, '<', $possible / 2,
	"sparse rows: $written of $possible possible io rows written between keyframes");

# A stats reset is seen in the next worker snapshot: every row of the source
# is written, with the new stats_reset and counters that went down.
# Reload, and wait until the worker took a snapshot after the reload: it
# has read the new settings by then.
sub reload_and_snapshot
{
	my $before = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->reload;
	return next_worker_snapshot_after($before);
}

sub next_worker_snapshot_after
{
	my ($ts) = @_;
	poll_until($node, 'postgres',
		"SELECT count(*) > 0 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$ts'",
		"a worker snapshot after $ts");
	return $node->safe_psql('postgres',
		"SELECT min(ts) FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$ts'");
}

my $before = next_worker_snapshot_after($t2);
my $reset_at = $node->safe_psql('postgres', q{
	SELECT pg_stat_reset_shared('io');
	SELECT pg_stat_reset_shared('wal');
	SELECT clock_timestamp()});
my $after = next_worker_snapshot_after($reset_at);
is($node->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.io_history WHERE ts = '$after')
	     = (SELECT count(*) FROM pg_stat_io)}),
	't', 'after pg_stat_reset_shared(io) the next worker snapshot writes every io row');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.io_history
	 WHERE ts = '$after' AND stats_reset < '$reset_at'::timestamptz - interval '1 s'}),
	'0', 'every io row carries the new stats_reset');
is($node->safe_psql('postgres', qq{
	SELECT a.wal_records < b.wal_records AND a.stats_reset > b.stats_reset
	  FROM (SELECT * FROM chronicle.wal_history WHERE ts <= '$before' ORDER BY ts DESC LIMIT 1) b,
	       (SELECT * FROM chronicle.wal_history WHERE ts = '$after') a}),
	't', 'the WAL reset shows as a new stats_reset and counters going down');

# chronicle.collect_<source> = off stops that source, the others go on;
# on again, its first row comes back at once.
$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.collect_wal = off');
reload_and_snapshot();
my $mark = next_worker_snapshot_after(
	$node->safe_psql('postgres', 'SELECT clock_timestamp()'));
$node->safe_psql('postgres',
	'CREATE TABLE wal_maker AS SELECT g FROM generate_series(1, 10000) g');
more_worker_snapshots($node, 4);
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.wal_history WHERE ts > '$mark'"),
	'0', 'chronicle.collect_wal = off: no WAL rows while off');
cmp_ok($node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.io_history WHERE ts > '$mark'"),
	'>', 0, 'other sources record while one is off');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET chronicle.collect_wal');
$node->reload;
poll_until($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.wal_history WHERE ts > '$mark'",
	'the source records again when switched on');

# A reload of chronicle.snapshot_interval changes the cadence.
# The worker's snapshots in a window of $seconds (what is measured), from a
# snapshot taken after a reload of chronicle.snapshot_interval to $interval.
sub snapshots_in
{
	my ($interval, $seconds) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET chronicle.snapshot_interval = '$interval'");
	reload_and_snapshot();
	my $mark = next_worker_snapshot_after(
		$node->safe_psql('postgres', 'SELECT clock_timestamp()'));
	sleep $seconds;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$mark'");
}
my $slow = snapshots_in('2s', 6);
ok($slow >= 2 && $slow <= 4, "after reload to 2 s: $slow snapshots in 6 s");
my $fast = snapshots_in('200ms', 3);
ok($fast >= 8, "after reload to 200 ms: $fast snapshots in 3 s");

# chronicle.enabled = off pauses; on again starts a new segment with a keyframe.
$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.enabled = off');
$node->reload;
poll_until($node, 'postgres', "SELECT state LIKE 'disabled%' FROM chronicle.status()",
	'chronicle.enabled = off arrives');
my $off_at = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
sleep 1;
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$off_at'"),
	'0', 'chronicle.enabled = off: no snapshots');
like($node->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	qr/disabled/, 'status says disabled');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET chronicle.enabled');
$node->reload;
my $on = next_worker_snapshot_after($off_at);
is($node->safe_psql('postgres',
	"SELECT keyframe AND segment = ts FROM chronicle.snapshot WHERE ts = '$on'"),
	't', 'enabled again: a new segment that starts with a keyframe');

# A database created while the collector runs is recorded (the collector
# keeps its list of databases until pg_database changes).
my $created = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$node->safe_psql('postgres', 'CREATE DATABASE newdb');
$node->safe_psql('newdb', 'SELECT 1');
poll_until($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.database_history WHERE datname = 'newdb' AND ts > '$created'",
	'a database created while the collector runs is recorded');

# On an idle server the collector does not record itself reading pg_database:
# the shared-objects row (datid 0) is not written on every snapshot.
$node->safe_psql('postgres', "ALTER SYSTEM SET chronicle.snapshot_interval = '200ms'");
$node->reload;
my $idle = next_worker_snapshot_after(
	$node->safe_psql('postgres', 'SELECT clock_timestamp() + interval \'1 s\''));
sleep 2;
my ($nsnap, $nshared) = split /\|/, $node->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$idle'),
	       (SELECT count(*) FROM chronicle.database_history WHERE datid = 0 AND ts > '$idle')});
cmp_ok($nshared, '<', $nsnap / 2,
	"idle: the datid 0 row is written in $nshared of $nsnap snapshots");

# A preloaded collector is not started or stopped from SQL.
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT * FROM chronicle.start()');
like($stderr, qr/preloaded/, 'chronicle.start() on a preloaded server says so');
($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT * FROM chronicle.stop()');
isnt($ret, 0, 'chronicle.stop() refuses to stop the preloaded collector');
like($stderr, qr/chronicle\.enabled = off/, 'with a hint to use chronicle.enabled');

$node->stop;
done_testing();
