# pg_upgrade between two clusters of the same major with recorded history:
# runtime partitions of past days, a run with its pgbench log, statement
# texts.  Every table's rows arrive, the collector records in the new
# cluster and the analysis answers over the old history.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $conf = q{
chronicle.snapshot_interval = '200ms'
};
my $old = chronicle_node('old', conf => $conf);
$old->safe_psql('postgres', q{
	SELECT chronicle.ensure_partitions(now() - interval '3 days', now() - interval '1 day');
	SELECT chronicle.run_begin('before-upgrade', '{"note": "pg_upgrade test"}');
});
poll_until($old, 'postgres',
	"SELECT count(*) >= 10 FROM chronicle.snapshot WHERE collector = 'worker'",
	'the old cluster records');
$old->safe_psql('postgres', q{SELECT chronicle.run_end('before-upgrade')});
$old->safe_psql('postgres', q{
	SELECT chronicle.pgbench_staging();
	INSERT INTO pg_temp.chronicle_pgbench_lines (file, line)
	SELECT 'pgbench_log.1', format('%s 1 %s 0 %s %s', c, 1000 + c, extract(epoch FROM r.started)::bigint, 5000 * c)
	  FROM generate_series(0, 99) c, chronicle.run r WHERE r.label = 'before-upgrade';
	SELECT * FROM chronicle.load_pgbench_lines('before-upgrade');
});

# Rows per table of the schema, leaf partitions included: "table=count ...".
sub counts
{
	my $node = shift;
	my @tables = split /\n/, $node->safe_psql('postgres', q{
		SELECT c.oid::regclass FROM pg_class c
		 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r'
		 ORDER BY c.relname});
	return $node->safe_psql('postgres',
		"SELECT string_agg(t || '=' || n, ' ' ORDER BY t) FROM ("
		  . join(' UNION ALL ', map { "SELECT '$_' AS t, count(*) AS n FROM $_" } @tables)
		  . ') s');
}
# The collector pauses, so that the counts are final.
$old->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.enabled = off');
$old->reload;
poll_until($old, 'postgres',
	"SELECT state LIKE 'disabled%' FROM chronicle.status()",
	'the collector pauses');
my $before = counts($old);
my ($snapshots, $partitions, $app) = split /\|/, $old->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM chronicle.snapshot),
	       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'chronicle.snapshot'::regclass),
	       (SELECT count(*) FROM chronicle.app_transaction)});
cmp_ok($partitions, '>=', 4, "the old cluster has runtime partitions ($partitions)");
is($app, 100, 'the old cluster has the run\'s pgbench rows');
my ($from, $to) = split /\|/, $old->safe_psql('postgres',
	'SELECT min(ts), max(ts) FROM chronicle.snapshot');
$old->stop;

my $new = chronicle_node('new', conf => $conf . "chronicle.enabled = off\n", start => 0);
my $bindir = $new->config_data('--bindir');
my $tmp = PostgreSQL::Test::Utils::tempdir;
chdir $tmp;
command_ok(
	[
		'pg_upgrade', '--no-sync', '--copy',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $bindir, '-B', $bindir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port
	],
	'pg_upgrade with pg_chronicle preloaded and its history');
$new->start;

is(counts($new), $before,
	"every table of the schema has the same rows after pg_upgrade ($snapshots snapshots)");
cmp_ok($new->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.run_summary('before-upgrade') WHERE value IS NOT NULL"),
	'>', 5, 'the analysis answers over the upgraded history');

# Recording goes on in the new cluster, in a new segment.
$new->safe_psql('postgres', 'ALTER SYSTEM RESET chronicle.enabled');
$new->append_conf('postgresql.conf', "chronicle.enabled = on\n");
$new->reload;
poll_until($new, 'postgres',
	qq{
	SELECT count(*) >= 3 FROM chronicle.snapshot WHERE ts > '$to' AND segment > '$to'},
	'the collector records in the upgraded cluster, in a new segment');
cmp_ok($new->safe_psql('postgres', "SELECT count(*) FROM chronicle.timeline('$from', now())"),
	'>', $snapshots - 2, 'a timeline spans the history from before and after the upgrade');
unlike(slurp_file($new->logfile), qr/TRAP:|terminated by signal/, 'no crash in the new cluster');

$new->stop;
done_testing();
