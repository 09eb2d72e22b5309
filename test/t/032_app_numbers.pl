# pgbench's numbers as the extension shows them, against independent
# references: pgbench's own final report (its tps, counted from the start of
# the benchmark, its transaction count and measured latency average) and
# the pgbench log files read here, in Perl (per-transaction and aggregate
# logs: per snapshot interval and per run, counts, tps, latency mean, min,
# max and nearest-rank percentiles).
#
# Runs: a per-transaction log (-l), an aggregate log (--aggregate-interval
# = 1), a rate-limited run (-c 1 -R 5), two runs at -R 300 around a server
# stop (one chronicle run, two recordings; the first run's last and the
# second's first transactions in the gap between them), and a run created
# from its log.  Per interval: the whole transactions of the interval, tps
# where the runs were active all of it, none (partial) where in part of it,
# and the intervals add up to the run's summary.  Also: the collector's own
# statements stay out of pg_stat_statements.
use strict;
use warnings FATAL => 'all';
use POSIX qw(ceil);
use List::Util qw(sum min max);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(pgbench_node poll_until);
use Time::HiRes qw(usleep);

my $node = pgbench_node('app_numbers', '500ms', 1);

my $dir = PostgreSQL::Test::Utils::tempdir;

# --- pgbench and its report ----------------------------------------------

# Runs pgbench (-P makes it measure the latency average rather than derive
# it from the duration) and returns its final figures; pgbench_start and
# pgbench_finish run it in the background.
sub pgbench_start
{
	my @args = @_;
	my $p = { args => \@args, out => '', err => '' };
	# (application_name: the tests set PGAPPNAME for every client)
	$p->{h} = IPC::Run::start(
		[ 'pgbench', '-n', '-P', '1', @args, $node->connstr('postgres') . ' application_name=pgbench' ],
		'>', \$p->{out}, '2>', \$p->{err});
	return $p;
}

sub pgbench_finish
{
	my ($p) = @_;
	my @args = @{ $p->{args} };
	$p->{h}->finish or die "pgbench @args failed: $p->{err}";
	my $out = $p->{out};
	my %r;
	($r{n}) = $out =~ /^number of transactions actually processed: (\d+)/m;
	($r{latency_ms}) = $out =~ /^latency average = ([\d.]+) ms/m;
	($r{tps}) = $out =~ /^tps = ([\d.]+)/m;
	die "unexpected pgbench output: $out" unless defined $r{tps} && defined $r{latency_ms};
	$r{seconds} = $r{n} / $r{tps};
	note "pgbench @args: $r{n} transactions, tps $r{tps}, latency average $r{latency_ms} ms";
	return \%r;
}

sub pgbench
{
	return pgbench_finish(pgbench_start(@_));
}

# Waits for a worker snapshot after now, so the end of a run is recorded.
sub next_snapshot
{
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	poll_until($node, 'postgres',
		"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE ts > '$t' AND collector = 'worker'",
		'a snapshot after the run');
}

# --- the reference: pgbench's log files, read here -------------------------

# Per-transaction log lines: end and latency in microseconds, and the
# file.
sub read_tx_log
{
	my @tx;
	for my $f (@_)
	{
		open my $fh, '<', $f or die "$f: $!";
		while (my $l = <$fh>)
		{
			my @a = split ' ', $l;
			my $ok = $a[2] =~ /^\d+$/;
			push @tx, {
				end => $a[4] * 1_000_000 + $a[5],
				lat => $ok ? $a[2] + 0 : undef,
				ok => $ok,
				file => $f
			};
		}
	}
	return [ sort { $a->{end} <=> $b->{end} } @tx ];
}

# Aggregate log lines, the threads' files summed per interval start (s).
sub read_agg_log
{
	my %iv;
	for my $f (@_)
	{
		open my $fh, '<', $f or die "$f: $!";
		while (my $l = <$fh>)
		{
			my @a = split ' ', $l;
			my $r = $iv{ $a[0] } //= { start => $a[0], n => 0, sum => 0, min => undef, max => 0 };
			$r->{n} += $a[1];
			$r->{sum} += $a[2];
			$r->{min} = $a[4] if $a[1] > 0 && (!defined $r->{min} || $a[4] < $r->{min});
			$r->{max} = $a[5] if $a[5] > $r->{max};
		}
	}
	return \%iv;
}

# The nearest rank: the ceil(p * n)-th smallest of the sorted values.
sub nearest_rank
{
	my ($sorted, $p) = @_;
	my $r = ceil($p * scalar(@$sorted));
	$r = 1 if $r < 1;
	return $sorted->[ $r - 1 ];
}

# Length of the union of [lo, hi] pieces.
sub union_length
{
	my $len = 0;
	my $reach;
	for my $p (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @_)
	{
		my $lo = defined $reach && $reach > $p->[0] ? $reach : $p->[0];
		$len += $p->[1] - $lo if $p->[1] > $lo;
		$reach = $p->[1] if !defined $reach || $p->[1] > $reach;
	}
	return $len;
}

# The recordings: [first snapshot, last snapshot] of each segment, in us.
sub segments
{
	my @s;
	for my $l (split /\n/, $node->safe_psql('postgres', q{
		SELECT (extract(epoch FROM min(ts)) * 1000000)::bigint, (extract(epoch FROM max(ts)) * 1000000)::bigint
		  FROM chronicle.snapshot GROUP BY segment ORDER BY 1}))
	{
		push @s, [ split /\|/, $l ];
	}
	return \@s;
}

# Where an end time falls: segment k (2k - 1), the gap after it (2k), or
# before the first (0).
sub stretch
{
	my ($t, $segs) = @_;
	my $k = 0;
	for my $i (0 .. $#$segs)
	{
		last if $t < $segs->[$i][0];
		$k = $t <= $segs->[$i][1] ? 2 * $i + 1 : 2 * $i + 2;
	}
	return $k;
}

# A whole run from its transactions: time from the first start to the last
# end of each recording, and of each log file's transactions in a gap
# (a gap may hold a server stop, and a pgbench process does not outlive
# one), their union.
sub ref_summary
{
	my ($tx, $segs) = @_;
	my %span;
	for my $t (@$tx)
	{
		my $k = stretch($t->{end}, $segs);
		$k .= "|$t->{file}" if $k % 2 == 0;
		my $s = $t->{end} - ($t->{lat} // 0);
		$span{$k}[0] = $s if !defined $span{$k}[0] || $s < $span{$k}[0];
		$span{$k}[1] = $t->{end} if !defined $span{$k}[1] || $t->{end} > $span{$k}[1];
	}
	my @lat = sort { $a <=> $b } map { $_->{lat} } grep { $_->{ok} } @$tx;
	my $secs = union_length(values %span) / 1e6;
	return {
		n => scalar(@lat),
		seconds => $secs,
		tps => @lat / $secs,
		mean => sum(@lat) / @lat,
		min => $lat[0],
		max => $lat[-1],
		p50 => nearest_rank(\@lat, 0.5),
		p90 => nearest_rank(\@lat, 0.9),
		p99 => nearest_rank(\@lat, 0.99),
	};
}

# The snapshot intervals (start, end] of a run's window, as
# chronicle.intervals() lists them (the same half-open windows), in us.
sub run_intervals
{
	my ($label) = @_;
	my @iv;
	for my $l (split /\n/, $node->safe_psql('postgres', qq{
		SELECT (extract(epoch FROM i.interval_start) * 1000000)::bigint,
		       (extract(epoch FROM i.interval_end) * 1000000)::bigint,
		       (extract(epoch FROM i.segment) * 1000000)::bigint
		  FROM chronicle.run_window('$label') w, chronicle.intervals(w.run_from, w.run_to) i
		 ORDER BY 2}))
	{
		my ($s, $e, $seg) = split /\|/, $l;
		push @iv, { start => $s, end => $e, seg => $seg };
	}
	return \@iv;
}

# The rate of an interval of $len_us microseconds the runs were active in
# for $cov_us of them (at all if $active), with $n_rate transactions
# counting for the rate: over the whole interval when active all of it,
# none (partial) when in part of it, 0 when not at all.
sub ref_rate
{
	my ($active, $n_rate, $cov_us, $len_us) = @_;
	my $partial = $active && $cov_us < $len_us ? 1 : 0;
	my $tps = !$active ? 0 : $partial ? undef : $n_rate / ($cov_us / 1e6);
	return ($tps, $partial);
}

# Per interval from the transactions: those ending in (start, end]; the
# part of it between the first start and the last end of the run's
# transactions ending in the same recording, and the rate.
sub ref_intervals
{
	my ($tx, $ivs, $segs) = @_;
	my %span;
	for my $t (@$tx)
	{
		my ($seg) = grep { $t->{end} >= $_->[0] && $t->{end} <= $_->[1] } @$segs;
		next unless $seg;
		my $s = $t->{end} - ($t->{lat} // 0);
		my $sp = $span{ $seg->[0] } //= [ $s, $t->{end} ];
		$sp->[0] = $s if $s < $sp->[0];
		$sp->[1] = $t->{end} if $t->{end} > $sp->[1];
	}
	my @out;
	for my $iv (@$ivs)
	{
		my @lat = sort { $a <=> $b }
		  map { $_->{lat} } grep { $_->{ok} && $_->{end} > $iv->{start} && $_->{end} <= $iv->{end} } @$tx;
		my $sp = $span{ $iv->{seg} };
		my $cov = 0;
		if ($sp)
		{
			my $lo = max($sp->[0], $iv->{start});
			my $hi = min($sp->[1], $iv->{end});
			$cov = $hi - $lo if $hi > $lo;
		}
		my ($tps, $partial) = ref_rate(@lat || $cov > 0, scalar(@lat), $cov, $iv->{end} - $iv->{start});
		push @out, {
			end => $iv->{end},
			n => scalar(@lat),
			active => $cov / 1e6,
			tps => $tps,
			partial => $partial,
			p50 => @lat ? nearest_rank(\@lat, 0.5) : undef,
			p90 => @lat ? nearest_rank(\@lat, 0.9) : undef,
			p99 => @lat ? nearest_rank(\@lat, 0.99) : undef,
		};
	}
	return \@out;
}

# Per interval from an aggregate log: pgbench logs no finer time than
# $secs, so each aggregation interval's transactions are spread evenly over
# it (the first of an unbroken sequence, partial, from the run's start
# $started, in us, when that is later); an interval has the whole
# transactions of the spread that reach it (the rounded cumulative spread
# at its end minus that at its start), the rate of the complete
# aggregation intervals over the part of it they cover, and the latency
# mean of those overlapping it, weighted by their share in it.
sub ref_agg_intervals
{
	my ($agg, $ivs, $secs, $started) = @_;
	my @rows;
	for my $r (values %$agg)
	{
		my $complete = exists $agg->{ $r->{start} - $secs };
		my $hi = ($r->{start} + $secs) * 1_000_000;
		my $lo = $r->{start} * 1_000_000;
		$lo = $started if !$complete && $started > $lo && $started < $hi;
		push @rows, { %$r, lo => $lo, hi => $hi, complete => $complete };
	}
	my $spread = sub {
		my ($t) = @_;
		my $c = 0;
		for my $r (@rows)
		{
			my $w = ($t - $r->{lo}) / ($r->{hi} - $r->{lo});
			$c += $r->{n} * ($w < 0 ? 0 : $w > 1 ? 1 : $w);
		}
		return POSIX::floor($c + 0.5);
	};
	my @out;
	for my $iv (@$ivs)
	{
		my ($n_rate, $nw, $sum, @cov) = (0, 0, 0);
		for my $r (@rows)
		{
			my $lo = max($r->{lo}, $iv->{start});
			my $hi = min($r->{hi}, $iv->{end});
			next unless $hi > $lo;
			my $w = ($hi - $lo) / ($r->{hi} - $r->{lo});
			$nw += $r->{n} * $w;
			$sum += $r->{sum} * $w;
			next unless $r->{complete};
			$n_rate += $r->{n} * $w;
			push @cov, [ $lo, $hi ];
		}
		my $n = $spread->($iv->{end}) - $spread->($iv->{start});
		my $cov = union_length(@cov);
		my ($tps, $partial) = ref_rate($n > 0 || $nw > 0 || $cov > 0, $n_rate, $cov, $iv->{end} - $iv->{start});
		push @out, {
			end => $iv->{end},
			n => $n,
			active => $cov / 1e6,
			tps => $tps,
			partial => $partial,
			mean => $nw > 0 ? $sum / $nw : undef,
		};
	}
	return \@out;
}

# --- comparisons -------------------------------------------------------------

my ($checked, $worst) = (0, 0);

sub close_to
{
	my ($got, $want, $rel) = @_;
	return !defined $got && !defined $want if !defined $got || !defined $want;
	my $d = abs($got - $want) / (abs($want) > 1e-12 ? abs($want) : 1);
	$worst = $d if $d > $worst;
	return $d <= $rel;
}

sub ms_is_us
{
	my ($ms, $us) = @_;
	return !defined $ms && !defined $us if !defined $ms || !defined $us;
	return sprintf('%.0f', $ms * 1000) == $us;
}

sub app_summary
{
	my ($label) = @_;
	my @f = split /\|/, $node->safe_psql('postgres', qq{
		SELECT transactions, seconds, tps, latency_mean_ms, latency_min_ms, latency_max_ms,
		       latency_p50_ms, latency_p90_ms, latency_p99_ms, basis
		  FROM chronicle.app_summary('$label')});
	my %s;
	@s{qw(n seconds tps mean min max p50 p90 p99 basis)} = map { $_ eq '' ? undef : $_ } @f;
	return \%s;
}

sub check_summary
{
	my ($label, $ref) = @_;
	my $s = app_summary($label);
	is($s->{n}, $ref->{n}, "$label: app_summary transactions = the log's ($ref->{n})");
	ok(close_to($s->{seconds}, $ref->{seconds}, 1e-9),
		"$label: app_summary seconds = the log's first start .. last end ($s->{seconds} / $ref->{seconds})");
	ok(close_to($s->{tps}, $ref->{tps}, 1e-9), "$label: app_summary tps = the log's ($s->{tps} / $ref->{tps})");
	ok(close_to($s->{mean}, $ref->{mean} / 1000, 1e-9), "$label: latency mean = the log's");
	ok( ms_is_us($s->{min}, $ref->{min}) && ms_is_us($s->{max}, $ref->{max}),
		"$label: latency min and max = the log's");
	ok( ms_is_us($s->{p50}, $ref->{p50}) && ms_is_us($s->{p90}, $ref->{p90})
		  && ms_is_us($s->{p99}, $ref->{p99}),
		"$label: p50/p90/p99 = the log's nearest ranks ($s->{p50}/$s->{p90}/$s->{p99} ms vs $ref->{p50}/$ref->{p90}/$ref->{p99} us)");
	$checked += 8;
	return $s;
}

# app_intervals() of a run against the reference, interval by interval, and
# the timeline of the run's window against app_intervals().
sub check_intervals
{
	my ($label, $ref, %opt) = @_;
	my @rows = map { [ map { $_ eq '' ? undef : $_ } split /\|/ ] } split /\n/,
	  $node->safe_psql('postgres', qq{
		SELECT (extract(epoch FROM interval_end) * 1000000)::bigint, transactions, active_seconds, tps,
		       latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_mean_ms, partial::int
		  FROM chronicle.app_intervals('$label') ORDER BY interval_end});
	is(scalar(@rows), scalar(@$ref),
		"$label: app_intervals has the run window's intervals, as intervals() and the _deltas functions (" . scalar(@$ref) . ')');
	my @bad;
	for my $i (0 .. $#$ref)
	{
		my ($r, $g) = ($ref->[$i], $rows[$i]);
		my $ok = defined $g && $g->[0] == $r->{end} && $g->[1] == $r->{n}
		  && close_to($g->[2], $r->{active}, 1e-9) && close_to($g->[3], $r->{tps}, 1e-9)
		  && $g->[8] == $r->{partial};
		if ($opt{agg})
		{
			$ok &&= !defined $g->[4] && close_to($g->[7], defined $r->{mean} ? $r->{mean} / 1000 : undef, 1e-9);
		}
		else
		{
			$ok &&= ms_is_us($g->[4], $r->{p50}) && ms_is_us($g->[5], $r->{p90}) && ms_is_us($g->[6], $r->{p99});
		}
		$checked += 7;
		push @bad, sprintf('interval %d: got %s, want n=%s active=%s tps=%s partial=%s p50/p90/p99=%s/%s/%s', $i,
			join('/', map { $_ // 'NULL' } @{ $g // [] }),
			map { $_ // 'NULL' } @$r{qw(n active tps partial p50 p90 p99)})
		  unless $ok;
	}
	is(scalar(@bad), 0,
		"$label: every interval's transactions, active seconds, tps (none where partial) and percentiles = the log's")
	  or diag(join("\n", @bad));
	my $partial = grep { $_->{partial} } @$ref;
	note "$label: " . scalar(@$ref) . " intervals, $partial partial";
	return if defined $opt{timeline} && !$opt{timeline};
	my $tl = $node->safe_psql('postgres', qq{
		SELECT count(*), count(*) FILTER (WHERE t.tps IS NOT DISTINCT FROM a.tps
		                                    AND t.latency_p50_ms IS NOT DISTINCT FROM a.latency_p50_ms
		                                    AND t.latency_p99_ms IS NOT DISTINCT FROM a.latency_p99_ms)
		  FROM chronicle.run_window('$label') w
		  JOIN LATERAL chronicle.timeline(w.run_from, w.run_to, waits => false) t ON true
		  JOIN chronicle.app_intervals('$label') a USING (interval_end)});
	my ($n, $eq) = split /\|/, $tl;
	ok($n > 0 && $n == $eq, "$label: the timeline's tps, p50 and p99 = app_intervals' ($eq of $n)");
}

# A run $label: run_begin, pgbench @args logging to $dir/$label, the
# snapshot after it, run_end and its log loaded.  Returns pgbench's figures.
sub recorded_run
{
	my ($label, @args) = @_;
	$node->safe_psql('postgres', "SELECT chronicle.run_begin('$label')");
	my $pb = pgbench(@args, '-l', "--log-prefix=$dir/$label");
	next_snapshot();
	$node->safe_psql('postgres', "SELECT chronicle.run_end()");
	$node->safe_psql('postgres', "SELECT * FROM chronicle.load_pgbench_log('$label', '$dir/$label')");
	return $pb;
}

# The intervals add up: app_intervals' transactions, summed, = $want.
sub check_sum
{
	my ($label, $want, $what) = @_;
	my $got = $node->safe_psql('postgres',
		"SELECT coalesce(sum(transactions), 0) FROM chronicle.app_intervals('$label')");
	is($got, $want, "$label: the intervals' transactions add up to $what ($want)");
}

# A run's start, in us.
sub run_started
{
	my ($label) = @_;
	return $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM started) * 1000000)::bigint FROM chronicle.run WHERE label = '$label'");
}

# --- 1. a per-transaction log ------------------------------------------------

my $pb_tx = recorded_run('tx', '-c', '2', '-j', '2', '-T', '5');
my $tx = read_tx_log(glob("$dir/tx.*"));
my $segs = segments();
my $s = check_summary('tx', ref_summary($tx, $segs));
is($s->{n}, $pb_tx->{n}, "tx: transactions = pgbench's ($pb_tx->{n})");
ok(abs($s->{tps} / $pb_tx->{tps} - 1) < 0.01, "tx: tps within 1 % of pgbench's ($s->{tps} / $pb_tx->{tps})");
ok(abs($s->{mean} - $pb_tx->{latency_ms}) <= 0.0006,
	"tx: latency mean = pgbench's latency average ($s->{mean} / $pb_tx->{latency_ms} ms)");
check_intervals('tx', ref_intervals($tx, run_intervals('tx'), $segs));
check_sum('tx', $s->{n}, "app_summary's");
# run_summary's pgbench numbers are app_summary's
my %rs = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT metric, value FROM chronicle.run_summary('tx') WHERE metric IN ('tps', 'latency_avg_ms', 'latency_p50_ms', 'latency_p99_ms')");
ok( close_to($rs{tps}, $s->{tps}, 1e-12) && close_to($rs{latency_avg_ms}, $s->{mean}, 1e-12)
	  && close_to($rs{latency_p50_ms}, $s->{p50}, 1e-12) && close_to($rs{latency_p99_ms}, $s->{p99}, 1e-12),
	"tx: run_summary's tps, latency average, p50 and p99 = app_summary's");

# --- 2. an aggregate log -----------------------------------------------------

my $pb_agg = recorded_run('agg', '-c', '2', '-j', '2', '-T', '5', '--aggregate-interval=1');
my $agg = read_agg_log(glob("$dir/agg.*"));
my @complete = grep { exists $agg->{ $_->{start} - 1 } } values %$agg;
my $agg_n = sum(map { $_->{n} } values %$agg);
my $agg_tps = sum(map { $_->{n} } @complete) / @complete;
$s = app_summary('agg');
is($s->{n}, $agg_n, "agg: app_summary transactions = the aggregate log's ($agg_n)");
ok($s->{n} <= $pb_agg->{n}, "agg: no more than pgbench's ($pb_agg->{n}; pgbench never logs its last, partial interval)");
ok(close_to($s->{tps}, $agg_tps, 1e-9), "agg: tps = the rate of the log's complete intervals ($s->{tps} / $agg_tps)");
ok(abs($s->{tps} / $pb_agg->{tps} - 1) < 0.25, "agg: tps near pgbench's ($s->{tps} / $pb_agg->{tps})");
ok(close_to($s->{mean}, sum(map { $_->{sum} } values %$agg) / $agg_n / 1000, 1e-9),
	"agg: latency mean = the log's");
ok( ms_is_us($s->{min}, min(grep { defined } map { $_->{min} } values %$agg))
	  && ms_is_us($s->{max}, max(map { $_->{max} } values %$agg)),
	'agg: latency min and max = the log\'s');
ok(!defined $s->{p50} && !defined $s->{p99} && $s->{basis} eq 'aggregates',
	'agg: no percentiles from an aggregate log, and it says so (basis aggregates)');
$checked += 7;
my $agg_ref = ref_agg_intervals($agg, run_intervals('agg'), 1, run_started('agg'));
check_intervals('agg', $agg_ref, agg => 1);
check_sum('agg', $agg_n, "the log's");
# pgbench ran from the run's start to its last logged interval's end: no
# interval in between shows a rate of 0 (a dip that did not happen), and
# the first one has its share of the first interval's transactions.
my $agg_end = max(map { $_->{start} } values %$agg) + 1;
is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM chronicle.app_intervals('agg')
		 WHERE tps = 0 AND interval_start < to_timestamp($agg_end)}),
	0, 'agg: no interval while pgbench ran shows tps 0');
is( $node->safe_psql('postgres',
		"SELECT transactions FROM chronicle.app_intervals('agg') ORDER BY interval_end LIMIT 1"),
	$agg_ref->[0]{n}, "agg: the first interval has its share of the log's first interval ($agg_ref->[0]{n})");

# --- 3. a rate-limited run ---------------------------------------------------

my $pb_rate = recorded_run('rate', '-c', '1', '-R', '5', '-T', '6');
my $rate = read_tx_log(glob("$dir/rate.*"));
$segs = segments();
$s = check_summary('rate', ref_summary($rate, $segs));
is($s->{n}, $pb_rate->{n}, "rate: transactions = pgbench's ($pb_rate->{n})");
# The log starts at the first scheduled transaction: pgbench's time also
# holds the wait before it, which no log line records.
ok($s->{seconds} <= $pb_rate->{seconds} + 0.005,
	"rate: seconds within pgbench's ($s->{seconds} <= $pb_rate->{seconds})");
ok(abs($s->{mean} - $pb_rate->{latency_ms}) <= 0.0006,
	"rate: latency mean (from the scheduled start) = pgbench's ($s->{mean} / $pb_rate->{latency_ms} ms)");
check_intervals('rate', ref_intervals($rate, run_intervals('rate'), $segs));
check_sum('rate', $s->{n}, "app_summary's");

# --- 4. two pgbench runs around a server stop ---------------------------------

# Two 4 s runs at a fixed rate around a 4 s stop.  The recording pauses in
# the first run's last seconds (chronicle.enabled = off, which ALTER SYSTEM
# keeps across the restart) and resumes only once the second has run for a
# second: the last transactions of the first and the first of the second
# end in the gap between the two recordings, as they do when the server
# stops right after a pgbench and the next pgbench starts before the
# collector's first snapshot.  The stop is not the runs' time.
sub collector
{
	my ($on) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET chronicle.enabled = $on");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
}
sub pgbench_sessions
{
	poll_until($node, 'postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE application_name = 'pgbench'",
		"pgbench's sessions $_[0]");
}

$node->safe_psql('postgres', "SELECT chronicle.run_begin('restart')");
my $r1 = pgbench_start('-c', '2', '-j', '1', '-R', '300', '-T', '4', '-l', "--log-prefix=$dir/r1");
pgbench_sessions('run');
usleep(2_000_000);
collector('off');
poll_until($node, 'postgres', "SELECT state LIKE 'disabled%' FROM chronicle.status()",
	'the collector pauses');
my $pb_r1 = pgbench_finish($r1);
$node->stop;
usleep(4_000_000);
$node->start;
my $r2 = pgbench_start('-c', '2', '-j', '1', '-R', '300', '-T', '4', '-l', "--log-prefix=$dir/r2");
pgbench_sessions('run again');
usleep(1_000_000);
collector('on');
my $pb_r2 = pgbench_finish($r2);
next_snapshot();
$node->safe_psql('postgres', "SELECT chronicle.run_end()");
$node->safe_psql('postgres', "SELECT * FROM chronicle.load_pgbench_log('restart', '$dir/r1')");
$node->safe_psql('postgres', "SELECT * FROM chronicle.load_pgbench_log('restart', '$dir/r2')");
my $restart = read_tx_log(glob("$dir/r1.*"), glob("$dir/r2.*"));
$segs = segments();
cmp_ok(scalar(@$segs), '>=', 2, 'restart: two recordings');
my %in_gap;
for my $t (grep { $_->{ok} } @$restart)
{
	$in_gap{ $t->{file} =~ m{/r1\.} ? 'r1' : 'r2' }++ if stretch($t->{end}, $segs) % 2 == 0;
}
ok($in_gap{r1} && $in_gap{r2},
	'restart: the first run\'s last and the second\'s first transactions end in the gap ('
	  . ($in_gap{r1} // 0) . ' and ' . ($in_gap{r2} // 0) . ')');
$s = check_summary('restart', ref_summary($restart, $segs));
# The reference of pgbench's own: each run's log from its first start to
# its last end (its transactions' own times; the few ms between two
# pieces at a recording's edge aside), and its report.
my %inv;
for my $t (@$restart)
{
	my $k = $t->{file} =~ m{/r1\.} ? 'r1' : 'r2';
	my $st = $t->{end} - ($t->{lat} // 0);
	$inv{$k}[0] = $st if !defined $inv{$k}[0] || $st < $inv{$k}[0];
	$inv{$k}[1] = $t->{end} if !defined $inv{$k}[1] || $t->{end} > $inv{$k}[1];
}
my $log_secs = ($inv{r1}[1] - $inv{r1}[0] + $inv{r2}[1] - $inv{r2}[0]) / 1e6;
ok(abs($s->{seconds} / $log_secs - 1) < 0.005,
	"restart: seconds = the two runs' logs, first start to last end, without the stop ($s->{seconds} / $log_secs)");
my $pb_secs = $pb_r1->{seconds} + $pb_r2->{seconds};
my $pb_tps = ($pb_r1->{n} + $pb_r2->{n}) / $pb_secs;
is($s->{n}, $pb_r1->{n} + $pb_r2->{n}, "restart: transactions = pgbench's two runs'");
ok(abs($s->{seconds} / $pb_secs - 1) < 0.01,
	"restart: seconds = pgbench's two runs', without the downtime ($s->{seconds} / $pb_secs)");
ok(abs($s->{tps} / $pb_tps - 1) < 0.01, "restart: tps = pgbench's two runs' ($s->{tps} / $pb_tps)");
my %rrs = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT metric, value FROM chronicle.run_summary('restart') WHERE metric = 'tps'");
ok(close_to($rrs{tps}, $s->{tps}, 1e-12), "restart: run_summary's tps = app_summary's ($rrs{tps})");
my $restart_ref = ref_intervals($restart, run_intervals('restart'), $segs);
check_intervals('restart', $restart_ref);
# The transactions that ended while nothing was recorded are in no
# interval: the intervals add up to the rest.
my $gap_n = ($in_gap{r1} // 0) + ($in_gap{r2} // 0);
check_sum('restart', $s->{n} - $gap_n, "app_summary's but the $gap_n that ended in the gap");

# --- 5. a run created from its log, starting mid-interval -------------------

$node->safe_psql('postgres',
	"SELECT * FROM chronicle.load_pgbench_log('tx_created', '$dir/tx', create_run => true)");
$s = check_summary('tx_created', ref_summary($tx, $segs));
my $ref = ref_intervals($tx, run_intervals('tx_created'), $segs);
# (not against the timeline: it sums every run's log, and this one is
# tx's again)
check_intervals('tx_created', $ref, timeline => 0);
# It starts and ends mid-interval: its first and last intervals are
# partial, without a rate, and the last holds its last transactions.
my @got = split /\n/, $node->safe_psql('postgres',
	"SELECT coalesce(tps::text, 'NULL') || ' ' || partial FROM chronicle.app_intervals('tx_created') ORDER BY interval_end");
ok(@got >= 3 && $got[0] eq 'NULL true' && $got[-1] eq 'NULL true' && $ref->[0]{active} < 0.5,
	"tx_created: its first and last intervals are partial, without a rate ($got[0], $got[-1]; $ref->[0]{active} s of the first)");
check_sum('tx_created', $s->{n}, "app_summary's, its last transactions too");
is( $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM chronicle.app_intervals('tx_created'))
		     = (SELECT count(*) FROM chronicle.run_window('tx_created') w, chronicle.wal_deltas(w.run_from, w.run_to))}),
	't', 'tx_created: as many intervals as wal_deltas() of the run');

note "figures: $checked values compared with the references, largest relative difference $worst";

# --- 6. the recorder does not record itself ------------------------------------

my $own = q{
	(query LIKE 'INSERT INTO chronicle.%'
	 OR query LIKE 'SELECT n.nspname::text, a.name::text FROM pg_catalog.pg_extension%'
	 OR query LIKE 'SELECT s.userid::pg_catalog.oid%'
	 OR query LIKE 'SELECT segment FROM chronicle.snapshot%')};
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_statements WHERE $own"),
	'0', "the collector's statements are not in pg_stat_statements");
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.statements_history h JOIN chronicle.statements_text t USING (dbid, queryid) WHERE $own"),
	'0', "nor in the statements history");
cmp_ok( $node->safe_psql('postgres', q{
		SELECT count(DISTINCT h.queryid) FROM chronicle.statements_history h
		  JOIN chronicle.statements_text t USING (dbid, queryid)
		 WHERE t.query LIKE 'UPDATE pgbench_%'}),
	'==', 3, 'the statements history has pgbench\'s statements');
# chronicle.snapshot() from SQL: its statements are nested (tracked with
# track = all only); it turns tracking off for them, and the setting back.
is( $node->safe_psql('postgres', qq{
		SET pg_stat_statements.track = 'all';
		SELECT chronicle.snapshot() IS NOT NULL;
		SELECT current_setting('pg_stat_statements.track')
		       || ' ' || (SELECT count(*) FROM pg_stat_statements WHERE $own)
		       || ' ' || (SELECT count(*) FROM pg_stat_statements WHERE query LIKE 'SELECT chronicle.snapshot()%')}),
	"t\nall 0 1", 'chronicle.snapshot() under track = all: its own statements untracked, the call itself tracked');

$node->stop;
done_testing();
