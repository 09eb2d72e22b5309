# What the TAP tests of test/t share: a node with pg_chronicle preloaded and
# installed (one ready for pgbench runs), and a poll that is a test of its
# own.
#
#   use FindBin;
#   use lib "$FindBin::RealBin/../perl";
#   use PgChronicle::TestNode qw(chronicle_node poll_until);
#
#   my $node = chronicle_node('primary', conf => q{
#   chronicle.snapshot_interval = '200ms'
#   });
#   poll_until($node, 'postgres',
#       "SELECT count(*) >= 5 FROM chronicle.snapshot WHERE collector = 'worker'",
#       'the worker records snapshots');
package PgChronicle::TestNode;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT_OK = qw(chronicle_node chronicle_status pgbench_node poll_ok poll_until
  poll_true session_poll worker_snapshots worker_recording more_worker_snapshots lock_wait wait_class_sql);

# A new node $name (of the installation install_path, default the one on
# PATH): init (with the options of init => {...}), then in
# postgresql.conf shared_preload_libraries = preload (default
# 'pg_chronicle'; undef: no such line) and the lines of conf; then (unless
# start => 0) start it and CREATE EXTENSION each of extensions (default
# pg_chronicle; [] for none; "pg_chronicle VERSION '0.1.0'" works too) in
# database postgres, in that order.  With statements => 1, the defaults are
# pg_stat_statements preloaded too and created first (the statements
# source's).
sub chronicle_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $opt{install_path} ? (install_path => $opt{install_path}) : ());
	$node->init(%{ $opt{init} // {} });
	my $preload =
	    exists $opt{preload} ? $opt{preload}
	  : $opt{statements}     ? 'pg_chronicle,pg_stat_statements'
	  :                        'pg_chronicle';
	my $conf = '';
	$conf .= "\nshared_preload_libraries = '$preload'" if defined $preload;
	$conf .= "\n" . $opt{conf} if defined $opt{conf};
	$node->append_conf('postgresql.conf', "$conf\n") if $conf ne '';
	return $node if exists $opt{start} && !$opt{start};
	$node->start;
	my @extensions = @{ $opt{extensions}
		  // ($opt{statements} ? [qw(pg_stat_statements pg_chronicle)] : ['pg_chronicle']) };
	$node->safe_psql('postgres',
		join('; ', map { "CREATE EXTENSION $_" } @extensions))
	  if @extensions;
	return $node;
}

# A node $name for pgbench runs: chronicle_node with pg_stat_statements
# preloaded and created, a snapshot every $interval, pgbench's tables of
# scale $scale in database postgres; returned once the worker has recorded
# two snapshots.  Both steps are tests.
sub pgbench_node
{
	my ($name, $interval, $scale) = @_;
	my $node = chronicle_node($name, statements => 1,
		conf => "chronicle.snapshot_interval = '$interval'");
	$node->command_ok([ 'pgbench', '-i', '-q', '-s', $scale, 'postgres' ], 'pgbench -i');
	worker_recording($node, 2);
	return $node;
}

# Runs $query in $db every 0.1 s until it returns $expected (default 't'),
# for timeout_default seconds by the clock (a query that waits behind a lock
# counts its time; psql failing, e.g. during a crash restart, is tried
# again).  Then it is a test named $name: passed, or failed with
# the last value seen (or the last error) against $expected.  Returns
# whether it passed.
sub poll_ok
{
	my ($node, $db, $query, $name, $expected) = @_;
	$expected //= 't';
	my $timeout = $PostgreSQL::Test::Utils::timeout_default;
	my $deadline = time() + $timeout;
	my ($ret, $out, $err);
	while (1)
	{
		# While the server restarts psql may also die of a broken pipe.
		eval { ($ret, $out, $err) = $node->psql($db, $query); 1 }
		  or ($ret, $out, $err) = (-1, '', $@);
		if ($ret == 0 && $out eq $expected)
		{
			pass($name);
			return 1;
		}
		last if time() >= $deadline;
		usleep(100_000);
	}
	return is($ret == 0 ? $out : "error: $err", $expected,
		"$name (polled for $timeout s)");
}

# poll_ok, and when it fails the test script stops there: what follows
# depends on it.
sub poll_until
{
	my ($node, $db, $query, $name, $expected) = @_;
	poll_ok($node, $db, $query, $name, $expected)
	  or die "stopping: $name did not happen\n";
	return 1;
}

# Runs $query in database postgres every 0.2 s until it returns 't', for
# $secs seconds (default timeout_default) by the clock (psql failing is
# tried again); returns whether it did.  Not a test: for a wait whose
# outcome the caller checks, or only reports.
sub poll_true
{
	my ($node, $query, $secs) = @_;
	my $deadline =
	  Time::HiRes::time() + ($secs // $PostgreSQL::Test::Utils::timeout_default);
	while (Time::HiRes::time() < $deadline)
	{
		my ($ret, $out) = $node->psql('postgres', $query);
		return 1 if $ret == 0 && $out eq 't';
		usleep(200_000);
	}
	return 0;
}

# poll_until through an open session ($session, a background psql: no new
# connection, so no client backend comes and goes) every 20 ms until
# $query returns 't'; dies when it did not within timeout_default.
sub session_poll
{
	my ($session, $query, $name) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		return 1 if $session->query_safe($query) eq 't';
		usleep(20_000);
	}
	die "stopping: $name did not happen\n";
}

# A column of chronicle.status(), by name.
sub chronicle_status
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres',
		"SELECT to_jsonb(s) ->> '$col' FROM chronicle.status() s");
}

# How many snapshots the worker has written.
sub worker_snapshots
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker'");
}

# poll_until the worker has written $n snapshots in all, a test named $name
# (default 'the worker records snapshots').
sub worker_recording
{
	my ($node, $n, $name) = @_;
	return poll_until($node, 'postgres',
		"SELECT count(*) >= $n FROM chronicle.snapshot WHERE collector = 'worker'",
		$name // 'the worker records snapshots');
}

# poll_until the worker has written $n snapshots more than $before
# (default: worker_snapshots now), a test named $name (default 'the worker
# goes on recording').  Returns the ts of its latest snapshot.
sub more_worker_snapshots
{
	my ($node, $n, $name, $before) = @_;
	$before //= worker_snapshots($node);
	worker_recording($node, $before + $n, $name // 'the worker goes on recording');
	return $node->safe_psql('postgres',
		"SELECT max(ts) FROM chronicle.snapshot WHERE collector = 'worker'");
}

# A session waiting for a lock: a new table $table, locked by one
# background psql in an open transaction, and read by another, which waits
# (Lock/relation) when this returns.  Returns the two sessions (holder,
# waiter): ROLLBACK in the holder ends the wait.  $poll (default
# "SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type =
# 'Lock'") is polled, as a test named $name (default 'a lock wait'),
# before it returns.
sub lock_wait
{
	my ($node, $table, $poll, $name) = @_;
	$node->safe_psql('postgres', "CREATE TABLE $table (i int)");
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("BEGIN; LOCK TABLE $table IN ACCESS EXCLUSIVE MODE");
	my $waiter = $node->background_psql('postgres');
	$waiter->query_until(qr/waiting/, "\\echo waiting\nSELECT count(*) FROM $table;\n");
	poll_until($node, 'postgres',
		$poll // "SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
		$name // 'a lock wait');
	return ($holder, $waiter);
}


# A SQL expression of a row's wait_event_type: its wait class as the
# sampler counts active sessions by class (wait_sampler_history's
# active_cpu, active_io, ...), written independently of the C that
# classifies, for the tests that hold the one against the other.
sub wait_class_sql
{
	return q{CASE wait_event_type WHEN 'CPU' THEN 'cpu' WHEN 'IO' THEN 'io'
	WHEN 'LWLock' THEN 'lwlock' WHEN 'Lock' THEN 'lock' WHEN 'IPC' THEN 'ipc'
	WHEN 'Client' THEN 'client' WHEN 'Timeout' THEN 'timeout' ELSE 'other' END};
}

1;
