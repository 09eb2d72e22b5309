-- pg_temp.err(q): runs the statement q and returns 'no error', or
-- 'SQLSTATE: message / HINT: hint' (hint '(none)' when it has none).
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text; msg text; hint text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg || ' / HINT: ' || coalesce(nullif(hint, ''), '(none)');
END
$f$;
