# The recorded counters against an independent reference: while pgbench
# runs and the collector records every 500 ms, psql reads pg_stat_io,
# pg_stat_wal, pg_stat_database, pg_stat_checkpointer and pg_stat_bgwriter
# about ten times a second into a file, nothing of the extension involved.
#
# Bracketing.  The collector and the reader read the same shared statistics
# (backends flush into them at most once a second, but both see the same
# flushed values, so the flush lag moves both alike).  A snapshot's ts is
# taken before its sources are read and duration_ms after, so its reads lie
# in [ts, ts + duration_ms].  Each reading of the reference is one
# statistics snapshot (stats_fetch_consistency = snapshot) taken between two
# clock_timestamp() calls t0 and t1.  So every counter the collector recorded
# lies between the last reading with t1 <= ts and the first with
# t0 >= ts + duration_ms: exactly, no slack.  A bracket across which the
# reference itself saw a reset (stats_reset changed or a counter went down)
# is not checked; it is counted.  Sparse rows are checked as the analysis
# reads them: a key without a row at a snapshot has its latest earlier value
# in the segment.
#
# Then: window totals equal the recorded values' difference at the window's
# edges (also across a gap between segments), and a pg_stat_reset_shared('io')
# plus pg_stat_reset() mid-run and an immediate restart give no rate across
# them while the reference shows the jump.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until worker_recording);
use Time::HiRes qw(usleep);
use JSON::PP;
use List::Util qw(max);

my $node = chronicle_node('reference',
	statements => 1,
	conf => q{
chronicle.snapshot_interval = '500ms'
track_io_timing = on
track_wal_io_timing = on
});
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ], 'pgbench -i');
worker_recording($node, 2, 'the worker records');

my $json = JSON::PP->new;
sub jquery { return $json->decode($node->safe_psql('postgres', $_[0]) || 'null') || [] }

# The sources: view, key columns, and the counters both the history table
# and the view have (what differs between 17 and 18 drops out).
my %src = (
	io => { view => 'pg_stat_io', keys => [qw(backend_type object context)] },
	wal => { view => 'pg_stat_wal', keys => [] },
	database => { view => 'pg_stat_database', keys => ['datid'] },
	checkpointer => { view => 'pg_stat_checkpointer', keys => [] },
	bgwriter => { view => 'pg_stat_bgwriter', keys => [] });
for my $s (sort keys %src)
{
	my $skip = join(',', map { "'$_'" } @{ $src{$s}{keys} }, qw(ts datname stats_reset op_bytes));
	$src{$s}{cols} = [ split /\n/, $node->safe_psql('postgres', qq{
		SELECT h.column_name FROM information_schema.columns h
		  JOIN information_schema.columns v USING (column_name)
		 WHERE h.table_schema = 'chronicle' AND h.table_name = '${s}_history'
		   AND v.table_schema = 'pg_catalog' AND v.table_name = '$src{$s}{view}'
		   AND h.column_name NOT IN ($skip)
		 ORDER BY h.ordinal_position}) ];
}
my $ncols = 0;
$ncols += scalar @{ $src{$_}{cols} } for keys %src;
note "sources checked: " . join(', ', map { "$_ (" . scalar(@{ $src{$_}{cols} }) . ' counters)' } sort keys %src);

sub keyof
{
	my ($s, $row) = @_;
	return join('/', map { $row->{$_} // '' } @{ $src{$s}{keys} });
}

# The reference reader: a psql script of $n readings, 100 ms apart.
my $dir = PostgreSQL::Test::Utils::tempdir;
sub reader_script
{
	my ($n) = @_;
	my $one = "BEGIN;\nSET LOCAL stats_fetch_consistency = snapshot;\n"
	  . "SELECT 'T0|' || (extract(epoch FROM clock_timestamp()) * 1e6)::bigint;\n";
	for my $s (sort keys %src)
	{
		my $cols = join(', ', @{ $src{$s}{keys} }, @{ $src{$s}{cols} }, 'stats_reset');
		$one .= "SELECT '$s|' || jsonb_agg(v)::text FROM (SELECT $cols FROM $src{$s}{view}) v;\n";
	}
	$one .= "SELECT 'T1|' || (extract(epoch FROM clock_timestamp()) * 1e6)::bigint;\n"
	  . "COMMIT;\nSELECT pg_sleep(0.1);\n";
	return $one x $n;
}

sub start_reader
{
	my ($name, $n) = @_;
	PostgreSQL::Test::Utils::append_to_file("$dir/$name.sql", reader_script($n));
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
		  '-d', $node->connstr('postgres'), '-f', "$dir/$name.sql" ],
		'>', "$dir/$name.out", '2>', "$dir/$name.err");
	# wait for its first reading
	for (1 .. 300)
	{
		last if -s "$dir/$name.out" && slurp_file("$dir/$name.out") =~ /^T1\|/m;
		usleep(100_000);
	}
	return $h;
}

# Readings: [ { t0, t1, io => { key => row }, ... } ], complete ones only.
sub read_readings
{
	my ($name) = @_;
	my (@r, $cur);
	diag(slurp_file("$dir/$name.err")) if -s "$dir/$name.err";
	for my $line (split /\n/, slurp_file("$dir/$name.out"))
	{
		if ($line =~ /^T0\|(\d+)$/) { $cur = { t0 => $1 }; }
		elsif ($line =~ /^T1\|(\d+)$/ && $cur) { $cur->{t1} = $1; push @r, $cur; undef $cur; }
		elsif ($line =~ /^(\w+)\|(.*)$/ && $cur && $src{$1})
		{
			my $s = $1;
			$cur->{$s}{ keyof($s, $_) } = $_ for @{ $json->decode($2) };
		}
	}
	return @r;
}

sub clock_us
{
	return $node->safe_psql('postgres',
		'SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint');
}

# ---------------------------------------------------------------------
# Segment A: pgbench -c 4 -T 12; at 6 s, pg_stat_reset_shared('io') and
# pg_stat_reset() (this database's counters).
# ---------------------------------------------------------------------
my $start_us = clock_us();
my $ra = start_reader('ref_a', 170);
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '12', $node->connstr('postgres') ],
	'>', \$bench_out, '2>', \$bench_err);
sleep 6;
my ($reset0, $reset1) = $node->safe_psql('postgres', q{
	SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint;
	SELECT pg_stat_reset_shared('io');
	SELECT pg_stat_reset();
	SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint}) =~ /^(\d+)\n.*\n(\d+)$/s;
die 'no reset times' unless $reset1;
$bench->finish;
like($bench_out, qr/number of transactions actually processed: \d+/, 'pgbench ran in segment A')
  or diag($bench_err);
$ra->finish;
my @ref_a = read_readings('ref_a');
cmp_ok(scalar(@ref_a), '>=', 100, 'the reference read the views ' . scalar(@ref_a) . ' times in segment A');

# ---------------------------------------------------------------------
# A gap: immediate stop (the statistics are lost, the counters restart at
# zero) and start; segment B: pgbench -c 4 -T 4.
# ---------------------------------------------------------------------
my $last_a = $node->safe_psql('postgres',
	"SELECT (extract(epoch FROM max(ts)) * 1e6)::bigint FROM chronicle.snapshot");
$node->stop('immediate');
$node->start;
poll_until($node, 'postgres',
	qq{
	SELECT count(*) >= 2 FROM chronicle.snapshot
	 WHERE collector = 'worker' AND ts > to_timestamp($last_a / 1e6)},
	'the worker records after the restart');
my $rb = start_reader('ref_b', 70);
$node->command_ok([ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '4', 'postgres' ],
	'pgbench in segment B');
$rb->finish;
my @ref_b = read_readings('ref_b');
cmp_ok(scalar(@ref_b), '>=', 40, 'the reference read the views ' . scalar(@ref_b) . ' times in segment B');
my $end_us = clock_us();
my @ref = (@ref_a, @ref_b);

# ---------------------------------------------------------------------
# Every recorded value at every snapshot between the reference's readings.
# The rows are read from the start of the first segment on: the value of a
# key at a snapshot may be its row of an earlier snapshot.
# ---------------------------------------------------------------------
my $load_us = $node->safe_psql('postgres', qq{
	SELECT (extract(epoch FROM segment) * 1e6)::bigint FROM chronicle.snapshot
	 WHERE ts > to_timestamp($start_us / 1e6) ORDER BY ts LIMIT 1});
my $win = "to_timestamp($start_us / 1e6), to_timestamp($end_us / 1e6)";
my $snaps = jquery(qq{
	SELECT json_agg(s ORDER BY s.us) FROM (
		SELECT (extract(epoch FROM ts) * 1e6)::bigint AS us,
		       (extract(epoch FROM segment) * 1e6)::bigint AS seg,
		       duration_ms, errors
		  FROM chronicle.snapshot
		 WHERE ts >= to_timestamp($load_us / 1e6) AND ts <= to_timestamp($end_us / 1e6)) s});
is(scalar(grep { $_->{errors} } @$snaps), 0, 'no snapshot had an error');
my %rows;    # source => snapshot us => [ rows ]
for my $s (sort keys %src)
{
	my $cols = join(', ', @{ $src{$s}{keys} }, @{ $src{$s}{cols} }, 'stats_reset');
	for my $r (@{ jquery(qq{
		SELECT json_agg(h) FROM (
			SELECT (extract(epoch FROM ts) * 1e6)::bigint AS us, $cols
			  FROM chronicle.${s}_history
			 WHERE ts >= to_timestamp($load_us / 1e6) AND ts <= to_timestamp($end_us / 1e6)) h}) })
	{
		push @{ $rows{$s}{ $r->{us} } }, $r;
	}
}

my ($checked, $violations, $skipped_reset, $worst, $nsnap_checked, $widest) = (0, 0, 0, 0, 0, 0);
my %value;    # snapshot us => source => key => row (carried forward)
my ($state, $seg) = ({}, -1);
my @violation_notes;
for my $sn (@$snaps)
{
	if ($sn->{seg} != $seg) { ($state, $seg) = ({}, $sn->{seg}); }
	for my $s (keys %src)
	{
		$state->{$s}{ keyof($s, $_) } = $_ for @{ $rows{$s}{ $sn->{us} } || [] };
	}
	$value{ $sn->{us} } = { map { $_ => { %{ $state->{$_} || {} } } } keys %src };

	my $read_end = $sn->{us} + $sn->{duration_ms} * 1000;
	my ($before) = reverse grep { $_->{t1} <= $sn->{us} } @ref;
	my ($after) = grep { $_->{t0} >= $read_end } @ref;
	next unless $before && $after && $after->{t0} - $before->{t1} < 2_000_000;
	$nsnap_checked++;
	$widest = max($widest, ($after->{t0} - $before->{t1}) / 1000);
	for my $s (keys %src)
	{
		for my $key (keys %{ $state->{$s} || {} })
		{
			my ($rec, $b, $a) = ($state->{$s}{$key}, $before->{$s}{$key}, $after->{$s}{$key});
			next unless $b && $a;
			for my $c (@{ $src{$s}{cols} })
			{
				my ($v, $lo, $hi) = ($rec->{$c}, $b->{$c}, $a->{$c});
				next if !defined $v && !defined $lo && !defined $hi;
				if (($b->{stats_reset} // '') ne ($a->{stats_reset} // '')
					|| (defined $lo && defined $hi && $hi < $lo))
				{
					$skipped_reset++;
					next;
				}
				$checked++;
				my $out = !defined $v || !defined $lo || !defined $hi ? 'inf'
				  : $v < $lo ? $lo - $v : $v > $hi ? $v - $hi : 0;
				next if $out eq '0';
				$violations++;
				$worst = $out if $out eq 'inf' || $worst ne 'inf' && $out > $worst;
				push @violation_notes, "$s $key $c at $sn->{us}: "
				  . join(' <= ', map { $_ // 'NULL' } $lo, $v, $hi)
				  if @violation_notes < 10;
			}
		}
	}
}
cmp_ok($nsnap_checked, '>=', 30, "$nsnap_checked snapshots bracketed by the reference");
cmp_ok($checked, '>=', 10000, "$checked recorded values checked against the reference");
is($violations, 0, 'every recorded value lies between the reference\'s readings before and after its snapshot')
  or diag(join("\n", @violation_notes));
note "bracket: $nsnap_checked snapshots, $checked values (sources × keys × counters), "
  . "$violations outside, largest distance outside $worst; widest bracket ${widest} ms; "
  . "$skipped_reset values with a reset inside their bracket not checked";

# ---------------------------------------------------------------------
# Window totals equal the recorded values' difference at the edges.
# W1: segment A before the reset; W2: after the reset, across the gap.
# ---------------------------------------------------------------------
my @sa = grep { $_->{seg} == $snaps->[0]{seg} } @$snaps;
my @sb = grep { $_->{seg} != $snaps->[0]{seg} } @$snaps;
cmp_ok(scalar(@sb), '>=', 4, 'segment B recorded');
my ($w1a) = grep { $_->{us} > $start_us + 1_000_000 } @sa;
my ($w1b) = reverse grep { $_->{us} + $_->{duration_ms} * 1000 < $reset0 } @sa;
my ($w2a) = grep { $_->{us} > $reset1 + 1_500_000 } @sa;
my @totals_windows = (
	[ 'W1 (before the reset)', $w1a->{us}, $w1b->{us}, [ [ $w1a->{us}, $w1b->{us} ] ] ],
	[ 'W2 (after the reset, across the gap)', $w2a->{us}, $sb[-1]{us},
	  [ [ $w2a->{us}, $sa[-1]{us} ], [ $sb[0]{us}, $sb[-1]{us} ] ] ]);
my ($tot_checked, $tot_worst, $tot_bad, $tot_unknown) = (0, 0, 0, 0);
my %totals_fn = (io => 'io_totals', wal => 'wal_totals', database => 'database_totals',
	checkpointer => 'checkpointer_totals', bgwriter => 'bgwriter_totals');
for my $w (@totals_windows)
{
	my ($label, $from, $to, $pieces) = @$w;
	for my $s (sort keys %src)
	{
		my $tot = jquery(qq{SELECT json_agg(t) FROM chronicle.$totals_fn{$s}(
			to_timestamp($from / 1e6), to_timestamp($to / 1e6)) t});
		for my $t (@$tot)
		{
			my $key = keyof($s, $t);
			is($t->{resets}, 0, "$label $s $key: no reset") if $t->{resets};
			for my $c (@{ $src{$s}{cols} })
			{
				my ($expect, $unknown);
				for my $p (@$pieces)
				{
					my ($x, $y) = ($value{ $p->[0] }{$s}{$key}, $value{ $p->[1] }{$s}{$key});
					# A database with no row yet where a piece starts: its
					# stats were discarded by the crash restart and come
					# back at its first connection.  Whether its first row
					# counts from zero depends on the keyframe rule of
					# born-at-zero keys (docs/analysis.md); the edges cannot say it.
					if (!$x && $y && $s eq 'database')
					{
						$unknown = 1;
						last;
					}
					next unless $x && $y && defined $x->{$c} && defined $y->{$c};
					$expect = ($expect // 0) + $y->{$c} - $x->{$c};
				}
				if ($unknown)
				{
					$tot_unknown++;
					next;
				}
				next if !defined $expect && !defined $t->{$c};
				$tot_checked++;
				my $d = defined $expect && defined $t->{$c} ? abs($expect - $t->{$c}) : 'inf';
				# float8 times: per-interval sums round in the last digits
				if ($d eq 'inf' || $d > 1e-6 * max(1, abs($expect)))
				{
					$tot_bad++;
					diag("$label $s $key $c: totals " . ($t->{$c} // 'NULL') . ', recorded difference ' . ($expect // 'NULL'))
					  if $tot_bad <= 10;
				}
				$tot_worst = $d if $d eq 'inf' || $tot_worst ne 'inf' && $d > $tot_worst;
			}
		}
	}
}
cmp_ok($tot_checked, '>=', 300, "$tot_checked window totals checked");
is($tot_bad, 0, 'window totals equal the recorded values\' difference at the edges, summed over the segments');
note "totals: $tot_checked (2 windows × sources × keys × counters), largest difference $tot_worst; "
  . "$tot_unknown values of databases without a row at the restart's keyframe not compared";

# ---------------------------------------------------------------------
# No rate across the gap or the resets.
# ---------------------------------------------------------------------
my $gap_start = $sa[-1]{us};
my $gap_end = $sb[0]{us};
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE gap_before IS NOT NULL) || '/' || count(*) FROM chronicle.segments($win)}),
	'1/2', 'two segments, the second after a gap');
for my $s (sort keys %src)
{
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM chronicle.${s}_deltas($win)
		 WHERE interval_start < to_timestamp($gap_end / 1e6) AND interval_end >= to_timestamp($gap_end / 1e6)}),
		'0', "$s: no interval spans the gap");
}
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.timeline($win)
	 WHERE interval_start < to_timestamp($gap_end / 1e6) AND interval_end >= to_timestamp($gap_end / 1e6)}),
	'0', 'timeline: no interval spans the gap');
my ($la) = reverse @ref_a;
ok($ref_b[0]{wal}{''}{wal_records} < $la->{wal}{''}{wal_records},
	"the reference shows the jump at the restart (wal_records $la->{wal}{''}{wal_records} -> $ref_b[0]{wal}{''}{wal_records})");

# The reset: one reset interval per key that went backwards, its deltas NULL;
# nowhere a negative delta.
my $rwin = "to_timestamp($reset0 / 1e6), to_timestamp(($reset1 + 2000000) / 1e6)";
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE reset) || '/' || count(*) FILTER (WHERE reset AND hits IS NULL AND reads IS NULL)
	  FROM chronicle.io_deltas($rwin, 'client backend', 'relation', 'normal')}),
	'1/1', 'pg_stat_reset_shared(io): one reset interval for client backend relation normal, no rate in it');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE reset) || '/' || count(*) FILTER (WHERE reset AND xact_commit IS NULL)
	  FROM chronicle.database_deltas($rwin, 'postgres')}),
	'1/1', 'pg_stat_reset(): one reset interval for the database, no rate in it');
is($node->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM chronicle.io_deltas($win) WHERE reads < 0 OR hits < 0 OR writes < 0 OR extends < 0 OR evictions < 0)
	     + (SELECT count(*) FROM chronicle.database_deltas($win) WHERE xact_commit < 0 OR blks_hit < 0 OR tup_returned < 0)
	     + (SELECT count(*) FROM chronicle.wal_deltas($win) WHERE wal_records < 0 OR wal_bytes < 0)}),
	'0', 'no negative delta anywhere in the window');
my ($rb4) = reverse grep { $_->{t1} <= $reset0 } @ref_a;
my ($ra4) = grep { $_->{t0} >= $reset1 } @ref_a;
my $k = 'client backend/relation/normal';
my $dbkey = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
ok($ra4->{io}{$k}{hits} < $rb4->{io}{$k}{hits}
	  && $ra4->{database}{$dbkey}{xact_commit} < $rb4->{database}{$dbkey}{xact_commit},
	"the reference shows the reset's jump (hits $rb4->{io}{$k}{hits} -> $ra4->{io}{$k}{hits}, "
	  . "commits $rb4->{database}{$dbkey}{xact_commit} -> $ra4->{database}{$dbkey}{xact_commit})");

$node->stop;
done_testing();
