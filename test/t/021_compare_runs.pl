# Two short pgbench runs that differ in one setting, compared by
# chronicle.compare_runs(): with wal_compression on, fewer WAL bytes per
# commit (full-page images compress; a CHECKPOINT before each run makes
# sure there are many).
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $node = chronicle_node('runs', conf => q{
chronicle.snapshot_interval = '500ms'
full_page_writes = on
wal_compression = off
checkpoint_timeout = '30min'
max_wal_size = '1GB'
});
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ], 'pgbench -i');

my $method = $node->safe_psql('postgres',
	"SELECT CASE WHEN 'lz4' = ANY (enumvals) THEN 'lz4' ELSE 'pglz' END
	   FROM pg_settings WHERE name = 'wal_compression'");

# Once pgbench's sessions are gone (their statistics flushed), a snapshot
# of the collector.
sub snapshot_after_pgbench
{
	my ($label) = @_;
	poll_until($node, 'postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'",
		"$label: the pgbench sessions end");
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	poll_until($node, 'postgres',
		"SELECT count(*) > 0 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t'",
		"$label: a snapshot after pgbench");
}

sub run
{
	my ($label, $compression) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET wal_compression = '$compression'");
	$node->reload;
	poll_until($node, 'postgres',
		"SELECT current_setting('wal_compression') = '$compression'",
		"wal_compression becomes $compression");
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	poll_until($node, 'postgres',
		"SELECT count(*) > 0 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t'",
		"$label: a snapshot falls between the checkpoint and the run");
	$node->safe_psql('postgres', "SELECT chronicle.run_begin('$label', '{\"wal_compression\": \"$compression\"}')");
	$node->command_ok([ 'pgbench', '-T', '6', '-c', '2', '-j', '1', '-n', 'postgres' ],
		"pgbench run $label");
	# Backends flush their statistics when they exit; let a snapshot see it.
	snapshot_after_pgbench($label);
	$node->safe_psql('postgres', 'SELECT chronicle.run_end()');
}

run('compression_off', 'off');
run('compression_on', $method);

my %m = map { my @f = split /\|/; ($f[0] => [ @f[ 1 .. 3 ] ]) } split /\n/,
  $node->safe_psql('postgres',
	"SELECT metric, value_a, value_b, ratio FROM chronicle.compare_runs('compression_off', 'compression_on')");

note explain \%m;
cmp_ok($m{commits_per_s}[0], '>', 10, "run off committed ($m{commits_per_s}[0]/s)");
cmp_ok($m{commits_per_s}[1], '>', 10, "run on committed ($m{commits_per_s}[1]/s)");
cmp_ok($m{wal_fpi_per_commit}[0], '>', 0, "full-page images in run off ($m{wal_fpi_per_commit}[0] per commit)");
cmp_ok($m{wal_bytes_per_commit}[1], '<', $m{wal_bytes_per_commit}[0],
	"fewer WAL bytes per commit with wal_compression = $method "
	  . "($m{wal_bytes_per_commit}[1] < $m{wal_bytes_per_commit}[0], ratio $m{wal_bytes_per_commit}[2])");
cmp_ok($m{wal_bytes_per_commit}[2], '<', 1, 'compare_runs reports a ratio below 1');

# The setting that differs is reported, and only settings that differ.
my $diff = $node->safe_psql('postgres',
	"SELECT name || '=' || coalesce(value_a, '') || '/' || coalesce(value_b, '')
	   FROM chronicle.compare_settings('compression_off', 'compression_on')");
like($diff, qr/^wal_compression=off\/$method$/m, 'compare_settings shows wal_compression');
unlike($diff, qr/^shared_buffers/m, 'settings that are equal are not listed');

# The runs' windows hold snapshot intervals and a timeline to plot.
my $rows = $node->safe_psql('postgres',
	"SELECT count(*) FROM chronicle.run_window('compression_on') w,
	        chronicle.timeline(w.run_from, w.run_to) t WHERE t.commits_per_s > 0");
cmp_ok($rows, '>=', 5, "timeline of the run has intervals with commits ($rows)");

$node->stop;
done_testing();
