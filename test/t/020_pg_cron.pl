# Housekeeping from SQL, scheduled by pg_cron: chronicle.maintain() drops
# the partitions older than the retention when pg_cron runs it.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(poll_ok);

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;

# Without pg_cron this test cannot say anything: skip loudly, never pass.
my $pkglibdir = $node->config_data('--pkglibdir');
if (!-f "$pkglibdir/pg_cron.so")
{
	plan skip_all => "pg_cron is not installed in $pkglibdir: the pg_cron recipe is NOT tested";
}

$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pg_chronicle,pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
chronicle.enabled = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_chronicle');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

# History of a month ago, as if the collector had run then.
$node->safe_psql('postgres',
	"SELECT chronicle.ensure_partitions(now() - interval '30 days', now() - interval '29 days')");
my $old_sql = q{
	SELECT count(*) FROM pg_class
	 WHERE relnamespace = 'chronicle'::regnamespace AND relkind = 'r'
	   AND relname ~ ('_p' || to_char((now() - interval '30 days') AT TIME ZONE 'UTC', 'YYYYMMDD') || '$')};
my $old = $node->safe_psql('postgres', $old_sql);
cmp_ok($old, '>', 0, "old partitions exist before pg_cron runs maintain ($old)");

# The recipe of docs/design.md, with pg_cron's seconds syntax so the test is quick.
my $jobid = $node->safe_psql('postgres',
	"SELECT cron.schedule('chronicle-maintain', '2 seconds', \$\$SELECT * FROM chronicle.maintain('7 days')\$\$)");
like($jobid, qr/^\d+$/, 'job scheduled');

poll_ok($node, 'postgres',
	"SELECT count(*) > 0 FROM cron.job_run_details WHERE jobid = $jobid AND status = 'succeeded'",
	'pg_cron ran chronicle.maintain() successfully');
is($node->safe_psql('postgres', $old_sql), '0', 'the expired partitions were dropped');

# Today's partitions are still there: retention drops only expired days.
my $today = $node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class
	 WHERE relnamespace = 'chronicle'::regnamespace AND relkind = 'r'
	   AND relname ~ ('_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD') || '$')});
cmp_ok($today, '>', 0, "today's partitions are kept ($today)");

is($node->safe_psql('postgres', "SELECT cron.unschedule($jobid)"), 't', 'job unscheduled');
$node->stop;
done_testing();
