# The os_process_cpu source (src/source_os_process_cpu.c) against
# references outside the extension: this script's own reads of
# /proc/<pid>/stat, schedstat, io and status of the sessions it runs, and
# pidstat (sysstat) when it is installed.
#
# 1. A busy client backend: a session runs a 3 s CPU loop and writes a
#    table.  The script reads /proc of every client backend (the busy one
#    and the one it polls with) at T0, before the session starts, and at T1,
#    after it is done; the window of the analysis is (snap_from, snap_to],
#    snap_from a snapshot committed before T0, snap_to one whose ts is after
#    T1.  Every value of one process only grows, so the window's delta of
#    each column is at least the script's (T1 - T0) difference summed over
#    those processes, exactly; it exceeds it by what they did in the two
#    gaps (snap_from, T0) and (T1, snap_to), where the busy one is idle (and
#    carried, not read, at snap_from: its reading is from before, which
#    only widens the gap) and the other runs a few poll queries, and by the
#    clock tick: utime and stime are whole ticks, each truncated, so a gap
#    can add up to one tick of each while its true CPU is a fraction of
#    one.  Two processes, two gaps, two fields: 8 ticks (80 ms at 100 Hz),
#    plus 20 ms for the poll queries.  No other client backend exists in
#    the window (no safe_psql there).  pidstat, started before the loop and ending after it, must
#    see the same CPU, run delay and involuntary switches within 5 % (its
#    rates are per measured second, printed with two decimals).
# 2. A backend that works, goes idle, is seen idle by a snapshot, then
#    exits: the client backend type's cumulative values never drop (read
#    raw from the history), no interval is a reset, exited grows by one,
#    processes drops by one, and the window's CPU includes all the exited
#    backend's work (the script's read after its loop, the lower bound).
# 3. A backend that exits right after its work: it is counted up to the
#    last snapshot that saw it, so the window may lack at most the CPU of
#    one interval (the one its exit falls in: the documented semantics),
#    never more, and never counts it twice.
# 4. A parallel worker (debug_parallel_query: the query runs in one): its
#    CPU is under 'parallel worker', which counts it when it exits.
# 5. Every process type's count equals pg_stat_activity's (background
#    workers: plus the wait sampler, which has no entry there); io workers
#    on 18.
# 6. chronicle.snapshot() from another backend counts in that backend's
#    memory with its own collector_started: the intervals ending at it and
#    right after it are resets, no value jumps.
# Throughout: no reset but those, every key's value never decreases between
# two rows of the same collector_started, and no interval has more CPU than
# the machine's cores could give in two intervals (a process seen for the
# first time counts from its start).
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgChronicle::TestNode qw(chronicle_node poll_until session_poll);

plan skip_all => 'no /proc/self/stat: the source reads Linux /proc'
  unless -r '/proc/self/stat';

my $tick_ms = 1000 / POSIX::sysconf(POSIX::_SC_CLK_TCK());
my $ncpu = () = (slurp_file('/proc/stat') =~ /^cpu\d+ /mg);
my $have_schedstat = -r '/proc/self/schedstat';
my $have_io = -r '/proc/self/io';

my $node = chronicle_node('pcpu', conf => q{
chronicle.snapshot_interval = '250ms'
});
sub sql { return $node->safe_psql('postgres', $_[0]); }
my $pgv = sql('SHOW server_version_num');

# One process's counters as /proc shows them: ticks, ns, bytes, switches.
sub proc_read
{
	my ($pid) = @_;
	my %r;
	my $stat = slurp_file("/proc/$pid/stat");
	my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
	# after the command: field 3 is $f[0]; utime is 14, stime 15
	@r{qw(user system)} = @f[ 11, 12 ];
	$r{run_delay} = (split ' ', slurp_file("/proc/$pid/schedstat"))[1]
	  if $have_schedstat;
	if ($have_io)
	{
		my $io = slurp_file("/proc/$pid/io");
		($r{read_bytes}) = $io =~ /^read_bytes: (\d+)/m;
		($r{write_bytes}) = $io =~ /^write_bytes: (\d+)/m;
	}
	my $status = slurp_file("/proc/$pid/status");
	($r{vol}) = $status =~ /^voluntary_ctxt_switches:\s+(\d+)/m;
	($r{nonvol}) = $status =~ /^nonvoluntary_ctxt_switches:\s+(\d+)/m;
	return \%r;
}

# The script's reference of processes @pids between two reads: the sum of
# the differences, in the analysis' units (ms, bytes, switches).
sub proc_diff
{
	my ($before, $after) = @_;
	my %d;
	for my $pid (keys %$before)
	{
		for my $k (keys %{ $before->{$pid} })
		{
			$d{$k} += $after->{$pid}{$k} - $before->{$pid}{$k};
		}
	}
	$d{user} *= $tick_ms;
	$d{system} *= $tick_ms;
	$d{run_delay} /= 1e6 if defined $d{run_delay};
	$d{cpu} = $d{user} + $d{system};
	return \%d;
}

# The sessions: $q polls (a client backend too, read like the others).
my $q = $node->background_psql('postgres');
my $q_pid = $q->query_safe('SELECT pg_backend_pid()');
sub qq_ { return $q->query_safe($_[0]); }

# Poll through $q (no new connection) until $query is true.
sub q_poll { return session_poll($q, @_); }

my $snapshots = q{(SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker')};

# A snapshot whose reading began after the test's $nclients sessions
# connected, with no other client backend left: returns its ts.  With
# $idle_pid, that session has been idle for 1.5 s by then: the source read
# it once settled and carries it since (src/source_os_process_cpu.c).
sub settled_snapshot
{
	my ($nclients, $name, $idle_pid) = @_;
	q_poll("SELECT count(*) = $nclients FROM pg_stat_activity WHERE backend_type = 'client backend'",
		"$name: only the test's sessions");
	q_poll("SELECT now() - state_change > interval '1.5 s' FROM pg_stat_activity WHERE pid = $idle_pid",
		"$name: idle for 1.5 s") if $idle_pid;
	my $n = qq_("SELECT $snapshots");
	q_poll("SELECT $snapshots >= $n + 2", "$name: two snapshots more");
	return qq_(q{SELECT max(ts) FROM chronicle.snapshot WHERE collector = 'worker'});
}

# The first worker snapshot whose ts is after $t (epoch seconds, or a
# timestamptz): its reading came after everything the script did before $t.
sub snapshot_after
{
	my ($t, $name) = @_;
	my $after = $t =~ /^[\d.]+$/ ? "to_timestamp($t)" : "'$t'";
	my $cond = "collector = 'worker' AND ts > $after";
	q_poll("SELECT EXISTS (SELECT FROM chronicle.snapshot WHERE $cond)", $name);
	return qq_("SELECT min(ts) FROM chronicle.snapshot WHERE $cond");
}

# The window's sums for one backend type, and its intervals and resets.
sub window_sums
{
	my ($from, $to, $type) = @_;
	my $r = sql(qq{
		SELECT count(*), count(*) FILTER (WHERE reset),
		       sum(user_ms), sum(system_ms), sum(user_ms + system_ms), sum(run_delay_ms),
		       sum(read_bytes), sum(write_bytes), sum(voluntary_ctxt_switches),
		       sum(nonvoluntary_ctxt_switches), sum(exited),
		       count(*) FILTER (WHERE run_delay_ms IS NULL OR read_bytes IS NULL)
		  FROM chronicle.os_process_cpu_deltas('$from', '$to', for_backend_type => '$type')});
	my %s;
	@s{qw(intervals resets user system cpu run_delay read_bytes write_bytes vol nonvol exited nulls)}
	  = map { $_ eq '' ? 0 : $_ } split /\|/, $r;
	return \%s;
}

# The latest value of a column of one type at or before ts.
sub value_at
{
	my ($ts, $type, $col) = @_;
	return sql(qq{
		SELECT $col FROM chronicle.os_process_cpu_history
		 WHERE backend_type = '$type' AND ts <= '$ts' ORDER BY ts DESC LIMIT 1});
}

sub between
{
	my ($got, $lo, $hi, $name) = @_;
	ok($got >= $lo && $got <= $hi, $name)
	  or diag(sprintf('got %.3f, expected in [%.3f, %.3f]', $got, $lo, $hi));
}

my $loop = sub {
	my ($seconds) = @_;
	return "DO \$\$DECLARE t timestamptz := clock_timestamp(); BEGIN "
	  . "WHILE clock_timestamp() < t + interval '$seconds s' LOOP END LOOP; END\$\$;";
};

# --- 1. A busy client backend against /proc and pidstat ----------------------

my $s = $node->background_psql('postgres');
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
my $snap_from = settled_snapshot(2, 'the busy session', $s_pid);

my ($pidstat, $pidstat_out, $pidstat_err) = (undef, '', '');
my $pidstat_why = 'pidstat (sysstat) is not installed';
if (system('command -v pidstat >/dev/null 2>&1') == 0)
{
	local $ENV{LC_ALL} = 'C';
	$pidstat = IPC::Run::start(
		[ 'pidstat', '-h', '-u', '-d', '-w', '-p', $s_pid, '1', '7' ],
		'>', \$pidstat_out, '2>', \$pidstat_err);
	# its first reading is taken before it prints its banner
	my $deadline = time() + 10;
	while ($pidstat_out !~ /^Linux/m && time() < $deadline)
	{
		$pidstat->pump_nb;
		usleep(10_000);
	}
}

my %t0 = map { $_ => proc_read($_) } $s_pid, $q_pid;
$s->query_safe($loop->(3)
	  . 'CREATE TABLE written AS SELECT g, repeat(md5(g::text), 8) AS x FROM generate_series(1, 50000) g;');
my %t1 = map { $_ => proc_read($_) } $s_pid, $q_pid;
my $t1 = time();
my $snap_to = snapshot_after($t1, 'a snapshot after the busy session');

my $ref = proc_diff(\%t0, \%t1);
my $got = window_sums($snap_from, $snap_to, 'client backend');
note(sprintf('window (%s, %s]: %d intervals; reference: cpu %.0f ms (user %.0f, system %.0f), '
	  . 'run delay %.1f ms, %d/%d switches, %d B written; recorded: cpu %.0f ms, run delay %.1f ms, '
	  . '%d/%d switches, %d B written',
	$snap_from, $snap_to, $got->{intervals}, $ref->{cpu}, $ref->{user}, $ref->{system},
	$ref->{run_delay} // -1, $ref->{vol}, $ref->{nonvol}, $ref->{write_bytes} // -1,
	$got->{cpu}, $got->{run_delay}, $got->{vol}, $got->{nonvol}, $got->{write_bytes}));
ok($got->{intervals} >= 8 && $got->{resets} == 0, 'the window has its intervals, none a reset')
  or diag("$got->{intervals} intervals, $got->{resets} resets");
ok($ref->{cpu} >= 500, 'the loop kept the session on a CPU (at least 0.5 s of 3)')
  or diag("$ref->{cpu} ms");
my $cpu_slack = 8 * $tick_ms + 20;
between($got->{cpu}, $ref->{cpu}, $ref->{cpu} + $cpu_slack,
	'user + system ms: the reads of /proc between the snapshots, within 8 ticks + 20 ms above');
between($got->{user}, $ref->{user}, $ref->{user} + $cpu_slack, 'user ms, likewise');
between($got->{system}, $ref->{system}, $ref->{system} + $cpu_slack, 'system ms, likewise');
SKIP:
{
	skip 'no /proc/<pid>/schedstat', 1 unless $have_schedstat;
	# a poll query woken on a busy CPU waits for it: 100 ms for a few of them;
	# the type's total is recorded to the whole microsecond (at most 1 us short)
	between($got->{run_delay}, $ref->{run_delay} - 0.001, $ref->{run_delay} + 100,
		'run delay ms: schedstat between the snapshots, within 100 ms above');
}
SKIP:
{
	skip 'no /proc/<pid>/io', 2 unless $have_io;
	ok($ref->{write_bytes} > 0, 'the table written is in the reference\'s write_bytes');
	between($got->{write_bytes}, $ref->{write_bytes}, $ref->{write_bytes} + 1024 * 1024,
		'write_bytes: /proc/<pid>/io between the snapshots, within 1 MB above (idle sessions write nothing)');
}
between($got->{vol}, $ref->{vol}, $ref->{vol} + 50,
	'voluntary switches: within 50 above (a few poll queries in the gaps)');
between($got->{nonvol}, $ref->{nonvol}, $ref->{nonvol} + 50,
	'involuntary switches: within 50 above');
is($got->{nulls}, $have_schedstat && $have_io ? 0 : $got->{intervals},
	'run_delay_ms and read_bytes are NULL only where the kernel has no such file');
is(value_at($snap_from, 'client backend', 'processes') . ',' . value_at($snap_to, 'client backend', 'processes'),
	'2,2', 'processes: the two sessions, at the start of the window (the busy one carried, idle) and at its end');

SKIP:
{
	skip $pidstat_why, 5 unless $pidstat;
	$pidstat->finish;
	# columns by the header's names; one line a second, rates per second
	my (%col, %sum);
	my $samples = 0;
	for my $line (split /\n/, $pidstat_out)
	{
		if ($line =~ /^#\s*(.*)/)
		{
			my @h = split ' ', $1;
			%col = map { $h[$_] => $_ } 0 .. $#h;
			next;
		}
		next unless %col && $line =~ /\S/;
		my @v = split ' ', $line;
		next unless @v == keys %col && $v[ $col{PID} ] == $s_pid;
		$sum{$_} += $v[ $col{$_} ] for grep { exists $col{$_} } '%usr', '%system', '%wait', 'nvcswch/s';
		$samples++;
	}
	$sum{$_} //= 0 for '%usr', '%system', 'nvcswch/s';
	note(sprintf('pidstat: %d samples, cpu %.0f ms, wait %.0f ms, %.0f involuntary switches',
		$samples, ($sum{'%usr'} + $sum{'%system'}) * 10, ($sum{'%wait'} // -0.1) * 10, $sum{'nvcswch/s'}));
	my $s_ref = proc_diff({ $s_pid => $t0{$s_pid} }, { $s_pid => $t1{$s_pid} });
	ok($samples >= 5, 'pidstat sampled the busy session') or diag($pidstat_out . $pidstat_err);
	# pidstat's window holds the loop and more of an idle session: its
	# percentages are of each measured second, shown with two decimals
	my $pid_cpu = ($sum{'%usr'} + $sum{'%system'}) * 10;
	between($pid_cpu, $s_ref->{cpu} * 0.95 - 2 * $tick_ms, $s_ref->{cpu} * 1.05 + 5 * $tick_ms,
		'pidstat: the busy session\'s CPU as the script read it, within 5 %');
	between($got->{cpu}, $pid_cpu * 0.95 - 2 * $tick_ms, $pid_cpu * 1.05 + $cpu_slack,
		'recorded CPU: pidstat\'s within 5 % (and the other session\'s polls)');
	between($sum{'nvcswch/s'}, $s_ref->{nonvol} * 0.95 - 5, $s_ref->{nonvol} * 1.05 + 5,
		'pidstat: involuntary switches as the script read them, within 5 %');
	if (defined $sum{'%wait'} && $have_schedstat)
	{
		between($sum{'%wait'} * 10, $s_ref->{run_delay} * 0.95 - 20, $s_ref->{run_delay} * 1.05 + 20,
			'pidstat: %wait is the run delay the script read, within 5 % + 20 ms');
	}
}
$s->quit;

# The same window as a run: load_profile() reads the same CPU, per second
# over the window's seconds.
sql(qq{SELECT chronicle.run_label('busy', '$snap_from', '$snap_to')});
my %lp = map { my @f = split /\|/, $_, -1; $f[0] => \@f }
  split /\n/, sql(q{SELECT metric, per_second, per_transaction FROM chronicle.load_profile('busy')});
my $lp_secs = sql(q{SELECT w.seconds FROM chronicle.run_window('busy') r, chronicle._window(r.run_from, r.run_to) w});
between($lp{'CPU of client backends'}[1] * $lp_secs * 1000, $ref->{cpu}, $ref->{cpu} + $cpu_slack,
	'load_profile: CPU of client backends, per second x seconds: the reads of /proc, within 8 ticks + 20 ms');
cmp_ok($lp{'CPU of server processes'}[1], '>=', $lp{'CPU of client backends'}[1],
	'load_profile: the server\'s processes include the client backends');
cmp_ok($lp{'CPU busy (machine)'}[1] * $lp_secs * 1000, '>=', $ref->{cpu} - 2 * $tick_ms,
	'load_profile: the machine was busy at least as long as the busy session');

# --- 2. A backend that works, idles, exits: the total keeps it ---------------

my $e = $node->background_psql('postgres');
my $e_pid = $e->query_safe('SELECT pg_backend_pid()');
my $snap_a = settled_snapshot(2, 'the exiting session');
my $exited_a = value_at($snap_a, 'client backend', 'exited');
my $procs_a = value_at($snap_a, 'client backend', 'processes');
my $e0 = proc_read($e_pid);
$e->query_safe($loop->(1.5));
my $e1 = proc_read($e_pid);
snapshot_after(time(), 'a snapshot sees the session idle after its work');
$e->quit;
q_poll(qq{SELECT EXISTS (SELECT FROM chronicle.os_process_cpu_history
                   WHERE backend_type = 'client backend' AND ts > '$snap_a' AND exited > $exited_a)},
	'the exit is recorded');
my $snap_c = qq_(qq{SELECT min(ts) FROM chronicle.os_process_cpu_history
                  WHERE backend_type = 'client backend' AND ts > '$snap_a' AND exited > $exited_a});
my $e_ref = proc_diff({ $e_pid => $e0 }, { $e_pid => $e1 });
$got = window_sums($snap_a, $snap_c, 'client backend');
note(sprintf('exit after idling: reference %.0f ms, recorded %.0f ms over %d intervals',
	$e_ref->{cpu}, $got->{cpu}, $got->{intervals}));
is($got->{resets}, 0, 'no reset across the exit');
is($got->{exited}, 1, 'exited: one more');
is(value_at($snap_c, 'client backend', 'processes'), $procs_a - 1, 'processes: one fewer');
between($got->{cpu}, $e_ref->{cpu}, $e_ref->{cpu} + 10 * $tick_ms + 50,
	'the exited backend\'s CPU is in the window, once (within 10 ticks + 50 ms: the poll queries)');
is(sql(qq{
	SELECT count(*) FROM (
	  SELECT user_ms + system_ms - lag(user_ms + system_ms) OVER w AS d_cpu,
	         voluntary_ctxt_switches - lag(voluntary_ctxt_switches) OVER w AS d_vol,
	         exited - lag(exited) OVER w AS d_exited
	    FROM chronicle.os_process_cpu_history
	   WHERE backend_type = 'client backend' AND ts BETWEEN '$snap_a' AND now()
	  WINDOW w AS (ORDER BY ts)) d
	 WHERE d_cpu < 0 OR d_vol < 0 OR d_exited < 0}), 0,
	'the raw history of client backends never decreases across the exit');

# --- 3. A backend that exits right after its work ----------------------------

my $e2 = $node->background_psql('postgres');
my $e2_pid = $e2->query_safe('SELECT pg_backend_pid()');
$snap_a = settled_snapshot(2, 'the session that exits at once');
$exited_a = value_at($snap_a, 'client backend', 'exited');
$e0 = proc_read($e2_pid);
my $stat = $e2->query_safe($loop->(1.5) . q{SELECT pg_read_file('/proc/self/stat');});
$e2->quit;
my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
$e_ref = ($f[11] + $f[12] - $e0->{user} - $e0->{system}) * $tick_ms;
q_poll(qq{SELECT EXISTS (SELECT FROM chronicle.os_process_cpu_history
                   WHERE backend_type = 'client backend' AND ts > '$snap_a' AND exited > $exited_a)},
	'the exit is recorded');
$snap_c = qq_(qq{SELECT min(ts) FROM chronicle.os_process_cpu_history
                  WHERE backend_type = 'client backend' AND ts > '$snap_a' AND exited > $exited_a});
# the interval the exit was found in: what the backend did in it is lost
my $exit_ms = 1000 * sql(qq{
	SELECT seconds FROM chronicle.os_process_cpu_deltas('$snap_a', '$snap_c', for_backend_type => 'client backend')
	 WHERE interval_end = '$snap_c'});
$got = window_sums($snap_a, $snap_c, 'client backend');
note(sprintf('exit right after work: reference %.0f ms, recorded %.0f ms; the exit interval %.0f ms',
	$e_ref, $got->{cpu}, $exit_ms));
is($got->{resets}, 0, 'no reset across the exit');
# lost: from the last reading (in the snapshot before) to the exit, read at
# most 100 ms into the exit's snapshot; two ticks of truncation
between($got->{cpu}, $e_ref - $exit_ms - 100 - 2 * $tick_ms, $e_ref + 10 * $tick_ms + 50,
	'counted up to the last snapshot that saw it: at most the exit interval\'s CPU missing, never counted twice');

# --- 4. A parallel worker -----------------------------------------------------

my $par_from = settled_snapshot(1, 'before the parallel query');
my $par_exited = value_at($par_from, 'parallel worker', 'exited');
my $t_par = time();
sql(q{SET debug_parallel_query = on; SET parallel_setup_cost = 0;
      SELECT count(*) FROM generate_series(1, 3000000) g WHERE md5(g::text) > '8'});
my $par_ms = 1000 * (time() - $t_par);
q_poll(qq{SELECT EXISTS (SELECT FROM chronicle.os_process_cpu_history
                   WHERE backend_type = 'parallel worker' AND ts > '$par_from' AND exited > $par_exited)},
	'the parallel worker\'s exit is recorded');
my $par_to = qq_(qq{SELECT min(ts) FROM chronicle.os_process_cpu_history
                  WHERE backend_type = 'parallel worker' AND ts > '$par_from' AND exited > $par_exited});
$got = window_sums($par_from, $par_to, 'parallel worker');
my $leader = window_sums($par_from, $par_to, 'client backend');
note(sprintf('parallel query of %.0f ms: the parallel worker used %.0f ms, client backends %.0f ms',
	$par_ms, $got->{cpu}, $leader->{cpu}));
ok($got->{exited} >= 1 && $got->{resets} == 0, 'the parallel worker exited, no reset');
# the leader of a single-copy Gather waits for its worker
ok($got->{cpu} >= 100 && $got->{cpu} > $leader->{cpu},
	'its CPU is under parallel worker, not the client backend that waits for it')
  or diag("parallel worker $got->{cpu} ms, client backends $leader->{cpu} ms, query $par_ms ms");
ok(sql(qq{SELECT max(processes) FROM chronicle.os_process_cpu_history
            WHERE backend_type = 'parallel worker' AND ts BETWEEN '$par_from' AND '$par_to'}) >= 1,
	'and it was counted in processes while it ran');

# --- 5. Every process type, the collector and the sampler included ----------

my $types = q{'autovacuum launcher', 'autovacuum worker', 'background writer', 'checkpointer',
	'io worker', 'slotsync worker', 'startup', 'walreceiver', 'walsender', 'walsummarizer',
	'walwriter', 'archiver', 'parallel worker'};
poll_until($node, 'postgres', qq{
	WITH a AS (SELECT CASE WHEN backend_type IN ($types) THEN backend_type
	                       ELSE 'background worker' END AS t, count(*) AS n
	             FROM pg_stat_activity WHERE backend_type <> 'client backend' GROUP BY 1),
	     h AS (SELECT DISTINCT ON (backend_type) backend_type AS t, processes
	             FROM chronicle.os_process_cpu_history ORDER BY backend_type, ts DESC)
	SELECT bool_and(coalesce(a.n, 0) + (h.t = 'background worker')::int = h.processes)
	       AND count(a.t) = (SELECT count(*) FROM a)
	  FROM h LEFT JOIN a USING (t) WHERE h.t <> 'client backend'},
	'processes by type: pg_stat_activity\'s, the wait sampler with the background workers');
ok(sql(q{SELECT user_ms + system_ms > 0 FROM chronicle.os_process_cpu_history
          WHERE backend_type = 'background worker' ORDER BY ts DESC LIMIT 1}) eq 't',
	'the collector\'s own CPU is under background worker');
SKIP:
{
	skip 'io workers are PostgreSQL 18\'s', 1 if $pgv < 180000;
	ok(sql(q{SELECT processes >= 1 FROM chronicle.os_process_cpu_history
	          WHERE backend_type = 'io worker' ORDER BY ts DESC LIMIT 1}) eq 't',
		'io workers are counted');
}

# --- 6. chronicle.snapshot() from another backend ---------------------------

my $sql_ts = sql('SELECT chronicle.snapshot()');
my $after = snapshot_after($sql_ts, 'a worker snapshot after chronicle.snapshot()');
snapshot_after($after, 'and another');
is(sql(qq{
	SELECT string_agg(DISTINCT CASE WHEN interval_end = '$sql_ts' THEN 'at' ELSE 'after' END, ',')
	  FROM chronicle.os_process_cpu_deltas('$sql_ts'::timestamptz - interval '1 s', now())
	 WHERE reset}), 'after,at',
	'chronicle.snapshot() in another backend: the intervals ending at it and after it are resets');
is(sql(qq{
	SELECT count(*) = 2 * (SELECT count(DISTINCT backend_type) FROM chronicle.os_process_cpu_history)
	       AND bool_and(reset)
	  FROM chronicle.os_process_cpu_deltas('$sql_ts'::timestamptz - interval '1 s', now())
	 WHERE interval_end IN ('$sql_ts', '$after')}), 't',
	'every type is a reset in both, none a jump');

# --- Throughout ----------------------------------------------------------------

is(sql(q{
	SELECT string_agg(DISTINCT backend_type, ', ') FROM (
	  SELECT backend_type,
	         collector_started = lag(collector_started) OVER w AS same,
	         user_ms < lag(user_ms) OVER w OR system_ms < lag(system_ms) OVER w
	         OR run_delay_ms < lag(run_delay_ms) OVER w OR read_bytes < lag(read_bytes) OVER w
	         OR write_bytes < lag(write_bytes) OVER w
	         OR voluntary_ctxt_switches < lag(voluntary_ctxt_switches) OVER w
	         OR nonvoluntary_ctxt_switches < lag(nonvoluntary_ctxt_switches) OVER w
	         OR exited < lag(exited) OVER w AS down
	    FROM chronicle.os_process_cpu_history
	  WINDOW w AS (PARTITION BY backend_type ORDER BY ts)) d
	 WHERE same AND down}), '',
	'no value of any type ever decreases while collector_started stays');
is(sql(qq{
	SELECT string_agg(DISTINCT interval_end::text, ', ')
	  FROM chronicle.os_process_cpu_deltas((SELECT min(ts) FROM chronicle.snapshot), now())
	 WHERE reset AND interval_end NOT IN ('$sql_ts', '$after')}), '',
	'no other reset in the whole recording');
# a process seen for the first time brings its CPU since it started: at most
# about one interval before it; two ticks of truncation per process
is(sql(qq{
	SELECT string_agg(format('%s: %s ms in %s s', interval_end, cpu, seconds), '; ')
	  FROM (SELECT interval_end, seconds, sum(user_ms + system_ms) AS cpu, sum(processes) AS n
	          FROM chronicle.os_process_cpu_deltas((SELECT min(ts) FROM chronicle.snapshot), now())
	         WHERE NOT reset GROUP BY interval_end, seconds) i
	 WHERE cpu > $ncpu * 1000 * 2 * seconds + 2 * $tick_ms * (n + 5) + 50}), '',
	"no interval has more CPU than $ncpu cores give in two intervals");

$q->quit;
$node->stop;
done_testing();
