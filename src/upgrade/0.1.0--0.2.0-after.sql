-- pg_chronicle 0.1.0 -> 0.2.0, the hand-written steps that run AFTER the
-- code of src/sql (see 0.1.0--0.2.0-before.sql): data fixes that call the
-- functions of 0.2.0.

-- Runs 0.1.0 opened kept passwords in their settings: redact them.
UPDATE chronicle.run r
   SET settings = (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
                     FROM jsonb_each_text(r.settings) e)
 WHERE r.settings <> '{}'
   AND r.settings IS DISTINCT FROM
       (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
          FROM jsonb_each_text(r.settings) e);
