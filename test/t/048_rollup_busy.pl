# A rollup that finds another one running (the previous housekeeper still
# finishing after a collector restart, or chronicle.rollup() from SQL)
# returns NULLs at once, and the housekeeper tries again within seconds,
# not at its next five-minute run.  Without a debug interval: the real
# schedule.
#
# one_version: the rollup's lock is the extension's own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_true);

my $node = chronicle_node('rollup_busy', conf => q{
chronicle.snapshot_interval = '1s'
chronicle.enabled = off
});

sub query { return $node->safe_psql('postgres', $_[0]); }

# A complete minute of history twenty minutes ago: 60 snapshots of one
# segment, the first a keyframe.
my $minute = query(q{SELECT date_trunc('minute', now() - interval '20 min')});
query(qq{
	SELECT chronicle.ensure_partitions('$minute'::timestamptz, '$minute'::timestamptz);
	INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
	SELECT t, '$minute', t = '$minute', 'sql', 0, 0, 0, 0
	  FROM generate_series('$minute'::timestamptz, '$minute'::timestamptz + interval '59 s', interval '1 s') t});
my $rolled = qq{SELECT count(*) > 0 FROM chronicle.rollup_minute
                 WHERE source = 'intervals' AND ts = '$minute'};

# Another session holds the rollup's lock (as a running rollup does).
my $key = q{'chronicle._rollup(integer,timestamptz,timestamptz)'::regprocedure::oid::bigint};
my $holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock($key)");

is(query('SELECT minutes IS NULL AND hours IS NULL FROM chronicle.rollup()'), 't',
	'chronicle.rollup() while another rollup runs: NULLs (nothing done), at once');
is(query($rolled), 'f', 'nothing rolled up');

# The collector starts, and its housekeeper's first rollup finds the lock
# held.
$node->append_conf('postgresql.conf', 'chronicle.enabled = on');
$node->reload;
ok(poll_true($node, q{SELECT count(*) > 0 FROM pg_stat_activity
                WHERE backend_type = 'pg_chronicle housekeeper'}, 60),
	'the housekeeper runs');
sleep 3;
is(query($rolled), 'f', 'its first rollup found the lock held: nothing rolled up');

# Released: the housekeeper tries again within seconds (10 s), not in five
# minutes.
$holder->query_safe("SELECT pg_advisory_unlock($key)");
my $released = time();
ok(poll_true($node, $rolled, 60), 'the minute is rolled up once the lock is released');
my $waited = time() - $released;
cmp_ok($waited, '<', 60,
	sprintf('within %.1f s of the release, not at the next five-minute run', $waited));
is(query(q{SELECT minutes IS NOT NULL FROM chronicle.rollup()}), 't',
	'chronicle.rollup() with the lock free: counts, not NULLs');

$holder->quit;
$node->stop;
done_testing();
