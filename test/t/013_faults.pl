# Faults: kill -9 of the collector, the wait sampler and client backends in
# a loop, each followed by the postmaster's crash restart, with what was
# recorded checked after every cycle; chronicle.snapshot() racing the worker,
# and two snapshot() transactions that each store rows the other needs;
# maintain() from pg_cron racing the worker's.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(poll_ok);
use Time::HiRes qw(usleep);
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('faults');
$node->init;
my $pkglibdir = $node->config_data('--pkglibdir');
my $cron = -f "$pkglibdir/pg_cron.so";
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_chronicle,pg_stat_statements" . ($cron ? ",pg_cron'" : "'") . q{
chronicle.snapshot_interval = '100ms'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pg_chronicle');

poll_ok($node, 'postgres', "SELECT count(*) >= 5 FROM chronicle.snapshot WHERE collector = 'worker'",
	'the worker records');

my @targets = ('collector', 'sampler', 'backend');
my $cycles = 20;
my $log_offset = -s $node->logfile;
my ($lost, $lost_max) = (0, 0);
for my $cycle (1 .. $cycles)
{
	my $target = $targets[ ($cycle - 1) % 3 ];
	my $pid;
	my $session;
	if ($target eq 'collector')
	{
		$pid = $node->safe_psql('postgres', 'SELECT pid FROM chronicle.status()');
	}
	elsif ($target eq 'sampler')
	{
		$pid = $node->safe_psql('postgres', 'SELECT pid FROM chronicle.wait_sampler_status()');
	}
	else
	{
		$session = $node->background_psql('postgres');
		$pid = $session->query_safe('SELECT pg_backend_pid()');
	}
	# What must survive: the snapshots committed two seconds ago and
	# earlier (commits are asynchronous: the last few hundred ms of a
	# crash may be lost, never more), and the number of segments.
	my ($ref, $before, $segments, $recent) = split /\|/, $node->safe_psql('postgres', q{
		SELECT now(), count(*) FILTER (WHERE ts < now() - interval '2 s'),
		       count(DISTINCT segment) FILTER (WHERE ts < now() - interval '2 s'),
		       count(*) FILTER (WHERE ts >= now() - interval '2 s')
		  FROM chronicle.snapshot});
	ok($pid =~ /^\d+$/ && kill('KILL', $pid), "cycle $cycle: kill -9 the $target ($pid)");
	eval { $session->quit if $session; };

	poll_ok($node, 'postgres', qq{SELECT count(*) >= 3 FROM chronicle.snapshot
	            WHERE ts > '$ref' AND segment > '$ref'},
		"cycle $cycle: recording resumes in a new segment after the ${target}'s crash");
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.snapshot WHERE ts < timestamptz '$ref' - interval '2 s'"),
		$before, "cycle $cycle: every snapshot committed before the crash is kept ($before)");
	poll_ok($node, 'postgres', q{SELECT running AND ticks_taken > 10 FROM chronicle.wait_sampler_status()},
		"cycle $cycle: the wait sampler runs again");
	my ($kept_segments, $kept_recent) = split /\|/, $node->safe_psql('postgres', qq{
		SELECT count(DISTINCT segment) FILTER (WHERE ts < timestamptz '$ref' - interval '2 s'),
		       count(*) FILTER (WHERE ts >= timestamptz '$ref' - interval '2 s' AND ts <= '$ref')
		  FROM chronicle.snapshot});
	is($kept_segments, $segments, "cycle $cycle: the kept snapshots keep their segments");
	$lost += $recent - $kept_recent;
	$lost_max = $recent - $kept_recent if $recent - $kept_recent > $lost_max;
}
# Within a segment time only goes forward, and no segment spans a crash.
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT ts <= lag(ts) OVER (PARTITION BY segment ORDER BY ts) AS back
	    FROM chronicle.snapshot) s WHERE back}),
	'0', 'after 20 crashes, snapshot times increase within every segment');
my $log = slurp_file($node->logfile, $log_offset);
my $restarts = () = $log =~ /all server processes terminated; reinitializing/g;
is($restarts, $cycles, "$cycles crash restarts, each recovered");
unlike($log, qr/PANIC|TRAP:/, 'no PANIC or failed assertion in the log');
note "kill -9 loop: $cycles cycles (collector, sampler, client backend), $restarts crash restarts, "
  . "recording resumed after each; snapshots of the last 2 s before a crash lost: $lost in all, at most $lost_max in one crash "
  . "(asynchronous commit)";

# snapshot() racing the worker: two sessions take snapshots as fast as they
# can while the worker records every 100 ms.
my $errors0 = $node->safe_psql('postgres', 'SELECT sum(errors) FROM chronicle.source_status()');
my $n0 = $node->safe_psql('postgres', "SELECT count(*) FROM chronicle.snapshot WHERE collector <> 'worker'");
my $calls = 50;
my @racers = map
{
	my ($out, $err) = ('', '');
	[
		IPC::Run::start(
			[
				'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
				'-c', "SELECT count(chronicle.snapshot()) FROM generate_series(1, $calls)"
			],
			'>', \$out, '2>', \$err),
		\$out, \$err
	]
} 1 .. 2;
for my $r (@racers)
{
	$r->[0]->finish;
	is(${ $r->[1] } . ${ $r->[2] }, "$calls\n",
		"snapshot() racing the worker: $calls calls in one session succeeded");
}
is($node->safe_psql('postgres', "SELECT count(*) FROM chronicle.snapshot WHERE collector <> 'worker'") - $n0,
	2 * $calls, 'snapshot() racing the worker: every call recorded a snapshot');
is($node->safe_psql('postgres', 'SELECT sum(errors) FROM chronicle.source_status()'),
	$errors0, 'snapshot() racing the worker: no source failed');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT ts FROM chronicle.snapshot GROUP BY ts HAVING count(*) > 1) d}),
	'0', 'snapshot() racing the worker: no two snapshots share a time');
poll_ok($node, 'postgres', q{SELECT count(*) >= 3 FROM chronicle.snapshot
           WHERE collector = 'worker' AND ts > now() - interval '1 s'},
	'snapshot() racing the worker: the worker goes on recording');

# Two transactions that each store new statements (their texts and keys)
# the other one then records.  The first session takes a snapshot, then runs
# a statement of its own and takes another in a transaction it keeps open;
# the second runs 40 statements of its own and then a snapshot, which waits
# for the first; the first's next snapshot records the second's statements.
# Before the writers of the dictionaries took turns, the second stored its
# statements whose query ids come before the first's new one, and then
# waited; the first's next snapshot waited on them: a deadlock, which failed
# the race above once.  The worker is off meanwhile: only the two write.
$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.enabled = off; SELECT pg_reload_conf()');
poll_ok($node, 'postgres', q{SELECT state LIKE 'disabled%' FROM chronicle.status()}, 'the worker stops');
my $first = $node->background_psql('postgres', on_error_stop => 0);
$first->query_safe('SELECT chronicle.snapshot()');
$first->query_safe(q{SELECT 'the first session' AS stmt_first});
$first->query_safe('BEGIN');
$first->query_safe('SELECT chronicle.snapshot()');
my ($out2, $err2) = ('', '');
my $second = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		(map { ('-c', 'SELECT ' . join(', ', (1) x $_)) } 1 .. 40),
		'-c', 'BEGIN', '-c', 'SELECT chronicle.snapshot() IS NOT NULL AS stmt_second', '-c', 'COMMIT'
	],
	'>', \$out2, '2>', \$err2);
poll_ok($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
            WHERE query LIKE '%stmt_second' AND wait_event_type = 'Lock'},
	'two snapshot() transactions: the second waits for the first');
my ($first_out, $first_err) = $first->query('SELECT count(*) FROM chronicle.snapshot()');
is($first_out . ($first_err ? " $first->{stderr}" : ''), '1',
	'two snapshot() transactions: the first records the second\'s statements');
$first->query_safe('COMMIT');
$first->quit;
$second->finish;
is($err2, '', 'two snapshot() transactions: the second succeeds');
like($out2, qr/^t$/m, 'two snapshot() transactions: the second records after the first commits');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE t.queryid IS NULL), count(*) >= 41
	  FROM pg_stat_statements s LEFT JOIN chronicle.statements_text t USING (dbid, queryid)
	 WHERE s.query ~ '^SELECT \$1(, \$[0-9]+)*$' OR s.query LIKE '%stmt_first'}),
	'0|t', 'two snapshot() transactions: every statement of both has its text');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET chronicle.enabled; SELECT pg_reload_conf()');

# maintain() from pg_cron, every second, racing the worker's own maintenance
# (the worker runs it at start and hourly; a segment start makes it run).
SKIP:
{
	skip "pg_cron is not installed in $pkglibdir: the maintain() race is NOT tested", 4
	  unless $cron;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');
	$node->safe_psql('postgres', q{
		SELECT chronicle.ensure_partitions(now() - interval '20 days', now() - interval '10 days');
		SELECT cron.schedule('maintain', '1 second', 'SELECT * FROM chronicle.maintain(interval ''12 days'')');
		SELECT cron.schedule('partitions', '1 second',
			'SELECT chronicle.ensure_partitions(now(), now() + interval ''5 days'')');
	});
	# Restart the collector a few times while pg_cron runs, so that its
	# start-up maintenance races the scheduled one.
	for (1 .. 3)
	{
		$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.enabled = off');
		$node->reload;
		usleep(700_000);
		$node->safe_psql('postgres', 'ALTER SYSTEM SET chronicle.enabled = on');
		$node->reload;
		usleep(1_300_000);
	}
	poll_ok($node, 'postgres', q{SELECT count(*) >= 6 FROM cron.job_run_details WHERE status = 'succeeded'},
		'maintain() from pg_cron: the scheduled jobs ran');
	is($node->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT return_message, '; ') FROM cron.job_run_details WHERE status = 'failed'}),
		'', 'maintain() from pg_cron racing the worker: no job failed');
	poll_ok($node, 'postgres', q{SELECT count(*) >= 3 FROM chronicle.snapshot
	           WHERE collector = 'worker' AND ts > now() - interval '1 s'},
		'maintain() from pg_cron racing the worker: recording goes on');
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class
		 WHERE relnamespace = 'chronicle'::regnamespace AND relname ~ '_p[0-9]{8}$'
		   AND relname !~ '^rollup_'	-- kept for chronicle.rollup_retention
		   AND substring(relname from '_p([0-9]{8})$')::date < (now() AT TIME ZONE 'UTC')::date - 12}),
		'0', 'maintain() from pg_cron: the expired partitions are gone');
	$node->safe_psql('postgres', q{SELECT cron.unschedule('maintain'), cron.unschedule('partitions')});
}

$node->stop;
done_testing();
