# The collector's housekeeping, rollup and error paths, each run several
# times in the same process, and the code after them: the run after a
# skipped housekeeping, after a failed rollup, after a failed source.
# Whatever one run keeps for the next (the skips it logged, the last rollup
# error, a source's backoff) must outlive the snapshot that made it; 0.2.0
# kept the list of logged skips in the snapshot's memory, and the second
# housekeeping run after a skip crashed the server.
#
# chronicle.debug_housekeeping_interval = 1s runs housekeeping and the
# rollup every second instead of hourly / every 5 minutes.  The server log
# (log_min_messages = warning) must hold no crash, each distinct problem's
# WARNING once while it repeats, and the worker must be the same process
# from start to end.
#
# one_version: housekeeping and its error paths are the extension's own, alike
# on every version: tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode
  qw(chronicle_node chronicle_status more_worker_snapshots poll_ok poll_until worker_recording);

my $node = chronicle_node('housekeeping_repeat', conf => q{
chronicle.snapshot_interval = '200ms'
chronicle.retention = '3d'
chronicle.debug_housekeeping_interval = '1s'
log_min_messages = warning
});
sub query { return $node->safe_psql('postgres', $_[0]); }
sub status { return chronicle_status($node, $_[0]); }

worker_recording($node, 3);
my $pid = status('pid');
my $log_offset = -s $node->logfile;

# Housekeeping has run $n more times than now.
sub housekeeping_runs
{
	my ($n, $what) = @_;
	my $last = status('last_maintenance');
	for my $i (1 .. $n)
	{
		poll_until($node, 'postgres',
			"SELECT last_maintenance > '$last' FROM chronicle.status()",
			"housekeeping run $i $what");
		$last = status('last_maintenance');
	}
}

# Snapshots keep arriving: $n more than now.
sub recording_goes_on
{
	my ($n, $what) = @_;
	more_worker_snapshots($node, $n, "recording goes on: $what");
}

# (1) A reader in an open transaction holds the history of an expired day:
# its drop is skipped at every run while the reader stays (the WARNING
# once), then done after the reader leaves.  The second and later runs
# walk the list of the skips logged by the first.
# Housekeeping runs every second, so it may drop the expired partition
# before the reader has read it (on a loaded machine): then again.
query("CREATE ROLE hk_reader IN ROLE pg_monitor");
my $reader = $node->background_psql('postgres');
$reader->query_safe('SET ROLE hk_reader');
my $reader_pid = $reader->query_safe('SELECT pg_backend_pid()');
my $held = 'f';
for my $try (1 .. 5)
{
	query("SELECT chronicle.ensure_partitions('2020-01-01', '2020-01-01')");
	$reader->query_safe('BEGIN');
	$reader->query_safe('SELECT count(*) FROM chronicle.io_history');
	$held = query("SELECT count(*) > 0 FROM pg_locks WHERE pid = $reader_pid"
		  . " AND relation = to_regclass('chronicle.history_p20200101')");
	last if $held eq 't';
	$reader->query_safe('COMMIT');
}
is($held, 't', 'a reader in an open transaction holds an expired day partition');
my $skipped0 = status('partitions_skipped');
housekeeping_runs(4, 'while a reader holds the expired partition');
cmp_ok(status('partitions_skipped'), '>=', $skipped0 + 4,
	'every run skipped the drop (status() counts them)');
is(query("SELECT to_regclass('chronicle.history_p20200101') IS NOT NULL"), 't',
	'the partition the reader holds is kept');
is(status('pid'), $pid, 'the worker is the same process after repeated skips');
$reader->query_safe('COMMIT');
$reader->quit;
poll_ok($node, 'postgres',
	"SELECT to_regclass('chronicle.history_p20200101') IS NULL",
	'the next run after the reader left drops the partition');
recording_goes_on(5, 'after the skipped housekeeping runs');
my $log = slurp_file($node->logfile, $log_offset);
my $said = () = $log =~ /could not drop partition chronicle\.history_p20200101/g;
is($said, 1, 'the skip is logged once while it repeats');

# (2) A row at -infinity in a partitioned table (the default partition) has
# no day: housekeeping must go on with the others, at every run.
query("INSERT INTO chronicle.app_metric (ts, name, value) VALUES ('-infinity', 'hk.test', 1)");
my $errors0 = status('maintenance_errors');
housekeeping_runs(3, 'with a row at -infinity');
is(status('maintenance_errors'), $errors0, 'a row at -infinity makes no housekeeping error');
is(status('pid'), $pid, 'the worker is the same process with a row at -infinity');
query("SELECT chronicle.ensure_partitions('2020-01-02', '2020-01-02')");
poll_ok($node, 'postgres',
	"SELECT to_regclass('chronicle.app_metric_p20200102') IS NULL",
	'housekeeping still drops expired partitions with a row at -infinity');

# (3) The rollup fails at every run (its state table is away), then works.
$log_offset = -s $node->logfile;
query('ALTER TABLE chronicle.rollup_state RENAME TO rollup_state_away');
housekeeping_runs(3, 'while the rollup fails');
$log = slurp_file($node->logfile, $log_offset);
$said = () = $log =~ /rollup failed: relation "chronicle\.rollup_state" does not exist/g;
is($said, 1, 'the failing rollup is logged once while it repeats');
query('ALTER TABLE chronicle.rollup_state_away RENAME TO rollup_state');
poll_ok($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.rollup_minute WHERE source = 'intervals'",
	'the rollup works again in the same process once its table is back');
is(status('pid'), $pid, 'the worker is the same process after failed rollups');

# (4) A source fails at every snapshot, then records again.
$log_offset = -s $node->logfile;
query("ALTER SYSTEM SET chronicle.debug_fail_source = 'wal'");
query('SELECT pg_reload_conf()');
poll_ok($node, 'postgres',
	"SELECT errors >= 3 FROM chronicle.source_status() WHERE source = 'wal'",
	'the failing source fails at several snapshots');
query('ALTER SYSTEM RESET chronicle.debug_fail_source');
query('SELECT pg_reload_conf()');
my $t = query('SELECT clock_timestamp()');
poll_ok($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.wal_history WHERE ts > '$t'",
	'the source records again in the same process');
is(status('pid'), $pid, 'the worker is the same process after a failing source');
recording_goes_on(5, 'after every error path');

# (5) The rollup runs beside the recording, in the housekeeper: a rollup
# that waits 4 s (for a lock on its table) delays no snapshot.
my $hk = query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_chronicle housekeeper'");
like($hk, qr/^\d+$/, 'one housekeeper runs beside the collector');
my @stat = split / /, slurp_file("/proc/$hk/stat") =~ s/^.*\) //sr;
is($stat[16], 19, 'the housekeeper runs at the lowest CPU priority (nice 19)');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK chronicle.rollup_minute IN ACCESS EXCLUSIVE MODE');
my $t_lock = query('SELECT clock_timestamp()');
poll_until($node, 'postgres', q{
	SELECT count(*) > 0 FROM pg_locks
	 WHERE relation = 'chronicle.rollup_minute'::regclass AND NOT granted},
	'the rollup waits for the lock');
sleep 4;
$locker->query_safe('COMMIT');
$locker->quit;
my $gap = query(qq{
	SELECT max(extract(epoch FROM ts - prev))
	  FROM (SELECT ts, lag(ts) OVER (ORDER BY ts) AS prev FROM chronicle.snapshot
	         WHERE ts > '$t_lock') s});
cmp_ok($gap, '<', 1.0, "no snapshot waited for the rollup (longest interval $gap s, interval 0.2 s)");
is(status('pid'), $pid, 'the collector is the same process after the rollup waited');

# Housekeeping runs on once all is well, and nothing crashed.
housekeeping_runs(2, 'after every error path');
$log = slurp_file($node->logfile);
unlike($log, qr/TRAP:|terminated by signal|server process .* was terminated|PANIC/,
	'no crash in the server log');
is(query('SELECT pid FROM chronicle.status()'), $pid, 'one worker process throughout');

$node->stop;
done_testing();
