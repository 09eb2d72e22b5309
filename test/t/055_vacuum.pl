# The maintenance source (src/source_maintenance.c) and its marks
# (chronicle.marks(): vacuum_start/_end, analyze_start/_end) against what
# psql sees meanwhile: pg_stat_progress_vacuum and pg_stat_progress_analyze
# sampled every few tens of milliseconds, pg_stat_activity's query_start of
# the process running the command, and pg_stat_all_tables.last_autovacuum.
#
# 1. An autovacuum in a second database: a table with dead tuples, its
#    autovacuum thresholds at 0 and a cost delay that makes its VACUUM last
#    several snapshots, enabled once the sampling runs.  Its marks name the
#    table and the database; the start is the worker's activity start
#    (query_start, exactly) and before psql first saw it; the end is the
#    first snapshot that no longer saw it: after psql's last sight, after
#    last_autovacuum, and the snapshot before it is before last_autovacuum.
#    The recorded rows agree with psql's samples (relid, heap_blks_total,
#    phases as the view names them, blocks scanned never more than the
#    total).
# 2. A slow manual VACUUM and a slow ANALYZE in the recording database: the
#    same checks, against the statement's start; not autovacuum.
# 3. A backend terminated in the middle of its VACUUM: the run ends at the
#    next snapshot, with no error.
# 4. A database dropped while its autovacuum runs (DROP DATABASE stops the
#    worker): the run ends, its rows keep the database's name.
# Throughout: no source failure in the log, no snapshot error, recording
# goes on.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgChronicle::TestNode qw(chronicle_node poll_until more_worker_snapshots);

my $node = chronicle_node('vac', conf => q{
chronicle.snapshot_interval = '250ms'
autovacuum_naptime = '1s'
log_autovacuum_min_duration = 0
});
sub sql { return $node->safe_psql('postgres', $_[0]); }
my $pgv = sql('SHOW server_version_num');
# 18 times the cost delays when asked to (delay_ms; NULL before 18)
if ($pgv >= 180000)
{
	sql('ALTER SYSTEM SET track_cost_delay_timing = on');
	sql('SELECT pg_reload_conf()');
}
my $log_offset = -s $node->logfile;
my $errors_before = sql('SELECT snapshot_errors FROM chronicle.status()');

# The phases as the views name them (psql reads the views' definitions).
my %vacuum_phases = map { $_ => 1 } ($node->safe_psql('postgres',
	q{SELECT pg_get_viewdef('pg_stat_progress_vacuum')}) =~ /THEN '([^']+)'/g);
my %analyze_phases = map { $_ => 1 } ($node->safe_psql('postgres',
	q{SELECT pg_get_viewdef('pg_stat_progress_analyze')}) =~ /THEN '([^']+)'/g);
ok(keys %vacuum_phases >= 6 && keys %analyze_phases >= 5, 'the views name their phases');

# psql, sampling a progress view every 20 ms in its own session until
# $until->() says stop: every sample of the rows $where selects, as
# [clock, pid, relid, datname, phase, blocks total, blocks done,
# query_start (epoch seconds)].
my $sampler = $node->background_psql('postgres');
sub sample_progress
{
	my ($view, $where, $until) = @_;
	my ($total, $done) =
	  $view eq 'vacuum'
	  ? qw(heap_blks_total heap_blks_scanned)
	  : qw(sample_blks_total sample_blks_scanned);
	my @samples;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my $out = $sampler->query_safe(qq{
SELECT extract(epoch FROM clock_timestamp()), p.pid, p.relid, p.datname, p.phase,
       p.$total, p.$done, extract(epoch FROM a.query_start)
  FROM pg_stat_progress_$view p JOIN pg_stat_activity a USING (pid)
 WHERE $where});
		push @samples, [ split /\|/ ] for grep { $_ ne '' } split /\n/, $out;
		last if $until->(\@samples);
		usleep(20_000);
	}
	return \@samples;
}

# The marks of a run named $what: (start, end) in epoch seconds, each undef
# when missing; the count of each kind too.
sub marks_of
{
	my ($what) = @_;
	my $rows = sql(qq{
SELECT kind, extract(epoch FROM ts), event
  FROM chronicle.marks(now() - interval '1 hour', now())
 WHERE kind ~ '^(vacuum|analyze)_' AND event LIKE '$what%'
 ORDER BY ts});
	my %m;
	for (split /\n/, $rows)
	{
		my ($kind, $ts, $event) = split /\|/;
		$m{ $kind =~ /_start$/ ? 'start' : 'end' } = $ts;
		$m{"n_$kind"}++;
		$m{ $kind =~ /_start$/ ? 'n_start' : 'n_end' }++;
		$m{"event_$kind"} = $event;
	}
	return \%m;
}

# The ts of the latest snapshot before $ts (epoch seconds).
sub snapshot_before
{
	my ($ts) = @_;
	return sql(qq{SELECT extract(epoch FROM max(ts)) FROM chronicle.snapshot
	               WHERE ts < to_timestamp($ts)});
}

# The checks of a run against psql's samples: its start, its end, and its
# recorded rows.  $end_ref: the time the command is known to have ended
# (last_autovacuum; or undef), $exact_start: the activity start it must
# equal.
sub check_run
{
	my (%a) = @_;
	my ($name, $samples, $m) = @a{qw(name samples marks)};
	my @first = @{ $samples->[0] };
	my @last = @{ $samples->[-1] };

	is($m->{n_start} // 0, 1, "$name: one start mark") if !$a{no_start};
	is($m->{n_end} // 0, 1, "$name: one end mark");
	if (!$a{no_start})
	{
		# the activity's start; or, when a snapshot saw the activity before
		# the command began (autovacuum's report of its table comes first),
		# that snapshot's reading, less than an interval after it
		my $late = $m->{start} - $first[7];
		ok(abs($late) < 0.000002
			  || ($late > 0 && $late < 0.3 && snapshot_before($m->{start} + 0.05) > $first[7]),
			"$name: starts at the activity's start (query_start)")
		  or diag("start $m->{start}, query_start $first[7]");
		cmp_ok($m->{start}, '<=', $first[0], "$name: starts before psql first saw it");
	}
	cmp_ok($m->{end}, '>', $last[0], "$name: ends after psql last saw it");
	if (defined $a{ended_at})
	{
		cmp_ok($m->{end}, '>=', $a{ended_at}, "$name: ends at or after $a{ended_by}");
		cmp_ok(snapshot_before($m->{end}), '<', $a{ended_at} + 0.05,
			"$name: the snapshot before the end mark is before $a{ended_by}");
	}

	# the recorded rows of the run, by pid and relid
	my ($pid, $relid) = @first[ 1, 2 ];
	my ($total_col, $done_col) =
	  $a{command} eq 'VACUUM'
	  ? qw(heap_blks_total heap_blks_scanned)
	  : qw(sample_blks_total sample_blks_scanned);
	my $rows = sql(qq{
SELECT count(*), count(DISTINCT relid), max(relid), count(DISTINCT datname), max(datname),
       max(relation), bool_and(autovacuum = $a{autovacuum}), bool_and(NOT wraparound),
       max($total_col), bool_and($done_col <= $total_col),
       string_agg(DISTINCT phase, ','), count(ended), count(*) FILTER (WHERE ended IS NULL),
       count(last_seen), extract(epoch FROM max(last_seen)), extract(epoch FROM max(ended))
  FROM chronicle.maintenance_history
 WHERE pid = $pid AND command = '$a{command}' AND relid = $relid});
	my @r = split /\|/, $rows;
	cmp_ok($r[0], '>=', $a{min_rows} // 2, "$name: recorded over several snapshots ($r[0] rows)");
	is("@r[1..7]", "1 $relid 1 $a{datname} $a{relation} t t",
		"$name: relid, database, relation, autovacuum as psql saw them");
	my ($psql_total) = sort { $b <=> $a } map { $_->[5] } @$samples;
	is($r[8], $psql_total, "$name: $total_col as psql saw it");
	is($r[9], 't', "$name: $done_col never above $total_col");
	my $phases = $a{command} eq 'VACUUM' ? \%vacuum_phases : \%analyze_phases;
	my @unknown = grep { !$phases->{$_} } split /,/, $r[10];
	is("@unknown", '', "$name: phases as the view names them ($r[10])");
	is($r[11], 1, "$name: one final row with ended");
	is($r[13], 1, "$name: and last_seen");
	cmp_ok($r[14], '<', $last[0], "$name: last_seen before psql last saw it")
	  if $a{last_seen_before_psql};
	if (defined $a{ended_at})
	{
		# (a reading between the statistics' report and the progress's end
		# could see it running after last_autovacuum: 50 ms of slack)
		cmp_ok($r[14], '<', $a{ended_at} + 0.05, "$name: last_seen before $a{ended_by}");
		cmp_ok($r[15], '>=', $a{ended_at}, "$name: ended after $a{ended_by}");
	}

	# the time slept in cost delays (18): it grows, and stays below the
	# run's length
	my $delay = sql(qq{
SELECT count(delay_ms), coalesce(max(delay_ms) > 0, false),
       coalesce(max(delay_ms) <= extract(epoch FROM max(ended) - min(started)) * 1000, false),
       coalesce(bool_and(delay_ms >= prev), true)
  FROM (SELECT delay_ms, started, ended, lag(delay_ms) OVER (ORDER BY ts) AS prev
          FROM chronicle.maintenance_history
         WHERE pid = $pid AND command = '$a{command}' AND relid = $relid) x});
	is($delay, $pgv >= 180000 ? "$r[0]|t|t|t" : '0|f|f|t',
		"$name: delay_ms " . ($pgv >= 180000 ? 'grows, below the run\'s length' : 'NULL before 18'));
	return;
}

###
### 1. An autovacuum in another database.
###
sql('CREATE DATABASE bench');
$node->safe_psql('bench', q{
CREATE TABLE t (i int, pad text) WITH (autovacuum_enabled = false,
	autovacuum_vacuum_threshold = 0, autovacuum_vacuum_scale_factor = 0,
	autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0,
	autovacuum_vacuum_cost_limit = 1, autovacuum_vacuum_cost_delay = 10);
INSERT INTO t SELECT i, repeat('x', 100) FROM generate_series(1, 15000) i;
DELETE FROM t WHERE i % 2 = 0;
SELECT pg_stat_force_next_flush();
});
my $t_relid = $node->safe_psql('bench', q{SELECT 't'::regclass::oid});
$node->safe_psql('bench', 'ALTER TABLE t SET (autovacuum_enabled = true)');
my $av = sample_progress('vacuum', "p.datname = 'bench' AND p.relid = $t_relid",
	sub { my ($s) = @_; @$s && $s->[-1][0] < time() - 0.5 });
ok(@$av >= 5, 'psql saw the autovacuum (' . scalar(@$av) . ' samples)')
  or BAIL_OUT('no autovacuum seen');
poll_until($node, 'bench', q{
SELECT last_autovacuum IS NOT NULL FROM pg_stat_all_tables WHERE relname = 't'},
	'last_autovacuum is set');
my $last_av = $node->safe_psql('bench', q{
SELECT extract(epoch FROM last_autovacuum) FROM pg_stat_all_tables WHERE relname = 't'});
my $what = 'autovacuum VACUUM public.t (database bench)';
poll_until($node, 'postgres', qq{
SELECT count(*) = 1 FROM chronicle.marks(now() - interval '1 hour', now())
 WHERE kind = 'vacuum_end' AND event LIKE '$what%'}, 'the autovacuum has an end mark');
my $m = marks_of($what);
like($m->{event_vacuum_end}, qr/^\Q$what\E ended after \d+\.\d s$/, 'the end mark says how long');
check_run(name => 'autovacuum', samples => $av, marks => $m, command => 'VACUUM',
	autovacuum => 'true', datname => 'bench', relation => 'public.t',
	ended_at => $last_av, ended_by => 'last_autovacuum', min_rows => 3);

###
### 2. A manual VACUUM and an ANALYZE in the recording database.
###
sql(q{
CREATE TABLE m (i int, j int, k int) WITH (autovacuum_enabled = false);
INSERT INTO m SELECT i, i, i FROM generate_series(1, 40000) i;
DELETE FROM m WHERE i % 2 = 0;
CREATE TABLE a (i int, j int, k int) WITH (autovacuum_enabled = false);
INSERT INTO a SELECT i, i, i FROM generate_series(1, 40000) i;
});
my $worker = $node->background_psql('postgres');
# A slow manual VACUUM or ANALYZE in the recording database: psql samples
# its progress view while it runs; its marks and rows agree with the samples
# and with pg_stat_all_tables' last_<what>.
sub manual_run
{
	my ($command, $table, $last) = @_;
	my $view = lc $command;
	$worker->query_safe('SET vacuum_cost_limit = 1; SET vacuum_cost_delay = 10');
	$worker->query_until(qr/started/, "\\echo started\n$command $table;\n\\echo done\n");
	my $samples = sample_progress($view, qq{p.relid = '$table'::regclass},
		sub { my ($s) = @_; @$s && $s->[-1][0] < time() - 0.5 });
	$worker->query_safe('SELECT 1');	# it is done
	ok(@$samples >= 5, "psql saw the manual $command (" . scalar(@$samples) . ' samples)');
	my $last_at = sql(qq{SELECT extract(epoch FROM $last) FROM pg_stat_all_tables
	                      WHERE relid = '$table'::regclass});
	my $what = "$command public.$table (database postgres)";
	poll_until($node, 'postgres', qq{
	SELECT count(*) = 1 FROM chronicle.marks(now() - interval '1 hour', now())
	 WHERE kind = '${view}_end' AND event LIKE '$what%'}, "the $command has an end mark");
	check_run(name => "manual $command", samples => $samples, marks => marks_of($what),
		command => $command, autovacuum => 'false', datname => 'postgres',
		relation => "public.$table", ended_at => $last_at, ended_by => $last);
}
manual_run('VACUUM', 'm', 'last_vacuum');

# The manual VACUUM explains the intervals it ran in: a run labelled from
# a margin before its start mark to the margin after its end mark (3 s, or
# as long as the VACUUM ran where it ran longer: most of the run without a
# VACUUM, so that its median has none), ranked whole by
# chronicle.slowest_intervals(); it names "VACUUM or ANALYZE running" in
# intervals the VACUUM's marks span, and in no interval that no run's
# marks span (an autovacuum or autoanalyze of another table, the
# recording's own partitions among them, may run in the margins: its marks,
# checked against psql above for the runs psql saw, span it).
my ($vs, $ve, $margin) = split /\|/, sql(q{
	SELECT min(ts) FILTER (WHERE kind = 'vacuum_start'), max(ts) FILTER (WHERE kind = 'vacuum_end'),
	       greatest(max(ts) FILTER (WHERE kind = 'vacuum_end') - min(ts) FILTER (WHERE kind = 'vacuum_start'),
	                interval '3 s') + interval '1 s'
	  FROM chronicle.marks(now() - interval '1 hour', now()) WHERE event LIKE 'VACUUM public.m %'});
poll_until($node, 'postgres', qq{SELECT now() > '$ve'::timestamptz + '$margin'::interval + interval '0.5 s'},
	'after the VACUUM');
sql(qq{SELECT chronicle.run_label('around-vacuum', '$vs'::timestamptz - '$margin'::interval,
                                  '$ve'::timestamptz + '$margin'::interval)});
# every run's span by its marks, from a minute around the labelled run
my $runs = qq{
	WITH mk AS (
		SELECT * FROM chronicle.marks('$vs'::timestamptz - interval '1 min', '$ve'::timestamptz + interval '1 min')
		 WHERE kind IN ('vacuum_start', 'vacuum_end', 'analyze_start', 'analyze_end'))
	SELECT s.event, s.ts AS started,
	       (SELECT min(e.ts) FROM mk e
	         WHERE e.kind = replace(s.kind, '_start', '_end') AND e.ts >= s.ts
	           AND left(e.event, length(s.event) + 1) = s.event || ' ') AS ended
	  FROM mk s WHERE s.kind LIKE '%\\_start'};
my ($named, $outside) = split /\|/, sql(qq{
	WITH runs AS ($runs)
	SELECT count(*) FILTER (WHERE s.interval_end > '$vs' AND s.interval_start < '$ve'),
	       count(*) FILTER (WHERE NOT EXISTS (SELECT FROM runs r WHERE r.started < s.interval_end
	                                              AND coalesce(r.ended, 'infinity') > s.interval_start))
	  FROM chronicle.slowest_intervals('around-vacuum', 1000, 'tps') s,
	       jsonb_array_elements(s.details) d
	 WHERE d ->> 'column' = 'maintenance_runs' AND (d ->> 'value')::float8 >= 1});
cmp_ok($named, '>=', 1, "slowest_intervals names the VACUUM in intervals it ran in ($named)")
  or diag(sql(qq{SELECT interval_start || ' ' || interval_end || ' ' || explanation
                   FROM chronicle.slowest_intervals('around-vacuum', 1000, 'tps') ORDER BY interval_start}));
is($outside, '0', 'and maintenance in no interval that no run spans')
  or diag(sql(qq{SELECT interval_start || ' ' || interval_end || ' ' || explanation
                   FROM chronicle.slowest_intervals('around-vacuum', 1000, 'tps') ORDER BY interval_start})
	  . "\nruns:\n" . sql($runs));

manual_run('ANALYZE', 'a', 'last_analyze');

###
### 2b. The source turned off while a VACUUM runs, on again after it ended:
###     its final row says it ended between the last reading that saw it
###     (before the source was turned off) and the first after.
###
sql(q{
CREATE TABLE o (i int, j int, k int) WITH (autovacuum_enabled = false);
INSERT INTO o SELECT i, i, i FROM generate_series(1, 120000) i;
DELETE FROM o WHERE i % 2 = 0;
});
$worker->query_safe('SET vacuum_cost_limit = 1; SET vacuum_cost_delay = 10');
$worker->query_until(qr/started/, "\\echo started\nVACUUM o;\n\\echo vacuumed\n");
poll_until($node, 'postgres', q{
SELECT count(*) > 0 FROM chronicle.maintenance_history WHERE relation = 'public.o'},
	'the collector records the VACUUM of o');
sql('ALTER SYSTEM SET chronicle.collect_maintenance = off');
sql('SELECT pg_reload_conf()');
# off once the worker's count of the source's snapshots stands still for
# three intervals
my $collected = sub {
	sql(q{SELECT snapshots FROM chronicle.source_status() WHERE source = 'maintenance'});
};
my ($before, $after) = ($collected->(), -1);
for (1 .. 100)
{
	usleep(750_000);
	$after = $collected->();
	last if $after == $before;
	$before = $after;
}
is($after, $before, 'the worker stopped reading the source');
my $off_at = sql('SELECT extract(epoch FROM clock_timestamp())');
$worker->query_safe('SELECT 1');	# the VACUUM is done
my $last_o = sql(q{SELECT extract(epoch FROM last_vacuum) FROM pg_stat_all_tables
                    WHERE relid = 'o'::regclass});
sleep(1);
sql('ALTER SYSTEM RESET chronicle.collect_maintenance');
sql('SELECT pg_reload_conf()');
poll_until($node, 'postgres', q{
SELECT count(*) = 1 FROM chronicle.maintenance_history WHERE relation = 'public.o' AND ended IS NOT NULL},
	'turned on again, the source writes the final row of the VACUUM of o');
my ($o_seen, $o_ended) = split /\|/, sql(q{
SELECT extract(epoch FROM last_seen), extract(epoch FROM ended) FROM chronicle.maintenance_history
 WHERE relation = 'public.o' AND ended IS NOT NULL});
cmp_ok($o_seen, '<', $off_at, 'source off: last_seen is a reading from before it was turned off');
cmp_ok($o_seen, '<', $last_o, 'source off: last_seen before last_vacuum');
cmp_ok($o_ended, '>', $last_o + 1, 'source off: ended after last_vacuum and the second off');

###
### 2c. A VACUUM that waits for its lock before it starts: its run starts
###     after the wait, not at the statement's start.
###
sql(q{
CREATE TABLE w (i int, j int, k int) WITH (autovacuum_enabled = false);
INSERT INTO w SELECT i, i, i FROM generate_series(1, 40000) i;
DELETE FROM w WHERE i % 2 = 0;
});
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE w IN SHARE UPDATE EXCLUSIVE MODE');
$worker->query_until(qr/started/, "\\echo started\nVACUUM w;\n\\echo vacuumed\n");
poll_until($node, 'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'VACUUM w;' AND wait_event_type = 'Lock'},
	'the VACUUM of w waits for its lock');
my $w_query_start = sql(q{SELECT extract(epoch FROM query_start) FROM pg_stat_activity
                           WHERE query = 'VACUUM w;'});
sleep(2);
my $released = sql('SELECT extract(epoch FROM clock_timestamp())');
$holder->query_safe('ROLLBACK');
my $mw = sample_progress('vacuum', q{p.relid = 'w'::regclass},
	sub { my ($s) = @_; @$s && $s->[-1][0] < time() - 0.5 });
$worker->query_safe('SELECT 1');
$what = 'VACUUM public.w (database postgres)';
poll_until($node, 'postgres', qq{
SELECT count(*) = 1 FROM chronicle.marks(now() - interval '1 hour', now())
 WHERE kind = 'vacuum_end' AND event LIKE '$what%'}, 'the VACUUM of w has an end mark');
$m = marks_of($what);
# (the reading before the release: up to an interval and the collector's
# lateness before it)
cmp_ok($m->{start}, '>', $w_query_start + 1, 'lock wait: the run starts well after the statement');
cmp_ok($m->{start}, '>', $released - 0.3, 'lock wait: less than an interval before the lock was released');
cmp_ok($m->{start}, '<=', $mw->[0][0], 'lock wait: before psql first saw it');
$holder->quit;

###
### 3. A backend terminated in the middle of its VACUUM.
###
sql(q{
CREATE TABLE k (i int, j int, k int) WITH (autovacuum_enabled = false);
INSERT INTO k SELECT i, i, i FROM generate_series(1, 40000) i;
DELETE FROM k WHERE i % 2 = 0;
});
my $victim = $node->background_psql('postgres', on_error_stop => 0);
$victim->query_safe('SET vacuum_cost_limit = 1; SET vacuum_cost_delay = 20');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_until(qr/started/, "\\echo started\nVACUUM k;\n");
poll_until($node, 'postgres', qq{
SELECT count(*) > 0 FROM chronicle.maintenance_history WHERE pid = $victim_pid AND relation = 'public.k'},
	'the collector records the VACUUM about to be terminated');
my $mk = sample_progress('vacuum', "p.pid = $victim_pid", sub { 1 });
ok(sql("SELECT pg_terminate_backend($victim_pid)") eq 't', 'terminated in the middle of its VACUUM');
eval { $victim->quit; };
$what = 'VACUUM public.k (database postgres)';
poll_until($node, 'postgres', qq{
SELECT count(*) = 1 FROM chronicle.marks(now() - interval '1 hour', now())
 WHERE kind = 'vacuum_end' AND event LIKE '$what%'}, 'the terminated VACUUM has an end mark');
$m = marks_of($what);
is($m->{n_vacuum_start}, 1, 'terminated VACUUM: one start mark');
cmp_ok($m->{end}, '>', $mk->[-1][0], 'terminated VACUUM: ends after psql last saw it');

###
### 4. A database dropped while its autovacuum runs.
###
sql('CREATE DATABASE gone');
$node->safe_psql('gone', q{
CREATE TABLE g (i int, pad text) WITH (autovacuum_enabled = false,
	autovacuum_vacuum_threshold = 0, autovacuum_vacuum_scale_factor = 0,
	autovacuum_vacuum_cost_limit = 1, autovacuum_vacuum_cost_delay = 50);
INSERT INTO g SELECT i, repeat('x', 100) FROM generate_series(1, 15000) i;
DELETE FROM g WHERE i % 2 = 0;
SELECT pg_stat_force_next_flush();
ALTER TABLE g SET (autovacuum_enabled = true);
});
my $g_pid = sample_progress('vacuum', q{p.datname = 'gone'}, sub { @{ $_[0] } > 0 });
$g_pid = $g_pid->[0][1];
ok($g_pid, 'an autovacuum runs in the database about to be dropped');
poll_until($node, 'postgres', qq{
SELECT count(*) > 0 FROM chronicle.maintenance_history WHERE pid = $g_pid AND datname = 'gone'},
	'the collector records it');
sql('DROP DATABASE gone');
poll_until($node, 'postgres', qq{
SELECT count(*) = 1 FROM chronicle.maintenance_history WHERE pid = $g_pid AND ended IS NOT NULL},
	'the run in the dropped database ends');
is(sql("SELECT string_agg(DISTINCT datname, ',') FROM chronicle.maintenance_history WHERE pid = $g_pid"),
	'gone', 'its rows keep the database\'s name');

###
### Throughout.
###
more_worker_snapshots($node, 4);
my $log = slurp_file($node->logfile, $log_offset);
my $failed = () = $log =~ /pg_chronicle: (?:snapshot|source "\w+") failed/g;
is($failed, 0, 'no snapshot nor source failed in the log');
is(sql('SELECT snapshot_errors FROM chronicle.status()'), $errors_before, 'no snapshot error');
is(sql(q{SELECT count(*) FROM chronicle.maintenance_history WHERE ended IS NOT NULL}),
	sql(q{SELECT count(DISTINCT (pid, activity_start, relid, command)) FROM chronicle.maintenance_history
	       WHERE ended IS NOT NULL}),
	'one final row a run');

$sampler->quit;
$worker->quit;
$node->stop;
done_testing();
