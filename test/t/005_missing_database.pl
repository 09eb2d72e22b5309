# chronicle.database names a database that does not exist: the preloaded
# worker cannot connect (FATAL), and waits longer before each new attempt
# instead of failing every 10 s; a reload that fixes the setting ends the
# wait and recording starts.
#
# one_version: the worker's retries are its own, alike on every version:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node worker_recording);

my $node = chronicle_node('missing_db', conf => q{
chronicle.database = 'no_such_database'
chronicle.snapshot_interval = '200ms'
});

# Without backoff the postmaster would restart the worker every 10 s:
# 5 attempts in 45 s.  With it, attempts come at 0, 10, 30, 70 ... s.
sleep 45;
my $log = slurp_file($node->logfile);
my $fatals = () = $log =~ /FATAL:  database "no_such_database" does not exist/g;
ok($fatals >= 2 && $fatals <= 3,
	"connection attempts back off: $fatals failures in 45 s (10 s restarts would give 5)");
like($log, qr/pg_chronicle: could not connect to database "no_such_database" \(\d+ attempts in a row\); next attempt in \d+ s/,
	'the worker says when it tries again');
like($node->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
	qr/waiting to connect/, 'status() shows the waiting worker');

# Fix the setting: the waiting worker connects at once, not after its wait.
$node->safe_psql('postgres', "ALTER SYSTEM SET chronicle.database = 'postgres'");
$node->reload;
worker_recording($node, 3, 'after the setting is fixed the worker records');
is($node->safe_psql('postgres', 'SELECT running, state FROM chronicle.status()'),
	't|recording', 'status(): running and recording');

$node->stop;
done_testing();
