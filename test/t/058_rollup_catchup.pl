# A backlog of history not rolled up (after an upgrade from 0.1.0, which had
# no rollups, or a recording stopped for a while) is caught up by the
# housekeeper at a run a second while a run stops at its most minutes (30),
# not at one run every 5 minutes (src/housekeeping.c,
# chronicle_maintain_rollups()): every minute of it is rolled up within a
# minute of the housekeeper's start, the recording goes on meanwhile, and
# once it is caught up the housekeeper is back to its five minutes.
#
# The backlog: the collector's first 10 s of history, copied 120 times a
# minute apart into the two hours before it (each copy a segment of its own
# that starts with its keyframe), the rollups emptied, and the collector
# restarted so that a new housekeeper starts on it.  Before the catch-up
# this took 5 runs, 20 minutes.
#
# one_version: the housekeeper's pace is the extension's own, alike on every
# version: tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_true poll_until);

my $node = chronicle_node('catchup', conf => q{
chronicle.snapshot_interval = '1s'
chronicle.retention = '3d'
});

sub query { return $node->safe_psql('postgres', $_[0]); }

poll_until($node, 'postgres', q{
	SELECT count(*) >= 11 FROM chronicle.snapshot
	 WHERE segment = (SELECT min(segment) FROM chronicle.snapshot)},
	'the collector recorded 10 s');

# The copies: the segment's first 10 s (its keyframe first), k minutes back.
query(q{
	CREATE TEMP TABLE block AS
	SELECT ts FROM chronicle.snapshot
	 WHERE segment = (SELECT min(segment) FROM chronicle.snapshot)
	   AND ts <= (SELECT min(segment) FROM chronicle.snapshot) + interval '10 s';
	INSERT INTO chronicle.snapshot
	SELECT (jsonb_populate_record(s, jsonb_build_object(
	            'ts', s.ts - k * interval '1 min', 'segment', s.segment - k * interval '1 min'))).*
	  FROM chronicle.snapshot s JOIN block b USING (ts), generate_series(1, 120) k;
	INSERT INTO chronicle.history
	SELECT (jsonb_populate_record(h, jsonb_build_object('ts', h.ts - k * interval '1 min'))).*
	  FROM chronicle.history h JOIN block b USING (ts), generate_series(1, 120) k;
	DELETE FROM chronicle.rollup_minute;
	DELETE FROM chronicle.rollup_hour;
	DELETE FROM chronicle.rollup_state;});
my $first = query('SELECT min(segment) FROM chronicle.snapshot WHERE segment = ts AND keyframe');
my $real = query(q{SELECT date_trunc('minute', min(ts)) FROM chronicle.snapshot
                    WHERE segment = (SELECT max(segment) FROM chronicle.snapshot)});
# The minutes of the backlog: those an interval of the copies ends in.
my $minutes = query(qq{
	SELECT count(DISTINCT date_trunc('minute', i.interval_end - interval '1 microsecond'))
	  FROM chronicle.intervals('$first', '$real') i});
cmp_ok($minutes, '>=', 120, "a backlog of $minutes minutes");

# A new collector, and with it a new housekeeper, which rolls up at its
# start.
my $pid = query('SELECT pid FROM chronicle.status()');
my $t0 = time();
query("SELECT pg_terminate_backend($pid)");
ok( poll_true($node, qq{
	SELECT count(*) = $minutes FROM chronicle.rollup_minute
	 WHERE source = 'intervals' AND ts < '$real'}, 90),
	'every minute of the backlog is rolled up within 90 s of the restart');
my $took = time() - $t0;
note("caught up in about $took s, with the 10 s before the collector starts again");
is(query(qq{SELECT count(*) FROM chronicle.rollup_minute m
             WHERE m.source = 'intervals' AND m.ts < '$real'
               AND m.intervals <> (SELECT count(*) FROM chronicle.intervals(m.ts, m.ts + interval '1 min'))}),
	'0', 'each minute rolled up with its intervals');

# The recording went on: the new collector's snapshots a second apart.
ok( poll_true($node, q{
	SELECT count(*) >= 20 FROM chronicle.snapshot
	 WHERE segment = (SELECT max(segment) FROM chronicle.snapshot)}, 60),
	'the new collector records');
is(query(q{
	SELECT count(*) FROM (
		SELECT ts - lag(ts) OVER (ORDER BY ts) AS gap FROM chronicle.snapshot
		 WHERE segment = (SELECT max(segment) FROM chronicle.snapshot)) g
	 WHERE g.gap > interval '2 s'}),
	'0', 'no gap of over 2 s between its snapshots during the catch-up');

# Caught up, the housekeeper runs again only in five minutes: the start of
# its last rollup (its pg_stat_activity.query_start; one more run may follow
# the last full one) stays as it is over 10 s, where a run a second would
# move it.
my $last_run = q{
	SELECT query_start FROM pg_stat_activity WHERE backend_type = 'pg_chronicle housekeeper'};
sleep 5;
my $before = query($last_run);
isnt($before, '', "the housekeeper's last rollup started at $before");
sleep 10;
is(query($last_run), $before, 'caught up, the housekeeper is back to a run every five minutes');

done_testing();
