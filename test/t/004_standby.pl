# On a streaming standby the collector writes nothing: it keeps its
# snapshots in the standby ring, readable through SQL, and writes them into
# the history tables after promotion, then records on.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $primary = chronicle_node('primary', init => { allows_streaming => 1 }, conf => q{
chronicle.snapshot_interval = '200ms'
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->safe_psql('postgres',
	'CREATE TABLE t AS SELECT g FROM generate_series(1, 50000) g');
$primary->wait_for_replay_catchup($standby);

# The standby records into its ring.
poll_until($standby, 'postgres',
	'SELECT snapshots >= 10 AND in_recovery FROM chronicle.standby_ring()',
	'the standby collector records into its ring');
like($standby->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	qr/recovery/, 'status() says it is in recovery');
is($standby->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.snapshot
	 WHERE ts IN (SELECT ts FROM chronicle.standby_history('io'))}),
	'0', 'the ring\'s snapshots are not in the tables during recovery');

my ($first_ts, $first_kf) = split /\|/, $standby->safe_psql('postgres',
	"SELECT ts, keyframe FROM chronicle.standby_history('io') ORDER BY ts LIMIT 1");
is($first_kf, 't', 'the ring starts with a keyframe');
is($standby->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.standby_history('io') WHERE ts = '$first_ts')
	     = (SELECT count(*) FROM pg_stat_io)}),
	't', 'the keyframe holds every pg_stat_io row');
is($standby->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.standby_history('io') h
	 WHERE NOT h."row" ? 'backend_type' OR jsonb_typeof(h."row"->'backend_type') <> 'string'}),
	'0', 'rows are jsonb objects of column -> value');
cmp_ok($standby->safe_psql('postgres', q{
	SELECT max((h."row"->>'wal_bytes')::bigint) FROM chronicle.standby_history('wal') h}),
	'>=', 0, 'the wal source is in the ring');
my ($ret, $stdout, $stderr) = $standby->psql('postgres',
	"SELECT * FROM chronicle.standby_history('nosuch')");
like($stderr, qr/unknown source "nosuch".*\n.*HINT:.*io/s,
	'an unknown source is an error with the list of sources');
($ret, $stdout, $stderr) = $standby->psql('postgres', 'SELECT chronicle.snapshot()');
like($stderr, qr/cannot take a snapshot during recovery/,
	'chronicle.snapshot() on a standby is refused clearly');

# The ring as it is just before promotion.
my $ring = $standby->safe_psql('postgres',
	'SELECT snapshots, oldest, newest FROM chronicle.standby_ring()');
my ($nring, $oldest, $newest) = split /\|/, $ring;
my $primary_snaps = $standby->safe_psql('postgres', 'SELECT count(*) FROM chronicle.snapshot');

$standby->promote;
poll_until($standby, 'postgres',
	"SELECT written >= $nring AND snapshots = 0 FROM chronicle.standby_ring()",
	'after promotion the ring is written and emptied');

is($standby->safe_psql('postgres', qq{
	SELECT count(*) >= $nring FROM chronicle.snapshot s
	 WHERE ts >= '$oldest' AND segment >= '$oldest' AND collector = 'worker'
	   AND NOT EXISTS (SELECT FROM chronicle.snapshot p WHERE p.segment < '$oldest' AND p.ts = s.ts)}),
	't', 'the standby\'s snapshots are in chronicle.snapshot');
is($standby->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.io_history WHERE ts = '$first_ts')
	     = (SELECT count(*) FROM pg_stat_io)}),
	't', 'the ring\'s keyframe is in io_history with every row');
is($standby->safe_psql('postgres', qq{
	SELECT keyframe AND segment = ts FROM chronicle.snapshot WHERE ts = '$first_ts'}),
	't', 'and starts a segment');

poll_until($standby, 'postgres',
	qq{
	SELECT count(*) >= 3 FROM chronicle.snapshot s
	 WHERE s.ts > '$newest' AND s.segment > '$newest'},
	'the promoted server records on, in a new segment');
like($standby->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	qr/recording/, 'status(): recording');

# Sparse chains are intact: every snapshot of the ring's segment can be
# read back by carry-forward (every io key has a value at every snapshot).
is($standby->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.snapshot s
	 CROSS JOIN (SELECT DISTINCT backend_type, object, context
	               FROM chronicle.io_history WHERE ts = '$first_ts') k
	 WHERE s.segment = '$first_ts'
	   AND NOT EXISTS (SELECT FROM chronicle.io_history h
	                    WHERE h.backend_type = k.backend_type AND h.object = k.object
	                      AND h.context = k.context AND h.ts BETWEEN '$first_ts' AND s.ts)}),
	'0', 'carry-forward finds a value for every key at every ring snapshot');

$standby->stop;
$primary->stop;
done_testing();
