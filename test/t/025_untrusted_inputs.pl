# What other roles and the server's configuration may hand the recorder:
#  - statement texts that set a password (pg_stat_statements keeps the
#    texts of utility statements as they were run) are stored without it,
#    and texts follow the history's retention;
#  - a run's settings hold no password (every form libpq accepts) and
#    nothing a pg_read_all_stats member may not read; its environment no
#    path of the build machine;
#  - packed bytes of a reader's own choosing are decoded a batch at a time
#    and interruptibly;
#  - settings made for everyone (ALTER SYSTEM) that would stop or change
#    the recording do not reach the collector's session.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PgChronicle::TestNode qw(chronicle_node chronicle_status poll_ok poll_until worker_recording);

# The test's own sessions keep the defaults whatever ALTER SYSTEM says.
$ENV{PGOPTIONS} = '-c statement_timeout=0 -c lock_timeout=0 -c transaction_timeout=0 '
  . '-c default_transaction_read_only=off -c exit_on_error=off';

my $node = chronicle_node('untrusted',
	statements => 1,
	conf => q{
chronicle.snapshot_interval = '200ms'
log_min_messages = warning
});
sub query { return $node->safe_psql('postgres', $_[0]); }
sub status { return chronicle_status($node, $_[0]); }
worker_recording($node, 3);
query(q{
	CREATE ROLE u_monitor LOGIN IN ROLE pg_monitor;
	CREATE ROLE u_stats LOGIN IN ROLE pg_read_all_stats;});

# --- what the server keeps of the library's settings -----------------------
# The descriptions of chronicle.collect_<source> were made in the
# postmaster's memory, which every child deletes: pg_settings read freed
# memory (found by tools/valgrind.sh).
is(query(q{SELECT count(*) > 0 AND bool_and(short_desc ~ '^Whether snapshots record [ -~]+\.$')
             FROM pg_settings WHERE name LIKE 'chronicle.collect\_%'}), 't',
	'every chronicle.collect_<source> setting has its description in pg_settings');

# --- statement texts -------------------------------------------------------
query(q{
	CREATE ROLE u_secret;
	ALTER ROLE u_secret PASSWORD 'hunter2-role';
	CREATE ROLE u_secret2 LOGIN ENCRYPTED PASSWORD E'hunter2-\\'escaped';});
poll_ok($node, 'postgres',
	"SELECT count(*) = 2 FROM chronicle.statements_text WHERE query ~* 'ROLE u_secret.*PASSWORD'",
	'the texts of the statements that set a password are recorded');
is(query("SELECT count(*) FROM chronicle.statements_text WHERE query LIKE '%hunter2%'"), '0',
	'no stored text holds the password');
is(query("SELECT string_agg(query, ' | ' ORDER BY query) FROM chronicle.statements_text WHERE query ~* 'ROLE u_secret.*PASSWORD'"),
	q{ALTER ROLE u_secret PASSWORD '********' | CREATE ROLE u_secret2 LOGIN ENCRYPTED PASSWORD '********'},
	'the password is replaced, the rest of the statement kept');
is(query(q{
	SELECT string_agg(chronicle._redact_statement(q), ' | ' ORDER BY n)
	  FROM (VALUES (1, 'CREATE USER MAPPING FOR u SERVER s OPTIONS (user ''u'', password ''p1'')'),
	               (2, 'CREATE SUBSCRIPTION s CONNECTION ''host=h password=p2 dbname=d'' PUBLICATION p'),
	               (3, 'ALTER USER x PASSWORD $$p3$$ VALID UNTIL ''2030-01-01'''),
	               (4, 'SELECT dblink_connect(''password=p\ 4 host=h'')')) t(n, q)}),
	q{CREATE USER MAPPING FOR u SERVER s OPTIONS (user 'u', password '********') | }
	  . q{CREATE SUBSCRIPTION s CONNECTION 'host=h password=******** dbname=d' PUBLICATION p | }
	  . q{ALTER USER x PASSWORD '********' | }
	  . q{SELECT dblink_connect('password=******** host=h')},
	'options, connection strings and dollar quotes lose their password');

# Texts follow the retention: one last seen before it goes, the others stay.
my $texts = query('SELECT count(*) FROM chronicle.statements_text');
is(query("SELECT count(*) FROM chronicle.statements_text WHERE last_seen::date <> now()::date"), '0',
	'every text recorded today was last seen today');
query(q{UPDATE chronicle.statements_text SET last_seen = now() - interval '10 days'
         WHERE query LIKE 'ALTER ROLE u_secret%'});
query(q{SELECT * FROM chronicle.maintain('7 days')});
is(query("SELECT count(*) FROM chronicle.statements_text WHERE query LIKE 'ALTER ROLE u_secret%'"), '0',
	'a text not seen within the retention is dropped by housekeeping');
cmp_ok(query('SELECT count(*) FROM chronicle.statements_text'), '>=', $texts - 1,
	'the texts seen within the retention stay');

# --- a run's settings and environment ---------------------------------------
query(q{ALTER SYSTEM SET archive_cleanup_command = 'PGPASSWORD=s3cret-a psql "host=h password=s3cret\ b" -c x'});
query(q{ALTER SYSTEM SET restore_command = 'curl postgresql://u:s3cret-c@h/db?password=s3cret-d&sslmode=require'});
query('SELECT pg_reload_conf()');
poll_until($node, 'postgres', "SELECT current_setting('archive_cleanup_command') LIKE 'PGPASSWORD%'",
	'the settings are reloaded');
query(q{SELECT chronicle.run_begin('by superuser'); SELECT chronicle.run_end();});
my ($archive, $restore) = split /\|/, query(
	q{SELECT settings ->> 'archive_cleanup_command', settings ->> 'restore_command' FROM chronicle.run WHERE label = 'by superuser'});
unlike("$archive $restore", qr/s3cret/, 'no password of a setting is kept in any form');
like($restore, qr/sslmode=require/, 'the rest of a URI is kept');
is($node->safe_psql('postgres', q{SELECT count(*) FROM chronicle.run WHERE label = 'by superuser'},
	extra_params => [ '-U', 'u_stats' ]), '1', 'a pg_read_all_stats member reads the run');
my (undef, undef, $notice) = $node->psql('postgres', q{
	DO $$
	DECLARE
		k text;
		bad text[] := '{}';
	BEGIN
		FOR k IN SELECT jsonb_object_keys(settings) FROM chronicle.run WHERE label = 'by superuser' LOOP
			BEGIN
				PERFORM current_setting(k);
			EXCEPTION WHEN insufficient_privilege THEN
				bad := bad || k;
			END;
		END LOOP;
		RAISE NOTICE 'unreadable: [%]', array_to_string(bad, ',');
	END $$}, extra_params => [ '-U', 'u_stats' ]);
like($notice, qr/unreadable: \[\]/, 'every setting a superuser\'s run keeps is one pg_read_all_stats may read');
is(query(q{SELECT settings ? 'shared_preload_libraries' FROM chronicle.run WHERE label = 'by superuser'}), 'f',
	'superuser-only settings are not kept');
is(query(q{SELECT count(*) FROM chronicle.run, jsonb_each_text(environment -> 'server') e
            WHERE label = 'by superuser' AND e.key IN ('configure', 'cc', 'cflags') AND e.value ~ '/'}), '0',
	'the build options keep no path');
query('ALTER SYSTEM RESET archive_cleanup_command; ALTER SYSTEM RESET restore_command; SELECT pg_reload_conf()');

# --- packed bytes of a reader's choosing ------------------------------------
# A waits value (five key columns, one value column): the row count, the
# value column's mode (zero), then a key id per row: the first a key of
# the dictionary, then alternately +1 and -1 (zigzag 2 and 1).
sub varint
{
	my ($v) = @_;
	my $s = '';
	while ($v >= 0x80) { $s .= sprintf '%02x', ($v & 0x7f) | 0x80; $v >>= 7; }
	return $s . sprintf('%02x', $v);
}
my ($id1, $id2) = split /\n/, query(q{
	SELECT k.key_id FROM chronicle.history_key k
	 WHERE k.source = 'waits' AND EXISTS (SELECT FROM chronicle.history_key k2
	                                      WHERE k2.source = 'waits' AND k2.key_id = k.key_id + 1)
	 ORDER BY k.key_id LIMIT 1;
	SELECT 0});
$id2 = $id1 + 1;
my $cols = query(q{SELECT string_agg(format('%I %s', column_name, column_type), ', ' ORDER BY ordinal)
                     FROM chronicle._source_columns() WHERE source = 'waits'});
my $n = 10_001;
my $hex = '28' . varint($n) . '00' . varint($id1) . ('0201' x (($n - 1) / 2));
is($node->safe_psql('postgres', qq{
	SELECT count(*) || ' ' || count(*) FILTER (WHERE k.key_id = $id1) || ' ' || count(*) FILTER (WHERE k.key_id = $id2)
	  FROM chronicle._unpack('waits', now(), '\\x$hex') AS u($cols)
	  JOIN chronicle.history_key k
	    ON k.source = 'waits'
	   AND k.key = ARRAY[u.backend_type, u.state, u.wait_event_type, u.wait_event, u.queryid::text]},
	extra_params => [ '-U', 'u_monitor' ]),
	"$n 5001 5000", 'a value of more rows than a batch decodes whole, every row with its key');

# Ten million rows from ten megabytes: a statement_timeout ends it at once.
my $big = "'\\x28" . varint(10_000_000) . '00' . varint($id1) . "'::bytea || decode(repeat('00', 9999999), 'hex')";
my $t0 = time;
my ($rc, $out, $err) = $node->psql('postgres', qq{
	SET statement_timeout = '300ms';
	SELECT count(*) FROM chronicle._unpack('waits', now(), $big) AS u($cols)},
	extra_params => [ '-U', 'u_monitor' ]);
my $took = time - $t0;
like($err, qr/canceling statement due to statement timeout/, 'decoding a huge value is cancelled by statement_timeout');
cmp_ok($took, '<', 5, sprintf('the cancel came soon after the timeout (%.2f s after 0.3 s)', $took));
is(query('SELECT 1'), '1', 'the server is up after the huge value');

# --- settings made for everyone ---------------------------------------------
# Each would stop or change the recording in the collector's session
# (transaction_timeout at 500 ms only: it applies to a new session's start
# too, before the test's own PGOPTIONS, and a shorter one would end the
# test's own connections on a loaded machine).
my $pid = status('pid');
my $errors0 = status('snapshot_errors');
query(q{
	ALTER SYSTEM SET default_transaction_read_only = on;
	ALTER SYSTEM SET default_transaction_isolation = 'serializable';
	ALTER SYSTEM SET statement_timeout = '1ms';
	ALTER SYSTEM SET lock_timeout = '1ms';
	ALTER SYSTEM SET transaction_timeout = '500ms';
	ALTER SYSTEM SET idle_in_transaction_session_timeout = '1ms';
	ALTER SYSTEM SET session_replication_role = 'replica';
	ALTER SYSTEM SET exit_on_error = on;
	ALTER SYSTEM SET extra_float_digits = -15;
	ALTER SYSTEM SET chronicle.debug_fail_source = 'os_memory';
	SELECT pg_reload_conf();});
poll_until($node, 'postgres',
	"SELECT errors >= 2 FROM chronicle.source_status() WHERE source = 'os_memory'",
	'the collector has reloaded (the failing source fails)');
my $c = query('SELECT count(*) FROM chronicle.snapshot');
poll_ok($node, 'postgres', "SELECT count(*) >= $c + 10 FROM chronicle.snapshot",
	'recording goes on under settings that would stop it');
is(status('snapshot_errors'), $errors0, 'no snapshot failed');
is(status('pid'), $pid, 'the collector is the same process (exit_on_error did not end it)');
query(q{
	ALTER SYSTEM RESET ALL;
	SELECT pg_reload_conf();});

unlike(slurp_file($node->logfile), qr/TRAP:|terminated by signal|PANIC/, 'no crash in the server log');
$node->stop;
done_testing();
