# Safety of a snapshot and of the collector (issue 11):
#  - a cancel or a statement_timeout ends chronicle.snapshot() with 57014
#    and commits nothing (a source must not swallow it);
#  - a snapshot cancelled while it reads pg_database again leaves the
#    shared database list to be read by the next one, in the same backend;
#  - the statements source stores a query text again after the write that
#    held it was rolled back (injected failure, rolled-back transaction,
#    rolled-back savepoint);
#  - a collector started by chronicle.start() and ended by a crash restart
#    is reported in the log and by chronicle.status().
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $node = chronicle_node('safety',
	statements => 1,
	conf => q{
chronicle.enabled = off
});
# Partitions are made, so a snapshot's first lock on io_history is its
# source's own.
$node->safe_psql('postgres', 'SELECT chronicle.snapshot()');

my $count_sql = 'SELECT count(*) FROM chronicle.snapshot';

# ---------------------------------------------------------------------
# statement_timeout and cancel
# ---------------------------------------------------------------------

# The case of the report: 1 ms is shorter than any snapshot.  Where the
# timer fires (in a source or not) depends on the machine; the case after
# this one makes sure it fires in a source.
my $before = $node->safe_psql('postgres', $count_sql);
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET statement_timeout = '1ms';\nSELECT chronicle.snapshot();");
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'statement_timeout ends chronicle.snapshot() with 57014');
is($node->safe_psql('postgres', $count_sql), $before,
	'the timed-out snapshot committed nothing');

# The io source (the first) waits for a lock held elsewhere (on the key
# dictionary, which a snapshot from SQL reads afresh in each source), so
# the timeout fires inside a source's subtransaction, whatever the speed of
# the machine.
my $holder = $node->background_psql('postgres');
$holder->query_safe(
	'BEGIN; LOCK TABLE chronicle.history_key IN ACCESS EXCLUSIVE MODE');

($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET statement_timeout = '2s';\nSELECT chronicle.snapshot();");
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'statement_timeout inside a source ends the snapshot with 57014');
like($stderr, qr/history_key/, '... while the io source waited for the key dictionary');
unlike($stderr, qr/source "io" failed/, '... not swallowed as the source\'s error');
is($node->safe_psql('postgres', $count_sql), $before,
	'the snapshot cut short in a source committed nothing');

# pg_cancel_backend() of a snapshot waiting in a source.
my $snap = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $snap->query_safe('SELECT pg_backend_pid()');
$snap->query_until(qr/snapping/, "\\echo snapping\nSELECT chronicle.snapshot();\n");
poll_until($node, 'postgres',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid",
	'the snapshot waits for the lock');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
is($snap->query('\echo :LAST_ERROR_SQLSTATE'), '57014',
	'pg_cancel_backend() ends a snapshot waiting in a source with 57014');
like($snap->{stderr}, qr/canceling statement due to user request/,
	'... as a cancel');
$snap->quit;
$holder->query_safe('COMMIT');
$holder->quit;
is($node->safe_psql('postgres', $count_sql), $before,
	'the cancelled snapshot committed nothing');

# A snapshot cancelled while it reads pg_database again (the list the
# database and relations sources share, src/databases.c, read when an
# invalidation says it changed), then the next snapshot in the same
# backend: the list is read again and holds the database created
# meanwhile.  While pg_database is locked no new session can start, so the
# holder's session watches and cancels.
my $snapper = $node->background_psql('postgres', on_error_stop => 0);
my $spid = $snapper->query_safe('SELECT pg_backend_pid()');
$snapper->query_safe('SELECT chronicle.snapshot()');
$node->safe_psql('postgres', 'CREATE DATABASE listed_late');
$node->safe_psql('listed_late', 'SELECT 1');
$holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE pg_database IN ACCESS EXCLUSIVE MODE');
$snapper->query_until(qr/snapping/, "\\echo snapping\nSELECT chronicle.snapshot();\n");
my $waits = '';
foreach (1 .. 300)
{
	$waits = $holder->query_safe(
		"SELECT string_agg(l.relation::regclass::text, ',') FROM pg_locks l"
		  . " WHERE l.pid = $spid AND NOT l.granted");
	last if $waits ne '';
	usleep(100_000);
}
is($waits, 'pg_database', 'a snapshot waits to read pg_database again after CREATE DATABASE');
$holder->query_safe("SELECT pg_cancel_backend($spid)");
is($snapper->query('\echo :LAST_ERROR_SQLSTATE'), '57014',
	'... and is cancelled there');
$holder->query_safe('COMMIT');
$holder->quit;
$snapper->{stderr} = '';    # the cancel's error, read
my $late_ts = $snapper->query_safe('SELECT chronicle.snapshot()');
is($snapper->query_safe(
		"SELECT count(*) FROM chronicle.database_history WHERE ts = '$late_ts'"
		  . " AND datname = 'listed_late'"),
	'1', 'the next snapshot of that backend records the database created meanwhile');
is($snapper->query_safe(
		"SELECT count(*) > 0 AND count(*) = count(DISTINCT h.datid)"
		  . " AND bool_and(h.datname IS NOT DISTINCT FROM d.datname)"
		  . " FROM chronicle.database_history h LEFT JOIN pg_database d ON d.oid = h.datid"
		  . " WHERE h.ts = '$late_ts' AND h.datid <> 0"),
	't', '... each database once, by the name pg_database gives it');
$snapper->quit;

# A source's own error is still the source's: the snapshot goes on.
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET chronicle.debug_fail_source = 'wal';\nSELECT chronicle.snapshot() IS NOT NULL;");
is($stdout, 't', 'a failing source does not end the snapshot');
like($stderr, qr/source "wal" failed: injected failure/, '... it is reported');

# ---------------------------------------------------------------------
# Query texts follow what was written
# ---------------------------------------------------------------------

# One table per case: a query id of its own, and a text to look for.
$node->safe_psql('postgres',
	'CREATE TABLE text_failed (i int); CREATE TABLE text_rolledback (i int);'
	  . ' CREATE TABLE text_savepoint (i int)');
my $text_count = sub {
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.statements_text WHERE query = 'SELECT i FROM $table'");
};

# One session: the source's caches live in the process that snapshots.
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe('SELECT chronicle.snapshot()');

# The statements source fails after it wrote its rows and texts.
$s->query_safe('SELECT i FROM text_failed');
$s->query("SET chronicle.debug_fail_source = 'statements:write'; SELECT chronicle.snapshot()");
like($s->{stderr}, qr/source "statements" failed: injected failure/,
	'the injected failure after the statements source wrote');
$s->{stderr} = '';
$s->query_safe('RESET chronicle.debug_fail_source');
is($text_count->('text_failed'), '0', 'the text written by the failed source was rolled back');
$s->query_safe('SELECT chronicle.snapshot()');
is($text_count->('text_failed'), '1', 'the next snapshot writes the text again');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.statements_history h
	  JOIN pg_stat_statements s USING (queryid)
	 WHERE s.query = 'SELECT i FROM text_failed'}),
	'1', '... and the statement\'s row, although it did not run again');

# The caller rolls back the transaction of its snapshot.
$s->query_safe('SELECT i FROM text_rolledback');
$s->query_safe('BEGIN; SELECT chronicle.snapshot(); ROLLBACK');
is($text_count->('text_rolledback'), '0', 'nothing of a rolled-back snapshot stays');
$s->query_safe('SELECT chronicle.snapshot()');
is($text_count->('text_rolledback'), '1',
	'the snapshot after a rollback writes the text again');

# The caller rolls back to a savepoint taken before the snapshot.
$s->query_safe('SELECT i FROM text_savepoint');
$s->query_safe('BEGIN; SAVEPOINT a; SELECT chronicle.snapshot(); ROLLBACK TO a;'
	  . ' SELECT chronicle.snapshot(); COMMIT');
is($text_count->('text_savepoint'), '1',
	'a snapshot after a rolled-back savepoint writes the text again');
$s->quit;

$node->stop;

# ---------------------------------------------------------------------
# A collector started by chronicle.start(), ended by a crash restart
# ---------------------------------------------------------------------

my $dyn = chronicle_node('crash', preload => undef, conf => q{
chronicle.snapshot_interval = '200ms'
restart_after_crash = on
});
is($dyn->safe_psql('postgres', 'SELECT started FROM chronicle.start()'), 't',
	'start() starts the collector');
poll_until($dyn, 'postgres',
	"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker'",
	'the dynamic collector records');

# A backend killed with SIGKILL makes the postmaster restart every process.
my $victim = $dyn->background_psql('postgres', on_error_stop => 0);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
my $log_offset = -s $dyn->logfile;
kill 'KILL', $victim_pid;
poll_until($dyn, 'postgres',
	"SELECT state FROM chronicle.status()",
	'status() says the crash restart ended the collector',
	'stopped (crash restart; call chronicle.start() again)');
ok($dyn->log_contains(
		qr/the collector started by chronicle\.start\(\) ended in the server's crash restart/,
		$log_offset),
	'the loss is logged');
eval { $victim->quit };

# start() again records again; stop() ends it for good.
is($dyn->safe_psql('postgres', 'SELECT started FROM chronicle.start()'), 't',
	'start() after the crash restart starts the collector');
poll_until($dyn, 'postgres',
	"SELECT running AND state = 'recording' FROM chronicle.status()",
	'the collector records again');
$dyn->safe_psql('postgres', 'SELECT * FROM chronicle.stop()');
is($dyn->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	'not preloaded', 'after stop() nothing speaks of a crash any more');

# A clean restart is not a crash: a collector ended by the shutdown is
# gone as documented, without the crash message.
$dyn->safe_psql('postgres', 'SELECT * FROM chronicle.start()');
$dyn->restart;
is($dyn->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	'not preloaded', 'a clean restart is not reported as a crash');
$dyn->stop;

done_testing();
