# Where a run's WAL came from, chronicle.run_wal_sources(), against
# references outside the extension (issue: a select-only run recorded 8.76
# MB/s of WAL and 1,070 full-page images/s, 41 times another select-only
# run's WAL per transaction).
#
# The finding, reproduced here: a select-only run after a write load
# writes WAL by reading.  The updated rows' new versions are not yet
# hinted and the old ones are dead; each SELECT that reads such a page sets
# hint bits, and with data checksums (on by default from PostgreSQL 18's
# initdb) or wal_log_hints the first hint on a page after a checkpoint is
# logged as a full-page image (XLOG/FPI_FOR_HINT); it also prunes the dead
# tuples (Heap2/PRUNE_ON_ACCESS, with a full-page image of its own when no
# hint came first: without checksums, on 17, the same run writes as much
# WAL, all of it pruning).  pg_stat_statements counts that WAL to the
# SELECT.  On 2 cores, after 10 s of pgbench TPC-B and a CHECKPOINT,
# pgbench -S -c 4 for 8 s wrote 40 MB: 98.9 % XLOG/FPI_FOR_HINT (4,884
# records), 0.7 % Heap2/PRUNE_ON_ACCESS (4,640), 98.4 % of it counted by
# pg_stat_statements to SELECT abalance FROM pgbench_accounts (688 bytes
# per transaction against 0.8 before the write load).  The next select-only
# run wrote 15 times less: the pages were clean.
#
# The references, each read by the test:
#
# - pg_waldump --stats=record over the run's LSN range: the total WAL bytes
#   and full-page images, and which records they were.  The range is read
#   in the same transaction as the snapshots that bound the run's window
#   (the collector is off, the window's edges are those two snapshots),
#   before each snapshot reads the statistics, and every backend that wrote
#   in it has exited (flushed its WAL statistics) before the second.
# - pg_stat_statements read in the second snapshot's transaction, before
#   the snapshot reads it: the statements' WAL, split by the text of each
#   statement here.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);
use Time::HiRes qw(usleep);
use JSON::PP;

my $node = chronicle_node('wal_sources',
	init => { extra => ['--data-checksums'] },
	statements => 1,
	conf => q{
chronicle.enabled = off
autovacuum = off
checkpoint_timeout = '1h'
max_wal_size = '1GB'
wal_keep_size = '1GB'
});
$node->command_ok([ 'pgbench', '-i', '-q', '-s', '1', 'postgres' ], 'pgbench -i');
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'on', 'data checksums are on');

# A bound of a run's window: in one transaction, the WAL insert position,
# pg_stat_statements (queries and other statements, top-level, as JSON)
# and a snapshot.  Returns (lsn, statements).
sub bound
{
	my $out = $node->safe_psql('postgres', q{
		BEGIN;
		SELECT pg_current_wal_insert_lsn();
		SELECT coalesce(json_agg(json_build_object('queryid', queryid, 'query', query,
		                                           'wal_bytes', wal_bytes, 'wal_fpi', wal_fpi,
		                                           'wal_records', wal_records)), '[]')
		  FROM pg_stat_statements WHERE toplevel;
		SELECT chronicle.snapshot();
		COMMIT;});
	my ($lsn, $json) = split /\n/, $out;
	return ($lsn, JSON::PP->new->decode($json));
}

# pg_waldump over [from, to): totals, per record type (bytes, count), FPIs.
sub waldump
{
	my ($from, $to) = @_;
	my $waldir = $node->data_dir . '/pg_wal';
	my ($stdout, $stderr);
	IPC::Run::run([ 'pg_waldump', '-p', $waldir, '-s', $from, '-e', $to, '--stats=record' ],
		'>', \$stdout, '2>', \$stderr) or die "pg_waldump --stats: $stderr";
	my %r = (types => {});
	my $pct = qr/\s+(?:\(\s*[\d.]+\)|\[[^\]]*\])\s+/;
	for (split /\n/, $stdout)
	{
		# type, N (%), record size (%), FPI size (%), combined size (%);
		# Total has no % after N
		if (/^Total\s+(\d+)\s+(\d+)$pct(\d+)$pct(\d+)/) { @r{qw(records bytes)} = ($1, $4); }
		elsif (/^(\S+)\s+(\d+)$pct(\d+)$pct(\d+)$pct(\d+)/) { $r{types}{$1} = [ $2, $5 ]; }
	}
	IPC::Run::run([ 'pg_waldump', '-p', $waldir, '-s', $from, '-e', $to ],
		'>', \$stdout, '2>', \$stderr) or die "pg_waldump: $stderr";
	$r{fpi} = () = $stdout =~ /\bFPW\b/g;
	return \%r;
}

# A run: bound, run_begin, pgbench @args, its backends gone, bound,
# run_end.  Returns the two bounds.
sub run
{
	my ($label, @args) = @_;
	$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');
	my @b0 = bound();
	$node->safe_psql('postgres', "SELECT chronicle.run_begin('$label')");
	$node->command_ok([ 'pgbench', '-n', @args, 'postgres' ], "$label: pgbench " . join(' ', @args));
	poll_until($node, 'postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()},
		"$label: pgbench's sessions have ended");
	# a backend leaves pg_stat_activity before it flushes its statistics
	sleep 1;
	my @b1 = bound();
	$node->safe_psql('postgres', 'SELECT chronicle.run_end()');
	return (\@b0, \@b1);
}

# The function's rows by source.
sub sources
{
	my ($label) = @_;
	my %s;
	for (split /\n/, $node->safe_psql('postgres', qq{
		SELECT source, coalesce(statements, -1), wal_records, wal_fpi, wal_bytes, coalesce(share, 0),
		       coalesce(top_query, ''), data_checksums, wal_log_hints, full_page_writes, explanation
		  FROM chronicle.run_wal_sources('$label')}))
	{
		my @f = split /\|/;
		$s{ $f[0] } = { statements => $f[1], records => $f[2], fpi => $f[3], bytes => $f[4],
			share => $f[5], top_query => $f[6], checksums => $f[7], hints => $f[8], fpw => $f[9],
			explanation => $f[10] };
	}
	return \%s;
}

# The statements' WAL between two bounds, queries (by their text) and the
# rest: [bytes, fpi, records].
sub statements_ref
{
	my ($s0, $s1) = @_;
	my %before = map { $_->{queryid} => $_ } @$s0;
	my %ref = (select => [ 0, 0, 0 ], other => [ 0, 0, 0 ]);
	for my $s (@$s1)
	{
		my $b = $before{ $s->{queryid} } // { wal_bytes => 0, wal_fpi => 0, wal_records => 0 };
		my $k = $s->{query} =~ /^\s*(select|values|table|show|with)\b/i
		  && $s->{query} !~ /\bfor\s+(update|share)\b/i ? 'select' : 'other';
		$ref{$k}[0] += $s->{wal_bytes} - $b->{wal_bytes};
		$ref{$k}[1] += $s->{wal_fpi} - $b->{wal_fpi};
		$ref{$k}[2] += $s->{wal_records} - $b->{wal_records};
	}
	return \%ref;
}

# ---------------------------------------------------------------------
# A write load, then a CHECKPOINT, then a select-only run.
# ---------------------------------------------------------------------
my ($w0, $w1) = run('tpcb', '-c', '2', '-j', '1', '-T', '6');
$node->safe_psql('postgres', 'CHECKPOINT');
my ($r0, $r1) = run('select-only', '-S', '-c', '2', '-j', '1', '-T', '6');

for my $case ([ 'tpcb', $w0, $w1 ], [ 'select-only', $r0, $r1 ])
{
	my ($label, $b0, $b1) = @$case;
	my $s = sources($label);
	my $dump = waldump($b0->[0], $b1->[0]);
	my $st = statements_ref($b0->[1], $b1->[1]);
	my @top = sort { $dump->{types}{$b}[1] <=> $dump->{types}{$a}[1] } keys %{ $dump->{types} };
	note sprintf('%s: LSN %s .. %s; pg_waldump %d records, %d bytes, %d full-page images; top records: %s',
		$label, $b0->[0], $b1->[0], $dump->{records}, $dump->{bytes}, $dump->{fpi},
		join(', ', map { "$_ $dump->{types}{$_}[1] B ($dump->{types}{$_}[0])" } @top[ 0 .. ($#top < 3 ? $#top : 3) ]));
	note sprintf('%s: run_wal_sources: %s', $label,
		join('; ', map { "$_ $s->{$_}{bytes} B, $s->{$_}{fpi} FPI, share $s->{$_}{share}" }
			  ('queries', 'other statements', 'statements without text', 'not from a statement', 'total')));
	is(join(',', sort keys %$s),
		'not from a statement,other statements,queries,statements without text,total',
		"$label: the five rows");

	# The total: pg_stat_wal, recorded, against the WAL itself.  Only
	# background records whose statistics were not flushed yet may differ
	# (the background writer's standby snapshots, 50 bytes each).
	ok(abs($s->{total}{bytes} - $dump->{bytes}) <= 1000,
		"$label: total WAL bytes = pg_waldump's ($s->{total}{bytes}, $dump->{bytes})");
	is($s->{total}{fpi}, $dump->{fpi}, "$label: total full-page images = pg_waldump's ($dump->{fpi})");

	# The statements: pg_stat_statements read before the snapshot, by text.
	is($s->{queries}{bytes} . '/' . $s->{queries}{fpi}, "$st->{select}[0]/$st->{select}[1]",
		"$label: queries' WAL bytes/full-page images = pg_stat_statements'");
	is(($s->{'other statements'}{bytes} + $s->{'statements without text'}{bytes}) . '/'
		  . ($s->{'other statements'}{fpi} + $s->{'statements without text'}{fpi}),
		"$st->{other}[0]/$st->{other}[1]",
		"$label: other statements' WAL bytes/full-page images = pg_stat_statements'");
	my $rest = $s->{total}{bytes} - $st->{select}[0] - $st->{other}[0];
	is($s->{'not from a statement'}{bytes}, $rest < 0 ? 0 : $rest,
		"$label: not from a statement = the total less the statements ($rest)");
	is("$s->{total}{checksums}|$s->{total}{hints}|$s->{total}{fpw}", 't|f|t',
		"$label: the run's data_checksums, wal_log_hints, full_page_writes");

	if ($label eq 'tpcb')
	{
		# Commit records are written after the transaction's last statement,
		# END included: no statement counts them.
		my $commits = ($dump->{types}{'Transaction/COMMIT'} // [ 0, 0 ])->[1];
		cmp_ok($commits, '>', 0, "tpcb: pg_waldump shows commit records ($commits bytes)");
		cmp_ok($s->{'not from a statement'}{bytes}, '>=', $commits,
			'tpcb: they are in "not from a statement"');
		cmp_ok($s->{'other statements'}{share}, '>', 0.5, 'tpcb: most of the WAL is the writes\'');
	}
	else
	{
		# Reading wrote the WAL: hint bits (checksums) and pruning.
		cmp_ok($s->{queries}{share}, '>', 0.9,
			"select-only: queries wrote $s->{queries}{share} of the WAL");
		cmp_ok($s->{queries}{fpi}, '>', 0.9 * $dump->{fpi},
			"select-only: and $s->{queries}{fpi} of the $dump->{fpi} full-page images");
		like($s->{queries}{top_query}, qr/^SELECT abalance FROM pgbench_accounts/i,
			'select-only: pgbench\'s SELECT wrote the most');
		is($top[0], 'XLOG/FPI_FOR_HINT',
			'select-only: pg_waldump: full-page images for hint bits are most of the WAL');
		cmp_ok(($dump->{types}{'Heap2/PRUNE_ON_ACCESS'} // [0])->[0], '>', 0,
			'select-only: pg_waldump: pages pruned on access');
		like($s->{queries}{explanation}, qr/FPI_FOR_HINT\) because data_checksums is on.*PRUNE_ON_ACCESS/,
			'select-only: the explanation names hint bits with data_checksums, and pruning');
	}
}

# A second select-only run on pages now clean: little WAL, and the
# per-transaction figure says so.
my ($c0, $c1) = run('select-only again', '-S', '-c', '2', '-j', '1', '-T', '4');
my ($per_tx_dirty, $per_tx_clean) = split /\n/, $node->safe_psql('postgres', q{
	SELECT wal_bytes_per_transaction FROM chronicle.run_wal_sources('select-only') WHERE source = 'queries';
	SELECT wal_bytes_per_transaction FROM chronicle.run_wal_sources('select-only again') WHERE source = 'queries'});
note "queries' WAL per transaction: $per_tx_dirty bytes after the write load, $per_tx_clean on clean pages";
cmp_ok($per_tx_clean * 5, '<', $per_tx_dirty, 'a select-only run on clean pages writes far less WAL per transaction');

# Without settings (a run labelled afterwards) the settings are NULL and
# the explanation says it does not know.
my ($from, $to) = split /\|/, $node->safe_psql('postgres', q{
	SELECT started, ended FROM chronicle.run WHERE label = 'select-only'});
$node->safe_psql('postgres', "SELECT chronicle.run_label('labelled', '$from', '$to')");
my $lab = sources('labelled');
is("$lab->{total}{checksums}|$lab->{total}{hints}", '|', 'a labelled run: settings unknown');
like($lab->{queries}{explanation}, qr/the run kept no settings/, 'and the explanation says so');
is($lab->{queries}{bytes}, sources('select-only')->{queries}{bytes}, 'with the same numbers');

# Without a statements reading in the window (the source off) what the
# statements wrote is not known: NULL, not 0; all the WAL is "not from a
# statement", and the explanations say why.
$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.collect_statements = off');
$node->reload;
poll_until($node, 'postgres', q{SELECT current_setting('chronicle.collect_statements') = 'off'},
	'the statements source is off');
run('no statements', '-c', '1', '-j', '1', '-T', '2');
my $none = sources('no statements');
for my $src ('queries', 'other statements', 'statements without text')
{
	is("$none->{$src}{statements}|$none->{$src}{bytes}|$none->{$src}{fpi}", '-1||',
		"no statements recorded: $src not known (NULL)");
	like($none->{$src}{explanation}, qr/^Not known: no pg_stat_statements reading was recorded/,
		"no statements recorded: $src says why");
}
cmp_ok($none->{total}{bytes}, '>', 0, 'no statements recorded: the run wrote WAL');
is($none->{'not from a statement'}{bytes}, $none->{total}{bytes},
	'no statements recorded: all of it not from a statement');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET chronicle.collect_statements');
$node->reload;

# The SQL conventions of the other analysis functions.
is($node->safe_psql('postgres', q{
	SELECT string_agg(p.proname || ':' || array_to_string(p.proconfig, ',') || ':'
	                  || has_function_privilege('pg_monitor', p.oid, 'EXECUTE') || ':'
	                  || has_function_privilege('public', p.oid, 'EXECUTE'), ' ' ORDER BY p.proname)
	  FROM pg_proc p WHERE p.pronamespace = 'chronicle'::regnamespace
	   AND p.proname IN ('run_wal_sources', '_statement_is_query')}),
	'_statement_is_query:search_path=pg_catalog, pg_temp:true:false '
	  . 'run_wal_sources:search_path=pg_catalog, pg_temp,chronicle.origin=0:true:false',
	'search_path set, EXECUTE for pg_monitor, not PUBLIC');
is($node->safe_psql('postgres', q{
	SELECT string_agg(coalesce(q, 'NULL') || '=' || coalesce(chronicle._statement_is_query(q)::text, 'NULL'),
	                  ' ' ORDER BY o)
	  FROM unnest(ARRAY['SELECT 1', ' (select 1)', '/* c */ WITH a AS (SELECT 1) SELECT * FROM a',
	                    'SELECT * FROM t FOR UPDATE', 'SELECT 1 INTO t', 'WITH d AS (DELETE FROM t RETURNING *) SELECT 1',
	                    'UPDATE t SET a = 1', 'VALUES (1)', 'END', NULL]) WITH ORDINALITY u(q, o)}),
	'SELECT 1=true  (select 1)=true /* c */ WITH a AS (SELECT 1) SELECT * FROM a=true '
	  . 'SELECT * FROM t FOR UPDATE=false SELECT 1 INTO t=false WITH d AS (DELETE FROM t RETURNING *) SELECT 1=false '
	  . 'UPDATE t SET a = 1=false VALUES (1)=true END=false NULL=NULL',
	'_statement_is_query tells queries from other statements');

$node->stop;
done_testing();
