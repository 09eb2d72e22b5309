# The upgrade path from an earlier release to this build, for the tests
# test/t/040_upgrade_<release>.pl: upgrade_test(release => ..., commit => ...).
#
# The release is built exactly as released (git archive of its commit) into
# a private copy of the server's installation; a cluster records history
# with it (worker snapshots, two kinds of run rows, pgbench log rows, a
# metric); then this build is installed over it, the server restarted and
# ALTER EXTENSION pg_chronicle UPDATE run: one script, straight from the
# release to this version (the Makefile builds pg_chronicle--<release>--
# <version>.sql from every step since the release).  Every row recorded by
# the release must still be there, the collector must record again, and the
# analysis must answer over a window that spans the upgrade.  Last, the
# upgraded catalog is compared, object by object, with a fresh CREATE
# EXTENSION of this version in another database of the same server: what the
# upgrade script misses shows as a difference.
#
# Skips (skip_all, with the reason) where there is no git history holding
# the release (a tarball or a dist zip) or the installation cannot be
# copied as one directory.
package PgChronicle::TestUpgrade;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Cwd qw(getcwd);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgChronicle::TestInstall
  qw(copy_install remove_extension_files git_commit_available run_logged);
use PgChronicle::TestNode qw(chronicle_node poll_until);

our @EXPORT_OK = qw(upgrade_test);

# Tables whose rows housekeeping writes again on its own, before or after
# the update: the rows kept are compared by these columns only (the rollups
# are computed from the history, and a minute whose pgbench rows were
# loaded late is rolled up again: docs/rollups.md), or not at all (undef:
# the rollups' progress and queue).
my %housekept = (
	rollup_minute => 'ts, source, key',
	rollup_hour => 'ts, source, key',
	rollup_state => undef,
	rollup_dirty => undef);

# The tables of the extension in database $db (not their partitions).
sub member_tables
{
	my ($node, $db) = @_;
	return split /\n/, $node->safe_psql($db, q{
		SELECT c.relname
		  FROM pg_depend d
		  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_chronicle'
		  JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		 ORDER BY 1});
}

# upgrade_test(release => '0.1.0', commit => <its commit>, recorded =>
# [tables the release must have written rows into]): the whole test, from
# the plan to done_testing().
sub upgrade_test
{
	my (%args) = @_;
	my ($release, $release_commit) = @args{qw(release commit)};
	my $srcdir = getcwd();    # prove runs in the source tree
	my ($version) = slurp_file("$srcdir/pg_chronicle.control") =~ /default_version = '([^']+)'/
	  or die 'no default_version in pg_chronicle.control';

	plan skip_all => "no git history with the $release release (commit $release_commit) "
	  . "in $srcdir: the upgrade test builds $release from it"
	  unless git_commit_available($srcdir, $release_commit);

	my $tmp = PostgreSQL::Test::Utils::tempdir;
	my ($inst, $why) = copy_install("$tmp/pg");
	plan skip_all => $why unless $inst;
	my $pg_config = "$inst/bin/pg_config";
	my $logdir = $PostgreSQL::Test::Utils::log_path;

	# The release as released, alone in the copy.
	remove_extension_files($inst);
	mkdir "$tmp/src-$release" or die "mkdir: $!";
	run_logged("$logdir/040_git_archive_$release.log", "git archive $release_commit",
		[ 'git', '-C', $srcdir, 'archive', $release_commit ],
		'|', [ 'tar', '-x', '-C', "$tmp/src-$release" ])
	  or die "could not extract $release from git";
	like(slurp_file("$tmp/src-$release/pg_chronicle.control"), qr/default_version = '\Q$release\E'/,
		"commit $release_commit is the $release release");
	run_logged("$logdir/040_build_$release.log", "make install of $release",
		[ 'make', '-C', "$tmp/src-$release", '-s', "PG_CONFIG=$pg_config", 'install' ])
	  or die "$release does not build against this server";

	my $node = chronicle_node('upgrade',
		install_path => $inst,
		extensions => ["pg_chronicle VERSION '$release'"],
		conf => q{
chronicle.snapshot_interval = '500ms'
});
	is($node->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_chronicle'"),
		$release, "the cluster runs $release");
	$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', 'postgres' ], 'pgbench -i');

	my $now = sub { return $node->safe_psql('postgres', 'SELECT clock_timestamp()'); };

	# A run: a snapshot before and after (so that every transaction of
	# pgbench falls in an interval of one segment), pgbench's log loaded into
	# it, and an application metric.  Returns the number of transactions.
	my $transactions = 300;
	my $clients = 2;
	my $pgbench_run = sub {
		my ($label) = @_;
		$node->safe_psql('postgres', qq{
			SELECT chronicle.snapshot();
			SELECT chronicle.run_begin('$label', '{"phase": "$label"}');});
		$node->command_ok(
			[
				'pgbench', '-n', '-c', $clients, '-j', '1', '-t', $transactions,
				'-l', "--log-prefix=$tmp/$label", 'postgres'
			],
			"pgbench run $label");
		# Backends flush their statistics before they leave pg_stat_activity:
		# once pgbench's sessions are gone, the closing snapshot has them.
		poll_until($node, 'postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'",
			'the pgbench sessions end');
		$node->safe_psql('postgres', qq{
			SELECT chronicle.snapshot();
			SELECT chronicle.run_end();
			SELECT chronicle.load_pgbench_log('$label', '$tmp/$label');
			SELECT chronicle.add_metric('upgrade.test', 1, clock_timestamp(), '$label');});
		return $transactions * $clients;
	};

	# History recorded by the release.
	my $t_start = $now->();
	poll_until($node, 'postgres',
		"SELECT count(*) >= 3 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t_start'",
		"$release records");
	my $tx_before = $pgbench_run->('before');
	$node->safe_psql('postgres', "SELECT chronicle.run_label('labelled', '$t_start', clock_timestamp())");
	poll_until($node, 'postgres',
		"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > clock_timestamp() - interval '2 s'",
		"$release goes on recording");

	# Every row of the release's tables, kept outside the extension (the
	# columns of the release: an upgrade may add columns, it must not lose
	# rows).
	my @tables = member_tables($node, 'postgres');
	$node->safe_psql('postgres', 'CREATE SCHEMA before_upgrade');
	my %before;
	for my $t (@tables)
	{
		$before{$t} = $node->safe_psql('postgres', qq{
			CREATE TABLE before_upgrade.$t AS SELECT * FROM chronicle.$t;
			SELECT count(*) FROM before_upgrade.$t});
	}
	note "rows recorded by $release: " . join(', ', map { "$_ $before{$_}" } @tables);
	for my $t (@{ $args{recorded} })
	{
		cmp_ok($before{$t} // 0, '>', 0, "$release wrote rows into chronicle.$t");
	}

	# This build installed over the running release, as an administrator
	# does, then a restart.
	my $t_stop = $now->();
	run_logged("$logdir/040_install_new_$release.log", 'make install of this build',
		[ 'make', '-C', $srcdir, '-s', "PG_CONFIG=$pg_config", 'install' ])
	  or die 'this build does not install into the copy';
	$node->restart;
	my $log_offset = -s $node->logfile;
	is($node->safe_psql('postgres', qq{
		SELECT extversion || ' ' || (SELECT string_agg(path, ',') FROM pg_extension_update_paths('pg_chronicle')
		                              WHERE source = '$release' AND target = '$version')
		  FROM pg_extension WHERE extname = 'pg_chronicle'}),
		"$release $release--$version",
		"after the restart: still $release, with an update path to $version in one script");

	# Until the update the new library records nothing into the old objects:
	# the collector waits, chronicle.snapshot() refuses with a hint.
	poll_until($node, 'postgres',
		"SELECT state FROM chronicle.status()",
		'before the update, the collector waits for ALTER EXTENSION UPDATE',
		'waiting for ALTER EXTENSION pg_chronicle UPDATE');
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT chronicle.snapshot()");
	like($err, qr/ERROR:  55000: pg_chronicle library version \Q$version\E does not match the version installed in this database \(\Q$release\E\).*HINT:  Run ALTER EXTENSION pg_chronicle UPDATE/s,
		'before the update, snapshot() refuses: 55000 with a hint');
	# The old library records until the shutdown (during the install too):
	# the new one's rows would be those since the server started again.
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.snapshot WHERE ts >= pg_postmaster_start_time()"),
		'0', "before the update, nothing was written into the $release tables");

	my $t_update = $now->();
	$node->safe_psql('postgres', 'ALTER EXTENSION pg_chronicle UPDATE');
	is($node->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_chronicle'"),
		$version, "ALTER EXTENSION pg_chronicle UPDATE reaches $version");

	# A fresh CREATE EXTENSION of this version beside it, in another database
	# (the collector records into postgres only): the reference for the
	# catalog below.  The tables that hold rows right after it hold the
	# extension's own rows (the metric catalog): an upgrade may change those,
	# and they are compared with the fresh install's instead.
	$node->safe_psql('postgres', 'CREATE DATABASE fresh');
	$node->safe_psql('fresh', 'CREATE EXTENSION pg_chronicle');
	is($node->safe_psql('fresh',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_chronicle'"),
		$version, "a fresh CREATE EXTENSION installs $version");
	my @own_rows = grep {
		$node->safe_psql('fresh', "SELECT count(*) > 0 FROM chronicle.$_") eq 't'
	} member_tables($node, 'fresh');
	note 'tables with rows of the extension itself: ' . join(', ', @own_rows);

	# Nothing recorded by the release lost.
	for my $t (@tables)
	{
		next if grep { $_ eq $t } @own_rows;
		next if exists $housekept{$t} && !defined $housekept{$t};
		my $cols = $housekept{$t} // $node->safe_psql('postgres', qq{
			SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
			  FROM pg_attribute WHERE attrelid = 'before_upgrade.$t'::regclass AND attnum > 0});
		my $lost = $node->safe_psql('postgres', qq{
			SELECT count(*) FROM (SELECT $cols FROM before_upgrade.$t
			                      EXCEPT ALL SELECT $cols FROM chronicle.$t) lost});
		is($lost, '0', "chronicle.$t: every one of the $before{$t} rows of $release is still there"
			  . ($housekept{$t} ? " (by $housekept{$t})" : ''));
	}

	# The collector records again, without errors.
	$node->poll_query_until('postgres', qq{
		SELECT count(*) >= 3 FROM chronicle.snapshot
		 WHERE collector = 'worker' AND ts > clock_timestamp() - interval '3 s' AND errors = 0})
	  or diag($node->safe_psql('postgres', 'SELECT * FROM chronicle.source_status() WHERE errors > 0'));
	my $t_check = $now->();
	poll_until($node, 'postgres',
		"SELECT count(*) >= 3 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t_check'",
		'the collector records after the update');
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM chronicle.snapshot WHERE ts > '$t_check' AND errors > 0}),
		'0', 'after the update the collector records, without errors');
	is($node->safe_psql('postgres', 'SELECT state FROM chronicle.status()'),
		'recording', 'status() says recording');
	ok(!$node->log_contains(qr/terminated by signal|server process .* was terminated/, $log_offset),
		'no process of the server crashed between the restart and now');

	# Analysis over a window that spans the upgrade.
	my $tx_after = $pgbench_run->('after');
	my $t_end = $now->();
	cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.segments('$t_start', '$t_end')"),
		'>=', 2, 'segments(): the restart of the upgrade is a gap between two recordings');
	cmp_ok($node->safe_psql('postgres',
		"SELECT xact_commit FROM chronicle.database_totals('$t_start', '$t_end', 'postgres')"),
		'>=', $tx_before + $tx_after,
		'database_totals() over the upgrade counts the commits of both pgbench runs');
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE interval_end <= '$t_stop') > 0
		       AND count(*) FILTER (WHERE interval_end > '$t_update') > 0
		  FROM chronicle.timeline('$t_start', '$t_end') WHERE commits_per_s > 0}),
		't', 'timeline() has intervals with commits before and after the upgrade');
	cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM chronicle.io_totals('$t_start', '$t_end') WHERE reads + hits > 0"),
		'>', 0, 'io_totals() over the upgrade');
	my %cmp = map { my @f = split /\|/; ($f[0] => [ @f[ 1, 2 ] ]) } split /\n/,
	  $node->safe_psql('postgres',
		"SELECT metric, value_a, value_b FROM chronicle.compare_runs('before', 'after')");
	for my $m (qw(commits_per_s tps))
	{
		ok(($cmp{$m}[0] // 0) > 0 && ($cmp{$m}[1] // 0) > 0,
			"compare_runs(before, after): $m on both sides ("
			  . join(' / ', map { $_ // 'NULL' } @{ $cmp{$m} // [] }) . ')');
	}
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
		 WHERE r.label = 'before'}),
		$tx_before, 'the pgbench log of the run before the upgrade is one row per transaction');

	# The catalog: the release updated to this version against a fresh
	# CREATE EXTENSION.
	my %cmp_args = (node => $node, tmp => $tmp, release => $release, version => $version);
	my $fresh = catalog($node, 'fresh', \@own_rows);
	my $updated = catalog($node, 'postgres', \@own_rows);
	same_lines(\%cmp_args, "catalog, $_", $fresh->{$_} // {}, $updated->{$_} // {})
	  for qw(objects extension functions tables types grants comments contents);

	# psql's own list of the extension's objects, as the issue asks for.
	my ($dx_fresh, $dx_updated) = map {
		my $out = $node->safe_psql($_, '\dx+ pg_chronicle');
		$out =~ s/_p[0-9]{8}\b/_p<day>/g;
		+{ map { $_ => 1 } grep { !/^\(\d+ rows\)$/ } split /\n/, $out };
	} qw(fresh postgres);
	same_lines(\%cmp_args, '\dx+ pg_chronicle', $dx_fresh, $dx_updated);

	$node->stop;
	done_testing();
	return;
}

# Every object of the extension as lines "category <TAB> object :: what =
# value".  Partitions are named by day: the day is left out.
my $catalog_sql = <<'SQL';
SET search_path = pg_catalog;
WITH ext AS (
	SELECT e.* FROM pg_extension e WHERE e.extname = 'pg_chronicle'
), member AS (
	SELECT d.classid, d.objid, o.type || ' ' || o.identity AS obj
	  FROM pg_depend d
	  JOIN ext ON d.refobjid = ext.oid
	  CROSS JOIN LATERAL pg_identify_object(d.classid, d.objid, 0) o
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
), fn AS (
	SELECT m.obj, p.* FROM member m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
), rel AS (
	SELECT m.obj, c.* FROM member m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
), typ AS (
	SELECT m.obj, t.* FROM member m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
), col AS (
	SELECT rel.obj || ' column ' || quote_ident(a.attname) AS obj, rel.oid AS relid, a.*,
	       row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS position
	  FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT typ.obj || ' attribute ' || quote_ident(a.attname), typ.typrelid, a.*,
	       row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum)
	  FROM typ JOIN pg_class tc ON tc.oid = typ.typrelid AND tc.relkind = 'c'
	  JOIN pg_attribute a ON a.attrelid = typ.typrelid AND a.attnum > 0 AND NOT a.attisdropped
), con AS (
	SELECT rel.obj || ' constraint ' || quote_ident(c.conname) AS obj, c.*
	  FROM rel JOIN pg_constraint c ON c.conrelid = rel.oid
	UNION ALL
	SELECT typ.obj || ' constraint ' || quote_ident(c.conname), c.*
	  FROM typ JOIN pg_constraint c ON c.contypid = typ.oid
), idx AS (
	SELECT rel.obj || ' index ' || quote_ident(ic.relname) AS obj, i.*
	  FROM rel JOIN pg_index i ON i.indrelid = rel.oid JOIN pg_class ic ON ic.oid = i.indexrelid
), acl(obj, acl, classid, objid, objsubid) AS (
	SELECT obj, relacl, 'pg_class'::regclass::oid, oid, 0 FROM rel
	UNION ALL SELECT obj, proacl, 'pg_proc'::regclass::oid, oid, 0 FROM fn
	UNION ALL SELECT obj, typacl, 'pg_type'::regclass::oid, oid, 0 FROM typ
	UNION ALL SELECT obj, attacl, 'pg_class'::regclass::oid, attrelid, attnum::integer FROM col
	UNION ALL SELECT 'schema ' || quote_ident(n.nspname), n.nspacl, NULL, NULL, NULL
	  FROM ext JOIN pg_namespace n ON n.oid = ext.extnamespace
), line(cat, obj, what, val) AS (
	SELECT 'objects', obj, 'member of the extension', '' FROM member
	UNION ALL
	SELECT 'extension', 'extension ' || extname, x.what, x.val
	  FROM ext CROSS JOIN LATERAL (VALUES
		('version', extversion),
		('schema', extnamespace::regnamespace::text),
		('relocatable', extrelocatable::text),
		('owner', pg_get_userbyid(extowner)),
		('config tables (pg_extension_config_dump)', coalesce(
			(SELECT string_agg(c::regclass::text || ' WHERE ' || coalesce(nullif(w, ''), 'true'), ', ' ORDER BY c::regclass::text)
			   FROM unnest(extconfig, extcondition) AS u(c, w)), 'none'))) x(what, val)
	UNION ALL
	SELECT 'extension', 'schema ' || quote_ident(n.nspname), 'owner', pg_get_userbyid(n.nspowner)
	  FROM ext JOIN pg_namespace n ON n.oid = ext.extnamespace
	UNION ALL
	SELECT 'functions', obj, x.what, x.val
	  FROM fn CROSS JOIN LATERAL (VALUES
		('kind', prokind::text),
		('arguments', pg_get_function_arguments(fn.oid)),
		('result', coalesce(pg_get_function_result(fn.oid), '')),
		('language', (SELECT lanname::text FROM pg_language WHERE oid = prolang)),
		('volatility', CASE provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END),
		('strict', proisstrict::text),
		('security definer', prosecdef::text),
		('leakproof', proleakproof::text),
		('parallel', CASE proparallel WHEN 's' THEN 'safe' WHEN 'r' THEN 'restricted' ELSE 'unsafe' END),
		('cost', procost::text),
		('rows', prorows::text),
		('support', prosupport::text),
		('config (SET)', coalesce(array_to_string(proconfig, ', '), 'none')),
		('owner', pg_get_userbyid(proowner)),
		('body', CASE (SELECT lanname FROM pg_language WHERE oid = prolang)
		           WHEN 'c' THEN probin || ' ' || prosrc
		           WHEN 'internal' THEN prosrc
		           ELSE 'md5 ' || md5(coalesce(pg_get_function_sqlbody(fn.oid), prosrc)) END)) x(what, val)
	UNION ALL
	SELECT 'functions', obj, 'aggregate',
	       concat_ws(' ', 'kind', aggkind, 'sfunc', aggtransfn::text, 'stype', format_type(aggtranstype, NULL),
	                 'finalfunc', aggfinalfn::text, 'combinefunc', aggcombinefn::text, 'initcond', agginitval)
	  FROM fn JOIN pg_aggregate a ON a.aggfnoid = fn.oid
	UNION ALL
	SELECT 'tables', obj, x.what, x.val
	  FROM rel CROSS JOIN LATERAL (VALUES
		('kind', relkind::text),
		('persistence', relpersistence::text),
		('access method', coalesce((SELECT amname::text FROM pg_am WHERE oid = relam), 'none')),
		('options', coalesce(array_to_string(reloptions, ', '), 'none')),
		('row level security', relrowsecurity::text || ' force ' || relforcerowsecurity::text),
		('replica identity', relreplident::text),
		('partition key', coalesce(pg_get_partkeydef(rel.oid), 'none')),
		('partition of', coalesce((SELECT string_agg(inhparent::regclass::text, ', ') FROM pg_inherits WHERE inhrelid = rel.oid), 'none')),
		('owner', pg_get_userbyid(relowner))) x(what, val)
	UNION ALL
	SELECT 'tables', obj, 'definition', 'md5 ' || md5(pg_get_viewdef(rel.oid))
	  FROM rel WHERE relkind IN ('v', 'm')
	UNION ALL
	SELECT 'tables', obj, 'sequence',
	       concat_ws(' ', format_type(seqtypid, NULL), 'start', seqstart, 'increment', seqincrement,
	                 'min', seqmin, 'max', seqmax, 'cache', seqcache, 'cycle', seqcycle)
	  FROM rel JOIN pg_sequence s ON s.seqrelid = rel.oid
	UNION ALL
	SELECT 'tables', obj, 'column',
	       concat_ws(' ', '#' || position, format_type(atttypid, atttypmod),
	                 CASE WHEN attnotnull THEN 'NOT NULL' END,
	                 'DEFAULT ' || (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
	                                 WHERE d.adrelid = col.attrelid AND d.adnum = col.attnum),
	                 CASE attidentity WHEN 'a' THEN 'GENERATED ALWAYS AS IDENTITY'
	                                  WHEN 'd' THEN 'GENERATED BY DEFAULT AS IDENTITY' END,
	                 CASE attgenerated WHEN 's' THEN 'GENERATED STORED' WHEN 'v' THEN 'GENERATED VIRTUAL' END,
	                 CASE WHEN attcollation <> 0 THEN 'COLLATE ' || attcollation::regcollation::text END,
	                 CASE WHEN attstorage <> (SELECT typstorage FROM pg_type WHERE oid = atttypid)
	                      THEN 'STORAGE ' || attstorage::text END,
	                 CASE WHEN attcompression <> '' THEN 'COMPRESSION ' || attcompression::text END,
	                 CASE WHEN attstattarget IS NOT NULL THEN 'STATISTICS ' || attstattarget END)
	  FROM col
	UNION ALL
	SELECT 'tables', obj, 'constraint', contype::text || ' ' || pg_get_constraintdef(con.oid) FROM con
	UNION ALL
	SELECT 'tables', obj, 'index',
	       concat_ws(' ', pg_get_indexdef(indexrelid),
	                 CASE WHEN indisclustered THEN 'CLUSTERED' END,
	                 CASE WHEN NOT indisvalid THEN 'INVALID' END,
	                 CASE WHEN indisreplident THEN 'REPLICA IDENTITY' END)
	  FROM idx
	UNION ALL
	SELECT 'tables', rel.obj || ' trigger ' || quote_ident(t.tgname), 'definition',
	       pg_get_triggerdef(t.oid) || ' ENABLED ' || t.tgenabled::text
	  FROM rel JOIN pg_trigger t ON t.tgrelid = rel.oid AND NOT t.tgisinternal
	UNION ALL
	SELECT 'tables', rel.obj || ' rule ' || quote_ident(r.rulename), 'definition', pg_get_ruledef(r.oid)
	  FROM rel JOIN pg_rewrite r ON r.ev_class = rel.oid AND r.rulename <> '_RETURN'
	UNION ALL
	SELECT 'tables', rel.obj || ' policy ' || quote_ident(p.polname), 'definition',
	       concat_ws(' ', p.polcmd::text, CASE WHEN p.polpermissive THEN 'permissive' ELSE 'restrictive' END,
	                 'TO', (SELECT string_agg(CASE WHEN r = 0 THEN 'public' ELSE pg_get_userbyid(r)::text END, ',' ORDER BY 1)
	                          FROM unnest(p.polroles) r),
	                 'USING', pg_get_expr(p.polqual, p.polrelid),
	                 'WITH CHECK', pg_get_expr(p.polwithcheck, p.polrelid))
	  FROM rel JOIN pg_policy p ON p.polrelid = rel.oid
	UNION ALL
	SELECT 'types', obj, x.what, x.val
	  FROM typ CROSS JOIN LATERAL (VALUES
		('type', typtype::text),
		('base type', CASE WHEN typbasetype <> 0 THEN format_type(typbasetype, typtypmod) ELSE 'none' END),
		('not null', typnotnull::text),
		('default', coalesce(typdefault, 'none')),
		('labels', coalesce((SELECT string_agg(enumlabel::text, ', ' ORDER BY enumsortorder)
		                       FROM pg_enum WHERE enumtypid = typ.oid), 'none')),
		('owner', pg_get_userbyid(typowner))) x(what, val)
	UNION ALL
	SELECT 'grants', obj, 'ACL',
	       coalesce((SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM unnest(acl) a), 'default')
	  FROM acl
	 WHERE acl IS NOT NULL OR coalesce(objsubid, 0) = 0   -- columns: only their own grants
	UNION ALL
	SELECT 'grants', acl.obj, 'initial privileges of the extension (pg_init_privs)',
	       (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM unnest(ip.initprivs) a)
	  FROM acl JOIN pg_init_privs ip
	    ON ip.classoid = acl.classid AND ip.objoid = acl.objid AND ip.objsubid = acl.objsubid
	UNION ALL
	SELECT 'comments', x.obj, 'comment', d.description
	  FROM (SELECT obj, classid, objid, 0 AS objsubid FROM member
	        UNION ALL SELECT obj, 'pg_class'::regclass::oid, relid, attnum::integer FROM col
	        UNION ALL SELECT obj, 'pg_class'::regclass::oid, indexrelid, 0 FROM idx
	        UNION ALL SELECT obj, 'pg_constraint'::regclass::oid, oid, 0 FROM con) x
	  JOIN pg_description d ON d.classoid = x.classid AND d.objoid = x.objid AND d.objsubid = x.objsubid
)
SELECT DISTINCT cat || E'\t' || regexp_replace(obj || ' :: ' || what || ' = ' || replace(coalesce(val, 'NULL'), E'\n', '\n'),
                                               '_p[0-9]{8}\M', '_p<day>', 'g')
  FROM line
 ORDER BY 1;
SQL

sub catalog
{
	my ($node, $db, $own_rows) = @_;
	my %cat;
	for (split /\n/, $node->safe_psql($db, $catalog_sql))
	{
		my ($c, $line) = split /\t/, $_, 2;
		$cat{$c}{$line} = 1;
	}
	for my $t (@$own_rows)
	{
		$cat{contents}{"table chronicle.$t row = $_"} = 1
		  for split /\n/, $node->safe_psql($db, "SELECT t::text FROM chronicle.$t t");
	}
	return \%cat;
}

# Full text of a function or view whose body differs, to show the difference.
sub definition
{
	my ($node, $db, $obj) = @_;
	my ($type, $name) = $obj =~ /^(function|procedure|aggregate|view|materialized view) (.*)$/
	  or return undef;
	my $q = $type =~ /view/
	  ? "SELECT pg_get_viewdef(r, true) FROM to_regclass('$name') r WHERE r IS NOT NULL"
	  : "SELECT pg_get_functiondef(p) FROM to_regprocedure('$name') p WHERE p IS NOT NULL";
	my $def = $node->safe_psql($db, $q);
	return $def eq '' ? undef : $def;
}

# One test per category; on a difference, the lines on either side, an
# object's attributes together, and the diff of a body that differs.
sub same_lines
{
	my ($args, $name, $f, $u) = @_;
	my ($node, $tmp, $release, $version) = @$args{qw(node tmp release version)};
	my @only_f = grep { !$u->{$_} } sort keys %$f;
	my @only_u = grep { !$f->{$_} } sort keys %$u;
	my $n = scalar keys %$f;
	return 1
	  if ok(!@only_f && !@only_u,
		"$name: the same in a fresh $version and in $release updated ($n lines)");
	my @d = sort { $a->[1] cmp $b->[1] || $a->[0] cmp $b->[0] }
	  (map { [ 'fresh CREATE EXTENSION only:', $_ ] } @only_f),
	  (map { [ sprintf('%-28s', "updated from $release only:"), $_ ] } @only_u);
	diag("$name differ: what only the fresh install has is missing from "
		  . "pg_chronicle--$release--$version.sql; what only the updated one has, it left behind or got wrong\n"
		  . join("\n", map { "  $_->[0] $_->[1]" } @d));
	my %bodies = map { /^(.*) :: (?:body|definition) = / ? ($1 => 1) : () } @only_f, @only_u;
	for my $obj (sort keys %bodies)
	{
		my ($df, $du) = (definition($node, 'fresh', $obj), definition($node, 'postgres', $obj));
		next unless defined $df && defined $du;
		my ($ff, $fu) = ("$tmp/definition.fresh", "$tmp/definition.updated");
		unlink $ff, $fu;
		append_to_file($ff, "$df\n");
		append_to_file($fu, "$du\n");
		diag("$obj: diff -u fresh updated\n" . `diff -u $ff $fu`);
	}
	return 0;
}

1;
