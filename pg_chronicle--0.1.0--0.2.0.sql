-- pg_chronicle 0.1.0 -> 0.2.0
--
-- Every change to the SQL of src/sql/ since 0.1.0 is repeated here, in the
-- order it was made, so that ALTER EXTENSION pg_chronicle UPDATE on an
-- installed 0.1.0 reaches the same catalog as CREATE EXTENSION of 0.2.0
-- (test/t/040_upgrade.pl compares the two).

\echo Use "ALTER EXTENSION pg_chronicle UPDATE TO '0.2.0'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Trust (issue 11): run settings read with the caller's rights, passwords
-- redacted (src/sql/36_runs.sql, src/runs.c).
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION chronicle._redact_setting(name text, value text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN name ~* '(password|passphrase|secret)' THEN '********'
		ELSE regexp_replace(
		         regexp_replace(value,
		                        '(password\s*=\s*)(''(\\.|[^''\\])*''\S*|''[^'']*$|\S*)', '\1********', 'gi'),
		         '(://[^/:@\s]*:)[^@\s]*@', '\1********@', 'g')
	END
$$;

COMMENT ON FUNCTION chronicle._redact_setting(text, text) IS
	'A setting''s value with its passwords replaced by ********, as runs keep it';

-- run_begin reads the settings itself now, with its caller's rights.
DROP FUNCTION chronicle._settings();

CREATE OR REPLACE FUNCTION chronicle._run_open(label text, meta jsonb, names text[], vals text[])
RETURNS chronicle.run
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
BEGIN
	PERFORM chronicle._check_label('chronicle.run_begin', label, meta);
	-- Serialise run_begin calls, so that two sessions cannot both open one.
	LOCK TABLE chronicle.run IN SHARE ROW EXCLUSIVE MODE;
	SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL;
	IF FOUND THEN
		RAISE EXCEPTION 'chronicle.run_begin: run "%" is still open', r.label
			USING ERRCODE = 'object_in_use',
			      HINT = 'End it first with SELECT chronicle.run_end();';
	END IF;
	INSERT INTO chronicle.run (label, started, meta, settings, server_version)
	VALUES (label, clock_timestamp(), meta,
	        (SELECT coalesce(jsonb_object_agg(u.n, chronicle._redact_setting(u.n, u.v) ORDER BY u.n), '{}')
	           FROM unnest(names, vals) AS u(n, v)),
	        current_setting('server_version'))
	RETURNING * INTO r;
	RETURN r;
END;
$$;

-- Was SECURITY DEFINER plpgsql: now C, running as its caller to read the
-- settings (the grants to pg_monitor stay).
CREATE OR REPLACE FUNCTION chronicle.run_begin(label text, meta jsonb DEFAULT '{}')
RETURNS chronicle.run
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_run_begin';

COMMENT ON FUNCTION chronicle.run_begin(text, jsonb) IS
	'Opens a labelled benchmark run now, remembering the server version and the non-default settings the caller may read (passwords redacted)';

CREATE OR REPLACE FUNCTION chronicle.compare_settings(a text, b text)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH ra AS (SELECT r.* FROM chronicle.run_window(a) w, chronicle.run r WHERE r.label = a),
	     rb AS (SELECT r.* FROM chronicle.run_window(b) w, chronicle.run r WHERE r.label = b)
	SELECT 'server_version', ra.server_version, rb.server_version
	  FROM ra, rb WHERE ra.server_version IS DISTINCT FROM rb.server_version
	UNION ALL
	(SELECT coalesce(sa.key, sb.key), sa.value, sb.value
	   FROM (SELECT e.key, chronicle._redact_setting(e.key, e.value) AS value
	           FROM ra, jsonb_each_text(ra.settings) e) sa
	   FULL JOIN (SELECT e.key, chronicle._redact_setting(e.key, e.value) AS value
	                FROM rb, jsonb_each_text(rb.settings) e) sb ON sa.key = sb.key
	  WHERE sa.value IS DISTINCT FROM sb.value
	  ORDER BY 1)
$$;

REVOKE ALL ON FUNCTION chronicle._redact_setting(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._redact_setting(text, text) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._run_open(text, jsonb, text[], text[]) FROM PUBLIC;

-- Runs 0.1.0 opened kept passwords in their settings: redact them.
UPDATE chronicle.run r
   SET settings = (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
                     FROM jsonb_each_text(r.settings) e)
 WHERE r.settings <> '{}'
   AND r.settings IS DISTINCT FROM
       (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
          FROM jsonb_each_text(r.settings) e);
