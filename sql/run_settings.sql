-- Runs keep the settings their caller may read, and never a password.
-- test/regress.conf sets primary_conninfo (superuser only; ignored on a
-- primary) with a password.
\pset null NULL

-- A superuser's run keeps no superuser-only setting (primary_conninfo):
-- pg_read_all_stats members read runs.
SELECT settings ->> 'primary_conninfo' AS primary_conninfo
  FROM chronicle.run_begin('superuser run');
SELECT label FROM chronicle.run_end();

-- A role that reads statistics but not every setting, allowed to open runs.
CREATE ROLE regress_chronicle_bench IN ROLE pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_begin(text, jsonb), chronicle.run_end(text, timestamptz)
   TO regress_chronicle_bench;
SET ROLE regress_chronicle_bench;
SELECT current_setting('primary_conninfo');
SELECT settings ? 'primary_conninfo' AS primary_conninfo,
       settings ? 'shared_preload_libraries' AS shared_preload_libraries,
       settings ->> 'chronicle.enabled' AS readable_setting
  FROM chronicle.run_begin('bench run');
SELECT label FROM chronicle.run_end();
-- Every setting it kept is one the role can read itself.
SELECT count(*) AS unreadable
  FROM chronicle.run r, jsonb_object_keys(r.settings) k
 WHERE r.label = 'bench run'
   AND NOT EXISTS (SELECT FROM pg_settings s WHERE s.name = k);
-- The writing half is not the caller's: settings cannot be forged.
SELECT chronicle._run_open('forged', '{}', '{primary_conninfo}', '{x}', '{}');
RESET ROLE;

-- Redaction: conninfo passwords quoted or not, URIs, secret-named settings.
SELECT v AS value, chronicle._redact_setting('x', v) AS kept
  FROM (VALUES ('host=a password=secret user=b'),
               ($$host=a password = 'se cr\'et' sslpassword=k2 user=b$$),
               ($$password='unterminated se cret$$),
               ($$password='s3 cr'et' user=b$$),
               ('postgresql://rep:secret@db.example:5432/x?sslmode=require'),
               ('host=a user=b')) AS t(v);
SELECT chronicle._redact_setting('ssl_passphrase_command', 'echo secret') AS passphrase_command;

-- Runs opened by 0.1.0 kept passwords: compare_settings shows them redacted.
UPDATE chronicle.run SET settings = jsonb_set(settings, '{primary_conninfo}', '"host=old password=0ld-secret"')
 WHERE label = 'superuser run';
SELECT * FROM chronicle.compare_settings('superuser run', 'bench run')
 WHERE name = 'primary_conninfo';

SELECT chronicle.run_delete(label) FROM chronicle.run WHERE label IN ('superuser run', 'bench run');
REVOKE EXECUTE ON FUNCTION chronicle.run_begin(text, jsonb), chronicle.run_end(text, timestamptz)
  FROM regress_chronicle_bench;
DROP ROLE regress_chronicle_bench;
