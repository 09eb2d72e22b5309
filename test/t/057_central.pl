# A central repository fed by logical replication (docs/central.md): two
# recording servers publish (chronicle.publish()), one central database
# subscribes to both (chronicle.subscribe()), each under its own origin.
#
# 1. Every source's history view read on the central side with the
#    server's origin (chronicle.use_server()) equals the view read on the
#    source, row for row, over every snapshot the central side received
#    from the first keyframe on (src1's from its first snapshot: subscribed
#    with its history from before); so do the snapshots, and timeline()
#    over that window.  Keys the source had before the subscription (read by
#    subscribe()) and keys added after (a database created: through the
#    slot) are both mapped to the central's ids.
#    The runs from before the subscription: with a backfill, those that
#    ended within it and those still open, with their pgbench rows,
#    metrics and marks (read with the slot's snapshot); without, those
#    still open; a run held already is not stored again at a rejoin.
# 2. The central server stopped for 10 s while the sources record, src1
#    under pgbench, started again: it catches up, with every snapshot the
#    sources took meanwhile.
#    src2's slot lost meanwhile (past a WAL cap): unsubscribed and
#    subscribed again with a backfill, src2 has every snapshot once.
# 3. Nothing of the sources reaches the central's own tables; a local
#    insert on the central with session_replication_role = replica (not
#    an apply worker) is not redirected; the trigger is a REPLICA trigger
#    on every partition of the central's history, also on the day
#    partitions made after the install.
# 4. A history row naming a key the central has no id for stops the
#    apply (never stored with a wrong key) until the key is mapped.
# 5. chronicle.unsubscribe() drops the slot and keeps the history; a
#    second chronicle.subscribe() goes on under the same origin.  Runs
#    deleted on a server, also while unsubscribed, are deleted there.
#    Upgraded in the documented order (the central side first), no row is
#    lost; the other order stops the apply until the central side follows.
# 6. A source restarted and its statistics reset: its history over both
#    equal on both sides, timeline() too.
# 7. A subscribed server's retention on the central side: its history
#    past it deleted from a keyframe on, by chronicle.maintain() and by
#    the housekeeper; the rest reads as on the server.  The source's own
#    retention (a day partition dropped) deletes nothing there.
# 8. Failover: src1 lost, its standby promoted and subscribed under
#    src1's name goes on under src1's origin, its ring's snapshots stored
#    once and none of src1's twice (every view over the failover equal).
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);

# Each source's key ids start elsewhere (1000, 2000), far from the
# central's own: the central side must pack their history again.
my @sources;
my $first_key = 0;
for my $name ('src1', 'src2')
{
	$first_key += 1000;
	my $node = chronicle_node($name,
		init => { allows_streaming => 'logical' },
		extensions => [],
		conf => q{
chronicle.snapshot_interval = '200ms'
chronicle.keyframe_interval = '2s'
max_slot_wal_keep_size = '256MB'
});
	$node->safe_psql('postgres', qq{
		BEGIN;
		CREATE EXTENSION pg_chronicle;
		SELECT setval('chronicle.history_key_id_seq', $first_key);
		COMMIT;});
	push @sources, $node;
}
my $central = chronicle_node('central', conf => q{
chronicle.snapshot_interval = '500ms'
wal_retrieve_retry_interval = '200ms'
track_functions = 'all'
});
# The central's day partitions exist before anything is applied: made by
# its first housekeeping, days ahead.  (A day partition attached while an
# apply worker routes a row of that day into the DEFAULT partition fails
# that transaction's partition check, and the worker applies it again.)
$central->poll_query_until('postgres', q{
	SELECT count(*) >= 2 FROM pg_inherits WHERE inhparent = 'chronicle.history'::regclass})
  or die 'the central makes no day partitions';

# keys before the subscription: the sources have recorded for a while
for my $node (@sources)
{
	$node->poll_query_until('postgres', 'SELECT count(*) >= 3 FROM chronicle.snapshot')
	  or die 'the source does not record';
	is($node->safe_psql('postgres', 'SELECT chronicle.publish()'), 'pg_chronicle', $node->name . ': published');
}
is($sources[0]->safe_psql('postgres', q{
	SELECT string_agg(p.tablename, ',' ORDER BY p.tablename) || '|' || bool_and(pub.pubinsert AND NOT pub.pubupdate
	       AND NOT pub.pubdelete AND NOT pub.pubtruncate AND pub.pubviaroot)
	  FROM pg_publication_tables p JOIN pg_publication pub ON pub.pubname = p.pubname
	 WHERE p.pubname = 'pg_chronicle'}),
	'app_interval,app_metric,app_transaction,history,history_key,mark,run,run_change,run_deleted,snapshot,statements_text|true',
	'the publication: the history and run tables, INSERT only, through the partitioned tables\' root');

my ($ret, $stdout, $stderr);

# the connection string as a literal
sub conninfo
{
	(my $c = $_[0]->connstr('postgres')) =~ s/'/''/g;
	return "'$c'";
}
# refused before anything is made: a publication that is not there, a
# publisher that cannot be reached
($ret, $stdout, $stderr) = $central->psql('postgres',
	"SELECT chronicle.subscribe('src1', " . conninfo($sources[0]) . ", publication => 'nothing')");
like($stderr, qr/publication "nothing" of server "src1" does not publish pg_chronicle's history/,
	'a publication the publisher lacks is refused');
($ret, $stdout, $stderr) = $central->psql('postgres',
	"SELECT chronicle.subscribe('src1', 'host=/nonexistent port=1 dbname=postgres')");
like($stderr, qr/could not connect to the publisher/, 'a publisher that cannot be reached is refused');
is($central->safe_psql('postgres', 'SELECT count(*) FROM chronicle.origin')
	. $central->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription')
	. $sources[0]->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	'000', '... leaving no origin, no subscription, no slot');

# Runs before the subscription: src1's 'pre' (ended: a pgbench log, a
# metric, a mark) and 'open1' (open); src2's 'old2' (ended) and 'open2'.
sub pgbench_rows
{
	my ($label, $file, $n) = @_;
	return qq{
	SELECT chronicle.pgbench_staging();
	INSERT INTO pg_temp.chronicle_pgbench_lines (file, line)
	SELECT '$file', format('%s %s %s 0 %s %s', c % 4, c / 4, 1000 + 7 * c,
	                       extract(epoch FROM r.started)::bigint + 1 + c / 100, (c % 100) * 9000)
	  FROM generate_series(0, $n - 1) c, chronicle.run r WHERE r.label = '$label' AND r.origin = 0;
	SELECT 1 FROM chronicle.load_pgbench_lines('$label');};
}
my %runs_before = (src1 => ['pre', 'open1'], src2 => ['old2', 'open2']);
for my $node (@sources)
{
	my $ended = $runs_before{ $node->name }[0];
	$node->safe_psql('postgres', "SELECT chronicle.run_begin('$ended'); SELECT chronicle.mark('in $ended');"
		  . "SELECT chronicle.mark('twice', now()) FROM generate_series(1, 2);"
		  . pgbench_rows($ended, 'pgbench_log.1', 300)
		  . "SELECT chronicle.add_metric('queue_depth', 5, now(), '$ended');");
}
for my $node (@sources)
{
	my ($ended, $open) = @{ $runs_before{ $node->name } };
	$node->poll_query_until('postgres', qq{SELECT max(s.ts) > r.started + interval '4 s'
		FROM chronicle.snapshot s, chronicle.run r WHERE r.label = '$ended' GROUP BY r.started})
	  or die "no snapshots in run $ended";
	$node->safe_psql('postgres', "SELECT chronicle.run_end('$ended'); SELECT chronicle.run_begin('$open');"
		  . pgbench_rows($open, 'pgbench_log.1', 200));
}

# src1 with its history from before (backfill), src2 from now on.  src1's
# first subscribe() fails after its slot is made and its runs are stored,
# while it stores their pgbench rows with the tables' triggers skipped (a
# lock held on app_transaction, a lock timeout); no slot, origin or
# subscription is left, the session's triggers fire again, and the next
# subscribe() in the same session subscribes.
my %origin;
my $holder = $central->background_psql('postgres');
# (SHARE: the subscription may read the table, its rows may not be added)
$holder->query_safe('BEGIN; LOCK TABLE chronicle.app_transaction IN SHARE MODE');
my $session = $central->background_psql('postgres', on_error_stop => 0);
$session->query_safe("SET lock_timeout = '300ms'");
my $subscribe_src1 = "SELECT chronicle.subscribe('src1', " . conninfo($sources[0]) . ", backfill => '1 hour')";
my ($out, $failed) = $session->query($subscribe_src1);
ok($failed && $session->{stderr} =~ /lock timeout/, 'subscribe() fails while it stores the runs from before');
is($central->safe_psql('postgres', 'SELECT count(*) FROM chronicle.origin')
	. $central->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription')
	. $sources[0]->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	'000', '... leaving no origin, no subscription, no slot');
is(($session->query('SHOW session_replication_role'))[0], 'origin', '... and the session\'s role as it was');
$holder->query_safe('ROLLBACK');
$holder->quit;
# (its NOTICE, the snapshots backfilled, goes to stderr)
($origin{src1}) = $session->query($subscribe_src1);
$session->quit;
ok($origin{src1} > 0, "src1 subscribed as origin $origin{src1}, in the same session");
# src2 subscribes once it recorded past open2's last pgbench transaction
# (up to 3.4 s after its start; the rows loaded later end before it):
# without a backfill the central side has no recording before the
# subscription, and app_summary() reads the transactions before a
# server's first snapshot as a gap (docs/central.md)
$sources[1]->poll_query_until('postgres', q{
	SELECT max(s.ts) > (SELECT max(t.ts) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id)
	  FROM chronicle.snapshot s, chronicle.run r WHERE r.label = 'open2' GROUP BY r.run_id})
  or die 'no snapshots in run open2';
$origin{src2} = $central->safe_psql('postgres', "SELECT chronicle.subscribe('src2', " . conninfo($sources[1]) . ')');
ok($origin{src2} > 0, "src2 subscribed as origin $origin{src2}");
is($central->safe_psql('postgres', "SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1}"),
	$sources[0]->safe_psql('postgres', 'SELECT min(ts) FROM chronicle.snapshot'),
	'src1 backfilled: its first snapshot on the central side');
($ret, $stdout, $stderr) = $central->psql('postgres',
	"SELECT chronicle.subscribe('src1', " . conninfo($sources[0]) . ", subscription => 'again')");
like($stderr, qr/server "src1" is subscribed already/, 'a server subscribed twice is refused');
is($sources[0]->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'again'"),
	'0', '... and leaves no slot on the publisher');

is($central->safe_psql('postgres', q{
	SELECT string_agg(o.server_name || ':' || r.label || ':' || (r.ended IS NOT NULL), ',' ORDER BY o.server_name, r.label)
	  FROM chronicle.run r JOIN chronicle.origin o ON o.origin_id = r.origin}),
	'src1:open1:false,src1:pre:true,src2:open2:false',
	'the runs from before: src1\'s (a backfill) ended and open, src2\'s (none) open only');
# the open runs go on: more pgbench rows, their end (through the slot)
for my $node (@sources)
{
	my $open = $runs_before{ $node->name }[1];
	$node->safe_psql('postgres', pgbench_rows($open, 'pgbench_log.2', 100)
		  . "SELECT chronicle.mark('in $open'); SELECT chronicle.run_end('$open');");
}

# a key the sources add after the subscription: a database
$sources[0]->safe_psql('postgres', 'CREATE DATABASE added_later');

# wait until the central side has a few keyframes of each and the new key
sub received
{
	my ($name, $n) = @_;
	return $central->poll_query_until('postgres', qq{
		SELECT count(*) >= $n FROM chronicle.archive_snapshot
		 WHERE origin = $origin{$name} AND keyframe});
}
ok(received($_->name, 3), $_->name . ': keyframes received on the central side') for @sources;
cmp_ok($central->safe_psql('postgres', "SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src2}"),
	'gt', $sources[1]->safe_psql('postgres', 'SELECT min(ts) FROM chronicle.snapshot'),
	'src2 not backfilled: from its subscription on');
$central->poll_query_until('postgres', qq{
	SELECT chronicle.use_server('src1') > 0
	   AND EXISTS (SELECT FROM chronicle.database_history WHERE datname = 'added_later')})
  or die 'the key added after the subscription does not arrive';

is($central->safe_psql('postgres', q{
	SELECT string_agg(m, ',' ORDER BY m)
	  FROM (SELECT o.server_name || ':' || (min(a.remote_id) > 1000
	                                        AND count(*) FILTER (WHERE a.remote_id = a.key_id) = 0) AS m
	          FROM chronicle.origin o JOIN chronicle.archive_key a ON a.origin = o.origin_id
	         GROUP BY o.server_name) s}),
	'src1:true,src2:true', 'every key of each source mapped, none to its own id');

# 1. the same rows on both sides, over what the central side received
# from its first keyframe to its last snapshot
my @views = split /\n/, $central->safe_psql('postgres',
	'SELECT DISTINCT source || \'_history\' FROM chronicle._source_columns() ORDER BY 1');
# The snapshots, every history view and timeline() of a source over a
# window, read on the source and on the central side: equal.
sub same_on_both_sides
{
	my ($node, $from, $to, $name) = @_;
	$name //= $node->name;
	my $digest = sub {
		my ($what) = @_;
		return qq{md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), ''))
		          || ' ' || count(*) FROM ($what) x};
	};
	my $window = "ts BETWEEN '$from' AND '$to'";
	my (@src, @ctl);
	my $snap = $digest->("SELECT ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors,"
		. " system_identifier, server_name FROM chronicle._snapshot WHERE $window");
	push @src, $node->safe_psql('postgres', "SELECT $snap");
	push @ctl, $central->safe_psql('postgres', "SELECT chronicle.use_server('$name'); SELECT $snap");
	for my $v (@views)
	{
		my $q = $digest->("SELECT * FROM chronicle.$v WHERE $window");
		push @src, "$v " . $node->safe_psql('postgres', "SELECT $q");
		push @ctl, "$v " . (split /\n/, $central->safe_psql('postgres',
			"SELECT chronicle.use_server('$name'); SELECT $q"))[1];
	}
	$ctl[0] = (split /\n/, $ctl[0])[1];
	my ($n) = $src[0] =~ / (\d+)$/;
	ok($n >= 10, "$name: $n snapshots in the window compared");
	my $nonempty = grep { !/ 0$/ } @src[1 .. $#src];
	ok($nonempty >= 8, "$name: $nonempty of " . scalar(@views) . ' history views have rows in the window');
	is_deeply(\@ctl, \@src, "$name: the snapshots and every history view equal on the central side");
	my $tl = $digest->("SELECT * FROM chronicle.timeline('$from', '$to')");
	my $tl_src = $node->safe_psql('postgres', "SELECT $tl");
	my $tl_ctl = (split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('$name'); SELECT $tl"))[1];
	is($tl_ctl, $tl_src, "$name: timeline() over the window equal on the central side");
	unlike($tl_src, qr/ 0$/, "$name: ... and not empty");
	return;
}
for my $node (@sources)
{
	my $name = $node->name;
	my ($from, $to) = split /\|/, $central->safe_psql('postgres', qq{
		SELECT (SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{$name} AND keyframe)
		       || '|' || max(ts)
		  FROM chronicle.archive_snapshot WHERE origin = $origin{$name}});
	same_on_both_sides($node, $from, $to);
}

# use_server(): an unknown name is an error; NULL reads this server again
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.use_server('nope')");
like($stderr, qr/no subscribed server named "nope"/, 'use_server() of an unknown name is refused');
my $other = 'SELECT count(*) FROM chronicle._snapshot WHERE system_identifier <> (SELECT system_identifier FROM chronicle.server())';
like($central->safe_psql('postgres', qq{
	SELECT chronicle.use_server('src1');
	SELECT current_setting('chronicle.origin');
	$other;
	SELECT chronicle.use_server(NULL);
	$other;}) =~ s/\n/,/gr,
	qr/^$origin{src1},$origin{src1},[1-9]\d*,0,0$/, 'use_server(NULL) reads this server again');
# publish() where wal_level is not logical: a warning, and the publication
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.publish('central_pub')");
like($stderr, qr/WARNING:  wal_level is \w+, not logical/, 'publish() warns when wal_level is not logical');
is($central->safe_psql('postgres', "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'central_pub'"),
	'11', '... and publishes the eleven tables all the same');
$central->safe_psql('postgres', 'DROP PUBLICATION central_pub');

# 1b. runs: both sources run 'a' (the same label); src1's with a mark, a
# pgbench log, its end and a warm-up set after it (run_change: inserts
# only on the wire)
$_->safe_psql('postgres', "SELECT chronicle.run_begin('a', '{\"n\": 1}')") for @sources;
for my $node (@sources)
{
	$node->poll_query_until('postgres', q{
		SELECT count(*) >= 15 FROM chronicle.snapshot s, chronicle.run r WHERE r.label = 'a' AND s.ts > r.started})
	  or die 'no snapshots in run a';
}
$sources[0]->safe_psql('postgres', q{
	SELECT chronicle.mark('half way');
	SELECT chronicle.pgbench_staging();
	INSERT INTO pg_temp.chronicle_pgbench_lines (file, line)
	SELECT 'pgbench_log.1', format('%s %s %s 0 %s %s', c % 4, c / 4, 1000 + 7 * c,
	                               extract(epoch FROM r.started)::bigint + 1 + c / 100, (c % 100) * 9000)
	  FROM generate_series(0, 199) c, chronicle.run r WHERE r.label = 'a';
	SELECT * FROM chronicle.load_pgbench_lines('a');
	SELECT chronicle.add_metric('queue_depth', 3, now(), 'a');});
$_->safe_psql('postgres', "SELECT chronicle.run_end('a')") for @sources;
$sources[0]->safe_psql('postgres', "SELECT chronicle.run_set_warmup('a', '1 s')");
# (and the snapshots after the end: a window's last interval reads them)
$sources[0]->poll_query_until('postgres', q{
	SELECT max(s.ts) > r.ended + interval '1 s' FROM chronicle.snapshot s, chronicle.run r
	 WHERE r.label = 'a' GROUP BY r.ended})
  or die 'src1 records nothing after run a';
my $src1_now = $sources[0]->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) = 2 AND bool_and(ended IS NOT NULL) AND max(warmup) = '1 s'
	       AND (SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1}) >= '$src1_now'
	  FROM chronicle.run WHERE label = 'a'}),
	'both servers\' runs "a" on the central side, ended, src1\'s warm-up set after its end');
my $run_row = q{SELECT label, started, ended, warmup, meta, settings, server_version, owner FROM chronicle.run
	 WHERE label = 'a' AND server = chronicle._server()};
for my $node (@sources)
{
	my $name = $node->name;
	is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('$name'); $run_row"))[1],
		$node->safe_psql('postgres', $run_row), "$name: run a on the central side as on the source");
}
# A run's numbers read on its server and on the central side: equal for
# each query named (and not empty where the run has them).
sub run_equal
{
	my ($node, $label, @queries) = @_;
	my $name = $node->name;
	my %q_run = (
		run_summary => qq{SELECT * FROM chronicle.run_summary('$label') x},
		app_summary => qq{SELECT * FROM chronicle.app_summary('$label') x},
		load_profile => qq{SELECT * FROM chronicle.load_profile('$label') x},
		marks => q{SELECT ts, event, owner FROM chronicle.mark WHERE origin = chronicle._origin()},
		app_metric => qq{SELECT m.ts, m.name, m.value FROM chronicle.app_metric m JOIN chronicle.run r USING (run_id)
		                 WHERE r.label = '$label' AND r.server = chronicle._server()},
	);
	for my $f (@queries)
	{
		my $q = "SELECT md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '')) || ' ' || count(*)"
		  . " FROM ($q_run{$f}) x";
		my $src = $node->safe_psql('postgres', $q);
		unlike($src, qr/ 0$/, "$name: $f of run $label has rows");
		is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('$name'); $q"))[1],
			$src, "$name: $f of run $label equal on the central side")
		  or diag("on $name:\n" . $node->safe_psql('postgres', $q_run{$f})
			  . "\non the central side:\n"
			  . $central->safe_psql('postgres', "SELECT chronicle.use_server('$name'); $q_run{$f}"));
	}
}
my @all_queries = qw(app_metric app_summary load_profile marks run_summary);
run_equal($sources[0], 'a', @all_queries);
# the runs from before the subscription: src1's backfilled with its
# history; src2's open run without its history before (no backfill)
run_equal($sources[0], 'pre', @all_queries);
run_equal($sources[0], 'open1', grep { $_ ne 'app_metric' } @all_queries);
run_equal($sources[1], 'open2', 'app_summary');
# more of run a's pgbench log, after the central kept app_summary('a'):
# the kept result is not read back (the apply fires no statement trigger,
# the central's trigger moves the epoch on)
my $q_app = q{SELECT md5(x::text) || ' ' || x.transactions FROM chronicle.app_summary('a') x};
my $n_tx = $sources[0]->safe_psql('postgres', q{
	SELECT chronicle.pgbench_staging();
	INSERT INTO pg_temp.chronicle_pgbench_lines (file, line)
	SELECT 'pgbench_log.2', format('%s %s %s 0 %s %s', 4, c, 90000 + c,
	                               extract(epoch FROM r.started)::bigint + 2, c * 1000)
	  FROM generate_series(0, 49) c, chronicle.run r WHERE r.label = 'a';
	SELECT 1 FROM chronicle.load_pgbench_lines('a');
	SELECT count(*) FROM chronicle.app_transaction;}) =~ s/.*\n//sr;
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) = $n_tx FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
	 WHERE r.origin = $origin{src1}}), "src1's $n_tx pgbench rows of run a on the central side");
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src1'); $q_app"))[1],
	$sources[0]->safe_psql('postgres', $q_app), 'src1: app_summary of run a with the rows loaded later, equal');
is((split /\n/, $central->safe_psql('postgres', q{
	SELECT chronicle.use_server('src2');
	SELECT run_from || ' ' || run_to FROM chronicle.run_window('a')}))[1],
	$sources[1]->safe_psql('postgres', q{SELECT run_from || ' ' || run_to FROM chronicle.run_window('a')}),
	'src2: its own run a read with use_server(\'src2\')');
# server:label: two servers' runs in one call, whatever server the
# session reads; each side as its own server compares it with itself
my $cmp = q{SELECT md5(string_agg(metric || ' ' || coalesce(value_%1$s::text, '-'), E'\n' ORDER BY metric))
	FROM chronicle.compare_runs(%2$s, %3$s)};
is($central->safe_psql('postgres', sprintf($cmp, 'a', q{'src1:a'}, q{'src2:a'})),
	$sources[0]->safe_psql('postgres', sprintf($cmp, 'a', q{'a'}, q{'a'})),
	'compare_runs(\'src1:a\', \'src2:a\'): side a is src1\'s run a');
is($central->safe_psql('postgres',
		"SELECT chronicle.use_server('src1'); " . sprintf($cmp, 'b', q{'src1:a'}, q{'src2:a'})) =~ s/^.*\n//r,
	$sources[1]->safe_psql('postgres', sprintf($cmp, 'b', q{'a'}, q{'a'})),
	'... side b is src2\'s run a, with the session reading src1');
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.run_window('src1:zz')");
like($stderr, qr/unknown run "src1:zz".*HINT:  Runs of server "src1": .*\bsrc1:a\b/s,
	'an unknown run of a subscribed server: its runs as the hint');
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.subscribe('x:y', 'dbname=postgres')");
like($stderr, qr/a server's name cannot hold ":"/, 'subscribe() refuses a name with ":"');
# a label of the server read wins: the central's own run "src1:a" is
# the one changed, src1's run a keeps its warm-up
is($central->safe_psql('postgres', q{
	SELECT chronicle._find_run('src1:a') = r.run_id FROM chronicle.run r WHERE r.label = 'a' AND r.server = }
	  . qq{$origin{src1};
	SELECT (chronicle.run_begin('src1:a')).server;
	SELECT chronicle._find_run('src1:a') = r.run_id FROM chronicle.run r WHERE r.label = 'src1:a';
	SELECT (chronicle.run_set_warmup('src1:a', '2 s')).server;
	SELECT (chronicle.run_end('src1:a')).server;
	SELECT r.warmup FROM chronicle.run r WHERE r.label = 'a' AND r.server = $origin{src1};}) =~ s/\n/,/gr,
	't,0,t,0,0,00:00:01', 'a label of the server read is read before server:label');
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.run_window('a')");
like($stderr, qr/unknown run "a"/, 'the central\'s own runs have no run a');
is($central->safe_psql('postgres', q{
	SELECT chronicle.use_server('src1');
	SELECT (chronicle.run_begin('a')).origin;
	SELECT chronicle.use_server(NULL);
	SELECT (chronicle.run_end('a')).origin;
	SELECT count(*) FROM chronicle.run WHERE label = 'a';}) =~ s/\n/,/gr,
	"$origin{src1},0,0,0,3", 'the central begins and ends a run "a" of its own, whatever server it reads');

# the servers view
is($central->safe_psql('postgres', q{
	SELECT string_agg(server_name || ':' || (system_identifier IS NOT NULL) || ':' || enabled || ':'
	                  || (snapshot_age < '30 s'), ',' ORDER BY server_name)
	  FROM chronicle.servers}),
	'src1:true:true:true,src2:true:true:true', 'chronicle.servers: both servers, streaming, recent');
is($central->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.servers s
	  JOIN chronicle.origin o ON o.origin_id = s.origin
	 WHERE s.system_identifier = o.system_identifier}),
	'2', 'the system identifiers are the publishers\'');
my $sysid = $sources[0]->safe_psql('postgres', 'SELECT system_identifier FROM chronicle.server()');
is($central->safe_psql('postgres', "SELECT system_identifier FROM chronicle.servers WHERE server_name = 'src1'"),
	$sysid, 'src1\'s system identifier as src1 reads it');

# no error from the apply workers
my $log = slurp_file($central->logfile);
unlike($log, qr/processing remote data|logical replication .*worker .* exited/,
	'no error in the apply workers on the central side');

# 2. the central side stopped while the sources record, src1 under
# pgbench: src1 catches up; src2's slot is lost meanwhile (a WAL cap of
# 1MB, WAL written past it), and src2 rejoins: unsubscribed, subscribed
# again with a backfill
$sources[0]->command_ok([ 'pgbench', '-i', '-q', '-s', '1', 'postgres' ], 'src1: pgbench -i');
my %before = map {
	$_ => $central->safe_psql('postgres', "SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{$_}")
} 'src1', 'src2';
$central->stop;
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '10', '-d', $sources[0]->connstr('postgres') ],
	'>', \$bench_out, '2>', \$bench_err);
$sources[1]->append_conf('postgresql.conf', "max_slot_wal_keep_size = '1MB'\n");
$sources[1]->reload;
$sources[1]->safe_psql('postgres', q{
	CREATE TABLE wal_filler AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 300000) g;
	SELECT pg_switch_wal();
	CHECKPOINT;});
is($sources[1]->safe_psql('postgres', "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'chronicle_src2'"),
	'lost', 'src2\'s slot is lost past its WAL cap');
$bench->finish;
like($bench_out, qr/number of failed transactions: 0 /, 'src1 under pgbench for 10 s meanwhile');
cmp_ok(($bench_out =~ /number of transactions actually processed: (\d+)/)[0], '>', 100, '... with its transactions');
my %src_now = map { $_->name => $_->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot') } @sources;
$central->start;
$central->poll_query_until('postgres', qq{
	SELECT max(ts) >= '$src_now{src1}' FROM chronicle.archive_snapshot WHERE origin = $origin{src1}})
  or die 'the central side does not catch up';
my $q_gap = "SELECT count(*) FROM chronicle._snapshot WHERE ts > '$before{src1}' AND ts <= '$src_now{src1}'";
my $n_src = $sources[0]->safe_psql('postgres', $q_gap);
ok($n_src >= 30, "src1 took $n_src snapshots while the central side was down");
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src1'); $q_gap"))[1],
	$n_src, '... every one of them on the central side after it caught up');

# A trigger of the user's on the central's pgbench rows: the backfill
# below checks each row's foreign key by its trigger, every trigger fired
# for every row; src1's, without it, checked the key once and skipped the
# triggers (central_publisher.c, as an import does).
$central->safe_psql('postgres', q{
	CREATE TABLE public.fired (run_id integer);
	CREATE FUNCTION public.fire() RETURNS trigger LANGUAGE plpgsql
	  AS $$BEGIN INSERT INTO public.fired VALUES (NEW.run_id); RETURN NULL; END$$;
	CREATE TRIGGER fire AFTER INSERT ON chronicle.app_transaction FOR EACH ROW EXECUTE FUNCTION public.fire();});
$central->safe_psql('postgres', "SELECT chronicle.unsubscribe('src2')");
is($central->safe_psql('postgres', "SELECT chronicle.subscribe('src2', " . conninfo($sources[1]) . ", backfill => '1 hour')"),
	$origin{src2}, 'src2 rejoins under its origin, with a backfill');
is($central->safe_psql('postgres', q{
	SELECT string_agg(r.label || ':' || f.n, ',' ORDER BY r.label)
	  FROM (SELECT run_id, count(*) AS n FROM public.fired GROUP BY run_id) f JOIN chronicle.run r USING (run_id)}),
	'old2:300', '... its backfilled pgbench rows each seen by the user\'s trigger');
# the rollup's statement trigger: once, for old2's rows; not for those of
# the runs the subscriptions before brought (src1's pre and open1, src2's
# open2: a statement each), nor for any row applied
my $rollup_calls = q{SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
	WHERE schemaname = 'chronicle' AND funcname = '_rollup_app_changed'};
$central->poll_query_until('postgres', "SELECT ($rollup_calls) >= 1")
  or die 'no statistics of the rollup trigger';
is($central->safe_psql('postgres', $rollup_calls), '1',
	'... the triggers skipped for the runs brought before, when there was no trigger of the user\'s');
$central->safe_psql('postgres', 'DROP TRIGGER fire ON chronicle.app_transaction');
$central->poll_query_until('postgres', qq{
	SELECT max(ts) >= '$src_now{src2}' FROM chronicle.archive_snapshot WHERE origin = $origin{src2}})
  or die 'src2 does not catch up';
my $q_all = "SELECT md5(string_agg(s.ts::text || s.keyframe, ',' ORDER BY s.ts)) || ' ' || count(*)"
  . " FROM chronicle._snapshot s WHERE s.ts <= '$src_now{src2}'";
my $all_src = $sources[1]->safe_psql('postgres', $q_all);
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src2'); $q_all"))[1],
	$all_src, "src2 after its rejoin: every snapshot up to now once, none missing ($all_src)");
my $q_runs = q{SELECT string_agg(r.label || ':' || (SELECT count(*) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id),
	                      ',' ORDER BY r.label)
	  FROM chronicle.run r WHERE r.server = chronicle._server()};
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src2'); $q_runs"))[1],
	$sources[1]->safe_psql('postgres', $q_runs),
	'... its runs each once with their pgbench rows, old2 (ended before the first subscription) backfilled now');
run_equal($sources[1], 'old2', 'app_summary', 'marks');
my $q_io = "SELECT md5(string_agg(h::text, ',' ORDER BY h::text)) || ' ' || count(*)"
  . " FROM chronicle.io_history h WHERE ts > '$before{src2}' AND ts <= '$src_now{src2}'";
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src2'); $q_io"))[1],
	$sources[1]->safe_psql('postgres', $q_io), '... and the history of the gap, equal');

# 3. the central's own tables hold its own recording only
is($central->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.snapshot
	 WHERE system_identifier IS DISTINCT FROM (SELECT system_identifier FROM chronicle.server())}),
	'0', 'no source row in the central\'s own snapshots');
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM chronicle.snapshot WHERE ts > '$src_now{src1}'}),
	'the central records its own history too');
is($central->safe_psql('postgres', q{
	SELECT count(*) || ':' || count(*) FILTER (WHERE t.tgenabled = 'R')
	  FROM pg_inherits i JOIN pg_trigger t ON t.tgrelid = i.inhrelid AND t.tgname = 'central'
	 WHERE i.inhparent = 'chronicle.history'::regclass}) =~ /^(\d+):(\d+)$/ && $1 == $2 && $1 >= 2,
	1, 'every partition of chronicle.history (default and days) has the REPLICA trigger');
$central->safe_psql('postgres', q{
	SET session_replication_role = replica;
	INSERT INTO chronicle.history_key (source, key) VALUES ('database', '{4000000001}')});
is($central->safe_psql('postgres', q{
	SELECT count(*) FROM chronicle.history_key h WHERE h.key = '{4000000001}'
	   AND NOT EXISTS (SELECT FROM chronicle.archive_key a WHERE a.key_id = h.key_id)}),
	'1', 'a local insert in a replica session is not redirected');


# 4. a history row naming a key the central side has no id for is never
# stored with a wrong key: the apply stops there, and resumes without a
# gap once the key is mapped again
my $log_offset = -s $central->logfile;
my $dboid = $sources[1]->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $map = $central->safe_psql('postgres', qq{
	DELETE FROM chronicle.archive_key a USING chronicle.history_key h
	 WHERE a.origin = $origin{src2} AND h.key_id = a.key_id AND h.source = 'database'
	   AND h.key = '{$dboid}'
	RETURNING a.remote_id || ',' || a.key_id});
like($map, qr/^\d+,\d+$/, "src2's key of database postgres unmapped ($map)");
my $t_unmapped = $sources[1]->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
$central->wait_for_log(qr/key id \d+ of source "database" of origin $origin{src2} has no key here/, $log_offset);
pass('the apply of src2 stops at a key without an id here');
$central->safe_psql('postgres', "INSERT INTO chronicle.archive_key VALUES ($origin{src2}, $map)");
# (a keyframe in the window: every key's row)
$sources[1]->poll_query_until('postgres', "SELECT count(*) > 0 FROM chronicle.snapshot WHERE keyframe AND ts > '$t_unmapped'")
  or die 'src2 takes no keyframe';
my $t_mapped = $sources[1]->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
$central->poll_query_until('postgres', qq{
	SELECT max(ts) >= '$t_mapped' FROM chronicle.archive_snapshot WHERE origin = $origin{src2}})
  or die 'src2 does not resume';
$q_gap = "SELECT count(*) FROM chronicle._snapshot WHERE ts > '$t_unmapped' AND ts <= '$t_mapped'";
$n_src = $sources[1]->safe_psql('postgres', $q_gap);
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src2'); $q_gap"))[1],
	$n_src, "src2 resumes once the key is mapped, with its $n_src snapshots of meanwhile");
my $q_db = "SELECT md5(string_agg(d::text, ',' ORDER BY d.ts, d.datname)) || ' ' || count(*)"
  . " FROM chronicle.database_history d WHERE ts > '$t_unmapped' AND ts <= '$t_mapped'";
my $db_src = $sources[1]->safe_psql('postgres', $q_db);
like($db_src, qr/ [1-9]\d*$/, 'src2 recorded database rows meanwhile');
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src2'); $q_db"))[1],
	$db_src, '... the same on the central side, the unmapped key\'s rows too');

# 4b. runs deleted: one deleted on its server is deleted on the central
# side, with its pgbench rows and metrics; one deleted while the central
# side is away (unsubscribed, below) too, when it subscribes again; a
# server's run deleted on the central side goes alone.  The server's
# history stays on the central side in each case.
my $src2 = $sources[1];
for my $label ('doomed', 'away', 'forgotten')
{
	$src2->safe_psql('postgres', "SELECT chronicle.run_begin('$label');"
		  . pgbench_rows($label, 'pgbench_log.1', 10)
		  . "SELECT chronicle.add_metric('queue_depth', 1, now(), '$label');"
		  . "SELECT chronicle.run_end('$label');");
}
my $q_src2_runs = qq{SELECT string_agg(r.label || ':' || (SELECT count(*) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id)
                         || ':' || (SELECT count(*) FROM chronicle.app_metric m WHERE m.run_id = r.run_id), ','
                         ORDER BY r.label)
                  FROM chronicle.run r WHERE r.server = $origin{src2} AND r.label IN ('doomed', 'away', 'forgotten')};
$central->poll_query_until('postgres', "SELECT coalesce(($q_src2_runs), '')", 'away:10:1,doomed:10:1,forgotten:10:1')
  or die 'src2\'s runs do not reach the central side';
my $q_src2_hist = "SELECT count(*) FROM chronicle.archive_history WHERE origin = $origin{src2}";
my $q_orphans = q{SELECT (SELECT count(*) FROM chronicle.app_transaction t WHERE NOT EXISTS (SELECT FROM chronicle.run r WHERE r.run_id = t.run_id))
                       + (SELECT count(*) FROM chronicle.app_metric m WHERE m.run_id IS NOT NULL
                                 AND NOT EXISTS (SELECT FROM chronicle.run r WHERE r.run_id = m.run_id))};
my $hist_before = $central->safe_psql('postgres', $q_src2_hist);
$src2->safe_psql('postgres', "SELECT chronicle.run_delete('doomed')");
ok($central->poll_query_until('postgres', "SELECT coalesce(($q_src2_runs), '')", 'away:10:1,forgotten:10:1'),
	'a run deleted on its server is deleted on the central side');
is($central->safe_psql('postgres', $q_orphans), '0', '... with its pgbench rows and metrics');
cmp_ok($central->safe_psql('postgres', $q_src2_hist), '>=', $hist_before, '... the server\'s history stays');
$central->safe_psql('postgres', "SELECT chronicle.run_delete('src2:forgotten')");
is($central->safe_psql('postgres', $q_src2_runs), 'away:10:1', 'a server\'s run deleted on the central side');
is($central->safe_psql('postgres', $q_orphans), '0', '... with its pgbench rows and metrics');
cmp_ok($central->safe_psql('postgres', $q_src2_hist), '>=', $hist_before, '... and the server\'s history stays');
is($src2->safe_psql('postgres', "SELECT count(*) FROM chronicle.run WHERE label = 'forgotten'"), '1',
	'... on the central side only');

# 5. unsubscribed: the slot is gone from the publisher, the history stays;
# subscribed again, the server's history goes on under the same origin
my $n_kept = $central->safe_psql('postgres', "SELECT count(*) FROM chronicle.archive_snapshot WHERE origin = $origin{src2}");
$central->safe_psql('postgres', "SELECT chronicle.unsubscribe('src2')");
is($sources[1]->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'), '0',
	'unsubscribed: src2\'s slot is dropped');
is($central->safe_psql('postgres', "SELECT count(*) >= $n_kept FROM chronicle.archive_snapshot WHERE origin = $origin{src2}")
	. $central->safe_psql('postgres', "SELECT enabled IS NULL FROM chronicle.servers WHERE server_name = 'src2'"),
	'tt', '... its history stays, listed without a subscription');
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.unsubscribe('src2')");
like($stderr, qr/no subscription to a server named "src2"/, 'unsubscribing twice is refused');
$src2->safe_psql('postgres', "SELECT chronicle.run_delete('away')");
is($central->safe_psql('postgres', $q_src2_runs), 'away:10:1', 'a run deleted while unsubscribed stays meanwhile');
is($central->safe_psql('postgres', "SELECT chronicle.subscribe('src2', " . conninfo($sources[1]) . ')'),
	$origin{src2}, 'subscribed again: the same origin');
is($central->safe_psql('postgres', "SELECT coalesce(($q_src2_runs), 'none')"), 'none',
	'... the run deleted meanwhile is deleted by subscribe()');
is($central->safe_psql('postgres', $q_orphans), '0', '... with its pgbench rows and metrics');
my $t_again = $sources[1]->safe_psql('postgres', 'SELECT chronicle.snapshot()');
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM chronicle.archive_snapshot WHERE origin = $origin{src2} AND ts = '$t_again'}),
	'... and its history goes on');

# 5b. the order of upgrades (docs/central.md: the central side first).  A
# central side whose table has a column more (a later version) applies a
# server's rows; a server whose table has one the central side lacks stops
# the apply, until the central side has it too, and nothing is lost.
$central->safe_psql('postgres', 'ALTER TABLE chronicle.snapshot ADD COLUMN newer_central integer');
my $t_newer = $src2->safe_psql('postgres', 'SELECT chronicle.snapshot()');
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM chronicle.archive_snapshot WHERE origin = $origin{src2} AND ts = '$t_newer'}),
	'a central side a version ahead applies a server\'s rows');
$log_offset = -s $central->logfile;
$src2->safe_psql('postgres', 'ALTER TABLE chronicle.snapshot ADD COLUMN newer_server integer');
$t_newer = $src2->safe_psql('postgres', 'SELECT chronicle.snapshot()');
$central->wait_for_log(qr/"chronicle\.snapshot" is missing replicated columns?: "?newer_server/, $log_offset);
is($central->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.archive_snapshot WHERE origin = $origin{src2} AND ts >= '$t_newer'}),
	'0', 'a server a version ahead of the central side stops the apply');
$central->safe_psql('postgres', 'ALTER TABLE chronicle.snapshot ADD COLUMN newer_server integer');
ok($central->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM chronicle.archive_snapshot WHERE origin = $origin{src2} AND ts = '$t_newer'}),
	'... until the central side is upgraded too: the rows meanwhile applied');
$src2->safe_psql('postgres', 'ALTER TABLE chronicle.snapshot DROP COLUMN newer_server');
$central->safe_psql('postgres', 'ALTER TABLE chronicle.snapshot DROP COLUMN newer_server, DROP COLUMN newer_central');


# 6. a source restarted (a new segment) and its statistics reset: read on
# the central side as on the source, over a window with both
my $src1 = $sources[0];
my $t_before = $src1->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot WHERE keyframe');
$src1->restart;
$src1->safe_psql('postgres', "SELECT pg_stat_reset_shared('io'); SELECT pg_stat_reset_shared('wal')");
my $t_reset = $src1->safe_psql('postgres', 'SELECT now()');
$src1->poll_query_until('postgres', "SELECT count(*) >= 10 FROM chronicle.snapshot WHERE ts > '$t_reset'")
  or die 'src1 does not record after its restart';
my $t_after = $src1->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
$central->poll_query_until('postgres', qq{
	SELECT max(ts) >= '$t_after' FROM chronicle.archive_snapshot WHERE origin = $origin{src1}})
  or die 'src1\'s snapshots after its restart do not reach the central side';
is($src1->safe_psql('postgres', qq{
	SELECT count(DISTINCT segment) FROM chronicle.snapshot WHERE ts BETWEEN '$t_before' AND '$t_after'}),
	'2', 'src1: a restart in the window');
same_on_both_sides($src1, $t_before, $t_after);

# 6b. rollups: the central side rolls up each subscribed server's history
# (chronicle._rollup(), as the housekeeper runs it) as the server rolls up
# its own: the same minute rows wherever both have rolled up (a run's
# pgbench rows under its label: its run ids differ), and the same timeline
# read from them; pgbench rows that arrive for a minute rolled up already
# roll it up again (the apply queues their run, as the statement trigger
# queues a load on the server).
my $q_rolled = q{
	SELECT concat_ws(' ', m.ts, m.source,
	                 CASE WHEN m.source = 'app'
	                      THEN (SELECT r.label FROM chronicle.run r WHERE r.run_id = m.key[1]::integer)
	                      ELSE m.key::text END,
	                 m.seconds, m.intervals, m.resets, m.vals, m.hist) AS l,
	       m.source = 'app' AS app
	  FROM chronicle.rollup_minute m WHERE m.origin = %d AND m.ts <= '%s'};
sub rolled_minutes
{
	my ($node, $origin, $until) = @_;
	return $node->safe_psql('postgres',
		"SELECT md5(string_agg(x.l, E'\\n' ORDER BY x.l)) || ' ' || count(*) || ' ' || count(*) FILTER (WHERE x.app)"
		  . ' FROM (' . sprintf($q_rolled, $origin, $until) . ') x');
}
# the rows of one side that the other has not, on a failure
sub rolled_diff
{
	my ($origin, $until) = @_;
	my %on = map { $_->[0] => { map { $_ => 1 } split /\n/, $_->[1]->safe_psql('postgres',
		'SELECT x.l FROM (' . sprintf($q_rolled, $_->[2], $until) . ') x') } }
	  (['src1', $src1, 0], ['central', $central, $origin]);
	return join "\n", map { my ($x, $y) = @$_; map { "only on $x: $_" } grep { !$on{$y}{$_} } sort keys %{ $on{$x} } }
	  (['src1', 'central'], ['central', 'src1']);
}
# every pgbench row of src1 in a complete minute, on both sides
my $t_app = $src1->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.app_transaction');
$src1->poll_query_until('postgres', qq{
	SELECT date_trunc('minute', now() - interval '10 s') > date_trunc('minute', '$t_app'::timestamptz - interval '1 us')})
  or die 'the minute of src1\'s pgbench rows never completes';
my $t_src1 = $src1->safe_psql('postgres', 'SELECT chronicle.snapshot()');
$central->poll_query_until('postgres', qq{
	SELECT max(ts) >= '$t_src1' FROM chronicle.archive_snapshot WHERE origin = $origin{src1}})
  or die 'src1\'s latest snapshot does not reach the central side';
my $last_minute = q{SELECT max(ts) FROM chronicle.rollup_minute WHERE source = 'intervals' AND origin = %d};
sub rolled_until
{
	$_->safe_psql('postgres', 'SELECT * FROM chronicle.rollup()') for ($src1, $central);
	my @last = ($src1->safe_psql('postgres', sprintf($last_minute, 0)),
		$central->safe_psql('postgres', sprintf($last_minute, $origin{src1})));
	return $last[0] lt $last[1] ? $last[0] : $last[1];
}
my $until = rolled_until();
my $minutes = rolled_minutes($src1, 0, $until);
like($minutes, qr/ \d+ [1-9]\d*$/, "src1 rolled up minutes with pgbench rows, up to $until");
is(rolled_minutes($central, $origin{src1}, $until), $minutes,
	'the central side rolls up src1\'s minutes as src1 does')
  or diag(rolled_diff($origin{src1}, $until));
my $q_tl = qq{SELECT md5(string_agg(t::text, E'\\n' ORDER BY t.interval_end)) || ' ' || count(*)
	FROM chronicle.timeline((SELECT min(ts) FROM chronicle.rollup_minute WHERE origin = %d),
	                        '$until'::timestamptz + interval '1 minute', resolution => 'minute') t};
my $tl_src1 = $src1->safe_psql('postgres', sprintf($q_tl, 0));
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src1'); " . sprintf($q_tl, $origin{src1})))[1],
	$tl_src1, '... and timeline(resolution => \'minute\') reads them as src1 reads its own');
# more of run pre's pgbench rows, in its minute rolled up already
my $n_pre = $src1->safe_psql('postgres', pgbench_rows('pre', 'pgbench_log.late', 40)
	. q{SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id) WHERE r.label = 'pre'});
$n_pre =~ s/.*\n//s;
$central->poll_query_until('postgres', qq{
	SELECT count(*) = $n_pre FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
	 WHERE r.label = 'pre' AND r.origin = $origin{src1}})
  or die 'run pre\'s late pgbench rows do not reach the central side';
my $until_late = rolled_until();
isnt(rolled_minutes($src1, 0, $until), $minutes, 'src1 rolls up the minute of the late rows again');
is(rolled_minutes($central, $origin{src1}, $until_late), rolled_minutes($src1, 0, $until_late),
	'... and so does the central side')
  or diag(rolled_diff($origin{src1}, $until_late));

# 7. retention on the central side: a subscribed server's history older
# than its retention is deleted from a keyframe on (the keyframe itself
# stays), what remains reads as on the server, another server's stays.
# By chronicle.maintain(), then by the housekeeper.
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.set_server_retention('nobody', '1 day')");
like($stderr, qr/no subscribed server named "nobody"/, 'a retention for a server not subscribed is refused');
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.set_server_retention('src1', '-1 s')");
like($stderr, qr/retention must not be negative/, 'a negative retention is refused');
$central->safe_psql('postgres', "SELECT chronicle.set_server_retention('src1', '4 s')");
is($central->safe_psql('postgres', "SELECT retention FROM chronicle.servers WHERE server_name = 'src1'"),
	'00:00:04', 'src1\'s retention, in chronicle.servers');
my $q_src2_old = "SELECT count(*) FROM chronicle.archive_snapshot WHERE origin = $origin{src2} AND ts <= '%s'";
my $t_src2 = $central->safe_psql('postgres', "SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src2}");
my $n_src2 = $central->safe_psql('postgres', sprintf($q_src2_old, $t_src2));
my $first = $central->safe_psql('postgres', "SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1}");
# one transaction, whose now() makes the cutoff
my ($cutoff, $skipped, $kept_from, $t_end) = split /\n/, $central->safe_psql('postgres', qq{
	BEGIN;
	SELECT now() - interval '4 s';
	SELECT partitions_skipped FROM chronicle.maintain();
	SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1};
	SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1};
	COMMIT;});
is($skipped, '0', 'maintain() on the central side skips nothing');
# the reference: the keyframes of src1's own snapshots
my $cut = $sources[0]->safe_psql('postgres', qq{
	SELECT max(ts) FROM chronicle.snapshot WHERE keyframe AND ts > '$first' AND ts <= '$cutoff'});
isnt($cut, '', "src1 took keyframes before the cutoff ($cutoff)");
is($kept_from, $cut, 'src1\'s history is kept from its last keyframe before the cutoff on');
is($central->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.archive_history WHERE origin = $origin{src1} AND ts < '$cut'}),
	'0', '... none of its history rows before it');
my $q_kept = "SELECT md5(string_agg(d::text, ',' ORDER BY d.ts, d.datname)) || ' ' || count(*)"
  . " FROM chronicle.database_history d WHERE ts >= '$cut' AND ts <= '$t_end'";
my $kept_src = $sources[0]->safe_psql('postgres', $q_kept);
like($kept_src, qr/ [1-9]\d*$/, 'src1 recorded database rows after the cut');
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src1'); $q_kept"))[1],
	$kept_src, '... which read on the central side as on src1');
is($central->safe_psql('postgres', sprintf($q_src2_old, $t_src2)), $n_src2,
	'src2\'s history (chronicle.retention: 7 days) is all kept');

# the housekeeper does it too, every 5 minutes (here every 300 ms), and
# first when it starts
$central->safe_psql('postgres', q{
	SELECT chronicle.set_server_retention('src2', '3 s');
	ALTER SYSTEM SET chronicle.debug_housekeeping_interval = '300ms';});
my $t_set = $central->safe_psql('postgres', 'SELECT now()');
$central->restart;
ok($central->poll_query_until('postgres', qq{
	SELECT min(ts) > '$t_set'::timestamptz - interval '10 s' FROM chronicle.archive_snapshot WHERE origin = $origin{src2}}),
	'the housekeeper deletes src2\'s history past its retention');
my $src2_from = $central->safe_psql('postgres', "SELECT min(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src2}");
is($sources[1]->safe_psql('postgres', "SELECT keyframe FROM chronicle.snapshot WHERE ts = '$src2_from'"),
	't', '... from a keyframe on');
unlike(slurp_file($central->logfile), qr/expired history failed/, 'no pruning failed');

# a run that fails (the history locked past its lock_timeout) is said once
# while it repeats; the rollups of those runs go on, and once the lock is
# gone the next run of the same housekeeper deletes again
$log_offset = -s $central->logfile;
my $locker = $central->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK chronicle.archive_history IN SHARE MODE');
$central->wait_for_log(qr/deleting the subscribed servers' expired history failed: canceling statement due to lock timeout/,
	$log_offset);
sleep(2);    # six runs or more of the housekeeper, every 300 ms
my $said = () = substr(slurp_file($central->logfile), $log_offset)
  =~ /deleting the subscribed servers' expired history failed/g;
is($said, 1, 'a pruning that fails while the lock is held is said once');
$locker->query_safe('COMMIT');
$locker->quit;
my $t_unlocked = $central->safe_psql('postgres', 'SELECT now()');
ok($central->poll_query_until('postgres', qq{
	SELECT min(ts) > '$t_unlocked'::timestamptz - interval '10 s' FROM chronicle.archive_snapshot WHERE origin = $origin{src2}}),
	'... and the housekeeper deletes again once it is released');
unlike(substr(slurp_file($central->logfile), $log_offset), qr/rollup failed/, '... its rollups failing none meanwhile');
# back to the schedule, and to chronicle.retention for both servers
$central->safe_psql('postgres', q{
	SELECT chronicle.set_server_retention(s, NULL) FROM unnest(ARRAY['src1', 'src2']) s;
	ALTER SYSTEM RESET chronicle.debug_housekeeping_interval;
	SELECT pg_reload_conf();});

# the source's own retention deletes nothing on the central side: a day
# partition dropped there (as chronicle.maintain() drops an expired one)
my $t_kept = $central->safe_psql('postgres', "SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1}");
my $q_kept1 = "SELECT count(*) FROM chronicle.archive_snapshot WHERE origin = $origin{src1} AND ts <= '$t_kept'";
my $n_kept1 = $central->safe_psql('postgres', $q_kept1);
my $part = $src1->safe_psql('postgres', "SELECT tableoid::regclass FROM chronicle.history WHERE ts = '$t_kept'");
like($part, qr/^chronicle\.history_p\d{8}$/, "src1's rows in a day partition ($part)");
$src1->safe_psql('postgres', "DROP TABLE $part");
my $t_dropped = $src1->safe_psql('postgres', 'SELECT chronicle.snapshot()');
$central->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM chronicle.archive_snapshot WHERE origin = $origin{src1} AND ts = '$t_dropped'})
  or die 'src1\'s snapshot after the drop does not reach the central side';
is($central->safe_psql('postgres', $q_kept1), $n_kept1,
	'a day partition dropped on src1: its rows stay on the central side');

# 8. Failover: a standby of src1 promoted once src1 is lost, subscribed
# under src1's name (docs/central.md "Failover"), goes on under src1's
# origin.  Its backfill stores the snapshots of its ring (the segment it
# recorded as a standby) and none of src1's a second time: over a window
# from before the failover to after it, every view reads on the central
# side as on the promoted server.
# (from a keyframe after the partition dropped above: src1 and its standby
# lack the history before it that the central side keeps)
$src1->poll_query_until('postgres', "SELECT count(*) > 0 FROM chronicle.snapshot WHERE keyframe AND ts > '$t_dropped'")
  or die 'src1 takes no keyframe';
$src1->backup('failover');
my $standby = PostgreSQL::Test::Cluster->new('src1_standby');
$standby->init_from_backup($src1, 'failover', has_streaming => 1);
$standby->start;
$standby->poll_query_until('postgres', 'SELECT snapshots >= 10 AND in_recovery FROM chronicle.standby_ring()')
  or die 'the standby does not record into its ring';
# (a fast stop: the standby and the central side have all of src1's WAL)
$src1->stop('fast');
# both have all of it once they have the same last snapshot
my ($t_lost, $t_central) = ('', '-');
for (1 .. 600)
{
	$t_lost = $standby->safe_psql('postgres', 'SELECT max(ts) FROM chronicle.snapshot');
	$t_central = $central->safe_psql('postgres',
		"SELECT max(ts) FROM chronicle.archive_snapshot WHERE origin = $origin{src1}");
	last if $t_lost eq $t_central;
	usleep(100_000);
}
is($t_central, $t_lost, 'src1 lost: its last snapshot on the central side and on its standby');
my ($n_ring, $ring_newest) = split /\|/,
  $standby->safe_psql('postgres', 'SELECT snapshots, newest FROM chronicle.standby_ring()');
$standby->promote;
$standby->poll_query_until('postgres', "SELECT written >= $n_ring AND snapshots = 0 FROM chronicle.standby_ring()")
  or die 'the promoted standby does not write its ring';
# Subscribed at once, as a user would: the ring's rows wait in the default
# partition (src1's day partition was dropped above), and the promoted
# server's first snapshot moves them into the day partition it makes,
# maybe while the backfill reads them (006_housekeeping.pl makes that
# happen every time).
($ret, $stdout, $stderr) = $central->psql('postgres', "SELECT chronicle.unsubscribe('src1')");
like($stderr, qr/could not drop the replication slot/, 'src1 unsubscribed, its slot (unreachable) left with a warning');
is($central->safe_psql('postgres',
		"SELECT chronicle.subscribe('src1', " . conninfo($standby) . ", backfill => '1 hour')"),
	$origin{src1}, 'the promoted standby subscribed under src1\'s name: src1\'s origin');
# Key ids that the lost primary gave (the central side has them) and the
# promoted server gives again, to other keys: the promoted server's keys.
# (An id the promoted server gave meanwhile, to a key of its own that has
# reached the central side already, keeps its mapping: as the lost
# primary's it would be replaced the same way.)
my $reused = $standby->safe_psql('postgres', q{
	SELECT setval('chronicle.history_key_id_seq', (SELECT max(key_id) FROM chronicle.history_key) + 100) + 1});
$central->safe_psql('postgres', qq{
	INSERT INTO chronicle.archive_key (origin, remote_id, key_id)
	SELECT $origin{src1}, i, (SELECT min(key_id) FROM chronicle.history_key WHERE source = 'database')
	  FROM generate_series($reused, $reused + 49) i
	ON CONFLICT DO NOTHING});
$standby->safe_psql('postgres', 'CREATE DATABASE after_failover');
$standby->safe_psql('after_failover', 'SELECT 1');	# (its statistics: a session)
$standby->poll_query_until('postgres',
	"SELECT EXISTS (SELECT FROM chronicle.database_history WHERE datname = 'after_failover')")
  or die 'the promoted server does not record the database it made';
my $t_promoted = $standby->safe_psql('postgres', 'SELECT chronicle.snapshot()');
$central->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM chronicle.archive_snapshot WHERE origin = $origin{src1} AND ts = '$t_promoted'})
  or die 'the promoted server\'s snapshots do not reach the central side';
my ($ring_from, $ring_n) = split /\|/, $standby->safe_psql('postgres', qq{
	SELECT min(ts) || '|' || count(*) FROM chronicle.snapshot
	 WHERE segment = (SELECT segment FROM chronicle.snapshot WHERE ts = '$ring_newest')});
cmp_ok($ring_n, '>=', $n_ring, "the ring's $ring_n snapshots in the promoted server's tables");
my $q_dbs = "SELECT count(*) FROM chronicle.database_history WHERE datname = 'after_failover' AND ts <= '$t_promoted'";
my $dbs = $standby->safe_psql('postgres', $q_dbs);
cmp_ok($dbs, '>', 0, 'the promoted server records the database it made');
is((split /\n/, $central->safe_psql('postgres', "SELECT chronicle.use_server('src1'); $q_dbs"))[1], $dbs,
	'... under its key on the central side, its id one the lost primary gave to another');
my $fo_from = $standby->safe_psql('postgres', qq{
	SELECT max(ts) FROM chronicle.snapshot WHERE keyframe AND ts < '$ring_from'});
same_on_both_sides($standby, $fo_from, $t_promoted, 'src1');
is($central->safe_psql('postgres', qq{
	SELECT count(*) FROM chronicle.archive_snapshot
	 WHERE origin = $origin{src1} AND ts >= '$ring_from' AND ts <= '$t_promoted'
	   AND segment = (SELECT segment FROM chronicle.archive_snapshot
	                   WHERE origin = $origin{src1} AND ts = '$ring_from')}),
	$ring_n, '... the ring\'s segment among them, once');

done_testing();
