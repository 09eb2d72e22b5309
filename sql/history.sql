-- The packed history (src/history.c): every value comes back exactly as it
-- went in, through the views' trigger and through the bulk load; UPDATE and
-- DELETE reach one row; a malformed value is an error, never a wrong row.
\set VERBOSITY terse
\pset null NULL
SET timezone = 'UTC';
SELECT chronicle.ensure_partitions('2023-07-01', '2023-07-01') >= 0 AS partitions;

-- Edge values of every type a source has: int8 extremes, zero and NULL,
-- -0.0, NaN and infinities, infinite and far timestamps, empty and long
-- text, a key with every character but NUL.
CREATE TEMP TABLE edge_io (LIKE chronicle.io_history);
INSERT INTO edge_io (ts, backend_type, object, context, reads, read_bytes, read_time, writes, op_bytes, hits, stats_reset) VALUES
	('2023-07-01 00:00:01', 'client backend', 'relation', 'normal', 0, NULL, 0.0, 9223372036854775807, 8192, -9223372036854775808, 'infinity'),
	('2023-07-01 00:00:01', 'client backend', 'relation', 'bulkread', 1, 2, '-0', -1, NULL, 127, '-infinity'),
	('2023-07-01 00:00:01', E'odd \x1f\x1e\t key ''"', 'x', '', 128, 16383, 'NaN', 16384, 0, 1, '1999-12-31 23:59:59.999999'),
	('2023-07-01 00:00:01', 'checkpointer', 'relation', 'normal', NULL, NULL, 'Infinity', NULL, NULL, NULL, NULL),
	('2023-07-01 00:00:02', 'client backend', 'relation', 'normal', 5, 6, '-Infinity', 7, 8192, 9, '2294-01-01 00:00:00'),
	('2023-07-01 00:00:02', 'autovacuum worker', 'relation', 'vacuum', 1, 1, 1e-300, 1, 1, 1, '2023-07-01 00:00:01.000001');
INSERT INTO chronicle.io_history SELECT * FROM edge_io;

-- Every row, every value, as inserted (both ways, so duplicates count too);
-- -0.0 and 0.0 told apart by their text.
SELECT count(*) AS differences FROM (
	(SELECT * FROM edge_io EXCEPT ALL SELECT * FROM chronicle.io_history WHERE ts < '2023-07-02')
	UNION ALL
	(SELECT * FROM chronicle.io_history WHERE ts < '2023-07-02' EXCEPT ALL SELECT * FROM edge_io)) d;
SELECT read_time::text, reads, hits FROM chronicle.io_history
 WHERE ts = '2023-07-01 00:00:01' AND context = 'bulkread';
-- The short forms of float8 (N / 1000.0, N * 0.001, whole numbers) and
-- their neighbours that must keep 8 bytes, timestamps equal to, before and
-- after the previous one of the value, key ids out of order: all exact.
CREATE TEMP TABLE edge_io2 (LIKE chronicle.io_history);
INSERT INTO edge_io2 (ts, backend_type, object, context, read_time, write_time, fsync_time, stats_reset) VALUES
	('2023-07-01 00:00:04', 'client backend', 'relation', 'normal', 1234.567, 12345 * 0.001::float8, 3, '2023-06-30 12:00:00.123456'),
	('2023-07-01 00:00:04', 'client backend', 'relation', 'bulkread', 0.1, 1e15 + 0.5, 4e15, '2023-06-30 12:00:00.123456'),
	('2023-07-01 00:00:04', E'odd \x1f\x1e\t key ''"', 'x', '', 9007199254740993, 5e-324, -1.5, '2023-07-01 00:00:05'),
	('2023-07-01 00:00:04', 'checkpointer', 'relation', 'normal', 3999999999999.999, 1.0000000000000002, 2.5e-3, '2000-01-01 00:00:00'),
	('2023-07-01 00:00:04', 'autovacuum worker', 'relation', 'vacuum', 0.001, 9.223372036854776e18, 1e300, '2023-07-01 00:00:04');
INSERT INTO chronicle.io_history SELECT * FROM edge_io2;
SELECT count(*) AS differences FROM (
	(SELECT * FROM edge_io2 EXCEPT ALL SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:04')
	UNION ALL
	(SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:04' EXCEPT ALL SELECT * FROM edge_io2)) d;
-- Its size: a header byte, a row count, the bitmaps by column, the key
-- ids, 15 floats (five in a short form) and 5 timestamps.
SELECT octet_length(io) AS packed_bytes FROM chronicle.history WHERE ts = '2023-07-01 00:00:04';
-- Both layouts of the bitmaps are in use (byte 0, flag 8: by column), and
-- both decode to the rows above.
SELECT ts, get_byte(io, 0) & 8 <> 0 AS io_by_column, get_byte(wal, 0) & 8 <> 0 AS wal_by_column
  FROM chronicle.history WHERE ts < '2023-07-02' ORDER BY ts;
DELETE FROM chronicle.history WHERE ts = '2023-07-01 00:00:04';
-- Byte counters in pages (io's read_bytes, write_bytes, extend_bytes): whole
-- pages, a remainder of either sign, the int8 extremes and the largest
-- multiples of 4096, all exact; whole pages take fewer bytes.
CREATE TEMP TABLE edge_pages (LIKE chronicle.io_history);
INSERT INTO edge_pages (ts, backend_type, object, context, read_bytes, write_bytes, extend_bytes, stats_reset)
SELECT '2023-07-01 00:00:06', 'b' || n, 'relation', 'normal', r, w, e, '2023-07-01'
  FROM (VALUES (1, 4096, -4096, 8192 * 12345),
               (2, 4095, -4095, 4097),
               (3, -4097, 8192 * 12345 + 1, 1),
               (4, 9223372036854771712, -9223372036854771712, -1),
               (5, 9223372036854775807, -9223372036854775807 - 1, -9223372036854775807),
               (6, -9223372036854775807 - 1, 9223372036854775807, 9223372036854771711)) AS x(n, r, w, e);
INSERT INTO chronicle.io_history SELECT * FROM edge_pages;
SELECT count(*) AS differences FROM (
	(SELECT * FROM edge_pages EXCEPT ALL SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:06')
	UNION ALL
	(SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:06' EXCEPT ALL SELECT * FROM edge_pages)) d;
DELETE FROM chronicle.history WHERE ts = '2023-07-01 00:00:06';
-- float8 multiples of 10 (clock ticks in ms) where N * 10 is a byte
-- shorter than N, and their neighbours: exact.
CREATE TEMP TABLE edge_tens (LIKE chronicle.io_history);
INSERT INTO edge_tens (ts, backend_type, object, context, read_time, write_time, fsync_time, stats_reset)
SELECT '2023-07-01 00:00:07', 'b' || n, 'relation', 'normal', r, w, f, '2023-07-01'
  FROM (VALUES (1, 20480, 20490, 20481),
               (2, 3999999999999990, 1e15, 1280),
               (3, 20480.5, 10, 2.048e4)) AS x(n, r, w, f);
INSERT INTO chronicle.io_history SELECT * FROM edge_tens;
SELECT count(*) AS differences FROM (
	(SELECT * FROM edge_tens EXCEPT ALL SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:07')
	UNION ALL
	(SELECT * FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:07' EXCEPT ALL SELECT * FROM edge_tens)) d;
-- 20480 and 2.048e4 as the tag 0x84 and 2048 (3 bytes, not 4).
SELECT octet_length(io) AS packed_bytes, position('\x84801000'::bytea IN io) > 0 AS tens_form
  FROM chronicle.history WHERE ts = '2023-07-01 00:00:07';
DELETE FROM chronicle.history WHERE ts = '2023-07-01 00:00:07';
-- 3 reads of 8 kB a second for a day, 518,400 pages: 3 bytes (the varint
-- of 2 * zigzag(518400)), where the bytes' zigzag varint takes 5.
INSERT INTO chronicle.io_history (ts, backend_type, object, context, read_bytes, stats_reset)
VALUES ('2023-07-01 00:00:06', 'client backend', 'relation', 'normal', 3 * 8192 * 86400, '2023-07-01 00:00:06');
SELECT octet_length(io) AS packed_bytes, read_bytes FROM chronicle.history, chronicle.io_history v
 WHERE history.ts = '2023-07-01 00:00:06' AND v.ts = history.ts;
DELETE FROM chronicle.history WHERE ts = '2023-07-01 00:00:06';
-- A value of 0.2.0 (format version 2) is read as it was written, bytes as
-- bytes: 3 reads, read_bytes 24576, write_bytes 8192, extend_bytes 12345,
-- stats_reset 10 s before the ts.
SELECT key_id AS io_key FROM chronicle.history_key
 WHERE source = 'io' AND key = '{client backend,relation,normal}' \gset
SELECT :io_key < 128 AS one_byte_key;
SELECT reads, read_bytes, write_bytes, extend_bytes, stats_reset
  FROM chronicle._unpack('io', '2023-07-01 00:00:10',
         '\x26130202ecfd01'::bytea || set_byte('\x00', 0, :io_key) || '\x06808003808001f2c00180dac409'::bytea)
       AS u(backend_type text, object text, context text,
	reads bigint, read_bytes bigint, read_time float8, writes bigint, write_bytes bigint, write_time float8, writebacks bigint,
	writeback_time float8, extends bigint, extend_bytes bigint, extend_time float8, op_bytes bigint, hits bigint,
	evictions bigint, reuses bigint, fsyncs bigint, fsync_time float8, stats_reset timestamptz);

-- One history row per snapshot, and one dictionary entry per key.
SELECT count(*) AS history_rows FROM chronicle.history WHERE ts < '2023-07-02';
SELECT count(*) AS keys FROM chronicle.history_key k
 WHERE k.source = 'io' AND (k.key[1], k.key[2], k.key[3]) IN (SELECT backend_type, object, context FROM edge_io);

-- UPDATE and DELETE reach one row of one snapshot.
UPDATE chronicle.io_history SET reads = 42, stats_reset = NULL
 WHERE ts = '2023-07-01 00:00:02' AND context = 'vacuum';
DELETE FROM chronicle.io_history WHERE ts = '2023-07-01 00:00:01' AND backend_type = 'checkpointer';
SELECT ts, backend_type, context, reads, stats_reset FROM chronicle.io_history
 WHERE ts < '2023-07-02' ORDER BY ts, backend_type, context;
-- A key that moves: its row leaves one snapshot for another.
UPDATE chronicle.io_history SET ts = '2023-07-01 00:00:03'
 WHERE ts = '2023-07-01 00:00:02' AND context = 'vacuum';
SELECT ts, count(*) FROM chronicle.io_history WHERE ts < '2023-07-02' GROUP BY ts ORDER BY ts;
-- A single-row source keeps one row per snapshot: a second INSERT replaces it.
INSERT INTO chronicle.wal_history (ts, wal_records) VALUES ('2023-07-01 00:00:01', 1);
INSERT INTO chronicle.wal_history (ts, wal_records, wal_bytes) VALUES ('2023-07-01 00:00:01', 2, 3);
SELECT ts, wal_records, wal_bytes FROM chronicle.wal_history WHERE ts < '2023-07-02';

-- Bulk load: the same rows as through the trigger, and the snapshots'
-- other sources untouched.
CREATE TEMP TABLE bulk_io AS SELECT ts + interval '1 hour' AS ts, backend_type, object, context,
       reads, read_bytes, read_time, writes, write_bytes, write_time, writebacks, writeback_time,
       extends, extend_bytes, extend_time, op_bytes, hits, evictions, reuses, fsyncs, fsync_time, stats_reset
  FROM edge_io;
CREATE TEMP TABLE bulk_wal AS SELECT timestamptz '2023-07-01 01:00:01' AS ts, 10::bigint AS wal_records;
SELECT chronicle._history_load(ARRAY['io', 'wal'], ARRAY['bulk_io', 'bulk_wal']::regclass[]) AS history_rows;
SELECT count(*) AS differences FROM (
	(SELECT * FROM bulk_io EXCEPT ALL SELECT * FROM chronicle.io_history WHERE ts > '2023-07-01 00:30' AND ts < '2023-07-02')
	UNION ALL
	(SELECT * FROM chronicle.io_history WHERE ts > '2023-07-01 00:30' AND ts < '2023-07-02' EXCEPT ALL SELECT * FROM bulk_io)) d;
SELECT ts, wal_records, wal_bytes FROM chronicle.wal_history WHERE ts > '2023-07-01 00:30' AND ts < '2023-07-02';
-- Loading a source again replaces its rows at those ts, and only its own.
UPDATE bulk_wal SET wal_records = 11;
SELECT chronicle._history_load(ARRAY['wal'], ARRAY['bulk_wal']::regclass[]) AS history_rows;
SELECT (SELECT count(*) FROM chronicle.io_history WHERE ts > '2023-07-01 00:30' AND ts < '2023-07-02') AS io_rows,
       (SELECT wal_records FROM chronicle.wal_history WHERE ts > '2023-07-01 00:30' AND ts < '2023-07-02') AS wal_records;

-- Bad input: clear errors.
INSERT INTO chronicle.io_history (ts, backend_type, object, context) VALUES ('2023-07-01 00:00:05', NULL, 'x', 'y');
INSERT INTO chronicle.io_history (ts, backend_type, object, context) VALUES (NULL, 'a', 'x', 'y');
SELECT chronicle._history_load(ARRAY['nosuch'], ARRAY['bulk_wal']::regclass[]);
SELECT chronicle._history_load(ARRAY['io', 'wal'], ARRAY['bulk_io']::regclass[]);
SELECT chronicle._pack('io', now(), ARRAY[1, 2]);
SELECT chronicle._pack('wal', '2023-07-01', (SELECT array_agg(b) FROM bulk_wal b, generate_series(1, 2)));
SELECT chronicle._pack('io', '2023-07-01', (SELECT array_agg(b) FROM bulk_io b, generate_series(1, 2)));
SELECT chronicle._pack('io', '2023-07-01', (SELECT array_agg(b) FROM bulk_wal b));
SELECT chronicle._history_write();
-- The unpacker refuses what it did not write: empty, truncated, another
-- version, an unknown flag, more rows than bytes, an overlong varint, a
-- value both present and NULL, a timestamp without its payload, bitmaps by
-- column that are wrong, trailing bytes, an unknown key id.
\set walcols 'wal_records bigint, wal_fpi bigint, wal_bytes bigint, wal_buffers_full bigint, wal_write bigint, wal_sync bigint, wal_write_time float8, wal_sync_time float8, stats_reset timestamptz'
SELECT * FROM chronicle._unpack('wal', now(), '\x') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x20') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x4000') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x2800') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x2001') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x20ffffffffffffffffffff01') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x220101000100') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x20010000') AS u(:walcols);
-- ... bitmaps by column: with the NULL flag, truncated, a value both present
-- and NULL.
SELECT * FROM chronicle._unpack('wal', now(), '\x2e00000000') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x2cffff03') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), '\x2cffff0f0000') AS u(:walcols);
SELECT * FROM chronicle._unpack('wal', now(), (SELECT wal FROM chronicle.history WHERE ts = '2023-07-01 00:00:01') || '\x00'::bytea) AS u(:walcols);
SELECT * FROM chronicle._unpack('io', now(), '\x2201000000000002ffffff7f') AS u(backend_type text, object text, context text,
	reads bigint, read_bytes bigint, read_time float8, writes bigint, write_bytes bigint, write_time float8, writebacks bigint,
	writeback_time float8, extends bigint, extend_bytes bigint, extend_time float8, op_bytes bigint, hits bigint,
	evictions bigint, reuses bigint, fsyncs bigint, fsync_time float8, stats_reset timestamptz);
-- ... a value in pages written other than the one way: a remainder of
-- zero, a remainder of a page or more, a remainder of the other sign, more
-- pages than a bigint holds (the first is the valid one, 4096).
\set iocols 'backend_type text, object text, context text, reads bigint, read_bytes bigint, read_time float8, writes bigint, write_bytes bigint, write_time float8, writebacks bigint, writeback_time float8, extends bigint, extend_bytes bigint, extend_time float8, op_bytes bigint, hits bigint, evictions bigint, reuses bigint, fsyncs bigint, fsync_time float8, stats_reset timestamptz'
SELECT p AS payload, (SELECT read_bytes FROM chronicle._unpack('io', now(),
         '\x34020002'::bytea || set_byte('\x00', 0, :io_key) || decode(p, 'hex') || '\x00'::bytea) AS u(:iocols)) AS read_bytes
  FROM unnest(ARRAY['04']) p;
SELECT * FROM chronicle._unpack('io', now(), '\x34020002'::bytea || set_byte('\x00', 0, :io_key) || '\x050000'::bytea) AS u(:iocols);
SELECT * FROM chronicle._unpack('io', now(), '\x34020002'::bytea || set_byte('\x00', 0, :io_key) || '\x05804000'::bytea) AS u(:iocols);
SELECT * FROM chronicle._unpack('io', now(), '\x34020002'::bytea || set_byte('\x00', 0, :io_key) || '\x050100'::bytea) AS u(:iocols);
SELECT * FROM chronicle._unpack('io', now(), '\x34020002'::bytea || set_byte('\x00', 0, :io_key) || '\x80808080808080801000'::bytea) AS u(:iocols);
-- NULL data is no rows.
SELECT count(*) FROM chronicle._unpack('wal', now(), NULL) AS u(:walcols);
-- ... and a column list other than the source's.
SELECT * FROM chronicle._unpack('wal', now(), (SELECT wal FROM chronicle.history WHERE ts = '2023-07-01 00:00:01')) AS u(a bigint);
SELECT * FROM chronicle._unpack('wal', now(), (SELECT wal FROM chronicle.history WHERE ts = '2023-07-01 00:00:01'))
    AS u(wal_records text, wal_fpi bigint, wal_bytes bigint, wal_buffers_full bigint, wal_write bigint, wal_sync bigint,
         wal_write_time float8, wal_sync_time float8, stats_reset timestamptz);
SELECT * FROM chronicle._unpack('nosuch', now(), '\x01') AS u(a bigint);

-- Clean up: no history of this test stays for the next ones.
DELETE FROM chronicle.history WHERE ts < '2023-07-02';
