# pg_stat_statements entries evicted and re-added: the source records the
# re-added entry (its counters start from zero, stats_since changes) and
# chronicle.statements_top() counts across the reset.  Never resets
# pg_stat_statements itself.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until worker_recording);

my $node = chronicle_node('eviction',
	statements => 1,
	conf => q{
chronicle.snapshot_interval = '200ms'
pg_stat_statements.max = 100
});
worker_recording($node, 2);

my $t0 = $node->safe_psql('postgres', 'SELECT now()');

# The target: executed once, so its usage is the lowest when entries are
# evicted.
$node->safe_psql('postgres', "SELECT length('eviction target')");
my $qid = $node->safe_psql('postgres',
	"SELECT queryid FROM pg_stat_statements WHERE query = 'SELECT length(\$1)'");
isnt($qid, '', 'the target statement is in pg_stat_statements');
poll_until($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.statements_history WHERE queryid = $qid",
	'the target statement was recorded');

# 300 distinct statements, five times each, overflow the 100 entries.
my $flood = join('', map {
	my $e = join('+', (1) x $_);
	"SELECT $e;" x 5
} 1 .. 300);
$node->safe_psql('postgres', $flood);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_statements WHERE queryid = $qid"),
	'0', 'the target was evicted');
my $dealloc = $node->safe_psql('postgres', 'SELECT dealloc FROM pg_stat_statements_info');
cmp_ok($dealloc, '>', 0, "pg_stat_statements deallocated entries ($dealloc)");

# Re-added: ten calls (so that its usage keeps it in now), a new stats_since.
$node->safe_psql('postgres', "SELECT length('eviction target again');" x 10);
# (A snapshot may fall between two of the ten calls: the entry is then
# recorded with fewer first; wait for all ten.)
poll_until($node, 'postgres',
	qq{
	SELECT count(DISTINCT stats_since) >= 2 AND max(calls) = 10 FROM chronicle.statements_history
	 WHERE queryid = $qid},
	'the re-added entry is recorded with its new stats_since and its ten calls');

my $rows = $node->safe_psql('postgres', qq{
	SELECT string_agg(calls::text, ',' ORDER BY ts) FROM chronicle.statements_history
	 WHERE queryid = $qid});
like($rows, qr/^1,([1-9],)*10(,10)*$/, "recorded calls: 1, then from zero again up to 10 ($rows)");

my $top = $node->safe_psql('postgres', qq{
	SELECT calls || '|' || resets FROM chronicle.statements_top('$t0', now(), 1000)
	 WHERE queryid = $qid});
is($top, '11|1', 'statements_top counts 1 + 10 calls across one reset');

is($node->safe_psql('postgres',
	"SELECT errors FROM chronicle.source_status() WHERE source = 'statements'"),
	'0', 'no errors in the statements source');

$node->stop;
done_testing();
