# A pgbench run with -l, recorded by the collector with pg_stat_statements
# and the OS sources, its log loaded server side and client side: the
# per-interval TPS of the log agrees with pg_stat_database's commits, and
# the statements history holds pgbench's statements.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(pgbench_node poll_until);

my $node = pgbench_node('pgbench', '2s', 2);

my $clients = 4;
my $dir = PostgreSQL::Test::Utils::tempdir;
my $prefix = "$dir/pgb";
$node->command_ok(
	[
		'pgbench', '-n', '-c', $clients, '-j', '2', '-T', '10', '-l',
		"--log-prefix=$prefix", 'postgres'
	],
	'pgbench -l runs');
# Let the last stats be flushed (the sessions gone) and recorded.
poll_until($node, 'postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'",
	'the pgbench sessions end');
my $t_end = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
poll_until($node, 'postgres',
	"SELECT count(*) > 0 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t_end'",
	'a snapshot after pgbench');

my @files = glob("$prefix.*");
is(scalar(@files), 2, 'one log file per pgbench thread');

# Server side, creating the run from the log's time range.
my $loaded = $node->safe_psql('postgres',
	"SELECT sum(lines) FROM chronicle.load_pgbench_log('bench', '$prefix', create_run => true)");
my $lines = 0;
for my $f (@files)
{
	$lines += () = slurp_file($f) =~ /\n/g;
}
is($loaded, $lines, "every line of the log loaded ($lines)");
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id) WHERE r.label = 'bench'"),
	$lines,
	'one row per logged transaction');

# Client side, through psql \copy, gives the same rows.
my ($stdout, $stderr);
my $ok = IPC::Run::run(
	[ 'tools/pgbench-log-load', '-q', '-c', '-d', $node->connstr('postgres'), 'bench_client', $prefix ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'tools/pgbench-log-load loads the files') or diag($stderr);
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
		 WHERE r.label = 'bench_client'}),
	$lines,
	'the client-side load has the same rows');

# Per snapshot interval (2 s): the cumulative transactions of the log and
# the cumulative commits of pg_stat_database agree within one interval's
# worth.  Backends flush their counters at most once a second, so at the end
# of interval i the commits have reached at least the log's count at the end
# of interval i - 1, and at most its count at the end of interval i (plus a
# few commits of the collector itself in the same database).  The run was
# created from its log: its window reaches the snapshot after its last
# transaction, so its last interval holds pgbench's last transactions and,
# after them, this test's polls (commits too): there only the lower bound.
my $cmp = $node->safe_psql('postgres', q{
	WITH iv AS (
		SELECT a.interval_start, a.interval_end, a.transactions,
		       sum(a.transactions) OVER (ORDER BY a.interval_start) AS cum_log
		  FROM chronicle.app_intervals('bench') a
	), db AS (
		SELECT iv.*,
		       coalesce(lag(iv.cum_log) OVER (ORDER BY iv.interval_start), 0) AS cum_log_prev,
		       iv.interval_start = max(iv.interval_start) OVER () AS last,
		       (SELECT h.xact_commit FROM chronicle.database_history h
		         WHERE h.datname = 'postgres' AND h.ts <= iv.interval_end
		         ORDER BY h.ts DESC LIMIT 1)
		     - (SELECT h.xact_commit FROM chronicle.database_history h
		         WHERE h.datname = 'postgres'
		           AND h.ts <= (SELECT min(interval_start) FROM iv)
		         ORDER BY h.ts DESC LIMIT 1) AS cum_db
		  FROM iv
	)
	SELECT count(*), sum(transactions),
	       count(*) FILTER (WHERE (cum_db > cum_log + 20 AND NOT last) OR cum_db < cum_log_prev - 20),
	       string_agg(format('%s/%s', cum_log, cum_db), ' ' ORDER BY interval_start)
	  FROM db});
my ($nint, $sum, $bad, $detail) = split /\|/, $cmp;
cmp_ok($nint, '>=', 4, "the run spans several snapshot intervals ($nint)");
is($sum, $lines, "the intervals hold every transaction of the log, the last ones too ($sum)");
is($bad, 0,
	"log TPS and pg_stat_database commits agree within one interval's worth (log/db cumulative: $detail)");
my $tps = $node->safe_psql('postgres', q{
	SELECT bool_and(tps > 0 AND latency_p50_ms <= latency_p90_ms
	                AND latency_p90_ms <= latency_p99_ms AND latency_p99_ms <= latency_max_ms)
	  FROM chronicle.app_intervals('bench') WHERE transactions > 0});
is($tps, 't', 'per-interval TPS and ordered latency percentiles');

# pg_stat_statements was recorded: pgbench's statements and their texts,
# and the UPDATE's calls over the run match the log.
my $stm = $node->safe_psql('postgres', q{
	SELECT count(DISTINCT h.queryid) FROM chronicle.statements_history h
	  JOIN chronicle.statements_text t USING (dbid, queryid)
	 WHERE t.query LIKE 'UPDATE pgbench_%' OR t.query LIKE 'INSERT INTO pgbench_history%'
	    OR t.query LIKE 'SELECT abalance FROM pgbench_accounts%'});
is($stm, 5, 'statements_history holds the five statements of the pgbench script');
my $calls = $node->safe_psql('postgres', q{
	SELECT s.calls FROM chronicle.run r,
	       chronicle.statements_top(r.started - interval '2 s', now(), 100) s
	 WHERE r.label = 'bench' AND s.query LIKE 'UPDATE pgbench_accounts%'});
my $logged = $node->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
	 WHERE r.label = 'bench' AND t.status = 'ok'});
ok(abs($calls - $logged) <= $clients,
	"UPDATE pgbench_accounts calls over the run ($calls) = logged transactions ($logged), within the clients' last transactions");

# The OS sources recorded during the run too (Linux).
SKIP:
{
	skip 'no /proc/meminfo', 2 unless -r '/proc/meminfo';
	cmp_ok($node->safe_psql('postgres', q{
		SELECT count(*) FROM chronicle.os_memory_history h, chronicle.run r
		 WHERE r.label = 'bench' AND h.ts BETWEEN r.started AND r.ended}),
		'>=', 3, 'os_memory_history rows during the run');
	cmp_ok($node->safe_psql('postgres', q{
		SELECT count(DISTINCT backend_type) FROM chronicle.os_process_io_history}),
		'>=', 2, 'os_process_io_history has the auxiliary processes');
}

# Nothing failed along the way.
is($node->safe_psql('postgres',
	"SELECT coalesce(sum(errors), 0) FROM chronicle.source_status() WHERE source IN ('statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io')"),
	'0', 'the statements and OS sources recorded without errors');

$node->stop;
done_testing();
