# pg_dump keeps the history: every row of every table of the schema (the
# day partitions, which do not belong to the extension, with the default
# partitions, runs, application data and statement texts, which do) is
# dumped, and the dump restores with pg_restore --exit-on-error and with
# --single-transaction into a database where the extension records and
# answers again.
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
