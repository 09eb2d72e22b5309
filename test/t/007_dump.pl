# pg_dump keeps the history: every row of every table of the schema (the
# day partitions, which do not belong to the extension, with the default
# partitions, runs, application data and statement texts, which do) is
# dumped, and the dump restores with pg_restore --exit-on-error and with
# --single-transaction into a database where the extension records and
# answers again.  An imported run (docs/runs.md, "Run archives") restores
# with its origin, snapshots, history, key dictionary, statement texts and
# pgbench rows, row for row, and its analysis answers as before the dump.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);

my $node = chronicle_node('dump', conf => q{
chronicle.enabled = off
});

# History on partitions made after CREATE EXTENSION: past days, today (the
# housekeeping of the first snapshot), a run with application data, a
# statement text, and a row of a day without partition (default partition).
$node->safe_psql('postgres', q{
	SELECT chronicle.ensure_partitions(now() - interval '3 days', now() - interval '1 day');
	SELECT chronicle.run_begin('before');
	SELECT chronicle.snapshot() FROM generate_series(1, 5);
	SELECT chronicle.run_end();
	SELECT chronicle.snapshot() FROM generate_series(1, 3);
	INSERT INTO chronicle.app_metric (ts, name, value, run_id)
	SELECT now() - g * interval '1 s', 'tps', g, (SELECT run_id FROM chronicle.run)
	  FROM generate_series(1, 10) AS g;
	INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
	SELECT (SELECT run_id FROM chronicle.run), now(), 0, g, 0, 1000 + g FROM generate_series(1, 7) AS g;
	INSERT INTO chronicle.app_interval (run_id, interval_start, num_transactions)
	VALUES ((SELECT run_id FROM chronicle.run), now(), 42);
	INSERT INTO chronicle.statements_text (dbid, queryid, query) VALUES (1, 42, 'SELECT 42');
});
# The same history one and two days earlier, on runtime partitions of
# past days; and a snapshot of a day without partition.
$node->safe_psql('postgres', q{
	DO $$
	DECLARE
		t    text;
		days integer;
	BEGIN
		FOR days IN 1 .. 2 LOOP
			FOR t IN
				SELECT c.relname FROM pg_class c JOIN pg_partitioned_table p ON p.partrelid = c.oid
				 WHERE c.relnamespace = 'chronicle'::regnamespace AND NOT c.relispartition
			LOOP
				EXECUTE format($q$
					INSERT INTO chronicle.%I
					SELECT (jsonb_populate_record(h, jsonb_build_object('ts', h.ts - $1) ||
					        CASE WHEN %L = 'snapshot'
					             THEN jsonb_build_object('segment', (to_jsonb(h) ->> 'segment')::timestamptz - $1)
					             ELSE '{}' END)).*
					  FROM chronicle.%I h WHERE h.ts > now() - interval '1 hour'$q$, t, t, t)
				USING days * interval '1 day';
			END LOOP;
		END LOOP;
	END;
	$$;
});
# An imported run: the run "before" as an archive of it holds it (the
# members the client copies into pg_temp.import_<member>, app_transaction
# coded as format 2 codes it, client/pg_chronicle/archive.py), imported by
# chronicle._import_run() as "imported", an origin of its own.
$node->safe_psql('postgres', q{
	CREATE TEMP TABLE w AS
	SELECT coalesce((SELECT max(s.ts) FROM chronicle.snapshot s WHERE s.ts <= r.started), r.started) AS lo,
	       (SELECT min(s.ts) FROM chronicle.snapshot s WHERE s.ts > r.ended) AS hi, r.run_id
	  FROM chronicle.run r WHERE r.label = 'before';
	CREATE TEMP TABLE import_snapshot AS
	SELECT s.ts, s.segment, s.keyframe OR s.ts = w.lo AS keyframe, s.collector, s.duration_ms,
	       s.rows_written, s.wal_bytes, s.errors, s.system_identifier, s.server_name
	  FROM chronicle._snapshot s, w WHERE s.ts >= w.lo AND s.ts <= w.hi;
	DO $$
	DECLARE
		src text;
	BEGIN
		FOR src IN SELECT DISTINCT c.source FROM chronicle._source_columns() c LOOP
			EXECUTE format('CREATE TEMP TABLE %I AS SELECT h.* FROM chronicle.%I h, w'
			               ' WHERE h.ts >= w.lo AND h.ts <= w.hi', 'import_' || src, src || '_history');
		END LOOP;
	END;
	$$;
	CREATE TEMP TABLE import_app_transaction (n bigint GENERATED ALWAYS AS IDENTITY, ts bigint,
		client_id integer, tx_no bigint, script_no integer, latency_us bigint, lag_us bigint,
		retries integer, status text, source text);
	INSERT INTO import_app_transaction (ts, client_id, tx_no, script_no, latency_us, lag_us, retries,
	                                    status, source)
	SELECT (extract(epoch FROM t.ts) * 1000000)::bigint
	       - coalesce(lag((extract(epoch FROM t.ts) * 1000000)::bigint) OVER o, 0),
	       t.client_id, t.tx_no - coalesce(lag(t.tx_no) OVER o, 0), t.script_no, t.latency_us, t.lag_us,
	       t.retries, nullif(t.status, 'ok'), t.source
	  FROM chronicle.app_transaction t, w WHERE t.run_id = w.run_id
	WINDOW o AS (ORDER BY t.ts, t.client_id, t.tx_no) ORDER BY t.ts, t.client_id, t.tx_no;
	CREATE TEMP TABLE import_app_interval AS
	SELECT a.* FROM chronicle.app_interval a, w WHERE a.run_id = w.run_id;
	CREATE TEMP TABLE import_app_metric AS
	SELECT a.ts, a.name, a.value FROM chronicle.app_metric a, w WHERE a.run_id = w.run_id;
	CREATE TEMP TABLE import_mark AS SELECT ts, event, owner FROM chronicle.mark LIMIT 0;
	CREATE TEMP TABLE import_statements_text AS
	SELECT t.dbid, t.queryid, t.query FROM chronicle.statements_text t;
	ANALYZE;
	SELECT chronicle._import_run(jsonb_build_object(
		'archive_id', 'dump-test',
		'server', jsonb_build_object('system_identifier', s.system_identifier, 'server_name', 'elsewhere',
		                             'server_version', '17.0', 'extension_version', '0.3.0'),
		'run', jsonb_build_object('label', r.label, 'started', r.started, 'ended', r.ended,
		                          'meta', r.meta, 'settings', r.settings, 'environment', r.environment,
		                          'server_version', r.server_version, 'warmup', '0 s'),
		'members', jsonb_build_object('app_transaction', jsonb_build_object('encoding', '{}'::jsonb))),
		'imported')
	  FROM chronicle.run r, chronicle.server() s WHERE r.label = 'before';
});

# (psql, not safe_psql: without a default partition this row has nowhere to
# go, and the test is about the dump.)
$node->psql('postgres',
	"INSERT INTO chronicle.snapshot VALUES ('2001-02-03', '2001-02-03', true, 'sql', 1, 1, 1, 0)");

# Every table, partition and history view of the schema with its row count.
my $counts_sql = q{
	SELECT string_agg(format('SELECT %L || ''='' || count(*) FROM chronicle.%I', c.relname, c.relname),
	                  ' UNION ALL ' ORDER BY c.relname)
	  FROM pg_class c
	 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind IN ('r', 'p', 'v')};
sub counts
{
	my ($db) = @_;
	my $q = $node->safe_psql($db, $counts_sql);
	return join("\n", sort split /\n/, $node->safe_psql($db, $q));
}
my $before = counts('postgres');
like($before, qr/^snapshot=\d+$/m, 'the counts name chronicle.snapshot');
my ($nsnap) = $before =~ /^snapshot=(\d+)$/m;
cmp_ok($nsnap, '>=', 24, "snapshots on past, present and partition-less days ($nsnap)");
like($before, qr/^snapshot_default=1$/m, 'one snapshot in the default partition');
my $runtime = $node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
	 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relname ~ '_p[0-9]{8}$'
	   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
	                     AND d.objid = c.oid AND d.deptype = 'e')});
cmp_ok($runtime, '>', 0, 'day partitions do not belong to the extension');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
	 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relname ~ '_p[0-9]{8}$'
	   AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
	                 AND d.objid = c.oid AND d.deptype = 'e')}),
	'0', 'none of them does');

# The imported run's rows, each table's as one checksum, the state of the
# schema's sequences, and its analysis: what the restore must give again.
my $imported_sql = q{
	SELECT string_agg(format('SELECT %L || ''='' || count(*) || '' '' || md5(coalesce(string_agg(t::text, '';'' ORDER BY t::text), '''')) FROM chronicle.%I t',
	                         n, n), ' UNION ALL ' ORDER BY n)
	  FROM unnest(ARRAY['origin', 'archive_snapshot', 'archive_history', 'archive_statements_text',
	                    'history_key', 'run', 'app_transaction', 'app_interval', 'app_metric']) AS n};
sub imported
{
	my ($db) = @_;
	my $rows = $node->safe_psql($db, $node->safe_psql($db, $imported_sql));
	my $seqs = $node->safe_psql($db, q{
		SELECT string_agg(format('%s=%s', sequencename, last_value), ' ' ORDER BY sequencename)
		  FROM pg_sequences WHERE schemaname = 'chronicle'});
	my $summary = $node->safe_psql($db, q{
		SELECT string_agg(format('%s=%s', s.metric, s.value), ' ' ORDER BY s.metric)
		  FROM chronicle.run_summary('imported') s});
	return "$rows\nsequences: $seqs\nrun_summary: $summary";
}
my $imported = imported('postgres');
like($imported, qr/^origin=1 /m, 'one origin imported');
like($imported, qr/^app_transaction=14 /m, 'the imported run has its 7 transactions besides the local 7');
for my $t ('archive_snapshot', 'archive_history', 'archive_statements_text')
{
	like($imported, qr/^$t=[1-9]\d* /m, "the import wrote $t");
}
like($imported, qr/^sequences: .*origin_origin_id_seq=1 /m, "the origin's identity is counted");
like($imported, qr/^run_summary: .*=\d/m, 'the imported run has an analysis');

my $dump = $node->basedir . '/chronicle.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump -Fc');

my %restore = (
	restored => [ '--exit-on-error' ],
	restored_single => [ '--single-transaction', '--exit-on-error' ],);
for my $db (sort keys %restore)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok(
		[ 'pg_restore', @{ $restore{$db} }, '-d', $node->connstr($db), $dump ],
		"pg_restore @{ $restore{$db} }");
	is(counts($db), $before, "$db: every table and partition has the same rows");

	is(imported($db), $imported,
		"$db: the imported run's rows, the sequences and its run_summary are as before the dump");

	# The restored extension records and answers.
	my $recent = "SELECT count(*) FROM chronicle.snapshot WHERE ts > now() - interval '1 hour'";
	my $n = $node->safe_psql($db, $recent);
	$node->safe_psql($db, 'SELECT chronicle.snapshot()');
	is($node->safe_psql($db, $recent), $n + 1, "$db: a snapshot is recorded");
	cmp_ok($node->safe_psql($db, q{
		SELECT count(*) FROM chronicle.segments(now() - interval '4 days', now())}),
		'>=', 3, "$db: segments() answers over the restored days");
	is($node->safe_psql($db,
		"SELECT count(*) > 0 FROM chronicle.run_summary('before') WHERE value IS NOT NULL"),
		't', "$db: run_summary() answers for the restored run");
	$node->safe_psql($db, "SELECT chronicle.run_begin('after')");
	is($node->safe_psql($db, q{
		SELECT (SELECT run_id FROM chronicle.run WHERE label = 'after') >
		       (SELECT run_id FROM chronicle.run WHERE label = 'before')}),
		't', "$db: a new run gets a new id");
	is($node->safe_psql($db, 'SELECT partitions_skipped FROM chronicle.maintain()'),
		'0', "$db: housekeeping works on the restored partitions");
}

$node->stop;
done_testing();
