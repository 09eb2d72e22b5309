# The recipe of docs/development.md, "Adding a source", followed literally
# on a copy of the tree: a toy source (test/data/toy/source_toy.c) added as
# src/source_toy.c, its two lines added to the list of src/sources.c, and
# nothing else; built and installed into a private copy of the server's
# installation.  Then every layer must pick it up from its declaration
# alone: _source_columns() and _source_analysis(), the view
# chronicle.toy_history and the packed column chronicle.history.toy, the
# setting chronicle.collect_toy, the collector's rows, toy_deltas(),
# toy_totals(), toy_run_totals(), the metric catalog, series() and
# percentiles(), the rollups, source_status().  Last, a mistake in the
# declaration (its analysis names a column that does not exist) is refused
# when the library loads, with chronicle_check_source()'s message.
#
# The toy's numbers are a function of n, the count of snapshots the
# collector wrote (1 at the first): at its n-th snapshot the worker records
# item 'a' with events 10 n, busy_ms 2.5 n, level 2 n; item 'b' with 3 n,
# 1.5 n, 7; stats_reset 2026-01-01 before n = 16 and 2026-01-02 from it
# (the counters go on growing: the interval ending at n = 16 is a reset
# because of the RESET column alone).  So every value the extension shows
# is checked against those formulas and the snapshots' timestamps, not
# against another reading of the extension.
#
# Skips (skip_all, with the reason) without make or the server's compiler,
# or where the installation cannot be copied as one directory.
#
# one_version: the recipe for a source is the same on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use Cwd qw(getcwd);
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Find qw(find);
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgChronicle::TestInstall
  qw(copy_install pg_config_value remove_extension_files run_logged);
use PgChronicle::TestNode qw(chronicle_node more_worker_snapshots poll_until);

my $srcdir = getcwd();    # prove runs in the source tree
my $toy_c = "$srcdir/test/data/toy/source_toy.c";
die "no $toy_c: run from the top of the tree" unless -f $toy_c;

# What the build needs: make, and the compiler the server was built with
# (pg_config --cc, "ccache gcc" for the provisioned ones).
sub have_program
{
	my ($prog) = @_;
	return system("command -v '$prog' >/dev/null 2>&1") == 0;
}
plan skip_all => 'make is not installed: the test builds the extension' unless have_program('make');
for my $prog (grep { !/^-/ && !/=/ } split ' ', pg_config_value('pg_config', 'cc'))
{
	plan skip_all => "$prog (pg_config --cc) is not installed: the test builds the extension"
	  unless have_program($prog);
}

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $logdir = $PostgreSQL::Test::Utils::log_path;
my ($inst, $why) = copy_install("$tmp/pg");
plan skip_all => $why unless $inst;
my $pg_config = "$inst/bin/pg_config";

# --- The recipe, on a copy of the tree -------------------------------------

# The tree less what is built or written by tests (the patterns of
# .gitignore, which git archive and the dist zip leave out, so they are
# here) and git's own directory.
my @skip_dirs = qw(.git tmp_check tmp_check_regress results log __pycache__);
my @skip_top_dirs = qw(bench/out client/build);
sub built
{
	my ($rel, $isdir) = @_;
	my $base = $rel =~ s{.*/}{}r;
	return $isdir
	  ? (grep({ $base eq $_ } @skip_dirs) || grep({ $rel eq $_ } @skip_top_dirs)
		  || $rel =~ m{^client/[^/]*\.egg-info$})
	  : ($base =~ /\.(o|so|bc)$/
		  || $base =~ /^(regression\.diffs|regression\.out|build\.log|pgtap\.out)$/
		  || $rel =~ /^pg_chronicle--.*\.sql$/ || $rel =~ /^pg_chronicle-.*\.zip$/);
}
my $src = "$tmp/src";
my $ncopied = 0;
find(
	{
		no_chdir => 1,
		wanted => sub {
			return if $File::Find::name eq $srcdir;
			my $rel = substr($File::Find::name, length($srcdir) + 1);
			if (-d $File::Find::name)
			{
				$File::Find::prune = 1 if built($rel, 1);
				return;
			}
			return if built($rel, 0) || !-f $File::Find::name;
			make_path(dirname("$src/$rel"));
			copy($File::Find::name, "$src/$rel") or die "copy $rel: $!";
			chmod((stat $File::Find::name)[2] & 07777, "$src/$rel");
			$ncopied++;
		}
	},
	$srcdir);
ok(-f "$src/Makefile" && -f "$src/src/sources.c" && !-e "$src/src/source_toy.c",
	"the tree copied ($ncopied files, no build products)");

# Steps 1 and 2: src/source_<name>.c with a ChronicleSource and its
# ChronicleAnalysis.
copy($toy_c, "$src/src/source_toy.c") or die "copy source_toy.c: $!";

# Step 3: its line at the end of chronicle_sources in src/sources.c, and
# the declaration that line needs beside the others.
my $original = slurp_file("$src/src/sources.c");
my $sources = $original;
my $externs = $sources =~
  s/((?:^extern const ChronicleSource chronicle_source_\w+;\n)+)/$1extern const ChronicleSource chronicle_source_toy;\n/m;
my $listed = $sources =~
  s/(^const ChronicleSource \*const chronicle_sources\[\] = \{\n.*?)(^\};)/$1\t&chronicle_source_toy,\n$2/ms;
ok($externs && $listed && ($sources =~ s/^.*chronicle_source_toy.*\n//mgr) eq $original,
	'src/sources.c: two lines added, chronicle_source_toy declared and last in chronicle_sources[]');
open my $fh, '>', "$src/src/sources.c" or die "write sources.c: $!";
print $fh $sources;
close $fh;

# "The Makefile builds every src/*.c": make install with the copy's
# pg_config installs into the copy, over nothing of an earlier build.
remove_extension_files($inst);
ok(run_logged("$logdir/050_make_install.log", 'make install of the tree with the toy',
		[ 'make', '-C', $src, '-s', "PG_CONFIG=$pg_config", 'install' ]),
	'make install of the tree with the toy source')
  or die "stopping: the tree with the toy source does not build\n";

# --- Every layer picks it up ----------------------------------------------

my $node = chronicle_node('toy', install_path => $inst, conf => q{
chronicle.snapshot_interval = '100ms'
});
sub sql { return $node->safe_psql('postgres', $_[0]); }

# The declarations as SQL reads them; the toy comes last, as listed.
is(sql(q{
	SELECT string_agg(format('%s %s %s %s', column_name, format_type(column_type, NULL),
	                         key, kind), ', ' ORDER BY ordinal)
	  FROM chronicle._source_columns() WHERE source = 'toy'}),
	'item text t key, events bigint f counter, busy_ms double precision f time, '
	  . 'level bigint f gauge, stats_reset timestamp with time zone f reset',
	'_source_columns(): the toy\'s columns, kinds and key');
is(sql(q{
	SELECT source FROM chronicle._source_columns() WITH ORDINALITY AS c(source, ordinal, column_name,
	       column_type, key, description, kind, n)
	 ORDER BY n DESC LIMIT 1}),
	'toy', '_source_columns(): the toy is the last source');
is(sql(q{
	SELECT concat_ws(' | ', prefix, filters, per_op, per_op_time, per_op_ops, bytes, born_at_zero, gauge_unit)
	  FROM chronicle._source_analysis() WHERE source = 'toy'}),
	'toy | {item} | {ms_per_event} | {busy_ms} | {events} | {} | f | items',
	'_source_analysis(): the toy\'s ChronicleAnalysis');

# The history: the view with the declared columns, its trigger, comment and
# grants, and the packed column.
is(sql(q{
	SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
	  FROM pg_attribute WHERE attrelid = 'chronicle.toy_history'::regclass AND attnum > 0}),
	'ts timestamp with time zone, item text, events bigint, busy_ms double precision, '
	  . 'level bigint, stats_reset timestamp with time zone',
	'the view chronicle.toy_history has ts and the declared columns');
is(sql(q{
	SELECT concat_ws(' | ', obj_description('chronicle.toy_history'::regclass, 'pg_class'),
	       (SELECT tgname FROM pg_trigger WHERE tgrelid = 'chronicle.toy_history'::regclass),
	       has_table_privilege('pg_monitor', 'chronicle.toy_history', 'SELECT'),
	       has_table_privilege('public', 'chronicle.toy_history', 'SELECT'))}),
	'a toy source of known numbers (test/t/050_toy_source.pl) | write | t | f',
	'the view\'s comment (the description), write trigger and grants');
is(sql(q{
	SELECT format_type(atttypid, atttypmod) FROM pg_attribute
	 WHERE attrelid = 'chronicle.history'::regclass AND attname = 'toy' AND NOT attisdropped}),
	'bytea', 'the packed column chronicle.history.toy');

# The setting every source has.
is(sql(q{
	SELECT concat_ws(' | ', setting, context, short_desc) FROM pg_settings
	 WHERE name = 'chronicle.collect_toy'}),
	'on | sighup | Whether snapshots record a toy source of known numbers (test/t/050_toy_source.pl).',
	'the setting chronicle.collect_toy');

# The analysis functions and the metric catalog.
is(sql(q{
	SELECT string_agg(p.oid::regprocedure::text, ', ' ORDER BY p.proname)
	  FROM pg_proc p
	 WHERE p.pronamespace = 'chronicle'::regnamespace AND p.proname ~ '^_?toy_'}),
	'chronicle._toy_ends(timestamp with time zone,timestamp with time zone), '
	  . 'chronicle._toy_sums(timestamp with time zone,timestamp with time zone,text,text,text[],text[]), '
	  . 'chronicle.toy_deltas(timestamp with time zone,timestamp with time zone,text,boolean), '
	  . 'chronicle.toy_run_totals(text,text), '
	  . 'chronicle.toy_totals(timestamp with time zone,timestamp with time zone,text)',
	'toy_deltas(), toy_totals(), toy_run_totals(), _toy_sums(), _toy_ends()');
is(sql(q{
	SELECT pg_get_function_arguments('chronicle.toy_deltas(timestamptz, timestamptz, text, boolean)'::regprocedure)}),
	'from_ts timestamp with time zone, to_ts timestamp with time zone, '
	  . 'for_item text DEFAULT NULL::text, changed_only boolean DEFAULT false',
	'toy_deltas() filters by the key (for_item)');
is(sql(q{
	SELECT string_agg(concat_ws(' ', metric, func, keyed, kind, col, col2, filters, unit), ', ' ORDER BY metric)
	  FROM chronicle.metric WHERE source = 'toy'}),
	'toy.busy_ms_per_s toy_deltas t rate busy_ms {item} ms/s, '
	  . 'toy.events_per_s toy_deltas t rate events {item} 1/s, '
	  . 'toy.level toy_deltas t gauge level {item} items, '
	  . 'toy.ms_per_event toy_deltas t per_op busy_ms events {item} ms',
	'chronicle.metric: the toy\'s rate, time rate, gauge and per-operation metrics');

# --- The collector records the toy's numbers ------------------------------

# 22 snapshots and more (the reset at 16 inside), then the recording
# stops, so that everything below reads the same rows.
poll_until($node, 'postgres',
	q{SELECT coalesce(max(events), 0) >= 220 FROM chronicle.toy_history WHERE item = 'a'},
	'the worker records the toy (22 snapshots)');
sql(q{ALTER SYSTEM SET chronicle.enabled = off; SELECT pg_reload_conf()});
poll_until($node, 'postgres',
	q{SELECT state LIKE 'disabled%' FROM chronicle.status()},
	'the recording is switched off');
my ($nsnaps, $nsql, $nsegments) = split /\|/, sql(q{
	SELECT count(*) FILTER (WHERE collector = 'worker'), count(*) FILTER (WHERE collector = 'sql'),
	       count(DISTINCT segment)
	  FROM chronicle.snapshot});
is("$nsql $nsegments", '0 1', "one recording by the worker ($nsnaps snapshots)");
my ($s1, $s16, $sN) = split /\|/, sql(q{
	SELECT min(ts), (array_agg(ts ORDER BY ts))[16], max(ts) FROM chronicle.snapshot});

# The toy's formulas per worker snapshot, n its rank; every mismatch a
# line.  The snapshots' ts are the only thing read from the extension.
my $expected_rows = q{
	WITH s AS (SELECT ts, row_number() OVER (ORDER BY ts) AS n FROM chronicle.snapshot),
	x(item, ev, busy, lv_n, lv) AS (VALUES ('a', 10, 2.5, 2, 0), ('b', 3, 1.5, 0, 7))
	SELECT s.ts, s.n, x.item, (x.ev * s.n)::bigint AS events, (x.busy * s.n)::float8 AS busy_ms,
	       (x.lv_n * s.n + x.lv)::bigint AS level,
	       CASE WHEN s.n < 16 THEN timestamptz '2026-01-01 00:00:00+00'
	            ELSE timestamptz '2026-01-02 00:00:00+00' END AS stats_reset
	  FROM s CROSS JOIN x};
is(sql(qq{
	WITH e AS ($expected_rows)
	SELECT string_agg(format('n=%s %s: expected %s, recorded %s', e.n, coalesce(e.item, h.item),
	                         (e.events, e.busy_ms, e.level, e.stats_reset),
	                         (h.events, h.busy_ms, h.level, h.stats_reset)), E'\n')
	  FROM e FULL JOIN chronicle.toy_history h ON h.ts = e.ts AND h.item = e.item
	 WHERE (e.events, e.busy_ms, e.level, e.stats_reset)
	       IS DISTINCT FROM (h.events, h.busy_ms, h.level, h.stats_reset)}),
	'', 'toy_history: at every worker snapshot both items, with the toy\'s numbers');
is(sql(q{
	SELECT concat_ws(' ', snapshots, rows_written, errors, enabled)
	  FROM chronicle.source_status() WHERE source = 'toy'}),
	join(' ', $nsnaps, 2 * $nsnaps, 0, 't'),
	'source_status(): a snapshot and two rows per snapshot, no error');

# Floats compared to a relative 1e-9 (rates divide by seconds).
sql(q{
	CREATE FUNCTION public.near(a float8, b float8) RETURNS boolean LANGUAGE sql IMMUTABLE
	AS 'SELECT (a IS NULL AND b IS NULL) OR abs(a - b) <= 1e-9 * greatest(abs(a), abs(b), 1)'});

# Per interval (n-1, n]: the deltas 10, 2.5 ('a') and 3, 1.5 ('b'), their
# rates over the snapshots' seconds, the gauge at n, ms_per_event; at n = 16
# a reset with no deltas.
my $expected_intervals = qq{
	WITH e AS ($expected_rows),
	x(item, ev, busy, lv_n, lv) AS (VALUES ('a', 10, 2.5, 2, 0), ('b', 3, 1.5, 0, 7))
	SELECT lag(e.ts) OVER w AS interval_start, e.ts AS interval_end, e.n,
	       extract(epoch FROM e.ts - lag(e.ts) OVER w)::float8 AS seconds, e.item, e.n = 16 AS reset,
	       CASE WHEN e.n <> 16 THEN x.ev END::bigint AS events,
	       CASE WHEN e.n <> 16 THEN x.ev / extract(epoch FROM e.ts - lag(e.ts) OVER w) END::float8 AS events_per_s,
	       CASE WHEN e.n <> 16 THEN x.busy END::float8 AS busy_ms,
	       CASE WHEN e.n <> 16 THEN x.busy / extract(epoch FROM e.ts - lag(e.ts) OVER w) END::float8 AS busy_ms_per_s,
	       e.level,
	       CASE WHEN e.n <> 16 THEN x.busy / x.ev END::float8 AS ms_per_event
	  FROM e JOIN x USING (item)
	WINDOW w AS (PARTITION BY e.item ORDER BY e.ts)};
my $n1 = $nsnaps - 1;
is(sql(qq{
	WITH e AS (SELECT * FROM ($expected_intervals) i WHERE i.interval_start IS NOT NULL),
	d AS (SELECT * FROM chronicle.toy_deltas('$s1', '$sN'))
	SELECT concat_ws(E'\\n', count(*) FILTER (WHERE e.n IS NOT NULL AND d.interval_end IS NOT NULL) || ' intervals',
	       string_agg(format('n=%s %s: expected %s, got %s', e.n, coalesce(e.item, d.item),
	                  (e.reset, e.events, e.events_per_s, e.busy_ms, e.busy_ms_per_s, e.level, e.ms_per_event),
	                  (d.reset, d.events, d.events_per_s, d.busy_ms, d.busy_ms_per_s, d.level, d.ms_per_event)),
	                  E'\\n' ORDER BY e.n, e.item)
	                  FILTER (WHERE d.interval_end IS NULL OR e.n IS NULL
	                     OR (d.interval_start, d.reset, d.events, d.busy_ms, d.level)
	                        IS DISTINCT FROM (e.interval_start, e.reset, e.events, e.busy_ms, e.level)
	                     OR NOT (near(d.seconds, e.seconds) AND near(d.events_per_s, e.events_per_s)
	                             AND near(d.busy_ms_per_s, e.busy_ms_per_s)
	                             AND near(d.ms_per_event, e.ms_per_event))))
	  FROM e FULL JOIN d ON d.interval_end = e.interval_end AND d.item = e.item}),
	2 * $n1 . " intervals",
	'toy_deltas(): per interval and item the known deltas, rates, gauge and ratio; a reset at the 16th snapshot');
is(sql(qq{
	SELECT count(*), count(*) FILTER (WHERE item = 'b')
	  FROM chronicle.toy_deltas('$s1', '$sN', for_item => 'b')}),
	"$n1|$n1", "toy_deltas(for_item => 'b'): item b only");

# Totals: over the whole recording (with the reset: the deltas summed),
# over the snapshots after the reset (the shortcut: last value minus
# baseline), and of one item.
my $secs = sql(qq{SELECT extract(epoch FROM '$sN'::timestamptz - '$s1')::float8});
my $secs16 = sql(qq{SELECT extract(epoch FROM '$sN'::timestamptz - '$s16')::float8});
# item, window, intervals, resets, events, busy_ms, rates, ms_per_event
sub totals
{
	my ($from, $to, $seconds, $call) = @_;
	return sql(qq{
	SELECT string_agg(concat_ws(' ', item, window_start = '$from' AND window_end = '$to',
	                            intervals, resets, events, busy_ms,
	                            near(events_per_s, events / $seconds)
	                            AND near(busy_ms_per_s, busy_ms / $seconds),
	                            ms_per_event), ', ' ORDER BY item)
	  FROM chronicle.$call});
}
my $nr = $nsnaps - 2;    # intervals counted: all but the reset
is(totals($s1, $sN, $secs, "toy_totals('$s1', '$sN')"),
	sprintf('a t %d 1 %d %s t 0.25, b t %d 1 %d %s t 0.5',
		$n1, 10 * $nr, 2.5 * $nr, $n1, 3 * $nr, 1.5 * $nr),
	'toy_totals() over the recording: the known totals, rates over its seconds, one reset');
my $n16 = $nsnaps - 16;
is(totals($s16, $sN, $secs16, "toy_totals('$s16', '$sN')"),
	sprintf('a t %d 0 %d %s t 0.25, b t %d 0 %d %s t 0.5',
		$n16, 10 * $n16, 2.5 * $n16, $n16, 3 * $n16, 1.5 * $n16),
	'toy_totals() after the reset (last value minus baseline)');
is(totals($s1, $sN, $secs, "toy_totals('$s1', '$sN', for_item => 'b')"),
	sprintf('b t %d 1 %d %s t 0.5', $n1, 3 * $nr, 1.5 * $nr),
	"toy_totals(for_item => 'b')");
sql(qq{INSERT INTO chronicle.run (label, started, ended) VALUES ('toy run', '$s1', '$sN')});
is(sql(qq{
	SELECT count(*) FROM (
	  (SELECT * FROM chronicle.toy_run_totals('toy run')
	   EXCEPT ALL SELECT * FROM chronicle.toy_totals('$s1', '$sN'))
	  UNION ALL
	  (SELECT * FROM chronicle.toy_totals('$s1', '$sN')
	   EXCEPT ALL SELECT * FROM chronicle.toy_run_totals('toy run'))) x}),
	'0', 'toy_run_totals() of a run over the recording: the same totals');

# The rollups read every source of the metric catalog: per item, the
# minutes' sums are the known totals (the reset interval left out), the
# gauge's last value is 2 N ('a') and 7 ('b').
is(sql(qq{
	SELECT string_agg(concat_ws(' ', key, intervals, resets, events, busy_ms, level), ', ' ORDER BY key)
	  FROM (SELECT key, sum(intervals) AS intervals, sum(resets) AS resets, sum(vals[4]) AS events,
	               sum(vals[1]) AS busy_ms, (array_agg(vals[10] ORDER BY ts DESC))[1] AS level
	          FROM chronicle._rollup_compute(date_trunc('minute', '$s1'::timestamptz),
	                                         date_trunc('minute', '$sN'::timestamptz) + interval '1 minute')
	         WHERE source = 'toy' AND key <> '{}'
	         GROUP BY key) r}),
	sprintf('{a} %d 1 %d %s %d, {b} %d 1 %d %s 7',
		$n1, 10 * $nr, 2.5 * $nr, 2 * $nsnaps, $n1, 3 * $nr, 1.5 * $nr),
	'the rollups: the toy\'s sums per item, the gauge\'s last value');

# series() and percentiles() of the toy's metrics: its items summed per
# interval, NULL at the reset (but a gauge: a level, not a delta).
my $series = qq{
	WITH ei AS ($expected_intervals)
	SELECT count(*) || ' ' || count(*) FILTER (WHERE NOT near(s.value, e.v))
	  FROM (SELECT interval_end, CASE WHEN %s OR NOT bool_or(reset) THEN %s END AS v
	          FROM ei WHERE interval_start IS NOT NULL GROUP BY interval_end) e
	  JOIN chronicle.series('%s', '$s1', '$sN') s USING (interval_end)};
my @series = (
	[ 'toy.events_per_s', 'false', 'sum(events_per_s)' ],
	[ 'toy.busy_ms_per_s', 'false', 'sum(busy_ms_per_s)' ],
	[ 'toy.ms_per_event', 'false', 'sum(busy_ms) / sum(events)' ],
	[ 'toy.level', 'true', 'sum(level)' ]);
my $percentiles = qq{
	WITH ei AS ($expected_intervals),
	v AS (SELECT sum(events_per_s) AS v FROM ei WHERE interval_start IS NOT NULL
	       GROUP BY interval_end HAVING NOT bool_or(reset))
	SELECT near(p.value, (SELECT min(v) FROM v)) AND near(q.value, (SELECT max(v) FROM v))
	       AND p.intervals = (SELECT count(*) FROM v)
	  FROM chronicle.percentiles('toy.events_per_s', '$s1', '$sN', '{0}', discrete => true) p,
	       chronicle.percentiles('toy.events_per_s', '$s1', '$sN', '{1}', discrete => true) q};
{
	for my $s (@series)
	{
		my ($metric, $gauge, $expr) = @$s;
		my ($ret, $out, $err) = $node->psql('postgres', sprintf($series, $gauge, $expr, $metric));
		is($ret == 0 ? $out : 'error: ' . (split /\n/, $err)[0], "$n1 0",
			"series('$metric'): the known value of every interval");
	}
	my ($ret, $out, $err) = $node->psql('postgres', $percentiles);
	is($ret == 0 ? $out : 'error: ' . (split /\n/, $err)[0], 't',
		"percentiles('toy.events_per_s'): the smallest and largest rates of the intervals");
}
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM chronicle.series('toy.events_per_s', '$s1', '$sN', for_resource => 'a')");
like($err, qr/filter for_resource does not apply to metric "toy\.events_per_s"/,
	'series() knows the toy\'s metric');
# (series() and percentiles() filter by the for_* parameters they list,
# src/sql/32_percentiles.sql: a new source's filter is not one of them;
# docs/development.md, "Adding a source".)

is(sql(q{SELECT count(*) FROM chronicle.snapshot}), $nsnaps,
	'nothing was recorded while the analysis was checked');

# chronicle.collect_toy = off: the worker records again, without the toy.
sql(q{ALTER SYSTEM SET chronicle.collect_toy = off; ALTER SYSTEM RESET chronicle.enabled;
	SELECT pg_reload_conf()});
more_worker_snapshots($node, 3, 'the worker records again', $nsnaps);
is(sql(qq{
	SELECT count(*) FROM chronicle.toy_history WHERE ts > '$sN'}),
	'0', 'chronicle.collect_toy = off: no toy rows');
is(sql(qq{
	SELECT enabled FROM chronicle.source_status() WHERE source = 'toy'}),
	'f', 'source_status(): the toy switched off');

# --- A mistake in the declaration is refused when the library loads -------

$node->stop;
my $toy = slurp_file("$src/src/source_toy.c");
ok($toy =~ s/\{"ms_per_event", "busy_ms", "events"\}/{"ms_per_event", "busy_ms", "no_such_column"}/,
	'the toy\'s per-operation ratio made to name a column that does not exist');
open $fh, '>', "$src/src/source_toy.c" or die "write source_toy.c: $!";
print $fh $toy;
close $fh;
ok(run_logged("$logdir/050_make_install_wrong.log", 'make install of the wrong toy',
		[ 'make', '-C', $src, '-s', "PG_CONFIG=$pg_config", 'install' ]),
	'make install of the wrong declaration (the compiler cannot tell)')
  or die "stopping: the wrong toy does not build\n";

my $refusal = qr/pg_chronicle: source "toy" names "no_such_column" as a per-operation count, which is not a column of a fitting kind/;
my $log_offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1), 'with the library preloaded, the server refuses to start');
like(slurp_file($node->logfile, $log_offset), $refusal,
	'the server log says what is wrong (chronicle_check_source())');

$node->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
$node->start;
($ret, $out, $err) = $node->psql('postgres', q{LOAD 'pg_chronicle'});
like($err, $refusal, 'without preload, LOAD refuses the library with the same message');
$node->stop;

done_testing();
