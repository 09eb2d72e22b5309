# The privilege matrix: every function and table of the extension, called
# and read by a plain role, pg_read_all_stats, pg_monitor,
# pg_read_server_files and a superuser.  The expected outcome is stated
# here, per function, independently of the grants in src/sql: a function
# added without a decision on who may call it fails this test.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node);

# Who may call what.  "super": superusers only.  "writer": pg_monitor
# members (they record runs).  Every other function is a reader's:
# pg_monitor and pg_read_all_stats members.
my %super = map { $_ => 1 } qw(
  snapshot maintain ensure_partitions start stop wait_samples_reset
  add_metric load_pgbench_log load_pgbench_lines pgbench_staging
  pgbench_bad_line _deltas _ends _run_open _create_partition _maintain
  _partition_layout _retention _rollup_retention _rollup _rollup_origin rollup
  _rollup_app_changed _pack _history_load _history_write _history_layout
  _check_owner _mark_event_max _redact_statement _analysis_layout _analysis_make _analysis_source
  _analysis_create _analysis_checks _analysis_delta
  publish subscribe unsubscribe _central_apply _central_layout _publisher_prepare _publisher_drop_slot
  _publisher_backfill _central_store_run _run_changed _run_deleted _app_epoch_next _sum_bigint _app_transaction_triggers_known
  _import_transactions
  set_server_retention _prune_servers _check_retention);
my %writer = map { $_ => 1 } qw(run_begin run_end run_label run_delete run_set_warmup _check_label mark mark_delete
  _import_run);

# The roles, and which classes each may use.
my %roles = (
	r_plain => { super => 0, writer => 0, reader => 0 },
	r_stats => { super => 0, writer => 0, reader => 1 },
	r_monitor => { super => 0, writer => 1, reader => 1 },
	r_files => { super => 0, writer => 0, reader => 0 },
	superuser => { super => 1, writer => 1, reader => 1 },);

my $node = chronicle_node('privileges', extensions => [], conf => q{
chronicle.enabled = off
});
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_chronicle;
	SELECT chronicle.snapshot();
	CREATE ROLE r_plain LOGIN;
	CREATE ROLE r_stats LOGIN IN ROLE pg_read_all_stats;
	CREATE ROLE r_monitor LOGIN IN ROLE pg_monitor;
	CREATE ROLE r_files LOGIN IN ROLE pg_read_server_files;
});

# Each call in its own subtransaction, rolled back by a sentinel error
# (ZZ000) when it succeeds, so that the calls of one role change nothing
# the next role sees.  One line per call: object, action, SQLSTATE.
my $probe = q{
SET statement_timeout = '600s';
SET client_min_messages = notice;
DO $probe$
DECLARE
	r record;
	st text;
BEGIN
	FOR r IN
		SELECT p.oid::regprocedure::text AS obj, 'call' AS action,
		       format('SELECT chronicle.%I(%s)', p.proname,
		              (SELECT string_agg(format('NULL::%s', format_type(t, NULL)), ', ' ORDER BY o)
		                 FROM unnest(p.proargtypes) WITH ORDINALITY AS u(t, o))) AS stmt
		  FROM pg_proc p
		 WHERE p.pronamespace = 'chronicle'::regnamespace
		UNION ALL
		SELECT c.oid::regclass::text, a.action,
		       CASE a.action
		         WHEN 'select' THEN format('SELECT 1 FROM %s LIMIT 0', c.oid::regclass)
		         WHEN 'insert' THEN format('INSERT INTO %s DEFAULT VALUES', c.oid::regclass)
		         WHEN 'update' THEN format('UPDATE %s SET %I = %I WHERE false', c.oid::regclass, f.attname, f.attname)
		         WHEN 'delete' THEN format('DELETE FROM %s WHERE false', c.oid::regclass)
		         WHEN 'truncate' THEN format('TRUNCATE %s', c.oid::regclass)
		       END
		  FROM pg_class c
		  CROSS JOIN (VALUES ('select'), ('insert'), ('update'), ('delete'), ('truncate')) AS a(action)
		  CROSS JOIN LATERAL (SELECT attname FROM pg_attribute
		                       WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped
		                         AND attidentity = '' AND attgenerated = ''
		                       ORDER BY attnum DESC LIMIT 1) AS f
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND c.relkind IN ('r', 'p', 'v', 'm')
		   AND (a.action = 'select' OR c.relkind IN ('r', 'p'))
		 ORDER BY 1, 2
	LOOP
		BEGIN
			EXECUTE r.stmt;
			RAISE EXCEPTION USING ERRCODE = 'ZZ000';
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
			RAISE NOTICE 'probe|%|%|%', r.obj, r.action, st;
		END;
	END LOOP;
END
$probe$;
};

my (%outcome, %partition);
for my $role (sort keys %roles)
{
	my ($stdout, $stderr);
	$node->psql('postgres', $probe,
		stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-U', $role eq 'superuser' ? $superuser : $role ]);
	for my $line (split /\n/, $stderr)
	{
		next unless $line =~ /probe\|(.*)\|(\w+)\|(\w{5})$/;
		$outcome{$role}{"$1|$2"} = $3;
	}
	cmp_ok(scalar keys %{ $outcome{$role} }, '>', 100,
		"$role: every object was probed (" . scalar(keys %{ $outcome{$role} }) . ')');
}

my $partitions = $node->safe_psql('postgres', q{
	SELECT string_agg(oid::regclass::text, ' ') FROM pg_class
	 WHERE relnamespace = 'chronicle'::regnamespace AND relispartition});
%partition = map { $_ => 1 } split / /, $partitions;

my ($checked, @wrong) = (0);
for my $role (sort keys %roles)
{
	for my $key (sort keys %{ $outcome{$role} })
	{
		my ($obj, $action) = split /\|/, $key;
		my $st = $outcome{$role}{$key};
		my $allowed = $st ne '42501';
		my $want;
		if ($action eq 'call')
		{
			(my $name = $obj) =~ s/^chronicle\.//;
			$name =~ s/\(.*//;
			my $class = $super{$name} ? 'super' : $writer{$name} ? 'writer' : 'reader';
			$want = $roles{$role}{$class};
		}
		elsif ($partition{$obj})
		{
			# A partition is read through its parent; only the plain
			# roles must be kept out of it.
			next if $roles{$role}{reader} && !$roles{$role}{super};
			$want = $roles{$role}{super};
		}
		else
		{
			$want = $action eq 'select' ? $roles{$role}{reader} : $roles{$role}{super};
		}
		$checked++;
		push @wrong, "$role $action $obj: " . ($allowed ? "allowed ($st)" : 'denied')
		  . ', expected ' . ($want ? 'allowed' : 'denied')
		  if $allowed != $want;
		# Superuser calls with NULL arguments fail only with clean errors.
		push @wrong, "$role $action $obj: internal error $st"
		  if $st =~ /^XX/;
	}
}
is(join("\n", @wrong), '', "privilege matrix: $checked outcomes as expected");
note "privilege matrix: $checked (role, object, action) outcomes checked";

# Who may change a run: the role that opened it, a member of that role, or
# a superuser; every monitoring role still reads it.
$node->safe_psql('postgres', q{
	CREATE ROLE r_monitor2 LOGIN IN ROLE pg_monitor;
	CREATE ROLE r_member LOGIN IN ROLE pg_monitor, r_monitor;});
sub as_role
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	return $rc == 0 ? 'ok' : $err =~ /ERROR:  (\w{5}):/ ? $1 : $err;
}
is(as_role('r_monitor', "SELECT chronicle.run_begin('owned')"), 'ok', 'a monitoring role opens a run');
is($node->safe_psql('postgres', "SELECT owner FROM chronicle.run WHERE label = 'owned'"), 'r_monitor',
	'the run belongs to the role that opened it');
is(as_role('r_monitor2', "SELECT chronicle.run_end('owned')"), '42501', 'another role may not end it by name');
is(as_role('r_monitor2', 'SELECT chronicle.run_end()'), '42501', 'nor as the open run');
is(as_role('r_monitor2', "SELECT chronicle.run_delete('owned')"), '42501', 'nor delete it');
is(as_role('r_monitor2', "SELECT chronicle.run_set_warmup('owned', '1 s')"), '42501',
	'nor set how it is read (its warm-up)');
is(as_role('r_stats', "SELECT chronicle.run_set_warmup('owned', '1 s')"), '42501',
	'a reader may not either');
is(as_role('r_monitor', "SELECT chronicle.run_set_warmup('owned', '0 s')"), 'ok', 'its owner may');
is(as_role('r_stats', "SELECT count(*) FROM chronicle.run WHERE label = 'owned' AND ended IS NULL"), 'ok',
	'a reader still reads it');
is($node->safe_psql('postgres', "SELECT ended IS NULL FROM chronicle.run WHERE label = 'owned'"), 't',
	'the run is still open');
is(as_role('r_member', "SELECT chronicle.run_end('owned')"), 'ok', 'a member of the owner ends it');
is(as_role('r_monitor2', "SELECT chronicle.run_label('theirs', now() - interval '1 min', now())"), 'ok',
	'a monitoring role labels a range');
is(as_role('r_monitor', "SELECT chronicle.run_delete('theirs')"), '42501', 'another role may not delete it');
$node->safe_psql('postgres', "UPDATE chronicle.run SET owner = NULL WHERE label = 'owned'");
is(as_role('r_monitor', "SELECT chronicle.run_delete('owned')"), '42501',
	'a run without an owner (recorded before 0.3.0) is a superuser\'s to change');
is(as_role($superuser, "SELECT chronicle.run_delete('owned'); SELECT chronicle.run_delete('theirs')"), 'ok',
	'a superuser deletes any run');
for my $bound (q{'-infinity', now()}, q{now() - interval '1 min', 'infinity'})
{
	is(as_role('r_monitor', "SELECT chronicle.run_label('inf', $bound)"), '22023',
		"run_label refuses a bound at infinity ($bound)");
}

# The server survived every call.
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up after the matrix');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated/,
	'no backend crashed during the matrix');

done_testing();
