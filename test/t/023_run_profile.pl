# A run explained: chronicle.slowest_intervals() against an independent
# ranking of the pgbench log read here, in Perl (per snapshot interval:
# nearest-rank p50/p99 and max of the transactions ending in it), and a
# provoked stall (a lock held on a table pgbench reads, over several
# snapshot intervals) found by it and explained by Lock waits.  Errors.
use strict;
use warnings FATAL => 'all';
use POSIX qw(ceil);
use List::Util qw(max);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('run_profile');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pg_chronicle'
chronicle.snapshot_interval = '500ms'
checkpoint_timeout = '30min'
max_wal_size = '1GB'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_chronicle');
$node->command_ok([ 'pgbench', '-i', '-q', '-s', '1', 'postgres' ], 'pgbench -i');
$node->poll_query_until('postgres',
	"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker'")
  or die 'the worker recorded no snapshots';
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

# --- errors -------------------------------------------------------------------------

sub err
{
	my ($sql) = @_;
	my ($ret, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $e;
}
like(err("SELECT * FROM chronicle.slowest_intervals('nope')"), qr/42704: chronicle: unknown run "nope"/,
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

$node->stop;
done_testing();
