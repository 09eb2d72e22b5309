# A run explained: chronicle.slowest_intervals() against an independent
# ranking of the pgbench log read here, in Perl (per snapshot interval:
# nearest-rank p50/p99 and max of the transactions ending in it), and a
# provoked stall (a lock held on a table pgbench reads, over several
# snapshot intervals) found by it and explained by Lock waits.
# chronicle.load_profile() against psql's own readings of pg_stat_database,
# pg_stat_io and pg_stat_wal before and after a run, and the pgbench log;
# compare_load_profile().  Errors.
use strict;
use warnings FATAL => 'all';
use POSIX qw(ceil);
use List::Util qw(max);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node worker_recording);

# autovacuum off: the load profile's reference windows differ from the
# run's by up to a snapshot interval at each end, which must be quiet; an
# autovacuum worker flushing its statistics there (4,821 hits after the
# burn run, once) is counted on one side only.
my $node = chronicle_node('run_profile', conf => q{
chronicle.snapshot_interval = '500ms'
autovacuum = off
checkpoint_timeout = '30min'
max_wal_size = '1GB'
});
$node->command_ok([ 'pgbench', '-i', '-q', '-s', '1', 'postgres' ], 'pgbench -i');
worker_recording($node, 2);
my $dir = PostgreSQL::Test::Utils::tempdir;

# Waits for k worker snapshots after now.
sub snapshots_after_now
{
	my ($k) = @_;
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->poll_query_until('postgres',
		"SELECT count(*) >= $k FROM chronicle.snapshot WHERE ts > '$t' AND collector = 'worker'")
	  or die "no $k snapshots after $t";
}

# --- the stalled run ------------------------------------------------------------

# Select-only pgbench (no row locks of its own: Lock waits are 0 but for the
# stall), 4 clients; a session locks pgbench_accounts once they run, keeps
# the lock until 3 snapshots saw every client wait on it, and commits.
$node->safe_psql('postgres', "SELECT chronicle.run_begin('stall')");
my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[ 'pgbench', '-n', '-S', '-c', '4', '-j', '2', '-T', '12', '-l', "--log-prefix=$dir/stall",
	  $node->connstr('postgres') . ' application_name=pgbench' ],
	'>', \$out, '2>', \$err);
$node->poll_query_until('postgres',
	"SELECT count(*) = 4 FROM pg_stat_activity WHERE application_name = 'pgbench'")
  or die 'pgbench did not start';
snapshots_after_now(2);
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK TABLE pgbench_accounts IN ACCESS EXCLUSIVE MODE');
$node->poll_query_until('postgres',
	"SELECT count(*) = 4 FROM pg_stat_activity WHERE application_name = 'pgbench' AND wait_event_type = 'Lock'")
  or die 'pgbench did not wait for the lock';
# 4 snapshots: 3 whole intervals under the lock
snapshots_after_now(4);
$locker->query_safe('COMMIT');
$locker->quit;
$pgbench->finish or die "pgbench failed: $err";
snapshots_after_now(2);
$node->safe_psql('postgres', "SELECT chronicle.run_end()");
$node->safe_psql('postgres', "SELECT * FROM chronicle.load_pgbench_log('stall', '$dir/stall')");

# --- the reference: the log, per interval ------------------------------------------

# The snapshot intervals (start, end] of a run, in microseconds.
sub run_intervals
{
	my ($label) = @_;
	return [ map { [ split /\|/ ] } split /\n/, $node->safe_psql('postgres', qq{
		SELECT (extract(epoch FROM i.interval_start) * 1000000)::bigint,
		       (extract(epoch FROM i.interval_end) * 1000000)::bigint
		  FROM chronicle.run_window('$label') w, chronicle.intervals(w.run_from, w.run_to) i
		 ORDER BY 2}) ];
}

sub nearest_rank
{
	my ($sorted, $p) = @_;
	my $r = ceil($p * scalar(@$sorted));
	$r = 1 if $r < 1;
	return $sorted->[ $r - 1 ];
}

# Per interval with transactions: end (us), p50, p99, max (ms); worst p99
# first, then the earlier interval.
sub ref_ranking
{
	my ($label, $prefix) = @_;
	my $iv = run_intervals($label);
	my %lat;
	for my $f (glob "$prefix.*")
	{
		open my $fh, '<', $f or die "$f: $!";
		while (my $l = <$fh>)
		{
			my @a = split ' ', $l;
			next unless $a[2] =~ /^\d+$/;    # failed or skipped
			my $end = $a[4] * 1_000_000 + $a[5];
			for my $i (@$iv)
			{
				if ($end > $i->[0] && $end <= $i->[1])
				{
					push @{ $lat{ $i->[1] } }, $a[2];
					last;
				}
			}
		}
	}
	my @r;
	for my $e (keys %lat)
	{
		my @s = sort { $a <=> $b } @{ $lat{$e} };
		push @r, [ $e, map { $_ / 1000 } nearest_rank(\@s, 0.5), nearest_rank(\@s, 0.99), $s[-1] ];
	}
	return [ sort { $b->[2] <=> $a->[2] || $a->[0] <=> $b->[0] } @r ];
}

my $ref = ref_ranking('stall', "$dir/stall");
my $got = [ map { [ split /\|/ ] } split /\n/, $node->safe_psql('postgres', q{
	SELECT (extract(epoch FROM interval_end) * 1000000)::bigint, latency_p50_ms, latency_p99_ms, latency_max_ms
	  FROM chronicle.slowest_intervals('stall', 1000) ORDER BY rank}) ];
cmp_ok(scalar @$ref, '>=', 10, 'the log has transactions in ' . scalar(@$ref) . ' intervals');
is(scalar @$got, scalar @$ref, 'by p99: every interval with transactions is ranked');
my @bad = grep {
	my ($g, $r) = ($got->[$_], $ref->[$_]);
	!defined $g || $g->[0] != $r->[0] || grep { abs($g->[$_] - $r->[$_]) > 1e-9 * max(1, abs $r->[$_]) } 1 .. 3
} 0 .. $#$ref;
is_deeply([ map { "rank " . ($_ + 1) . ": got @{$got->[$_] // []}, want @{$ref->[$_]}" } @bad ], [],
	'by p99: the same intervals in the same order, with the same p50, p99 and max as the log says');
is($node->safe_psql('postgres', "SELECT count(*) FROM chronicle.slowest_intervals('stall')"), '10',
	'n defaults to 10');

# The stall: intervals pgbench was running in but finished nothing (tps 0)
# come first by tps, explained first by Lock waits (every client).
my @stalled = map { [ split /\|/ ] } split /\n/, $node->safe_psql('postgres', q{
	SELECT rank, tps, details -> 0 ->> 'column', details -> 0 ->> 'value', details -> 0 ->> 'median'
	  FROM chronicle.slowest_intervals('stall', 3, 'tps') ORDER BY rank});
note explain \@stalled;
is(scalar @stalled, 3, 'three intervals by tps');
for my $s (@stalled)
{
	ok($s->[1] == 0 && $s->[2] eq 'active_lock' && $s->[3] > 3.9 && $s->[4] == 0,
		"a stalled interval: no transaction, explained first by Lock waits of the 4 clients, median 0 (@$s)");
}
like($node->safe_psql('postgres', "SELECT explanation FROM chronicle.slowest_intervals('stall', 1, 'tps')"),
	qr/^Lock waits 4\.0 sessions, median 0(;|$)/, 'the explanation says so first');
is($node->safe_psql('postgres', q{
	SELECT bool_and(jsonb_array_length(details) <= 5
	                AND explanation <> '' AND (details -> 0 ->> 'score')::float8 >= 2)
	  FROM chronicle.slowest_intervals('stall', 1000, 'tps') WHERE details <> '[]'}), 't',
	'details: up to 5 metrics, each 2 or more robust deviations off');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.slowest_intervals('stall', 1000, 'tps') s,
	       jsonb_array_elements(s.details) d
	 WHERE (d ->> 'value')::float8 <= (d ->> 'median')::float8}), '0',
	'no metric below its median explains an interval (a drop is a consequence)');

# --- a run without a pgbench log: by tps is commits/s -----------------------------

$node->safe_psql('postgres', "SELECT chronicle.run_label('nolog', (SELECT started FROM chronicle.run WHERE label = 'stall'),
	(SELECT ended FROM chronicle.run WHERE label = 'stall'))");
my $ref_c = $node->safe_psql('postgres', q{
	SELECT string_agg(interval_end::text, ',' ORDER BY commits_per_s, interval_end)
	  FROM (SELECT t.* FROM chronicle.run_window('nolog') w, chronicle.timeline(w.run_from, w.run_to) t
	         WHERE t.commits_per_s IS NOT NULL ORDER BY t.commits_per_s, t.interval_end LIMIT 5) x});
is($node->safe_psql('postgres',
	"SELECT string_agg(interval_end::text, ',' ORDER BY rank) FROM chronicle.slowest_intervals('nolog', 5, 'tps')"),
	$ref_c, 'without a log, by tps ranks the lowest commits/s of the timeline');

# --- the machine's CPU taken: explained by the run queue --------------------------

# One unthrottled select-only client; sixteen processes spin in the middle
# of the run, each runnable all the time (the reference: we started them),
# so the kernel's run queue at the snapshots in their time is 16 longer
# (clear of what else runs on a shared machine), and the client's
# throughput falls.
$node->safe_psql('postgres', "SELECT chronicle.run_begin('burn')");
my $burn_pg = IPC::Run::start(
	[ 'pgbench', '-n', '-S', '-c', '1', '-T', '9', $node->connstr('postgres') ], '>', \$out, '2>', \$err);
sleep 3;
my $b0 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
my @burners;
for (1 .. 16)
{
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		my $until = time() + 3;
		my $x = 0;
		while (time() < $until) { $x++ }
		POSIX::_exit(0);
	}
	push @burners, $pid;
}
waitpid($_, 0) for @burners;
my $b1 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$burn_pg->finish or die "pgbench failed: $err";
snapshots_after_now(2);
$node->safe_psql('postgres', "SELECT chronicle.run_end()");
my $rq = $node->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.slowest_intervals('burn', 1000, 'tps') s,
	       jsonb_array_elements(s.details) d
	 WHERE s.interval_start >= '$b0' AND s.interval_end <= '$b1'
	   AND d ->> 'column' = 'procs_running'
	   AND (d ->> 'value')::float8 - (d ->> 'median')::float8 >= 8});
cmp_ok($rq, '>=', 1, "intervals while 16 processes spun are explained by the run queue ($rq)")
  or diag $node->safe_psql('postgres', qq{
	SELECT t.interval_end, t.procs_running, round(t.cpu_user::numeric, 2), s.tps, s.explanation
	  FROM chronicle.run_window('burn') w, chronicle.timeline(w.run_from, w.run_to) t
	  LEFT JOIN chronicle.slowest_intervals('burn', 1000, 'tps') s ON s.interval_end = t.interval_end
	 ORDER BY t.interval_end}) . "\nburn: $b0 .. $b1";

# --- errors -------------------------------------------------------------------------

sub err
{
	my ($sql) = @_;
	my ($ret, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $e;
}
like(err("SELECT * FROM chronicle.slowest_intervals('nope')"), qr/42704: chronicle.slowest_intervals: unknown run "nope"/,
	'unknown run');
like(err("SELECT * FROM chronicle.slowest_intervals(NULL)"), qr/22004/, 'NULL run');
like(err("SELECT * FROM chronicle.slowest_intervals('stall', 0)"), qr/22023: .*n must be at least 1, got 0/,
	'n = 0');
like(err("SELECT * FROM chronicle.slowest_intervals('stall', NULL)"), qr/22023: .*got NULL/, 'n NULL');
like(err("SELECT * FROM chronicle.slowest_intervals('stall', 3, 'p50')"), qr/22023: .*unknown ranking "p50"/,
	'unknown ranking');
like(err("SELECT * FROM chronicle.slowest_intervals('stall', 3, NULL)"), qr/22023/, 'NULL ranking');
like(err("SELECT * FROM chronicle.slowest_intervals('nolog')"),
	qr/55000: .*run "nolog" has no per-transaction pgbench log.*HINT:.*load_pgbench_log/s,
	'by p99 without a pgbench log');

# --- load profile ---------------------------------------------------------------

# The reference: psql reads the views itself, in one statement (one
# statistics snapshot), right before run_begin and right after run_end.
my $sample_sql = q{
	SELECT (SELECT sum(xact_commit) FROM pg_stat_database) || '|'
	       || (SELECT sum(reads) || '|' || sum(writes) || '|' || sum(extends) || '|' || coalesce(sum(fsyncs), 0)
	                  || '|' || sum(hits) || '|' || sum(evictions)
	             FROM pg_stat_io WHERE object <> 'wal') || '|'
	       || (SELECT wal_bytes || '|' || wal_fpi || '|' || wal_records FROM pg_stat_wal) || '|'
	       || extract(epoch FROM clock_timestamp())};
my @cols = qw(commits reads writes extends fsyncs hits evictions wal_bytes wal_fpi wal_records epoch);
sub sample
{
	my ($sql_after) = @_;
	my @lines = split /\n/, $node->safe_psql('postgres', $sql_after ? "$sql_after; $sample_sql" : $sample_sql);
	my %v;
	@v{@cols} = split /\|/, $lines[-1];
	return \%v;
}

snapshots_after_now(2);
my $s0 = sample();
$node->safe_psql('postgres', "SELECT chronicle.run_begin('tpcb')");
$node->command_ok([ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '5', '-l', "--log-prefix=$dir/tpcb", 'postgres' ],
	'pgbench tpcb-like');
# pgbench's backends flushed their statistics when they exited; two
# snapshots record the last of it.
snapshots_after_now(2);
my $s1 = sample("SELECT chronicle.run_end()");
$node->safe_psql('postgres', "SELECT * FROM chronicle.load_pgbench_log('tpcb', '$dir/tpcb')");
my %ref = map { $_ => $s1->{$_} - $s0->{$_} } @cols;
note explain \%ref;

my %lp = map { my @f = split /\|/, $_, -1; $f[0] => { unit => $f[1], s => $f[2], t => $f[3] } }
  split /\n/, $node->safe_psql('postgres', 'SELECT * FROM chronicle.load_profile(\'tpcb\')');
my $secs = $node->safe_psql('postgres', q{
	SELECT w.seconds FROM chronicle.run_window('tpcb') r, chronicle._window(r.run_from, r.run_to) w});
note explain \%lp;

# Totals: chronicle's window runs from the snapshot before run_begin to the
# last one before run_end, psql's from just before run_begin to just after
# run_end; between them only the collector's own work for at most one
# snapshot at each end (it commits, writes WAL and hits buffers recording;
# the server is otherwise idle there, autovacuum being off: pgbench ran,
# and flushed, inside both).  So: within 2 % of psql's difference, plus an allowance for two
# snapshots of the collector's work, far below what pgbench did.
my %allow = (commits => 10, wal_bytes => 300_000, wal_records => 3000, wal_fpi => 200, reads => 200,
	writes => 300, extends => 100, fsyncs => 20, hits => 20_000, evictions => 200);
my %row = (commits => 'commits', wal_bytes => 'WAL', wal_records => 'WAL records', wal_fpi => 'full-page images',
	reads => 'reads', writes => 'writes', extends => 'extends', fsyncs => 'fsyncs', hits => 'hits',
	evictions => 'evictions');
cmp_ok($ref{commits}, '>', 1000, "pgbench committed ($ref{commits})");
for my $k (sort keys %row)
{
	my $got = $lp{ $row{$k} }{s} * $secs;
	ok(abs($got - $ref{$k}) <= 0.02 * $ref{$k} + $allow{$k},
		"load_profile $row{$k}: per second x seconds $got, psql says $ref{$k}");
}
for my $k (qw(wal_bytes wal_records hits))
{
	my $want = $ref{$k} / $ref{commits};
	ok(abs($lp{ $row{$k} }{t} - $want) <= 0.03 * $want,
		"load_profile $row{$k} per transaction: $lp{$row{$k}}{t}, psql says $want");
}
# Per second: over the window's seconds, which are psql's within one
# snapshot interval (500 ms) at each end of a run of about 7 s.
my $rate = $ref{commits} / ($s1->{epoch} - $s0->{epoch});
ok(abs($lp{commits}{s} - $rate) <= 0.2 * $rate, "commits per second $lp{commits}{s}, psql says $rate");
ok(!defined $lp{commits}{t} || $lp{commits}{t} eq '', 'commits have no per-transaction value');

# pgbench's numbers from its log, read here: nearest-rank p50 and p99, tps
# from the first start to the last end.
my (@lat, $first, $last);
for my $f (glob "$dir/tpcb.*")
{
	open my $fh, '<', $f or die "$f: $!";
	while (my $l = <$fh>)
	{
		my @a = split ' ', $l;
		next unless $a[2] =~ /^\d+$/;
		my $end = $a[4] * 1_000_000 + $a[5];
		push @lat, $a[2];
		$first = $end - $a[2] if !defined $first || $end - $a[2] < $first;
		$last = $end if !defined $last || $end > $last;
	}
}
@lat = sort { $a <=> $b } @lat;
is($lp{'latency p50'}{t} + 0, nearest_rank(\@lat, 0.5) / 1000, 'latency p50 as the log says');
is($lp{'latency p99'}{t} + 0, nearest_rank(\@lat, 0.99) / 1000, 'latency p99 as the log says');
my $tps = @lat / (($last - $first) / 1e6);
ok(abs($lp{'pgbench tps'}{s} - $tps) <= 1e-6 * $tps, "pgbench tps $lp{'pgbench tps'}{s}, the log says $tps");

# Comparison: ratio B / A per transaction where both have one, else per
# second; marked beyond 10 %.
my @cmp = map { [ split /\|/, $_, -1 ] } split /\n/, $node->safe_psql('postgres',
	"SELECT * FROM chronicle.compare_load_profile('stall', 'tpcb')");
my %la = map { my @f = split /\|/, $_, -1; $f[0] => [ @f[ 2, 3 ] ] }
  split /\n/, $node->safe_psql('postgres', "SELECT * FROM chronicle.load_profile('stall')");
is(scalar @cmp, scalar keys %lp, 'compare_load_profile: one row per metric');
my @wrong;
for my $c (@cmp)
{
	my ($m, $u, $as, $bs, $at, $bt, $ratio, $marked) = @$c;
	push @wrong, "$m: a" if ($as // '') ne ($la{$m}[0] // '') || ($at // '') ne ($la{$m}[1] // '');
	push @wrong, "$m: b" if ($bs // '') ne ($lp{$m}{s} // '') || ($bt // '') ne ($lp{$m}{t} // '');
	my ($va, $vb) = $at ne '' && $bt ne '' ? ($at, $bt) : ($as, $bs);
	next if $va eq '' || $vb eq '';
	if ($va == 0)
	{
		push @wrong, "$m: ratio of 0" if $ratio ne '';
		push @wrong, "$m: marked of 0" if ($marked eq 't') != ($vb != 0);
		next;
	}
	push @wrong, "$m: ratio $ratio" if abs($ratio - $vb / $va) > 1e-9 * abs($vb / $va);
	push @wrong, "$m: marked $marked" if ($marked eq 't') != (abs($vb / $va - 1) > 0.10);
}
is_deeply(\@wrong, [], 'compare_load_profile: both sides, ratio and mark as the two profiles say');
my ($wal) = grep { $_->[0] eq 'WAL' } @cmp;
ok($wal->[6] > 1.1 && $wal->[7] eq 't',
	"WAL per transaction: a select-only run against tpcb-like differs, marked (ratio $wal->[6])");
is($node->safe_psql('postgres',
	"SELECT count(*) FILTER (WHERE marked) || ' ' || count(*) FILTER (WHERE ratio <> 1)
	   FROM chronicle.compare_load_profile('tpcb', 'tpcb')"), '0 0', 'a run against itself: nothing marked');

like(err("SELECT * FROM chronicle.load_profile('nope')"), qr/42704: chronicle.load_profile: unknown run "nope"/,
	'load_profile: unknown run');
like(err("SELECT * FROM chronicle.compare_load_profile(NULL, 'tpcb')"), qr/22004/,
	'compare_load_profile: NULL run');
like(err("SELECT * FROM chronicle.compare_load_profile('tpcb', 'nope')"), qr/42704/,
	'compare_load_profile: unknown run');

$node->stop;
done_testing();
