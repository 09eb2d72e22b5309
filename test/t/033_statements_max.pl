# chronicle.statements_max (how many changed statements a snapshot records)
# and chronicle.statements_top, its deprecated name of 0.1.0: the old name
# alone applies, with one WARNING in the log naming the new one; when both
# are set the new one wins; SHOW gives the value in force under both names;
# pg_settings lists only the new one.  The limit is checked on what the
# collector wrote: the most rows of statements_history in one snapshot
# after a burst of 20 distinct statements.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $node = chronicle_node('statements_max',
	statements => 1,
	conf => q{
chronicle.snapshot_interval = '200ms'
});

# Restart with these settings (the rest of the file untouched) and return
# the most statements one snapshot recorded after a burst of 20 distinct
# ones.  The first snapshot of a recording records every statement (the
# baselines): the burst comes after the worker's second.
my $burst = 0;
sub most_per_snapshot
{
	my ($conf) = @_;
	$burst++;
	$node->adjust_conf('postgresql.conf', 'chronicle.statements_top', undef);
	$node->adjust_conf('postgresql.conf', 'chronicle.statements_max', undef);
	$node->append_conf('postgresql.conf', $conf);
	$node->restart;
	my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
	poll_until($node, 'postgres', qq{
		SELECT count(*) >= 2 FROM chronicle.snapshot
		 WHERE collector = 'worker' AND ts > '$started'},
		"the worker records snapshots (burst $burst)");
	my $t0 = $node->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
	$node->safe_psql('postgres',
		join('', map { "SELECT $burst AS burst, " . join(', ', (1) x $_) . ';' } 1 .. 20));
	my $t1 = $node->safe_psql('postgres', 'SELECT now()');
	# Leftover candidates are recorded by the next snapshots: wait for a
	# few after the burst.
	poll_until($node, 'postgres', qq{
		SELECT count(*) >= 3 FROM chronicle.snapshot
		 WHERE collector = 'worker' AND ts > '$t1'},
		"the worker records snapshots after burst $burst");
	return $node->safe_psql('postgres', qq{
		SELECT max(n) FROM (SELECT count(*) AS n FROM chronicle.statements_history
		                     WHERE ts > '$t0' GROUP BY ts) s});
}

sub show
{
	my ($name) = @_;
	return $node->safe_psql('postgres', "SHOW $name");
}

my $warning = qr/WARNING:  chronicle\.statements_top is deprecated, use chronicle\.statements_max/;

# The old name alone.
my $log_offset = -s $node->logfile;
is(most_per_snapshot("chronicle.statements_top = 3\n"), '3',
	'chronicle.statements_top alone: 3 statements per snapshot');
is(show('chronicle.statements_max'), '3', 'SHOW chronicle.statements_max gives the value in force');
is(show('chronicle.statements_top'), '3', 'SHOW chronicle.statements_top too');
my $log = slurp_file($node->logfile, $log_offset);
my @warnings = ($log =~ /$warning/g);
is(scalar @warnings, 1, 'one WARNING in the log names chronicle.statements_max');

# Both: the new name wins.
$log_offset = -s $node->logfile;
is(most_per_snapshot("chronicle.statements_top = 3\nchronicle.statements_max = 5\n"), '5',
	'both set: chronicle.statements_max wins (5 per snapshot)');
is(show('chronicle.statements_max'), '5', 'SHOW chronicle.statements_max: 5');
is(show('chronicle.statements_top'), '5', 'SHOW chronicle.statements_top: the value in force, 5');
$log = slurp_file($node->logfile, $log_offset);
like($log, $warning, 'the old name still warns when the new one is set');

# The new name alone: no warning.
$log_offset = -s $node->logfile;
is(most_per_snapshot("chronicle.statements_max = 4\n"), '4',
	'chronicle.statements_max alone: 4 per snapshot');
$log = slurp_file($node->logfile, $log_offset);
unlike($log, $warning, 'no deprecation warning without the old name');

# Neither: the default, 100, records the whole burst.
cmp_ok(most_per_snapshot(''), '>', 5, 'neither set: more than 5 per snapshot (default 100)');
is(show('chronicle.statements_max'), '100', 'default 100');

is( $node->safe_psql('postgres', qq{
		SELECT string_agg(name, ',' ORDER BY name) FROM pg_settings
		 WHERE name IN ('chronicle.statements_max', 'chronicle.statements_top')}),
	'chronicle.statements_max', 'pg_settings lists the new name only');

is($node->safe_psql('postgres',
	"SELECT errors FROM chronicle.source_status() WHERE source = 'statements'"),
	'0', 'no errors in the statements source');

$node->stop;
done_testing();
