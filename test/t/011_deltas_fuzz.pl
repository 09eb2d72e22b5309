# chronicle._deltas(), _ends() and the public analysis functions over them,
# called a few hundred times with random and edge arguments (NULLs, empty
# and huge arrays, reversed and infinite windows, unknown sources and
# names, very long strings, 5000 repeated group_by names, other relations,
# result types that do not match) by a
# superuser, a pg_monitor member and a role without privileges.
#
# The server must never crash, and every error must carry a SQLSTATE other
# than XX000 (internal error).  Only superusers may call _deltas; the
# monitoring role must get somewhere with the public functions.
#
# The arguments come from a seeded generator: PG_CHRONICLE_FUZZ_SEED=<n>
# repeats a run, PG_CHRONICLE_FUZZ_CALLS=<n> sets the calls per role and kind.
#
# one_version: the engine fuzzed is the extension's own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use utf8;
use Encode qw(encode);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);
use List::Util qw(shuffle);

my $seed = $ENV{PG_CHRONICLE_FUZZ_SEED} // 11;
my $ncalls = $ENV{PG_CHRONICLE_FUZZ_CALLS} // 200;
srand($seed);

my $node = chronicle_node('deltas_fuzz', extensions => [], conf => q{
chronicle.database = 'postgres'
chronicle.enabled = off
});
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_chronicle;
CREATE ROLE fuzz_monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE fuzz_plain LOGIN;
});

# History: a few snapshots taken from SQL (rows in every source it reads),
# and a past window with snapshots but no row in any history table (where
# a result row used to be written past its end).
$node->safe_psql('postgres', 'SELECT chronicle.snapshot()') for 1 .. 4;
$node->safe_psql('postgres', q{
SELECT chronicle.ensure_partitions('2024-05-05', '2024-05-05');
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, '2024-05-05 00:00:01', t = '2024-05-05 00:00:01', 'sql', 0, 0, 0, 0
  FROM generate_series(timestamptz '2024-05-05 00:00:01', '2024-05-05 00:00:03', '1 s') t;
});

my $pid_before = postmaster_pid();

# ----------------------------------------------------------------------
# What there is to call: the public functions with their parameters, the
# metrics (the analysed sources: below).

my @functions;    # [name, number of required args, [[arg, type], ...]]
for my $line (split /\n/, $node->safe_psql('postgres', q{
	SELECT p.proname, p.pronargs - p.pronargdefaults,
	       array_to_string(p.proargnames[1:p.pronargs], ','),
	       array_to_string(ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) t), ',')
	  FROM pg_proc p
	 WHERE p.pronamespace = 'chronicle'::regnamespace
	   AND (p.proname ~ '_(deltas|totals|values)$' OR p.proname ~ '^_.*_sums$'
	        OR p.proname IN ('series', 'percentiles', 'timeline'))
	   AND p.proname <> '_deltas'
	 ORDER BY 1}))
{
	my ($name, $required, $names, $types) = split /\|/, $line;
	my @n = split /,/, $names;
	my @t = split /,/, $types;
	push @functions, [ $name, $required, [ map { [ $n[$_], $t[$_] ] } 0 .. $#n ] ];
}
ok(@functions >= 30, scalar(@functions) . ' public functions over the engine');

my @metrics = split /\n/, $node->safe_psql('postgres', 'SELECT metric FROM chronicle.metric ORDER BY 1');

# ----------------------------------------------------------------------
# Random values.

sub pick { return $_[ int(rand(@_)) ]; }
sub chance { return rand() < $_[0]; }

sub lit
{
	my ($s) = @_;
	return 'NULL' unless defined $s;
	$s =~ s/'/''/g;
	return "'$s'";
}

sub arr
{
	my @e = @_;
	return 'ARRAY[]::text[]' unless @e;
	return 'ARRAY[' . join(', ', map { lit($_) } @e) . ']::text[]';
}

my $long = 'x' x 100_000;
my @odd_names = ('', ' ', 'ts', 'ctid', 'xmin', 'no_such_column', 'Reads', 'reads;drop',
	"a'b", 'a"b', "\\", 'é' x 40, 'y' x 64, $long);

sub odd_name { return pick(@odd_names); }

my @windows = (
	[ 'NULL', 'now()' ],
	[ "now() - interval '1 h'", 'NULL' ],
	[ 'now()', "now() - interval '1 h'" ],    # reversed
	[ "'-infinity'", "'infinity'" ],
	[ "'-infinity'", "'-infinity'" ],
	[ "'infinity'", "'infinity'" ],
	[ "now() - interval '1 h'", 'now()' ],
	[ "now() - interval '1 h'", 'now()' ],
	[ "'2024-05-05'", "'2024-05-06'" ],     # snapshots, no rows
	[ "'2024-05-05'", "'2024-05-06'" ],
	[ "'2024-05-05 00:00:02'", "'2024-05-05 00:00:02'" ],
	[ "'epoch'", "'epoch'" ],
	[ "'294276-12-31'", "'4713-01-01 BC'" ],
);

sub window { return @{ pick(@windows) }; }

# ----------------------------------------------------------------------
# _deltas: a call that adds up for an analysed source (its filter values,
# the result type its per-interval function or group sums give), then
# (mostly) one thing broken.  The engine describes the source from its C
# declaration: what a caller chooses is the source's name, the window,
# the filter values, group_by, the exclusions and the relation it reads.

my %analysed;    # source => {result => [types], sums => [types], keys => {name => type}, nfilters => n}
for my $line (split /\n/, $node->safe_psql('postgres', q{
	SELECT a.source, cardinality(a.filters),
	       (SELECT string_agg(c.column_name || ':' || format_type(c.column_type, NULL), ',' ORDER BY c.ordinal)
	          FROM chronicle._source_columns() c WHERE c.source = a.source AND c.kind = 'key'),
	       (SELECT string_agg(format_type(x.t, NULL), ',' ORDER BY x.o)
	          FROM pg_proc p, unnest(p.proallargtypes, p.proargmodes) WITH ORDINALITY AS x(t, m, o)
	         WHERE p.oid = coalesce(to_regproc('chronicle.' || a.prefix || '_deltas'),
	                                to_regproc('chronicle.' || a.prefix || '_values')) AND x.m = 't'),
	       (SELECT string_agg(format_type(x.t, NULL), ',' ORDER BY x.o)
	          FROM pg_proc p, unnest(p.proallargtypes, p.proargmodes, p.proargnames) WITH ORDINALITY AS x(t, m, n, o)
	         WHERE p.oid = to_regproc('chronicle._' || a.prefix || '_sums') AND x.m = 't' AND x.n <> 'grp')
	  FROM chronicle._source_analysis() a}))
{
	my ($src, $nf, $keys, $result, $sums) = split /\|/, $line;
	$analysed{$src} = {
		nfilters => $nf,
		keys => { map { split /:/ } split /,/, ($keys // '') },
		result => [ split /,/, $result ],
		sums => $sums ? [ split /,/, $sums ] : undef };
}
my @sources = sort keys %analysed;
ok(@sources >= 10, scalar(@sources) . ' analysed sources');

my @relations = ("'pg_catalog.pg_class'", '0', "'chronicle.snapshot'", "'chronicle.metric'",
	"'pg_catalog.pg_class_oid_index'", "'chronicle.no_such_table'", '4294967295',
	"'chronicle.io_history'", "'chronicle.wal_history'", "'chronicle.waits_history'");

sub deltas_call
{
	my $src = pick(@sources);
	my $a = $analysed{$src};
	my @keys = sort keys %{ $a->{keys} };
	my %arg = (source => lit($src), changed_only => pick('true', 'false'));
	($arg{from_ts}, $arg{to_ts}) = window();
	$arg{filter_vals} = pick('NULL', arr(map { pick(undef, 'client backend', 'relation', 'postgres', 'IO', 'nothing matches') }
			1 .. $a->{nfilters}));
	my @result = @{ $a->{result} };
	if (@keys && $a->{sums} && chance(0.3))
	{
		my @g = grep { chance(0.5) } @keys;
		$arg{group_by} = arr(@g);
		@result = (@{ $a->{sums} }[ 0 .. 2 ], (map { $a->{keys}{$_} } @g), @{ $a->{sums} }[ 3 .. $#{ $a->{sums} } ]);
	}
	if (chance(0.2))
	{
		my @text = grep { $a->{keys}{$_} eq 'text' } @keys;
		($arg{exclude_cols}, $arg{exclude_vals}) = (arr(pick(@text, 'backend_type')), arr('wal')) if @text;
	}
	my $what = chance(0.75) ? int(rand(12)) : -1;
	if ($what == 0) { $arg{source} = lit(pick(odd_name(), 'statements', 'os_process_io', 'wait', 'IO')) }
	elsif ($what == 1) { $arg{filter_vals} = arr(map { pick('x', undef, $long) } 0 .. int(rand(6))) }
	elsif ($what == 2) { $arg{filter_vals} = "array_fill('x'::text, ARRAY[" . pick(2000, 100_000) . "])" }
	elsif ($what == 3) { $arg{group_by} = "array_fill(" . lit(pick(@keys, 'backend_type', 'reads')) . "::text, ARRAY[5000])" }
	elsif ($what == 4) { $arg{group_by} = arr(pick(@keys, 'ts', 'reads', odd_name()), pick(@keys, odd_name())) }
	elsif ($what == 5) { $arg{ pick(qw(source from_ts to_ts changed_only exclude_cols exclude_vals)) } = 'NULL' }
	elsif ($what == 6) { $arg{tbl} = pick(@relations) }
	elsif ($what == 7)
	{
		$arg{exclude_cols} = "array_fill('backend_type'::text, ARRAY[1001])";
		$arg{exclude_vals} = "array_fill('x'::text, ARRAY[1001])";
	}
	elsif ($what == 8) { ($arg{exclude_cols}, $arg{exclude_vals}) = (arr(pick('reads', 'ts', odd_name())), arr(odd_name())) }
	elsif ($what == 9) { $arg{filter_vals} = "ARRAY[ARRAY['x', 'y'], ARRAY['z', 'w']]::text[]" }
	elsif ($what == 10)    # a result type that is not the source's
	{
		my $how = int(rand(5));
		if ($how == 0) { @result = ('integer') }
		elsif ($how == 1) { pop @result }
		elsif ($how == 2) { push @result, 'bigint' }
		elsif ($how == 3) { $result[ int(rand(@result)) ] = pick('integer', 'text', 'numeric', 'bigint', 'boolean') }
		else { @result = () }    # no column definition list
	}
	elsif ($what == 11) { $arg{group_by} = arr() }
	# else: leave it valid (the window alone may be odd)
	my $fn = chance(0.15) ? '_ends' : '_deltas';
	my @order = $fn eq '_ends' ? qw(source from_ts to_ts) : qw(source from_ts to_ts filter_vals changed_only);
	my @given = map { $arg{$_} } @order;
	push @given, map { "$_ => $arg{$_}" } grep { defined $arg{$_} }
	  ($fn eq '_ends' ? ('tbl') : qw(group_by exclude_cols exclude_vals tbl));
	return "SELECT * FROM chronicle.$fn(" . join(', ', @given) . ')'
	  . (@result ? ' AS d(' . join(', ', map { "c$_ $result[$_]" } 0 .. $#result) . ')' : '');
}

# ----------------------------------------------------------------------
# The public functions: named arguments, each optional one given or not.

sub value_for
{
	my ($name, $type) = @_;
	if ($type eq 'text')
	{
		return lit(pick(@metrics, 'nonsense', 'io.reads_per_s', $long, undef)) if $name eq 'metric';
		return lit(pick('backend_type', 'object', 'device', 'resource', 'reads', 'ts', undef, odd_name()))
		  if $name eq 'by';
		return lit(pick(undef, undef, 'client backend', 'relation', 'normal', 'wal', 'postgres', 'IO',
			'Lock', 'some', 'sda', '', odd_name()));
	}
	if ($type eq 'text[]')
	{
		return pick('NULL', 'ARRAY[]::text[]', "'{object}'", "'{wal}'", "'{NULL}'", "'{object,device}'",
			"array_fill('object'::text, ARRAY[5000])", "array_fill('wal'::text, ARRAY[5000])");
	}
	if ($type eq 'double precision[]')
	{
		return pick('NULL', "'{}'", "'{0.5}'", "'{0,1}'", "'{0.5,NULL}'", "'{NaN}'", "'{-1,2}'",
			"'{Infinity}'", "ARRAY(SELECT random() FROM generate_series(1, 5000))");
	}
	return pick('true', 'false', 'NULL') if $type eq 'boolean';
	return pick('NULL', '0', '-1', '5', '2147483647') if $type eq 'integer';
	die "no values for $name of type $type";
}

sub public_call
{
	my ($name, $required, $args) = @{ pick(@functions) };
	my ($from, $to) = window();
	my @given;
	for my $i (0 .. $#$args)
	{
		my ($arg, $type) = @{ $args->[$i] };
		next if $i >= $required && chance(0.5);
		my $v = $arg eq 'from_ts' ? $from : $arg eq 'to_ts' ? $to
		  : $type eq 'timestamp with time zone' ? pick('now()', 'NULL', "'infinity'")
		  : value_for($arg, $type);
		push @given, "$arg => $v";
	}
	return "SELECT * FROM chronicle.$name(" . join(', ', @given) . ')';
}

# ----------------------------------------------------------------------
# Run the calls of each role in one session: try() returns the SQLSTATE
# (or "ok") of each, so the session goes on after an error; a crash would
# end it early.

# First the inputs that crashed the server before 0.2.0: a single-row
# source with snapshots but no row in the window, and a result shorter
# than the description (its row was written past its end); 5000 repeated
# group_by names (the type check array was sized from the keys).
my $wal = q{'wal', '2024-05-05', '2024-05-06'};
my $io = q{'io', now() - interval '1 h', now(), NULL, true};
my @edges = (
	"SELECT * FROM chronicle._deltas($wal) AS d(a integer)",
	"SELECT * FROM chronicle._deltas($wal) AS d(a timestamptz, b timestamptz, c float8, d boolean)",
	"SELECT * FROM chronicle._deltas($io, array_fill('backend_type'::text, ARRAY[5000])) AS d(a integer)",
	"SELECT * FROM chronicle._deltas($io, array_fill('backend_type'::text, ARRAY[5000])) AS d("
	  . join(', ', map { "c$_ text" } 1 .. 1000) . ')',
	"SELECT * FROM chronicle._deltas($io, '{object,object}') AS d(a timestamptz, b timestamptz, c float8, d text, e text, r boolean, x bigint, y float8)",
	"SELECT * FROM chronicle._deltas(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) AS d(a integer)",
	"SELECT * FROM chronicle._deltas($io, NULL, array_fill('backend_type'::text, ARRAY[100000]), array_fill('x'::text, ARRAY[100000])) AS d(a integer)",
);

my @calls = ((map { [ '_deltas', $_ ] } @edges),
	(map { [ '_deltas', deltas_call() ] } 1 .. $ncalls),
	(map { [ 'public', public_call() ] } 1 .. $ncalls));
my $ndeltas = $ncalls + @edges;

my %summary;    # role => kind => state => count
my %reached;    # role => kind => calls that ran in the engine or succeeded
my @internal;
my $tried = 0;
for my $role (qw(superuser fuzz_monitor fuzz_plain))
{
	my $script = q{
SET statement_timeout = '60s';
CREATE FUNCTION pg_temp.try(n integer, q text) RETURNS text LANGUAGE plpgsql AS $try$
DECLARE
	st text;
	msg text;
BEGIN
	EXECUTE q;
	RETURN n || ' ok -';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	-- and whether the engine itself refused the call
	RETURN n || ' ' || coalesce(nullif(st, ''), 'none') || ' '
		|| CASE WHEN msg LIKE 'chronicle.\_deltas:%' THEN 'engine' ELSE '-' END;
END
$try$;
};
	for my $i (0 .. $#calls)
	{
		$script .= "SELECT pg_temp.try($i, " . lit($calls[$i][1]) . ");\n";
	}
	# (from a file: a psql that loses its server stops reading stdin)
	my $file = "$PostgreSQL::Test::Utils::tmp_check/deltas_fuzz_$role.sql";
	append_to_file($file, encode('UTF-8', $script));
	my ($out, $err) = ('', '');
	$node->psql('postgres', '', stdout => \$out, stderr => \$err, on_error_stop => 0,
		extra_params => [ ($role eq 'superuser' ? () : ('-U', $role)), '-f', $file ],
		timeout => 4 * $PostgreSQL::Test::Utils::timeout_default);
	my (%state, %engine);
	for (split /\n/, $out)
	{
		next unless /^(\d+) (\S+) (\S+)$/;
		$state{$1} = $2;
		$engine{$role}{ $calls[$1][0] }++ if $3 eq 'engine' || $2 eq 'ok';
	}
	$reached{$role} = $engine{$role};
	is(scalar(keys %state), scalar(@calls), "$role: every call returned (the session survived)")
	  or diag("psql: $err");
	$tried += keys %state;
	for my $i (sort { $a <=> $b } keys %state)
	{
		my ($kind, $sql) = @{ $calls[$i] };
		$summary{$role}{$kind}{ $state{$i} }++;
		push @internal, "$role: $state{$i}: " . substr($sql, 0, 400)
		  if $state{$i} eq 'XX000' || $state{$i} eq 'none';
	}
}

# ----------------------------------------------------------------------
# What it must show.

is(scalar(@internal), 0, 'no error without a SQLSTATE or with XX000 (internal error)')
  or diag(join("\n", @internal[ 0 .. ($#internal < 9 ? $#internal : 9) ]));

my $log = slurp_file($node->logfile);
my $crashes = () = $log =~ /terminated by signal/g;
is($crashes, 0, 'no backend was terminated by a signal');
my @restarts = grep { /all server processes terminated; reinitializing|TRAP:/ } split /\n/, $log;
is(scalar(@restarts), 0, 'no crash and restart, no failed assertion')
  or diag(join("\n", @restarts[ 0 .. ($#restarts < 4 ? $#restarts : 4) ]));
is(postmaster_pid(), $pid_before, 'the postmaster is the same process');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'a new connection works');

my %s = %summary;    # (short)
# (a call can fail before the permission check: a missing column
# definition list, a literal that is not a regclass)
ok(!$reached{fuzz_monitor}{_deltas} && ($s{fuzz_monitor}{_deltas}{42501} // 0) > $ndeltas / 2,
	'a pg_monitor member never gets into _deltas: permission denied (42501) '
	  . ($s{fuzz_monitor}{_deltas}{42501} // 0) . " of $ndeltas times, the rest refused before it runs");
ok(($s{fuzz_monitor}{public}{ok} // 0) > 0,
	'a pg_monitor member gets results from the public functions: ' . ($s{fuzz_monitor}{public}{ok} // 0));
is_deeply([ keys %{ $s{fuzz_plain}{$_} } ], ['42501'], "a role without privileges: 42501 on every $_ call")
  for qw(_deltas public);
ok(($s{superuser}{_deltas}{ok} // 0) > 0 && ($s{superuser}{_deltas}{ok} // 0) < $ndeltas,
	'the superuser\'s _deltas calls both succeed and fail: ' . ($s{superuser}{_deltas}{ok} // 0) . " of $ndeltas succeed");

my %by_state;
for my $role (keys %summary)
{
	for my $kind (keys %{ $summary{$role} })
	{
		$by_state{$_} += $summary{$role}{$kind}{$_} for keys %{ $summary{$role}{$kind} };
	}
}
note(sprintf('seed %d: %d calls tried, %d ok; errors by SQLSTATE: %s; crashes: %d',
		$seed, $tried, $by_state{ok} // 0,
		join(', ', map { "$_ $by_state{$_}" } sort grep { $_ ne 'ok' } keys %by_state), $crashes));
for my $role (sort keys %summary)
{
	for my $kind (sort keys %{ $summary{$role} })
	{
		my $h = $summary{$role}{$kind};
		note("  $role $kind: " . join(', ', map { "$_ $h->{$_}" } sort keys %$h));
	}
}

$node->stop;
done_testing();

sub postmaster_pid
{
	my @l = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	return $l[0];
}
