# The collector worker's life: records once per interval, matches the views,
# survives a failing source, DROP/CREATE EXTENSION, restart and crash.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until worker_recording);

my $node = chronicle_node('primary', conf => q{
chronicle.snapshot_interval = '200ms'
track_io_timing = on
});

# Snapshots arrive once per interval.
worker_recording($node, 5);
my $t0 = $node->safe_psql('postgres', "SELECT count(*) FROM chronicle.snapshot");
sleep 2;
my $t1 = $node->safe_psql('postgres', "SELECT count(*) FROM chronicle.snapshot");
my $n = $t1 - $t0;
ok($n >= 7 && $n <= 13, "about 10 snapshots in 2 s at 200 ms (got $n)");

my $gaps = $node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT ts - lag(ts) OVER (ORDER BY ts) AS d FROM chronicle.snapshot
	   WHERE collector = 'worker') s
	 WHERE d > interval '600 ms'});
is($gaps, 0, 'no interval between worker snapshots is longer than 3 ticks');

# The first worker snapshot is a keyframe, the following ones are sparse.
is($node->safe_psql('postgres',
	"SELECT keyframe FROM chronicle.snapshot WHERE collector = 'worker' ORDER BY ts LIMIT 1"),
	't', 'first snapshot of the worker is a keyframe');

# A failing source does not stop the others.
$node->safe_psql('postgres', "ALTER SYSTEM SET chronicle.debug_fail_source = 'wal'");
$node->reload;
my $log_offset = -s $node->logfile;
# Retried with backoff (after 1, 2, 4 .. snapshots), it fails again and
# again: 4 errors, what the 3 s this test used to sleep gave at 200 ms.
poll_until($node, 'postgres',
	"SELECT errors >= 4 FROM chronicle.source_status() WHERE source = 'wal'",
	'the failing source is retried (4 errors)');
my $status = $node->safe_psql('postgres',
	"SELECT errors > 0 FROM chronicle.source_status() WHERE source = 'wal'");
is($status, 't', 'the failing source counts its errors');
my $recent = $node->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.database_history
	 WHERE ts > now() - interval '2 s'});
cmp_ok($recent, '>', 0, 'other sources go on recording while one fails');
my $log = slurp_file($node->logfile, $log_offset);
my $warnings = () = $log =~ /source "wal" failed/g;
cmp_ok($warnings, '<=', 1, "the failure is logged once, not every snapshot ($warnings)");
$node->safe_psql('postgres', "ALTER SYSTEM RESET chronicle.debug_fail_source");
$node->reload;

# DROP EXTENSION while running: the worker waits quietly, then records again.
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP EXTENSION pg_chronicle');
$node->wait_for_log(qr/waiting for CREATE EXTENSION pg_chronicle/, $log_offset);
$node->safe_psql('postgres', 'CREATE EXTENSION pg_chronicle');
poll_until($node, 'postgres',
	"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker'",
	'the worker resumes after CREATE EXTENSION');
is($node->safe_psql('postgres',
	"SELECT keyframe FROM chronicle.snapshot ORDER BY ts LIMIT 1"),
	't', 'recording resumes with a keyframe after CREATE EXTENSION');

# Restart: a new segment starts (a gap, never an interval across the hole).
$node->restart;
poll_until($node, 'postgres',
	"SELECT count(DISTINCT segment) >= 2 FROM chronicle.snapshot",
	'a restart starts a new segment');

# Crash (immediate stop): the worker comes back and records.  Snapshots
# committed asynchronously just before the crash may be lost; what matters
# is that recording goes on, in a new segment.
$node->safe_psql('postgres', 'CHECKPOINT');
my ($last_ts, $last_segment) = split /\|/, $node->safe_psql('postgres',
	'SELECT ts, segment FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1');
$node->stop('immediate');
$node->start;
poll_until($node, 'postgres',
	"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE ts > '$last_ts'",
	'snapshots after crash recovery');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.snapshot WHERE ts > '$last_ts' AND segment = '$last_segment'"),
	'0', 'the worker records again after crash recovery, in a new segment');

$node->stop;
done_testing();
