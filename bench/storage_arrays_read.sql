-- Read cost of the waits history as rows with a (key, ts) b-tree (today)
-- against one row per snapshot with arrays (docs/storage.md, "Compact
-- storage"): 24 h at 1 s, 30 keys all changing every second, in plain
-- tables of a scratch database (not the extension's).
--
--   psql -X -d scratch -f bench/storage_arrays_read.sql
--
-- Figures in docs/storage.md; best run on an idle machine.
-- 24 h at 1 s, 30 keys of which every one changes every second (worst case, as under load)
CREATE TABLE rows_t (ts timestamptz NOT NULL, backend_type text NOT NULL, state text NOT NULL,
  wait_event_type text NOT NULL, wait_event text NOT NULL, queryid bigint NOT NULL, samples bigint NOT NULL);
CREATE TABLE keys_t AS SELECT k AS id, (ARRAY['client backend','autovacuum worker','walwriter'])[1 + k % 3] AS backend_type,
  (ARRAY['active','idle','idle in transaction'])[1 + k % 3] AS state, 'Client' AS wait_event_type, 'ClientRead' || (k % 7) AS wait_event,
  (k * 7919)::bigint AS queryid FROM generate_series(1, 30) k;
INSERT INTO rows_t SELECT '2025-01-01'::timestamptz + s * interval '1 s', k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid, s * 10 + k.id
  FROM generate_series(0, 86399) s CROSS JOIN keys_t k;
CREATE INDEX ON rows_t (backend_type, state, wait_event_type, wait_event, queryid, ts);
CREATE TABLE arrays_t (ts timestamptz NOT NULL, key_ids int4[], samples int8[]);
INSERT INTO arrays_t SELECT r.ts, array_agg(k.id ORDER BY k.id), array_agg(r.samples ORDER BY k.id)
  FROM rows_t r JOIN keys_t k USING (backend_type, state, wait_event_type, wait_event, queryid) GROUP BY r.ts;
CREATE UNIQUE INDEX ON arrays_t (ts);
VACUUM ANALYZE rows_t; VACUUM ANALYZE arrays_t;
SELECT pg_size_pretty(pg_total_relation_size('rows_t')) AS rows_total, pg_size_pretty(pg_total_relation_size('arrays_t')) AS arrays_total;
\o /dev/null
-- warm
SELECT count(*) FROM rows_t; SELECT count(*) FROM arrays_t;
\o
\echo '1. rows: first and last row of every key in the day (b-tree probes, 30 keys)'
SELECT count(*) FROM keys_t k
 CROSS JOIN LATERAL (SELECT r.ts, r.samples FROM rows_t r WHERE (r.backend_type, r.state, r.wait_event_type, r.wait_event, r.queryid) = (k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid) AND r.ts >= '2025-01-01' ORDER BY r.ts LIMIT 1) f
 CROSS JOIN LATERAL (SELECT r.ts, r.samples FROM rows_t r WHERE (r.backend_type, r.state, r.wait_event_type, r.wait_event, r.queryid) = (k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid) AND r.ts <= '2025-01-02' ORDER BY r.ts DESC LIMIT 1) l;
\echo '2. arrays: the same by reading the day (DISTINCT ON over unnest)'
SELECT count(*) FROM (SELECT DISTINCT ON (u.k) u.k, a.ts, u.s FROM arrays_t a, unnest(a.key_ids, a.samples) u(k, s) WHERE a.ts >= '2025-01-01' AND a.ts <= '2025-01-02' ORDER BY u.k, a.ts) f;
\echo '3. arrays: the same with the first and last snapshot rows only (every key in a keyframe)'
SELECT count(*) FROM (SELECT * FROM arrays_t WHERE ts >= '2025-01-01' ORDER BY ts LIMIT 1) f, unnest(f.key_ids) k;
\echo '4. rows: read the whole day in time order (what the C engine does)'
SELECT count(*), sum(samples) FROM (SELECT * FROM rows_t WHERE ts >= '2025-01-01' AND ts <= '2025-01-02' ORDER BY ts) x;
\echo '5. arrays: read the whole day in time order, unnested'
SELECT count(*), sum(s) FROM (SELECT a.ts, u.k, u.s FROM arrays_t a, unnest(a.key_ids, a.samples) u(k, s) WHERE a.ts >= '2025-01-01' AND a.ts <= '2025-01-02' ORDER BY a.ts) x;
DROP TABLE rows_t, keys_t, arrays_t;
