# The recording server's identity (docs/storage.md, "Server identity"):
# every snapshot row, the worker's and chronicle.snapshot()'s, carries the
# system identifier of pg_control (checked against pg_controldata, an
# independent reader of the file) and the name: chronicle.server_name,
# else cluster_name; a reload renames the rows that follow, not those
# before.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node worker_recording);

my $node = chronicle_node('server_identity', extensions => [], conf => q{
chronicle.snapshot_interval = '200ms'
});
# PostgreSQL::Test::Cluster starts the server with cluster_name = its name.
my $cluster_name = $node->name;
is($node->safe_psql('postgres', 'SHOW cluster_name'), $cluster_name, "cluster_name is $cluster_name");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_chronicle');

# pg_controldata, outside the server, reads the system identifier.
my ($stdout, $stderr);
IPC::Run::run [ 'pg_controldata', '-D', $node->data_dir ], '>', \$stdout, '2>', \$stderr;
my ($sysid) = $stdout =~ /^Database system identifier:\s+(\d+)$/m;
ok(defined $sysid, "pg_controldata shows the system identifier ($sysid)");

is($node->safe_psql('postgres', 'SELECT system_identifier || \'|\' || name FROM chronicle.server()'),
	"$sysid|$cluster_name", 'chronicle.server(): pg_control\'s identifier, named by cluster_name');

worker_recording($node, 3);
my $t_rename = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE system_identifier = $sysid AND server_name = '$cluster_name')
	       = count(*)
	  FROM chronicle.snapshot WHERE ts < '$t_rename'}),
	't', 'every worker snapshot carries the identifier and cluster_name');

# chronicle.server_name renames what follows the reload.
$node->append_conf('postgresql.conf', "chronicle.server_name = 'bench-primary'\n");
$node->reload;
$node->poll_query_until('postgres', qq{
	SELECT count(*) >= 3 FROM chronicle.snapshot
	 WHERE collector = 'worker' AND server_name = 'bench-primary' AND system_identifier = $sysid})
  or die 'the worker does not take the new name';
# (that snapshot by its ts: the worker's next one may come after it)
my $sql_ts = $node->safe_psql('postgres', 'SELECT chronicle.snapshot()');
is($node->safe_psql('postgres', qq{
	SELECT collector || '|' || server_name FROM chronicle.snapshot WHERE ts = '$sql_ts'}),
	'sql|bench-primary', 'a snapshot from SQL carries the new name too');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.snapshot
	 WHERE ts < '$t_rename' AND server_name IS DISTINCT FROM '$cluster_name'}),
	'0', 'the snapshots before the reload keep their name');
is($node->safe_psql('postgres', 'SELECT count(*) FROM chronicle.snapshot WHERE system_identifier IS NULL OR server_name IS NULL'),
	'0', 'no snapshot without an identity');

$node->stop;
done_testing();
