# timeline()'s CPU of the server's processes by type (postgres_cpu,
# client_cpu, checkpointer_cpu, bgwriter_cpu, walwriter_cpu, the *_cpu_wait
# columns and cpu_by_backend, from the os_process_cpu source) against:
#
# 1. this script's reads of /proc/<pid>/stat (utime + stime) of the
#    processes of each type, by pg_stat_activity's backend_type: a client
#    session runs a 2 s CPU loop and fills a table (60 MB in shared
#    buffers: an INSERT, not a CREATE TABLE AS, which would write them
#    itself through its ring), another one asks for a CHECKPOINT (the
#    checkpointer writes them).  The script reads /proc at T0
#    and T1; the window (snap_from, snap_to] has a snapshot before T0 and
#    one after T1.  A process's CPU only grows, so the window's CPU of a
#    type is at least the (T1 - T0) difference of its processes; above it
#    by what they did in the two gaps and by the clock tick (utime and stime
#    are whole ticks, truncated: a tick per field, gap and process): see
#    test/t/052_process_cpu.pl, whose reasoning this follows;
# 2. chronicle.os_process_cpu_deltas() of the same window summed here per
#    type (the source's own rows: equal to the last bits of a float8);
# 3. the same timeline at minute resolution (the rollups: minutes not
#    rolled up yet are computed from the raw rows, as those rolled up are,
#    test/t/045_rollups.pl): each minute equal to the raw intervals of the
#    minute weighted by their seconds.
#
# one_version: the timeline's columns are the extension's SQL over the
# source's rows, and /proc is the kernel's; tools/test.sh runs this file
# against the last server only.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgChronicle::TestNode qw(chronicle_node session_poll);

plan skip_all => 'no /proc/self/stat: the source reads Linux /proc'
  unless -r '/proc/self/stat';

my $tick_ms = 1000 / POSIX::sysconf(POSIX::_SC_CLK_TCK());

my $node = chronicle_node('tlcpu', conf => q{
chronicle.snapshot_interval = '250ms'
autovacuum = off
});
sub sql { return $node->safe_psql('postgres', $_[0]); }

# utime + stime of a process, in ms
sub proc_cpu
{
	my ($pid) = @_;
	my $stat = slurp_file("/proc/$pid/stat");
	my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
	return ($f[11] + $f[12]) * $tick_ms;
}

# Two sessions: $s works, $q polls and asks for the checkpoint.
my $q = $node->background_psql('postgres');
my $s = $node->background_psql('postgres');
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
sub qq_ { return $q->query_safe($_[0]); }

sub q_poll { return session_poll($q, @_); }

my $snapshots = q{(SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker')};

# The pids of the types checked against /proc (one process each but the
# two client sessions).
my %types = (
	'client backend' => 'client_cpu',
	'checkpointer' => 'checkpointer_cpu',
	'background writer' => 'bgwriter_cpu',
	'walwriter' => 'walwriter_cpu');
q_poll(q{SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'client backend'},
	'only the test\'s sessions');
my %pids;
for my $row (split /\n/, qq_(q{SELECT backend_type, pid FROM pg_stat_activity
                                WHERE backend_type IN ('client backend', 'checkpointer', 'background writer', 'walwriter')}))
{
	my ($type, $pid) = split /\|/, $row;
	push @{ $pids{$type} }, $pid;
}
is(join(',', map { "$_ " . scalar @{ $pids{$_} // [] } } sort keys %types),
	'background writer 1,checkpointer 1,client backend 2,walwriter 1',
	'a process of each type, two client sessions');

# $s idle for 1.5 s (read once settled, carried since), two snapshots more
q_poll("SELECT now() - state_change > interval '1.5 s' FROM pg_stat_activity WHERE pid = $s_pid",
	'the busy session idle for 1.5 s');
my $n = qq_("SELECT $snapshots");
q_poll("SELECT $snapshots >= $n + 2", 'two snapshots more');
my $snap_from = qq_(q{SELECT max(ts) FROM chronicle.snapshot WHERE collector = 'worker'});

my %t0 = map { my $t = $_; $t => [ map { proc_cpu($_) } @{ $pids{$t} } ] } keys %types;
$s->query_safe("DO \$\$DECLARE t timestamptz := clock_timestamp(); BEGIN "
	  . "WHILE clock_timestamp() < t + interval '2 s' LOOP END LOOP; END\$\$; "
	  . 'CREATE TABLE written (g int, x text); '
	  . 'INSERT INTO written SELECT g, repeat(md5(g::text), 8) FROM generate_series(1, 200000) g;');
qq_('CHECKPOINT');
my %t1 = map { my $t = $_; $t => [ map { proc_cpu($_) } @{ $pids{$t} } ] } keys %types;
my $t1 = time();
q_poll("SELECT EXISTS (SELECT FROM chronicle.snapshot WHERE collector = 'worker' AND ts > to_timestamp($t1))",
	'a snapshot after T1');
my $snap_to = qq_("SELECT min(ts) FROM chronicle.snapshot WHERE collector = 'worker' AND ts > to_timestamp($t1)");
my %ref;
for my $t (keys %types)
{
	$ref{$t} += $t1{$t}[$_] - $t0{$t}[$_] for 0 .. $#{ $t1{$t} };
}

# 1. Against /proc: the window's CPU seconds of each type, in ms.
my %got = map {
	my $col = $types{$_};
	$_ => sql(qq{SELECT sum($col * seconds) * 1000 FROM chronicle.timeline('$snap_from', '$snap_to', resolution => 'raw')})
} keys %types;
note(join(', ', map { sprintf('%s: /proc %.0f ms, timeline %.1f ms', $_, $ref{$_}, $got{$_}) } sort keys %types));
is(sql(qq{SELECT count(*) || ',' || count(*) FILTER (WHERE postgres_cpu IS NULL)
            FROM chronicle.timeline('$snap_from', '$snap_to', resolution => 'raw')}) =~ /^(\d+),0$/ && $1 >= 8
	  ? 'ok' : 'no', 'ok', 'the window has its intervals, none a reset');
cmp_ok($ref{'client backend'}, '>=', 500, 'the loop kept the session on a CPU (at least 0.5 s of 2)');
# (20 ms of the checkpointer here: a tick or two, too few to require)
note("the checkpoint cost the checkpointer $ref{checkpointer} ms (/proc)");
for my $t (sort keys %types)
{
	# processes x gaps x fields ticks, and 20 ms for the poll queries
	my $slack = scalar(@{ $pids{$t} }) * 2 * 2 * $tick_ms + 20;
	ok($got{$t} >= $ref{$t} - 1e-6 && $got{$t} <= $ref{$t} + $slack,
		"$types{$t}: /proc between the snapshots, within $slack ms above")
	  or diag(sprintf('got %.3f ms, /proc %.3f ms', $got{$t}, $ref{$t}));
}

# 2. Against the source's rows summed here, every interval and type.
my $differ = sql(qq{
	WITH d AS (
		SELECT interval_end, sum(user_ms + system_ms) / 1000 / min(seconds) AS cpu,
		       coalesce(sum(user_ms + system_ms) FILTER (WHERE backend_type = 'client backend'), 0) / 1000 / min(seconds) AS client,
		       coalesce(sum(user_ms + system_ms) FILTER (WHERE backend_type = 'checkpointer'), 0) / 1000 / min(seconds) AS ckpt,
		       coalesce(sum(user_ms + system_ms) FILTER (WHERE backend_type = 'background writer'), 0) / 1000 / min(seconds) AS bgw,
		       coalesce(sum(user_ms + system_ms) FILTER (WHERE backend_type = 'walwriter'), 0) / 1000 / min(seconds) AS walw,
		       coalesce(sum(user_ms + system_ms) FILTER (WHERE backend_type = 'autovacuum worker'), 0) / 1000 / min(seconds) AS av,
		       sum(run_delay_ms) / 1000 / min(seconds) AS wait,
		       sum(run_delay_ms) FILTER (WHERE backend_type = 'client backend') / 1000 / min(seconds) AS client_wait
		  FROM chronicle.os_process_cpu_deltas('$snap_from', '$snap_to')
		 GROUP BY interval_end
	)
	SELECT count(*) FILTER (WHERE abs(t.postgres_cpu - d.cpu) > 1e-9 OR abs(t.client_cpu - d.client) > 1e-9
	    OR abs(t.checkpointer_cpu - d.ckpt) > 1e-9 OR abs(t.bgwriter_cpu - d.bgw) > 1e-9
	    OR abs(t.walwriter_cpu - d.walw) > 1e-9 OR abs(t.autovacuum_cpu - d.av) > 1e-9
	    OR abs(t.postgres_cpu_wait - d.wait) > 1e-9 OR abs(t.client_cpu_wait - d.client_wait) > 1e-9
	    OR (t.postgres_cpu_wait IS NULL) <> (d.wait IS NULL)
	    OR abs((t.cpu_by_backend -> 'client backend' ->> 'cpu')::float8 - d.client) > 1e-9
	    OR t.interval_end IS NULL OR d.interval_end IS NULL) || ' of ' || count(*)
	  FROM chronicle.timeline('$snap_from', '$snap_to', detail => true, resolution => 'raw') t
	  FULL JOIN d USING (interval_end)});
like($differ, qr/^0 of ([89]|\d\d+)$/, "every interval equal to os_process_cpu_deltas() summed per type ($differ)");

# 3. The minutes touching the window against the raw intervals of each
# (one statement: the same snapshot of the history for both).
my $minutes = sql(qq{
	WITH m AS (
		SELECT * FROM chronicle.timeline('$snap_from', '$snap_to', detail => true, resolution => 'minute')
	), raw AS (
		SELECT date_trunc('minute', r.interval_end - interval '1 microsecond') AS b, r.*
		  FROM chronicle.timeline((SELECT min(interval_start) FROM m), (SELECT max(interval_end) FROM m),
		                          detail => true, resolution => 'raw') r
	), agg AS (
		SELECT b, sum(postgres_cpu * seconds) / sum(seconds) AS cpu, sum(client_cpu * seconds) / sum(seconds) AS client,
		       sum(checkpointer_cpu * seconds) / sum(seconds) AS ckpt, sum(bgwriter_cpu * seconds) / sum(seconds) AS bgw,
		       sum(walwriter_cpu * seconds) / sum(seconds) AS walw,
		       sum(postgres_cpu_wait * seconds) / sum(seconds) AS wait,
		       sum(client_cpu_wait * seconds) / sum(seconds) AS client_wait,
		       sum(coalesce((cpu_by_backend -> 'client backend' ->> 'user')::float8, 0) * seconds) / sum(seconds) AS client_user
		  FROM raw GROUP BY b
	)
	SELECT count(*) FILTER (WHERE NOT (abs(m.postgres_cpu - a.cpu) < 1e-9 AND abs(m.client_cpu - a.client) < 1e-9
	                                   AND abs(m.checkpointer_cpu - a.ckpt) < 1e-9 AND abs(m.bgwriter_cpu - a.bgw) < 1e-9
	                                   AND abs(m.walwriter_cpu - a.walw) < 1e-9
	                                   AND abs(m.postgres_cpu_wait - a.wait) < 1e-9
	                                   AND abs(m.client_cpu_wait - a.client_wait) < 1e-9
	                                   AND abs(coalesce((m.cpu_by_backend -> 'client backend' ->> 'user')::float8, 0)
	                                           - a.client_user) < 1e-9)
	                       OR a.b IS NULL)
	       || ' of ' || count(*) || ' minutes, ' || bool_and(m.resolution_used = 'minute')
	       || ', ' || round(sum(m.client_cpu * m.seconds)::numeric, 1)
	  FROM m LEFT JOIN agg a ON a.b = m.interval_start});
like($minutes, qr/^0 of [12] minutes, true, \d/, "the minute timeline equals the raw one per minute ($minutes)");
my ($client_minutes) = $minutes =~ /, ([\d.]+)$/;
cmp_ok($client_minutes * 1000, '>=', $ref{'client backend'} - 1e-6,
	'the minutes hold the client CPU of the window (/proc)');

$q->quit;
$s->quit;
$node->stop;
done_testing();
