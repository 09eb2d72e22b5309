# The wait sampler's session time against PostgreSQL's own session-time
# accounting, pg_stat_database.active_time and idle_in_transaction_time
# (issue: average active sessions read 11-32 % above active_time on
# select-only runs on 2 cores; 10 % of the session-seconds were CPU where
# PostgreSQL accounts idle in transaction).
#
# The reference.  PostgreSQL adds a session's time in a state when the
# session leaves it (pgstat_report_activity(): the time since
# st_state_start_timestamp, to active_time after 'active', to
# idle_in_transaction_time after 'idle in transaction'), and a backend
# flushes those sums into pg_stat_database in pgstat_report_stat(), at most
# once a second, before it goes idle, at the idle-stats timeout and when it
# exits.  So the view is complete only for sessions that have ended: every
# window here starts before its sessions connect and ends after their
# processes are gone.  A kernel trace of every pgstat_report_activity()
# call (perf uprobes, pgbench -S -c 4 on 2 cores, 10 s) gave 12.17
# session-seconds active where active_time said 12.22: for the simple
# query protocol it is exact.
#
# What was wrong, and is fixed (src/sampler.c):
#
# - The sampler's instants followed the workload.  A sample is taken when
#   the sampler runs, and on saturated CPUs a woken process of the default
#   scheduler slice waits for a running one to block, which processes do
#   at the workload's turning points (a backend that has just gone idle).
#   The same trace, read at the instants the sampler really ran, gave 9.94
#   session-seconds (the sampler counted 10.05), at random instants 12.13:
#   the sampler saw 16-27 % too little active time under pgbench -S.  It
#   now asks for a 0.1 ms slice (Linux 6.12+, unprivileged), which lets it
#   preempt when its timer fires: 12.58 against 12.11 in the trace.
# - With other processes competing for the CPUs, the sessions' activity
#   follows the kernel's 4 ms timer tick (0.8 to 1.3 times its mean by
#   phase, in the trace), and a fixed 10 ms grid samples two phases of it:
#   9-13 % too little, even with the sampler at a real-time priority.  Each
#   tick's sample is now taken at a random instant of its interval: at
#   1 ms, 18,410 instants, 24.44 session-seconds against 24.66 traced.
# - A session idle in transaction without a wait event counted as CPU: on
#   a saturated machine the backend that has sent its reply loses the CPU
#   to its client and finds the next command waiting when it runs again,
#   never waiting in ClientRead; 7 % of the TPC-B run's database time.  It
#   is named Client/IdleInTransaction now and counts in class Client
#   (src/sampler.h).
#
# What is PostgreSQL's, and documented here by a check:
#
# - Time is added at state changes: a session idle in transaction, or one
#   whose statement has just ended, is not in the view yet (the statement's
#   time waits for the session's next flush: its next transaction, the
#   idle-stats timeout or its exit).
# - With the extended query protocol (pgbench -M extended or prepared)
#   active_time leaves out Parse and Bind: each message reports 'active'
#   again and the report of an unchanged state restarts the clock without
#   adding the time (pgstat_report_activity, "state != st_state").  Traced:
#   -M prepared 8.18 s against 9.80 s in the trace, -M extended 6.09 s
#   against 10.80 s; the sampler's 9.17 s and 10.16 s then read 12 % and
#   67 % above active_time.  A 1 s planning (an immutable function folded
#   at Bind) is here 1 s of active_time by the simple protocol, none by
#   the extended one, 1 s for the sampler either way.
#
# Tolerances.  A sample is one session seen at one tick; with states that
# change many times per tick (pgbench), the samples of N session-ticks in a
# state of share p have a relative standard deviation of about
# sqrt((1 - p) / (N p)): 20 s of 4 sessions at 100 Hz, p = 0.3, 1.7 %.
# Other processes on the machine make the states last longer (the sessions
# are descheduled together), fewer samples independent: 3-5 % was seen
# with 4 other test suites on the 2 cores, and up to 11 % above with a
# whole test suite and builds beside it.  10 % below and 15 % above, with
# 0.2 s for the test's own sessions (the snapshots, psql) on both sides:
# the biased sampler read 16-27 % low.  Active plus idle in transaction, TPC-B's
# sessions are one or the other nearly all the time: 3 % (0.0-0.4 % seen).
# Steady states (a session idle in transaction for 3 s) are counted within
# a tick or two: 3 % and 0.1 s.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until wait_class_sql);
use Time::HiRes qw(usleep);
use POSIX ();

my $node = chronicle_node('session_time', conf => q{
chronicle.enabled = off
chronicle.wait_sample_interval = '10ms'
autovacuum = off
max_connections = 30
});
$node->command_ok([ 'pgbench', '-i', '-q', '-s', '1', 'postgres' ], 'pgbench -i');

my ($sampler_pid, $interval_ms) = split /\|/, $node->safe_psql('postgres',
	'SELECT pid, interval_ms FROM chronicle.wait_sampler_status()');
is($interval_ms, 10, 'the sampler samples every 10 ms');

# The scheduler slice the sampler runs with (Linux: se.slice in ns).
my $slice;
if (open my $fh, '<', "/proc/$sampler_pid/sched")
{
	while (<$fh>) { $slice = $1 if /^se\.slice\s*:\s*(\d+)/; }
	close $fh;
}
my ($kmaj, $kmin) = (POSIX::uname())[2] =~ /^(\d+)\.(\d+)/;
my $short_slice_kernel = $^O eq 'linux' && defined $kmaj && ($kmaj > 6 || ($kmaj == 6 && $kmin >= 12));
note 'kernel ' . (POSIX::uname())[2] . ', sampler slice ' . ($slice // 'unknown') . ' ns';
SKIP:
{
	skip 'no short scheduler slices before Linux 6.12', 1 unless $short_slice_kernel && defined $slice;
	is($slice, 100000, 'the sampler runs with a 0.1 ms scheduler slice');
}
my $unbiased = $short_slice_kernel && defined $slice && $slice == 100000;

# A snapshot from SQL and pg_stat_database's session times of database
# postgres in the same statistics snapshot: (ts, active s, idle in
# transaction s).
sub mark
{
	my $out = $node->safe_psql('postgres', q{
		SET stats_fetch_consistency = snapshot;
		BEGIN;
		SELECT chronicle.snapshot();
		SELECT active_time / 1000 || '|' || idle_in_transaction_time / 1000
		  FROM pg_stat_database WHERE datname = 'postgres';
		COMMIT;});
	my ($ts, $times) = split /\n/, $out;
	return ($ts, split /\|/, $times);
}

# The sampler's session-seconds of client backends per state in (t0, t1]
# (each sample the window's seconds over the ticks taken), its classes, and
# PostgreSQL's differences.
sub compare
{
	my ($t0, $a0, $i0, $t1, $a1, $i1) = @_;
	my %r = (pg_active => $a1 - $a0, pg_iit => $i1 - $i0);
	my ($due, $taken) = split /\|/, $node->safe_psql('postgres', qq{
		SELECT ticks_due, ticks_taken FROM chronicle.wait_sampler_totals('$t0', '$t1')});
	$r{coverage} = $taken / $due;
	my $per = $interval_ms / 1000 * $due / $taken;
	for my $row (split /\n/, $node->safe_psql('postgres', qq{
		SELECT state, wait_event_type, wait_event, sum(samples)
		  FROM chronicle.wait_totals('$t0', '$t1', 'client backend')
		 GROUP BY 1, 2, 3}))
	{
		my ($state, $type, $event, $n) = split /\|/, $row;
		$r{"state:$state"} += $n * $per;
		$r{"key:$state/$type/$event"} += $n * $per;
	}
	$r{active} = $r{'state:active'} // 0;
	$r{iit} = ($r{'state:idle in transaction'} // 0)
	  + ($r{'state:idle in transaction (aborted)'} // 0);
	return \%r;
}

# $rel below and $rel_high above $want (the same when not given).
sub within
{
	my ($got, $want, $rel, $abs, $name, $rel_high) = @_;
	$rel_high //= $rel;
	my ($lo, $hi) = ($want * (1 - $rel) - $abs, $want * (1 + $rel_high) + $abs);
	my $ok = $got >= $lo && $got <= $hi;
	ok($ok, sprintf('%s: sampler %.2f s, PostgreSQL %.2f s (%s)', $name, $got, $want,
			$want >= 0.5 ? sprintf('%+.1f %%', 100 * ($got / $want - 1)) : sprintf('%+.2f s', $got - $want)))
	  or diag(sprintf('allowed %.2f .. %.2f', $lo, $hi));
	return $ok;
}

# pgbench with @args; the window closes after its backends have exited (a
# backend leaves pg_stat_activity before it flushes its statistics: its
# process is waited for).
sub pgbench_window
{
	my ($label, @args) = @_;
	my @m0 = mark();
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', @args, $node->connstr('postgres') . ' application_name=session_time_bench' ],
		'>', \$out, '2>', \$err);
	my ($clients) = join(' ', @args) =~ /-c (\d+)/;
	my @pids;
	for (1 .. 100)
	{
		@pids = split /\n/, $node->safe_psql('postgres', q{
			SELECT pid FROM pg_stat_activity WHERE application_name = 'session_time_bench'});
		last if @pids >= $clients;
		usleep(100_000);
	}
	$h->finish;
	like($out, qr/number of transactions actually processed: \d+/, "$label: pgbench ran")
	  or diag($err);
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(50_000) while grep({ kill 0, $_ } @pids) && time() < $deadline;
	is(scalar(grep { kill 0, $_ } @pids), 0, "$label: its " . scalar(@pids) . ' backends have exited');
	my $r = compare(@m0, mark());
	my ($tps) = $out =~ /tps = ([\d.]+)/;
	note sprintf('%s: %s tps; coverage %.3f; sampler active %.2f s, idle in transaction %.2f s '
		  . '(of it Client/IdleInTransaction %.2f s); pg_stat_database active_time %.2f s, '
		  . 'idle_in_transaction_time %.2f s',
		$label, $tps // '?', $r->{coverage}, $r->{active}, $r->{iit},
		$r->{'key:idle in transaction/Client/IdleInTransaction'} // 0,
		$r->{pg_active}, $r->{pg_iit});
	return ($r, @m0);
}

# ---------------------------------------------------------------------
# Select-only: one statement per transaction, no idle in transaction.
# ---------------------------------------------------------------------
my ($so) = pgbench_window('select-only', '-S', '-c', '4', '-j', '1', '-T', '20');
SKIP:
{
	skip 'the sampler has no short scheduler slice here: on saturated CPUs its samples are biased (src/sampler.c)', 1
	  unless $unbiased;
	within($so->{active}, $so->{pg_active}, 0.10, 0.2, 'select-only, active', 0.15);
}
within($so->{iit}, $so->{pg_iit}, 0.10, 0.2, 'select-only, idle in transaction (none)');

# ---------------------------------------------------------------------
# TPC-B-like: BEGIN, five statements, END, each its own round trip.
# ---------------------------------------------------------------------
my ($tb, $tb_t0) = pgbench_window('TPC-B', '-c', '4', '-j', '1', '-T', '15');
my $tb_t1 = $node->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
cmp_ok($tb->{pg_iit}, '>', 1, 'TPC-B: sessions were idle in transaction between statements');
SKIP:
{
	skip 'the sampler has no short scheduler slice here: on saturated CPUs its samples are biased (src/sampler.c)', 3
	  unless $unbiased;
	within($tb->{active}, $tb->{pg_active}, 0.10, 0.2, 'TPC-B, active', 0.15);
	within($tb->{iit}, $tb->{pg_iit}, 0.10, 0.2, 'TPC-B, idle in transaction');
	within($tb->{active} + $tb->{iit}, $tb->{pg_active} + $tb->{pg_iit}, 0.03, 0.2,
		'TPC-B, database time of client backends (active + idle in transaction)');
}
is($tb->{'key:idle in transaction/CPU/CPU'} // 0, 0,
	'no session idle in transaction is sampled as CPU (Client/IdleInTransaction: '
	  . sprintf('%.2f s)', $tb->{'key:idle in transaction/Client/IdleInTransaction'} // 0));

# The sampler's counts by class against its keys so classified (as 010),
# in the TPC-B window: Client/IdleInTransaction counts in class Client.
my $class_sql = wait_class_sql();
my $by_keys = $node->safe_psql('postgres', qq{
	SELECT string_agg(c || '=' || n, ',' ORDER BY c) FROM (
		SELECT c, sum(n) AS n FROM (
			SELECT $class_sql AS c, samples AS n
			  FROM chronicle.wait_totals('$tb_t0', '$tb_t1')
			 WHERE chronicle._wait_activity(backend_type, state, wait_event_type, wait_event) = 'database'
			UNION ALL
			SELECT unnest(ARRAY['cpu', 'io', 'lwlock', 'lock', 'ipc', 'client', 'timeout', 'other']), 0) k
		 GROUP BY c) s});
my $by_class = $node->safe_psql('postgres', qq{
	SELECT string_agg(c || '=' || n, ',' ORDER BY c)
	  FROM chronicle.wait_sampler_totals('$tb_t0', '$tb_t1') t,
	       LATERAL (VALUES ('cpu', t.active_cpu), ('io', t.active_io), ('lwlock', t.active_lwlock),
	                       ('lock', t.active_lock), ('ipc', t.active_ipc), ('client', t.active_client),
	                       ('timeout', t.active_timeout), ('other', t.active_other)) v(c, n)});
is($by_class, $by_keys, 'TPC-B: database time by class = the keyed samples by wait_event_type');

# ---------------------------------------------------------------------
# Idle: no load, a session idle in transaction for 3 s, an idle session,
# and a session whose 1 s statement has ended.  PostgreSQL adds their time
# when they leave the state (and flush); the sampler as it happens.
# ---------------------------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE FUNCTION slow_constant(s float8) RETURNS int LANGUAGE plpgsql IMMUTABLE
	AS $$ BEGIN PERFORM pg_sleep(s); RETURN 1; END $$});
my @i0 = mark();
my $iit = $node->background_psql('postgres');
my $idle = $node->background_psql('postgres');
my $done = $node->background_psql('postgres');
$iit->query_safe('BEGIN; SELECT 1');
my $iit_started = Time::HiRes::time();
$idle->query_safe('SELECT 1');
$done->query_safe('SELECT pg_sleep(1)');
sleep 2;
my @im = mark();
my $iit_secs = Time::HiRes::time() - $iit_started;
cmp_ok($im[2] - $i0[2], '<', 0.5,
	sprintf('idle: a session %.1f s idle in transaction is not in idle_in_transaction_time while it is (%.2f s)',
		$iit_secs, $im[2] - $i0[2]));
cmp_ok($im[1] - $i0[1], '<', 0.5,
	sprintf('idle: an ended 1 s statement is not in active_time while its session idles (%.2f s)',
		$im[1] - $i0[1]));
my $mid = compare(@i0, @im);
within($mid->{iit}, $iit_secs, 0.03, 0.1, 'idle: the sampler counts the idle transaction as it happens');
$iit->query_safe('COMMIT');
$_->quit for ($iit, $idle, $done);
poll_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()},
	'idle: the sessions have ended');
sleep 1;    # their processes flush after they leave pg_stat_activity
my $idle_r = compare(@i0, mark());
note sprintf('idle: sampler active %.2f s, idle in transaction %.2f s, idle %.2f s; '
	  . 'pg_stat_database active_time %.2f s, idle_in_transaction_time %.2f s',
	$idle_r->{active}, $idle_r->{iit}, $idle_r->{'state:idle'} // 0, $idle_r->{pg_active}, $idle_r->{pg_iit});
within($idle_r->{iit}, $idle_r->{pg_iit}, 0.03, 0.1, 'idle: idle in transaction, once the session ended');
within($idle_r->{active}, $idle_r->{pg_active}, 0.05, 0.15, 'idle: active (the 1 s statement), once its session ended');

# The extended protocol: a statement planned for 1 s (an immutable function
# folded into a constant at Bind) is 1 s of active_time by the simple
# protocol and none by the extended one; the sampler counts it both times.
for my $case ([ 'simple', "SELECT slow_constant(1);\n" ],
	[ 'extended', "SELECT slow_constant(\$1) \\bind 1 \\g\n" ])
{
	my ($proto, $sql) = @$case;
	my @e0 = mark();
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	is($ret, 0, "$proto protocol: the statement ran") or diag($stderr);
	sleep 1;
	my $r = compare(@e0, mark());
	note sprintf('%s protocol: sampler active %.2f s, pg_stat_database active_time %.2f s',
		$proto, $r->{active}, $r->{pg_active});
	within($r->{active}, 1, 0.05, 0.15, "$proto protocol: the sampler counts the 1 s statement");
	if ($proto eq 'simple')
	{
		within($r->{pg_active}, 1, 0.05, 0.15, 'simple protocol: active_time counts it');
	}
	else
	{
		cmp_ok($r->{pg_active}, '<', 0.5,
			sprintf('extended protocol: active_time leaves out the Bind (%.2f s): PostgreSQL\'s, not the sampler\'s',
				$r->{pg_active}));
	}
}

$node->stop;
done_testing();
