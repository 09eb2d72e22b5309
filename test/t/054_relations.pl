# The relations source (src/source_relations.c) against psql's own reads
# of the catalog views, in a database created after the recorder started
# (a benchmark's usual place):
#
# 1. pgbench -i in database bench: once quiescent (its statistics flushed,
#    two psql reads seconds apart equal), the latest recorded row of each
#    pgbench table equals psql's read of pg_relation_size() per fork,
#    pg_indexes_size(), the TOAST table's pg_total_relation_size(),
#    pg_total_relation_size() and every column of pg_stat_all_tables and
#    pg_statio_all_tables the source records, exactly.
# 2. A COPY load grows table grow while psql samples its total size and
#    n_tup_ins, each sample between two clock_timestamp(): every recorded
#    reading lies between the samples that ended before its read_at and
#    those that started after it (both only grow); the readings follow the
#    growth (several distinct values).  Quiescent again, the recorded row
#    equals psql's read, and relation_deltas() over the load sums to the
#    difference of psql's n_tup_ins (no jump, no reset).
# 3. Between two readings: TRUNCATE, VACUUM FULL (a new file each, the same
#    oid: no reset, no negative delta, sizes as psql reads them), a table
#    dropped (its history stays, its rows stop), renamed (a new key, the
#    old one keeps its history), dropped and created again
#    under the same name (another oid: that interval is a reset, never a
#    negative delta), a table locked in ACCESS EXCLUSIVE mode and another's
#    index being reindexed, for longer than a round (their values carried,
#    the database's other tables read),
#    and a second database dropped while recorded (its rows stop).  No
#    ERROR or FATAL in the server log, and the recording goes on.
# 4. No background worker slot free: the reading is a counted skip, said
#    once in the log, and the same collector reads again once one is.
# 5. An idle database is not read again (no reader commits in it), and is
#    read once it changes.
#
# one_version: the reader's query and the source have no version-specific part:
# tools/test.sh runs this file against the last server only.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PgChronicle::TestNode qw(chronicle_node poll_until more_worker_snapshots worker_recording);

# autovacuum off: its runs would move the counters between psql's read and
# the recorder's, and the quiescent comparisons are exact.
my $node = chronicle_node('rel', conf => q{
chronicle.snapshot_interval = '200ms'
chronicle.relations_interval = '1s'
autovacuum = off
max_worker_processes = 6
});
sub sql { return $node->safe_psql('postgres', $_[0]); }
sub bsql { return $node->safe_psql('bench', $_[0]); }
my $log_start = -s $node->logfile;

worker_recording($node, 2);

# --- 1. pgbench -i in a database created after the recorder started -----------

$node->safe_psql('postgres', 'CREATE DATABASE bench');
$node->command_ok([ 'pgbench', '-i', '-q', '-s', '2', 'bench' ], 'pgbench -i in database bench');

# What the source records, as psql reads it now: one line per relation.
my $cols = join(', ', qw(main_bytes fsm_bytes vm_bytes toast_bytes index_bytes total_bytes
	  seq_scan seq_tup_read idx_scan idx_tup_fetch n_tup_ins n_tup_upd n_tup_hot_upd
	  n_tup_newpage_upd n_tup_del n_live_tup n_dead_tup n_mod_since_analyze vacuum_count
	  autovacuum_count analyze_count autoanalyze_count heap_blks_read heap_blks_hit
	  idx_blks_read idx_blks_hit toast_blks_read toast_blks_hit tidx_blks_read tidx_blks_hit));
my $ref_query = qq{
	SELECT format('%I.%I', s.schemaname, s.relname) AS relation, s.relid,
	       pg_relation_size(s.relid, 'main') AS main_bytes,
	       pg_relation_size(s.relid, 'fsm') AS fsm_bytes,
	       pg_relation_size(s.relid, 'vm') AS vm_bytes,
	       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast_bytes,
	       pg_indexes_size(s.relid) AS index_bytes,
	       pg_total_relation_size(s.relid) AS total_bytes,
	       s.seq_scan, s.seq_tup_read, s.idx_scan, s.idx_tup_fetch, s.n_tup_ins, s.n_tup_upd,
	       s.n_tup_hot_upd, s.n_tup_newpage_upd, s.n_tup_del, s.n_live_tup, s.n_dead_tup,
	       s.n_mod_since_analyze, s.vacuum_count, s.autovacuum_count, s.analyze_count,
	       s.autoanalyze_count, io.heap_blks_read, io.heap_blks_hit, io.idx_blks_read,
	       io.idx_blks_hit, io.toast_blks_read, io.toast_blks_hit, io.tidx_blks_read,
	       io.tidx_blks_hit
	  FROM pg_stat_all_tables s JOIN pg_statio_all_tables io USING (relid)
	  JOIN pg_class c ON c.oid = s.relid
	 WHERE s.schemaname = 'public'};

# psql's read of the public tables of bench: relation => "relid|values".
sub reference
{
	my %r;
	for (split /\n/, bsql("SELECT relation, relid || '|' || concat_ws('|', $cols) FROM ($ref_query) r"))
	{
		my ($rel, $v) = split /\|/, $_, 2;
		$r{$rel} = $v;
	}
	return \%r;
}

# The latest recorded row of each relation of bench at or before now, for
# the relations of the reference.
sub recorded
{
	my %r;
	for (split /\n/, sql(qq{
		SELECT DISTINCT ON (relation) relation, relid || '|' || concat_ws('|', $cols)
		  FROM chronicle.relations_history WHERE datname = 'bench'
		 ORDER BY relation, ts DESC}))
	{
		my ($rel, $v) = split /\|/, $_, 2;
		$r{$rel} = $v;
	}
	return \%r;
}

# Quiescent: two reads of psql 2.5 s apart (more than two rounds) are equal;
# then the recorder's latest rows, read after two more rounds, must equal it.
sub quiescent_compare
{
	my ($name, @rels) = @_;
	$node->safe_psql('bench', 'SELECT pg_stat_force_next_flush()');
	my ($a, $b);
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		$a = reference();
		sleep 2.5;
		$b = reference();
		last if join(',', map { $a->{$_} // '' } @rels) eq join(',', map { $b->{$_} // '' } @rels);
		die "stopping: $name: bench does not settle\n" if time() > $deadline;
	}
	sleep 2.5;
	my $got;
	$deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		$got = recorded();
		last if join(',', map { $got->{$_} // '' } @rels) eq join(',', map { $b->{$_} // '' } @rels);
		last if time() > $deadline;
		usleep(200_000);
	}
	for my $rel (@rels)
	{
		is($got->{$rel}, $b->{$rel}, "$name: $rel: recorded relid, sizes and counters equal psql's");
	}
}

poll_until($node, 'postgres',
	q{SELECT count(DISTINCT relation) = 4 FROM chronicle.relations_history WHERE datname = 'bench'},
	'the four pgbench tables of bench are recorded');
my @pgbench = map { "public.pgbench_$_" } qw(accounts branches tellers history);
# some activity: scans, updates, an index scan, a vacuum and an analyze
bsql(q{SELECT count(*) FROM pgbench_accounts;
	UPDATE pgbench_branches SET bbalance = bbalance + 1;
	SELECT abalance FROM pgbench_accounts WHERE aid = 17;
	VACUUM pgbench_tellers; ANALYZE pgbench_branches});
quiescent_compare('after pgbench -i', @pgbench);

# --- 2. A COPY load grows a table, sampled by psql ------------------------------

bsql(q{CREATE TABLE grow (id int, pad text DEFAULT repeat('x', 300));
	COPY grow (id) FROM PROGRAM 'seq 1 1000'});
quiescent_compare('before the load', 'public.grow');
my $load_from = sql('SELECT max(ts) FROM chronicle.snapshot');
my $ins_from = bsql(q{SELECT n_tup_ins FROM pg_stat_all_tables WHERE relid = 'grow'::regclass});

my $copies = join('', map { "COPY grow (id) FROM PROGRAM 'seq 1 5000'; SELECT pg_stat_force_next_flush(); SELECT pg_sleep(0.15);\n" } 1 .. 40);
my ($lout, $lerr) = ('', '');
# from a file, so that each statement is a query of its own and the
# session flushes its statistics after each COPY (one -c string would be
# one query, its counts visible only at the end)
my $copies_file = PostgreSQL::Test::Utils::tempdir() . '/copies.sql';
PostgreSQL::Test::Utils::append_to_file($copies_file, $copies);
my $loader = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('bench'), '-f', $copies_file ],
	'>', \$lout, '2>', \$lerr);
my $sampler = $node->background_psql('bench');
my @samples;
while ($loader->pumpable)
{
	$loader->pump_nb;
	push @samples, [ split /\|/, $sampler->query_safe(q{
		SELECT extract(epoch FROM clock_timestamp()), pg_total_relation_size('grow'),
		       (SELECT n_tup_ins FROM pg_stat_all_tables WHERE relid = 'grow'::regclass),
		       extract(epoch FROM clock_timestamp())}) ];
	usleep(50_000);
}
ok($loader->finish, 'the COPY load ran') or diag($lerr);
$sampler->quit;

# Every reading of grow during the load against the samples around it.
my @readings = map { [ split /\|/ ] } split /\n/, sql(q{
	SELECT DISTINCT extract(epoch FROM read_at), total_bytes, n_tup_ins
	  FROM chronicle.relations_history
	 WHERE datname = 'bench' AND relation = 'public.grow' AND ts > '} . $load_from . q{'
	 ORDER BY 1});
my ($inside, $bad) = (0, 0);
for my $r (@readings)
{
	my ($at, $size, $ins) = @$r;
	my @before = grep { $_->[3] < $at } @samples;
	# the reader reads the size some milliseconds after read_at (its query's
	# start): a second is ample on a loaded machine
	my @after = grep { $_->[0] > $at + 1 } @samples;
	next unless @before && @after;
	$inside++;
	my ($lo_size, $lo_ins) = @{ $before[-1] }[ 1, 2 ];
	my ($hi_size, $hi_ins) = @{ $after[0] }[ 1, 2 ];
	next if $size >= $lo_size && $size <= $hi_size && $ins >= $lo_ins && $ins <= $hi_ins;
	$bad++;
	diag("reading at $at: total_bytes $size, n_tup_ins $ins; samples before: $lo_size, $lo_ins; after: $hi_size, $hi_ins");
}
note(scalar(@samples) . ' samples, ' . scalar(@readings) . " readings, $inside within the samples");
cmp_ok(scalar(keys %{ { map { $_->[2] => 1 } @samples } }), '>=', 3,
	'psql saw n_tup_ins grow during the load (the loader\'s statistics flushed after each COPY)');
cmp_ok($inside, '>=', 3, 'the readings follow the growth (at least 3 within the load)');
is($bad, 0, 'every reading lies between the psql samples before and after its read_at (size and n_tup_ins)');
quiescent_compare('after the load', 'public.grow');
my $ins_to = bsql(q{SELECT n_tup_ins FROM pg_stat_all_tables WHERE relid = 'grow'::regclass});
my $load_to = sql('SELECT max(ts) FROM chronicle.snapshot');
is(sql(qq{SELECT sum(n_tup_ins) || '|' || count(*) FILTER (WHERE reset)
	  FROM chronicle.relation_deltas('$load_from', '$load_to', for_datname => 'bench',
	                                  for_relation => 'public.grow')}),
	($ins_to - $ins_from) . '|0',
	'relation_deltas() over the load: n_tup_ins sums to psql\'s difference, no reset');

# --- 3. Between readings: rewrites, drops, locks, a database dropped -----------

my $t3 = sql('SELECT max(ts) FROM chronicle.snapshot');
bsql(q{DELETE FROM grow WHERE id % 2 = 0; VACUUM FULL grow});
bsql(q{TRUNCATE pgbench_history; INSERT INTO pgbench_history (tid, bid, aid, delta) SELECT 1, 1, g, 1 FROM generate_series(1, 100) g});
bsql(q{CREATE TABLE doomed AS SELECT g FROM generate_series(1, 20000) g});
quiescent_compare('after VACUUM FULL and TRUNCATE', 'public.grow', 'public.pgbench_history', 'public.doomed');
is(sql(qq{SELECT count(*) FROM chronicle.relation_deltas('$t3', now(), for_datname => 'bench')
	  WHERE reset OR n_tup_ins < 0 OR n_tup_del < 0 OR seq_scan < 0 OR heap_blks_hit < 0}),
	'0', 'VACUUM FULL and TRUNCATE (new files, the same oids): no reset, no negative delta');

# A table dropped, another created again under the same name.
my $old_relid = bsql(q{SELECT 'doomed'::regclass::oid});
my $t4 = sql('SELECT max(ts) FROM chronicle.snapshot');
bsql(q{DROP TABLE doomed; CREATE TABLE doomed AS SELECT g FROM generate_series(1, 10000) g});
bsql(q{CREATE TABLE dropped AS SELECT g FROM generate_series(1, 30000) g});
quiescent_compare('a table created again under its name', 'public.doomed', 'public.dropped');
isnt(bsql(q{SELECT 'doomed'::regclass::oid}), $old_relid, 'doomed has another oid');
is(sql(qq{SELECT count(*) FILTER (WHERE reset) || '|' || count(*) FILTER (WHERE n_tup_ins < 0)
	  FROM chronicle.relation_deltas('$t4', now(), for_datname => 'bench', for_relation => 'public.doomed')}),
	'1|0', 'the table created again under the same name: one reset interval, no negative delta');
my $dropped_rows = sql(q{SELECT count(*) FROM chronicle.relations_history WHERE relation = 'public.dropped'});
bsql('DROP TABLE dropped');
my $t5 = more_worker_snapshots($node, 20, 'the worker goes on after DROP TABLE');
is(sql(qq{SELECT count(*) >= $dropped_rows FROM chronicle.relations_history WHERE relation = 'public.dropped' AND ts <= '$t5'}),
	't', 'a dropped table keeps its history');

# A rename: a new key with the same relid, from a baseline; the old name
# keeps its history.
my $tellers_relid = bsql(q{SELECT 'pgbench_tellers'::regclass::oid});
my $tellers_rows = sql(q{SELECT count(*) FROM chronicle.relations_history
	WHERE datname = 'bench' AND relation = 'public.pgbench_tellers'});
my $t6 = sql('SELECT max(ts) FROM chronicle.snapshot');
bsql('ALTER TABLE pgbench_tellers RENAME TO tellers_renamed');
quiescent_compare('a table renamed', 'public.tellers_renamed');
is(sql(q{SELECT DISTINCT relid FROM chronicle.relations_history
	WHERE datname = 'bench' AND relation = 'public.tellers_renamed'}),
	$tellers_relid, 'the renamed table: recorded under its new name, with its oid');
is(sql(q{SELECT count(*) FROM chronicle.relations_history
	WHERE datname = 'bench' AND relation = 'public.pgbench_tellers'}),
	$tellers_rows, 'its old name keeps its history (no row since)');
is(sql(qq{SELECT count(*) FROM chronicle.relation_deltas('$t6', now(), for_datname => 'bench',
	                                                   for_relation => 'public.tellers_renamed')
	  WHERE n_tup_upd <> 0 OR n_tup_ins <> 0 OR reset}),
	'0', 'the new name starts from a baseline: no jump of the counts the table had before');

# A lock held longer than two rounds: its values are carried, the other tables read.
my $holder = $node->background_psql('bench');
my $grow_before = sql(q{SELECT total_bytes FROM chronicle.relations_history
	WHERE datname = 'bench' AND relation = 'public.grow' ORDER BY ts DESC LIMIT 1});
my $branches_before = sql(q{SELECT index_bytes FROM chronicle.relations_history
	WHERE datname = 'bench' AND relation = 'public.pgbench_branches' ORDER BY ts DESC LIMIT 1});
# REINDEX holds an ACCESS EXCLUSIVE lock on the index alone
$holder->query_safe('BEGIN; LOCK TABLE grow IN ACCESS EXCLUSIVE MODE; REINDEX INDEX pgbench_branches_pkey');
my $lock_from = time();
bsql(q{INSERT INTO pgbench_history (tid, bid, aid, delta) SELECT 1, 1, g, 1 FROM generate_series(1, 50) g;
	SELECT pg_stat_force_next_flush()});
poll_until($node, 'postgres', qq{
	SELECT max(read_at) > to_timestamp($lock_from) FROM chronicle.relations_history
	 WHERE datname = 'bench' AND relation = 'public.pgbench_history'},
	'the other tables of the database are read while one is locked');
sleep 2;
is(sql(q{SELECT total_bytes || '|' || (read_at < now() - interval '2 s')::int
	FROM chronicle.relations_history WHERE datname = 'bench' AND relation = 'public.grow'
	ORDER BY ts DESC LIMIT 1}),
	"$grow_before|1", 'the locked table: its last values carried, not read again');
is(sql(q{SELECT index_bytes || '|' || (read_at < now() - interval '2 s')::int
	FROM chronicle.relations_history WHERE datname = 'bench' AND relation = 'public.pgbench_branches'
	ORDER BY ts DESC LIMIT 1}),
	"$branches_before|1", 'the table whose index is locked (REINDEX): carried too');
$holder->query_safe('ROLLBACK');
$holder->quit;

# A second database, recorded, then dropped.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE TABLE o AS SELECT g FROM generate_series(1, 1000) g');
poll_until($node, 'postgres',
	q{SELECT count(*) > 0 FROM chronicle.relations_history WHERE datname = 'other' AND relation = 'public.o'},
	'the second database is recorded');
$node->safe_psql('postgres', 'DROP DATABASE other');
my $after_drop = more_worker_snapshots($node, 10, 'the worker goes on after DROP DATABASE');
# a keyframe lists every row: the dropped database has none there
$node->safe_psql('postgres', q{ALTER SYSTEM SET chronicle.keyframe_interval = '1s'; SELECT pg_reload_conf()});
my $kf = more_worker_snapshots($node, 10, 'snapshots after a keyframe is due');
is(sql(qq{SELECT count(*) FROM chronicle.relations_history h JOIN chronicle.snapshot s USING (ts)
	  WHERE s.keyframe AND s.ts > '$after_drop' AND h.datname = 'other'}),
	'0', 'the dropped database has no row in the keyframes after the drop');
is(sql(qq{SELECT count(*) > 0 FROM chronicle.relations_history h JOIN chronicle.snapshot s USING (ts)
	  WHERE s.keyframe AND s.ts > '$after_drop' AND h.datname = 'bench' AND h.relation = 'public.grow'}),
	't', 'bench is in them');
is(sql(qq{SELECT count(*) FROM chronicle.relations_history h JOIN chronicle.snapshot s USING (ts)
	  WHERE s.keyframe AND s.ts > '$after_drop' AND h.relation = 'public.dropped'}),
	'0', 'nor has the dropped table');
is(sql(q{SELECT count(*) > 0 FROM chronicle.relations_history WHERE datname = 'other'}),
	't', 'the dropped database keeps its history');

# --- 4. No background worker slot free ------------------------------------------

# The postmaster's launcher, the collector, the sampler and the housekeeper
# take four of the six slots; a parallel query's two workers the others.
my $busy = $node->background_psql('bench');
$busy->query_safe(q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
	SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
	SET parallel_leader_participation = off});
# Only bench from here: a skip is counted in the rows of the database it
# could not read, and postgres (the recorder's own schema left out) has none.
$node->safe_psql('postgres', q{ALTER SYSTEM SET chronicle.relations_databases = 'bench';
	SELECT pg_reload_conf()});
my $skips_q = q{SELECT coalesce(max(read_skips), 0) FROM chronicle.relations_history WHERE datname = 'bench'};
my $skips = sql($skips_q);
bsql('CREATE TABLE sleepy AS SELECT g FROM generate_series(1, 16000) g; ANALYZE sleepy');
$busy->query_until(qr/started/, "\\echo started\nSELECT count(*) FROM sleepy WHERE pg_sleep(0.0005) IS NOT NULL;\n");
poll_until($node, 'postgres',
	q{SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'parallel worker'},
	'two parallel workers take the last slots');
bsql(q{INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 1); SELECT pg_stat_force_next_flush()});
poll_until($node, 'postgres',
	"SELECT ($skips_q) > $skips",
	'without a free slot, the readings are counted as skipped');
poll_until($node, 'postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'parallel worker'},
	'the parallel query ends');
$busy->quit;
my $slot_back = time();
bsql(q{INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 1); SELECT pg_stat_force_next_flush()});
poll_until($node, 'postgres', qq{
	SELECT max(read_at) > to_timestamp($slot_back) FROM chronicle.relations_history
	 WHERE datname = 'bench' AND relation = 'public.pgbench_history'},
	'the same collector reads again once a slot is free');
like(slurp_file($node->logfile, $log_start), qr/could not start a relation reader: no free background worker slot/,
	'the missing slot is said in the log (once, at LOG level)');

# --- 5. An idle database is not read again -------------------------------------

# Each reading commits in the database it reads: without any other
# activity in bench, its xact_commit must come to a stop (read from
# postgres, which does not touch bench) for four rounds and more.  It may
# take a few readings: the readers' own counts must be seen equal twice
# (a reader that rebuilt the relation cache's init file counts more).
my ($idle, $c1, $c2) = (0, -1, -2);
my $idle_deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (!$idle && time() < $idle_deadline)
{
	$c1 = sql(q{SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'});
	sleep 4;
	$c2 = sql(q{SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'});
	$idle = $c1 == $c2;
}
ok($idle, 'an idle database is not read again (no reader commits in it over four rounds)')
  or diag("xact_commit $c1 -> $c2");
bsql(q{INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 1);
	SELECT pg_stat_force_next_flush()});
my $hist_ins = bsql(q{SELECT n_tup_ins FROM pg_stat_all_tables WHERE relname = 'pgbench_history'});
poll_until($node, 'postgres', qq{
	SELECT n_tup_ins = $hist_ins FROM chronicle.relations_history
	 WHERE datname = 'bench' AND relation = 'public.pgbench_history' ORDER BY ts DESC LIMIT 1},
	'once it changes, it is read again');

# The recording goes on, with the relations source error-free.
more_worker_snapshots($node, 10);
is(sql(q{SELECT errors FROM chronicle.source_status() WHERE source = 'relations'}), '0',
	'no error counted for the relations source');
my $log = slurp_file($node->logfile, $log_start);
my @bad = grep { /\b(ERROR|FATAL|PANIC):/ } split /\n/, $log;
is(scalar(@bad), 0, 'no ERROR or FATAL in the server log') or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));

$node->stop;
done_testing();
