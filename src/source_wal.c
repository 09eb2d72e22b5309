/*-------------------------------------------------------------------------
 *
 * source_wal.c
 *		pg_stat_wal: one row per snapshot.
 *
 * PostgreSQL 16 and 17 count WAL writes and syncs (and their times, with
 * track_wal_io_timing) here; 18 moved them to pg_stat_io's "wal" object
 * rows, recorded by source_io.c.  Columns the running version lacks stay
 * NULL.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "pgstat.h"
#include "utils/timestamp.h"

#include "source.h"

#define WAL_COLUMNS(C) \
	C(WAL_RECORDS, "wal_records", INT8OID, COUNTER)							\
	C(WAL_FPI, "wal_fpi", INT8OID, COUNTER)									\
	C(WAL_BYTES, "wal_bytes", INT8OID, COUNTER)								\
	C(WAL_BUFFERS_FULL, "wal_buffers_full", INT8OID, COUNTER)				\
	/* wal_write, wal_sync and their times: before 18 (pg_stat_io on 18) */	\
	C(WAL_WRITE, "wal_write", INT8OID, COUNTER)								\
	C(WAL_SYNC, "wal_sync", INT8OID, COUNTER)								\
	C(WAL_WRITE_TIME, "wal_write_time", FLOAT8OID, TIME)					\
	C(WAL_SYNC_TIME, "wal_sync_time", FLOAT8OID, TIME)						\
	C(WAL_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(WAL_COLUMNS, wal_columns, WAL_NCOLUMNS, WAL_NKEYS);

static void
wal_collect(ChronicleEmitter *emitter)
{
	PgStat_WalStats *wal = pgstat_fetch_stat_wal();
	Datum		values[WAL_NCOLUMNS] = {0};
	bool		nulls[WAL_NCOLUMNS];

	memset(nulls, true, sizeof(nulls));

#if PG_VERSION_NUM >= 180000
	values[WAL_RECORDS] = Int64GetDatum(wal->wal_counters.wal_records);
	values[WAL_FPI] = Int64GetDatum(wal->wal_counters.wal_fpi);
	values[WAL_BYTES] = ChronicleUInt64GetDatum(wal->wal_counters.wal_bytes);
	values[WAL_BUFFERS_FULL] = Int64GetDatum(wal->wal_counters.wal_buffers_full);
	nulls[WAL_RECORDS] = nulls[WAL_FPI] = nulls[WAL_BYTES] = nulls[WAL_BUFFERS_FULL] = false;
#else
	values[WAL_RECORDS] = Int64GetDatum(wal->wal_records);
	values[WAL_FPI] = Int64GetDatum(wal->wal_fpi);
	values[WAL_BYTES] = ChronicleUInt64GetDatum(wal->wal_bytes);
	values[WAL_BUFFERS_FULL] = Int64GetDatum(wal->wal_buffers_full);
	values[WAL_WRITE] = Int64GetDatum(wal->wal_write);
	values[WAL_SYNC] = Int64GetDatum(wal->wal_sync);
	/* stored in microseconds, shown in milliseconds */
	values[WAL_WRITE_TIME] = Float8GetDatum((double) wal->wal_write_time / 1000.0);
	values[WAL_SYNC_TIME] = Float8GetDatum((double) wal->wal_sync_time / 1000.0);
	for (int c = WAL_RECORDS; c <= WAL_SYNC_TIME; c++)
		nulls[c] = false;
#endif
	chronicle_set_timestamp(values, nulls, WAL_STATS_RESET, wal->stat_reset_timestamp);
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis wal_analysis = {
	.prefix = "wal",
	.per_op = (const ChroniclePerOp[]) {
		{"ms_per_write", "wal_write_time", "wal_write"},
		{"ms_per_sync", "wal_sync_time", "wal_sync"},
		{NULL}
	},
};

CHRONICLE_SOURCE(wal, WAL,
				 "pg_stat_wal",
				 .analysis = &wal_analysis);
