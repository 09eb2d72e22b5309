# Housekeeping never stops nor stalls the recording: a partition that
# cannot be dropped (a temporary view on it) or a table that cannot be
# locked (an idle transaction holding a lock) is skipped, counted in
# status() and tried again later, while snapshots go on; a snapshot whose
# day partition is missing lands in the default partition; and
# chronicle.retention is read with the setting's units by maintain() in a
# session that has not loaded the library.
#
# one_version: housekeeping is the extension's own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node chronicle_status poll_ok poll_until worker_recording);

# A session queued behind a stalled collector fails instead of hanging
# (the defect this test is about); polls go by the clock (poll_ok).
$ENV{PGOPTIONS} = '-c statement_timeout=10s';

my $node = chronicle_node('housekeeping', conf => q{
chronicle.snapshot_interval = '200ms'
chronicle.retention = '3d'
});
worker_recording($node, 3);

sub query { return $node->safe_psql('postgres', $_[0]); }

# The day ($1 days from now, UTC) as in partition names.
sub day
{
	my ($days) = @_;
	return query("SELECT to_char((now() + interval '$days days') AT TIME ZONE 'UTC', 'YYYYMMDD')");
}

sub exists_rel
{
	my ($name) = @_;
	return query("SELECT to_regclass('chronicle.$name') IS NOT NULL");
}

# Snapshots keep arriving: $n more than now.
sub recording_goes_on
{
	my ($n, $what) = @_;
	my $c = query('SELECT count(*) FROM chronicle.snapshot');
	poll_ok($node, 'postgres', "SELECT count(*) >= $c + $n FROM chronicle.snapshot",
		"recording goes on: $what");
}

# A column of status(), by name.
sub status { return chronicle_status($node, $_[0]); }

# The worker's housekeeping runs at its start, before its first snapshot,
# and then hourly: restart the worker (the postmaster starts it again after
# 10 s), wait for the end of its housekeeping, then for its first snapshot.
# Until housekeeping is over the test reads only status() (shared memory):
# a query on a partitioned table at the wrong moment would make a drop
# wait for its lock, time out and be skipped (as it should: nobody waits
# behind housekeeping), and the test would see that instead.
sub worker_housekeeping
{
	my ($what) = @_;
	my ($pid, $last) = split /\|/,
	  query("SELECT pid, coalesce(last_maintenance, '-infinity') FROM chronicle.status()");
	query("SELECT pg_terminate_backend($pid)");
	poll_until($node, 'postgres',
		"SELECT running AND pid <> $pid AND last_maintenance > '$last' FROM chronicle.status()",
		'the worker comes back and does its housekeeping');
	poll_ok($node, 'postgres', q{
			SELECT count(*) > 0 FROM chronicle.snapshot
			 WHERE collector = 'worker' AND ts >= (SELECT started FROM chronicle.status())},
		"the restarted worker records $what");
}

# (a) A monitoring role's temporary view on an expiring partition: its drop
# fails; the drop is skipped and counted, the others go on, so does the
# recording.
query("CREATE ROLE hk_monitor IN ROLE pg_monitor");
query("SELECT chronicle.ensure_partitions(now() - interval '10 days', now() - interval '9 days')");
my $old = day(-10);
my $viewer = $node->background_psql('postgres');
$viewer->query_safe('SET ROLE hk_monitor');
$viewer->query_safe("CREATE TEMP VIEW v AS SELECT ts FROM chronicle.snapshot_p$old");
my $skipped0 = status('partitions_skipped');
my $log_offset = -s $node->logfile;

worker_housekeeping('while a view holds an expiring partition');
is(exists_rel("snapshot_p$old"), 't', 'the partition under a view is kept');
is(exists_rel("history_p$old"), 'f', 'the other expired partitions are dropped');
cmp_ok(status('partitions_skipped'), '>', $skipped0, 'status() counts the skipped drop');
like(status('last_maintenance_error'),
	qr/could not drop partition chronicle\.snapshot_p$old: cannot drop table/,
	'status() says which partition and why');
recording_goes_on(10, 'while a view holds an expiring partition');
my $log = slurp_file($node->logfile, $log_offset);
my $said = () = $log =~ /could not drop partition chronicle\.snapshot_p$old/g;
is($said, 1, 'the skip is logged once');
unlike($log, qr/snapshot failed/, 'no snapshot failed');
$viewer->quit;

# (b) An idle transaction holds a lock on a history table (as pg_dump
# does): housekeeping must create and drop partitions of that table.  Its
# DDL gives up after lock_timeout, the other tables are done, recording
# goes on and readers are not queued behind the collector.
query("SELECT chronicle.ensure_partitions(now() - interval '8 days', now() - interval '8 days')");
my $old8 = day(-8);
my $ahead = day(3);
query("DROP TABLE chronicle.history_p$ahead, chronicle.snapshot_p$ahead");
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK chronicle.history IN ACCESS SHARE MODE');
$skipped0 = status('partitions_skipped');

worker_housekeeping('while a transaction holds a lock on a history table');
is(exists_rel("history_p$old8"), 't', 'the expired partition of the locked table is kept');
is(exists_rel("history_p$ahead"), 'f', 'the missing partition of the locked table is not created yet');
is(exists_rel("snapshot_p$old8"), 'f', 'the expired partition of another table is dropped');
is(exists_rel("snapshot_p$ahead"), 't', 'the missing partition of another table is created');
cmp_ok(status('partitions_skipped'), '>=', $skipped0 + 2,
	'status() counts the skipped creation and drop');
like(status('last_maintenance_error'),
	qr/\.history_p\d+: (canceling statement due to lock timeout|not tried after a lock timeout)/,
	'status() says a lock was not granted');
recording_goes_on(10, 'while a transaction holds a lock on a history table');
# Nobody waits behind the collector: it holds no lock request, and a new
# reader of the locked table gets through.
poll_ok($node, 'postgres', q{
	SELECT NOT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	                    WHERE NOT l.granted AND a.backend_type = 'pg_chronicle collector')},
	'the collector waits for no lock');
is($node->psql('postgres', 'SELECT count(*) FROM chronicle.history'),
	0, 'a new reader of the locked table is not queued behind the collector');
$locker->query_safe('COMMIT');
$locker->quit;
is(query("SELECT partitions_created >= 1 AND partitions_dropped >= 1 AND partitions_skipped = 0 FROM chronicle.maintain()"),
	't', 'once the lock is gone, maintain() does what was skipped');
is(exists_rel("history_p$ahead") . exists_rel("history_p$old8"), 'tf',
	'the locked table has its partitions now');

# (c) Today's and tomorrow's partitions are missing (dropped by hand):
# snapshots land in the default partitions, and maintain() moves them into
# day partitions it creates.
my ($today, $tomorrow) = (day(0), day(1));
my @parents = split /\n/, query(q{
	SELECT c.relname FROM pg_class c JOIN pg_partitioned_table p ON p.partrelid = c.oid
	 WHERE c.relnamespace = 'chronicle'::regnamespace AND NOT c.relispartition ORDER BY 1});
query(join('; ', map { "DROP TABLE chronicle.${_}_p$today, chronicle.${_}_p$tomorrow" } @parents));
recording_goes_on(10, 'without the partitions of the day');
cmp_ok(query('SELECT count(*) FROM chronicle.snapshot_default'), '>=', 10,
	'the snapshots landed in the default partition');
cmp_ok(query('SELECT count(*) FROM chronicle.history_default'), '>', 0,
	'so did the history rows');
my $t1 = query('SELECT max(ts) FROM chronicle.snapshot');
my $before = query("SELECT count(*) FROM chronicle.snapshot WHERE ts <= '$t1'");
# A query planned before the move and run after it reads every row: the
# session that moves them into the day partition holds the parent, and the
# query waits for it before it is planned (else it waited for the default
# partition, planned without the day, and read the default one emptied).
my $mover = $node->background_psql('postgres');
$mover->query_safe('BEGIN');
is($mover->query_safe("SELECT chronicle._create_partition('chronicle.snapshot',"
		. " (now() AT TIME ZONE 'UTC')::date)"),
	't', "a session makes today's snapshot partition, moving its rows there");
my $reader = $node->background_psql('postgres');
my $rpid = $reader->query_safe('SELECT pg_backend_pid()');
$reader->query_until(qr/reading/,
	"\\echo reading\nSELECT count(*) AS seen FROM chronicle.snapshot WHERE ts <= '$t1' \\gset\n");
poll_until($node, 'postgres',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $rpid",
	'a reader of the table waits for that session');
$mover->query_safe('COMMIT');
is($reader->query_safe('\echo :seen'), $before,
	'... and then reads every snapshot, the moved ones included');
$mover->quit;
$reader->quit;
cmp_ok(query('SELECT partitions_created FROM chronicle.maintain()'), '>', 0,
	"maintain() creates the other day's partitions again");
is(query("SELECT count(*) FROM chronicle.snapshot WHERE ts <= '$t1'"), $before,
	'no snapshot was lost');
is(query("SELECT count(*) FROM chronicle.snapshot_default WHERE ts <= '$t1'"), '0',
	'the default partition is empty again');
is(query("SELECT count(*) FROM chronicle.snapshot WHERE ts <= '$t1'"
		. " AND tableoid <> 'chronicle.snapshot_default'::regclass"),
	$before, 'the snapshots are in their day partitions');
$node->stop;

# (d) Without preload (pg_cron's case): a session that has not loaded the
# library reads chronicle.retention as raw text.  A bare number is minutes.
my $np = chronicle_node('nopreload', preload => undef);
for my $setting ('20160', '14d', '336h', '0')
{
	$np->append_conf('postgresql.conf', "chronicle.retention = '$setting'\n");
	$np->reload;
	$np->safe_psql('postgres',
		"SELECT chronicle.ensure_partitions(now() - interval '20 days', now())");
	# Each safe_psql is a new session; this one does not load the library.
	is($np->safe_psql('postgres', 'SHOW chronicle.retention'), $setting,
		"retention '$setting': a new session has the raw setting");
	$np->safe_psql('postgres', 'SELECT * FROM chronicle.maintain()');
	my $kept = $np->safe_psql('postgres', q{
		SELECT string_agg(d::text, ',' ORDER BY d) FROM generate_series(1, 20) AS d
		 WHERE to_regclass('chronicle.snapshot_p' ||
		       to_char((now() - d * interval '1 day') AT TIME ZONE 'UTC', 'YYYYMMDD')) IS NOT NULL});
	is($kept, join(',', 1 .. ($setting eq '0' ? 20 : 14)),
		"retention '$setting': "
		  . ($setting eq '0' ? 'every partition is kept' : '14 days are kept, older ones dropped'));
}
$np->stop;

done_testing();
