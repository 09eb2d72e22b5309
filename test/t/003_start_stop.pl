# Without shared_preload_libraries: chronicle.start() starts the collector
# as a dynamic background worker in the current database, chronicle.stop()
# stops it, and both say so when they cannot.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node poll_until);

my $node = chronicle_node('dynamic', preload => undef, extensions => [], conf => q{
chronicle.snapshot_interval = '200ms'
});
$node->safe_psql('postgres', 'CREATE DATABASE bench');
$node->safe_psql('bench', 'CREATE EXTENSION pg_chronicle');

like($node->safe_psql('bench', 'SELECT state FROM chronicle.status()'),
	qr/not preloaded/, 'before start(): the collector does not run');

my ($ret, $stdout, $stderr) = $node->psql('bench', 'SELECT * FROM chronicle.stop()');
like($stderr, qr/not running/, 'stop() when nothing runs says so');

my $row = $node->safe_psql('bench', 'SELECT worker, pid > 0, started FROM chronicle.start()');
is($row, 'collector|t|t', 'start() starts the collector');

poll_until($node, 'bench',
	"SELECT count(*) >= 3 FROM chronicle.snapshot WHERE collector = 'worker'",
	'the dynamic collector records into the database start() was called in');
like($node->safe_psql('bench', 'SELECT running, state FROM chronicle.status()'),
	qr/^t\|recording/, 'status(): running and recording');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_chronicle collector' AND datname = 'bench'"),
	'1', 'one collector, connected to the caller\'s database');

($ret, $stdout, $stderr) = $node->psql('bench', 'SELECT worker, started FROM chronicle.start()');
is($stdout, 'collector|f', 'a second start() starts nothing');
like($stderr, qr/already running/, 'and says the collector is already running');

# stop(): the worker leaves, recording stops.
is($node->safe_psql('bench', 'SELECT worker, stopped FROM chronicle.stop()'),
	'collector|t', 'stop() stops the collector');
is($node->safe_psql('bench', 'SELECT running FROM chronicle.status()'),
	'f', 'status(): not running after stop()');
my $n1 = $node->safe_psql('bench', 'SELECT count(*) FROM chronicle.snapshot');
sleep 1;
is($node->safe_psql('bench', 'SELECT count(*) FROM chronicle.snapshot'),
	$n1, 'no snapshots after stop()');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_chronicle collector'"),
	'0', 'no collector process left');

# Start again: a new segment, starting with a keyframe.
$node->safe_psql('bench', 'SELECT * FROM chronicle.start()');
poll_until($node, 'bench',
	"SELECT count(DISTINCT segment) >= 2 FROM chronicle.snapshot WHERE collector = 'worker'",
	'a new segment after start()');
is($node->safe_psql('bench', q{
	SELECT bool_and(keyframe) FROM chronicle.snapshot s
	 WHERE ts = segment AND collector = 'worker'}),
	't', 'every recording started by start() begins with a keyframe');
$node->safe_psql('bench', 'SELECT * FROM chronicle.stop()');

# No free worker slot: a clear error with a hint.
$node->append_conf('postgresql.conf', "max_worker_processes = 0\n");
$node->restart;
($ret, $stdout, $stderr) = $node->psql('bench', 'SELECT * FROM chronicle.start()');
isnt($ret, 0, 'start() fails without a free background worker slot');
like($stderr, qr/no free background worker slot/, 'the error says why');
like($stderr, qr/max_worker_processes/, 'and the hint names max_worker_processes');

# Only superusers may start and stop workers.
$node->safe_psql('bench', 'CREATE ROLE regress_nobody LOGIN');
($ret, $stdout, $stderr) = $node->psql('bench', 'SELECT * FROM chronicle.start()',
	extra_params => [ '-U', 'regress_nobody' ]);
like($stderr, qr/permission denied/, 'start() is not for PUBLIC');

$node->stop;
done_testing();
