# The wall clock stepped back while the collector records (issue 11): the
# worker schedules its ticks on the monotonic clock, so it goes on taking
# snapshots (no gap until the wall clock catches up), and ts never goes
# backwards: within the segment it advances by the time that passed, and
# a snapshot from SQL starts a segment of its own after the latest one.
#
# The server runs under libfaketime (Debian package faketime) with the
# monotonic clock left alone; the test steps the wall clock by rewriting
# the file libfaketime reads.
#
# one_version: the worker's clocks are its own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node more_worker_snapshots worker_snapshots poll_until worker_recording);

my ($libfaketime) = grep { -f $_ } (
	'/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
	'/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
	'/usr/lib/faketime/libfaketime.so.1');
plan skip_all => 'libfaketime is not installed (Debian package faketime)'
  unless defined $libfaketime;

my $node = chronicle_node('clock', start => 0, conf => q{
chronicle.snapshot_interval = '200ms'
chronicle.wait_sample_interval = 0
});

my $clock_file = $node->basedir . '/faketime';
my $set_clock = sub {
	my ($offset) = @_;
	open(my $fh, '>', "$clock_file.new") or die "could not write $clock_file: $!";
	print $fh "$offset\n";
	close($fh);
	rename("$clock_file.new", $clock_file) or die "could not rename: $!";
};
$set_clock->('+0');
{
	local $ENV{LD_PRELOAD} = $libfaketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock_file;
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	$node->start;
}
$node->safe_psql('postgres', 'CREATE EXTENSION pg_chronicle');
worker_recording($node, 3);

# The worker's snapshots in the order they were taken (each is a
# transaction of its own), whatever their ts say.
my $in_order = q{
	SELECT s.ts, s.segment, lag(s.ts) OVER w AS prev_ts, lag(s.segment) OVER w AS prev_segment
	  FROM chronicle.snapshot s WHERE s.collector = 'worker'
	WINDOW w AS (ORDER BY s.xmin::text::bigint)};

# One hour back.  The backends run under libfaketime too: clock_timestamp()
# shows when the step took effect.
my ($before, $up_to_before) = split /\|/, $node->safe_psql('postgres',
	"SELECT max(ts), count(*) FROM chronicle.snapshot");
$set_clock->('-1h');
poll_until($node, 'postgres',
	"SELECT clock_timestamp() < '$before'::timestamptz - interval '30 min'",
	'the clock steps back');
more_worker_snapshots($node, 5,
	'the worker goes on taking snapshots after the clock stepped back');

is($node->safe_psql('postgres',
		"SELECT count(*) FROM ($in_order) s WHERE s.prev_ts IS NOT NULL AND s.ts <= s.prev_ts"),
	'0', 'ts of the worker\'s snapshots never goes backwards');
is($node->safe_psql('postgres',
		"SELECT count(DISTINCT segment) FROM chronicle.snapshot WHERE collector = 'worker'"),
	'1', 'the recording goes on in the same segment');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.snapshot WHERE ts <= '$before'"),
	$up_to_before, 'every snapshot after the step is later than the ones before it');

# A snapshot from SQL while the clock is behind the history: after the
# latest snapshot, in a segment of its own (no interval of a microsecond).
my $latest = $node->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
my $sql_ts = $node->safe_psql('postgres', 'SELECT chronicle.snapshot()');
is($node->safe_psql('postgres', qq{
	SELECT ts > '$latest', segment = ts FROM chronicle.snapshot WHERE ts = '$sql_ts'}),
	't|t', 'a snapshot from SQL comes after the latest one, in a segment of its own');

# The clock forward again: ts follows the wall clock again, still increasing.
my $now_count = worker_snapshots($node);
$set_clock->('+0');
poll_until($node, 'postgres',
	"SELECT clock_timestamp() > '$before'::timestamptz",
	'the clock steps forward');
more_worker_snapshots($node, 5,
	'the worker goes on taking snapshots after the clock stepped forward', $now_count);
is($node->safe_psql('postgres',
		"SELECT count(*) FROM ($in_order) s WHERE s.prev_ts IS NOT NULL AND s.ts <= s.prev_ts"),
	'0', 'ts never went backwards, across both steps');

$node->stop;
done_testing();
