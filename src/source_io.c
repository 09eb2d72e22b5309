/*-------------------------------------------------------------------------
 *
 * source_io.c
 *		pg_stat_io: every (backend_type, object, context) row, every column.
 *
 * Built the way pg_stat_get_io() in pgstatfuncs.c builds the view, from
 * pgstat_fetch_stat_io(): a row for each combination the server tracks,
 * with NULL in the cells it does not track.  Names are stored, never enum
 * integers: IOOp, IOObject and IOContext differ between major versions.
 *
 * PostgreSQL 18 counts bytes (read_bytes, write_bytes, extend_bytes) and
 * has "wal" object rows; 16 and 17 report op_bytes (always BLCKSZ)
 * instead.  Each history row has both kinds of column, NULL where the
 * running version has none.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "source.h"

#define IO_COLUMNS(C) \
	C(IO_BACKEND_TYPE, "backend_type", TEXTOID, KEY)						\
	C(IO_OBJECT, "object", TEXTOID, KEY)									\
	C(IO_CONTEXT, "context", TEXTOID, KEY)									\
	C(IO_READS, "reads", INT8OID, COUNTER)									\
	C(IO_READ_BYTES, "read_bytes", INT8OID, COUNTER)	/* *_bytes: 18+ */	\
	C(IO_READ_TIME, "read_time", FLOAT8OID, TIME)							\
	C(IO_WRITES, "writes", INT8OID, COUNTER)								\
	C(IO_WRITE_BYTES, "write_bytes", INT8OID, COUNTER)						\
	C(IO_WRITE_TIME, "write_time", FLOAT8OID, TIME)							\
	C(IO_WRITEBACKS, "writebacks", INT8OID, COUNTER)						\
	C(IO_WRITEBACK_TIME, "writeback_time", FLOAT8OID, TIME)					\
	C(IO_EXTENDS, "extends", INT8OID, COUNTER)								\
	C(IO_EXTEND_BYTES, "extend_bytes", INT8OID, COUNTER)					\
	C(IO_EXTEND_TIME, "extend_time", FLOAT8OID, TIME)						\
	C(IO_OP_BYTES, "op_bytes", INT8OID, ATTRIBUTE)	/* before 18 */			\
	C(IO_HITS, "hits", INT8OID, COUNTER)									\
	C(IO_EVICTIONS, "evictions", INT8OID, COUNTER)							\
	C(IO_REUSES, "reuses", INT8OID, COUNTER)								\
	C(IO_FSYNCS, "fsyncs", INT8OID, COUNTER)								\
	C(IO_FSYNC_TIME, "fsync_time", FLOAT8OID, TIME)							\
	C(IO_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(IO_COLUMNS, io_columns, IO_NCOLUMNS, IO_NKEYS);

/*
 * Where each IOOp goes: its count column, its time column (-1 when not
 * timed) and its bytes column (-1 when not counted in bytes).  Indexed by
 * the running version's own enum, so the enum's order does not matter.
 */
typedef struct IoOpColumns
{
	int			count;
	int			time;
	int			bytes;
} IoOpColumns;

static IoOpColumns
io_op_columns(IOOp op)
{
	switch (op)
	{
		case IOOP_EVICT:
			return (IoOpColumns) {IO_EVICTIONS, -1, -1};
		case IOOP_EXTEND:
			return (IoOpColumns) {IO_EXTENDS, IO_EXTEND_TIME, IO_EXTEND_BYTES};
		case IOOP_FSYNC:
			return (IoOpColumns) {IO_FSYNCS, IO_FSYNC_TIME, -1};
		case IOOP_HIT:
			return (IoOpColumns) {IO_HITS, -1, -1};
		case IOOP_READ:
			return (IoOpColumns) {IO_READS, IO_READ_TIME, IO_READ_BYTES};
		case IOOP_REUSE:
			return (IoOpColumns) {IO_REUSES, -1, -1};
		case IOOP_WRITE:
			return (IoOpColumns) {IO_WRITES, IO_WRITE_TIME, IO_WRITE_BYTES};
		case IOOP_WRITEBACK:
			return (IoOpColumns) {IO_WRITEBACKS, IO_WRITEBACK_TIME, -1};
	}
	elog(ERROR, "unrecognized IOOp %d", (int) op);
	pg_unreachable();
}

static void
io_collect(ChronicleEmitter *emitter)
{
	PgStat_IO  *io = pgstat_fetch_stat_io();

	for (int bktype = 0; bktype < BACKEND_NUM_TYPES; bktype++)
	{
		PgStat_BktypeIO *stats = &io->stats[bktype];
		Datum		bktype_desc;

		if (!pgstat_tracks_io_bktype(bktype))
			continue;
		bktype_desc = CStringGetTextDatum(GetBackendTypeDesc(bktype));

		for (int obj = 0; obj < IOOBJECT_NUM_TYPES; obj++)
		{
			Datum		obj_name = CStringGetTextDatum(pgstat_get_io_object_name(obj));

			for (int ctx = 0; ctx < IOCONTEXT_NUM_TYPES; ctx++)
			{
				Datum		values[IO_NCOLUMNS] = {0};
				bool		nulls[IO_NCOLUMNS];

				if (!pgstat_tracks_io_object(bktype, obj, ctx))
					continue;

				memset(nulls, true, sizeof(nulls));
				values[IO_BACKEND_TYPE] = bktype_desc;
				values[IO_OBJECT] = obj_name;
				values[IO_CONTEXT] = CStringGetTextDatum(pgstat_get_io_context_name(ctx));
				nulls[IO_BACKEND_TYPE] = nulls[IO_OBJECT] = nulls[IO_CONTEXT] = false;
				chronicle_set_timestamp(values, nulls, IO_STATS_RESET,
										io->stat_reset_timestamp);
#if PG_VERSION_NUM < 180000
				values[IO_OP_BYTES] = Int64GetDatum(BLCKSZ);
				nulls[IO_OP_BYTES] = false;
#endif

				for (int op = 0; op < IOOP_NUM_TYPES; op++)
				{
					IoOpColumns col = io_op_columns(op);

					/* Untracked cells stay NULL, as in the view. */
					if (!pgstat_tracks_io_op(bktype, obj, ctx, op))
						continue;

					values[col.count] = Int64GetDatum(stats->counts[obj][ctx][op]);
					nulls[col.count] = false;
					if (col.time >= 0)
					{
						/*
						 * stored in microseconds, shown in milliseconds;
						 * multiplied as pgstatfuncs.c does, so the value
						 * is bit for bit the view's
						 */
						values[col.time] =
							Float8GetDatum(stats->times[obj][ctx][op] * (double) 0.001);
						nulls[col.time] = false;
					}
#if PG_VERSION_NUM >= 180000
					if (col.bytes >= 0)
					{
						values[col.bytes] =
							ChronicleUInt64GetDatum(stats->bytes[obj][ctx][op]);
						nulls[col.bytes] = false;
					}
#endif
				}
				chronicle_emit_row(emitter, values, nulls);
			}
		}
	}
}

static const ChronicleAnalysis io_analysis = {
	.prefix = "io",
	.filters = (const char *const[]) {"backend_type", "object", "context", NULL},
	.per_op = (const ChroniclePerOp[]) {
		{"ms_per_read", "read_time", "reads"},
		{"ms_per_write", "write_time", "writes"},
		{"ms_per_writeback", "writeback_time", "writebacks"},
		{"ms_per_extend", "extend_time", "extends"},
		{"ms_per_fsync", "fsync_time", "fsyncs"},
		{NULL}
	},
	.bytes = (const char *const[]) {"read_bytes", "reads", "write_bytes", "writes", "extend_bytes", "extends", NULL},
	.bytes_unit = "op_bytes",
};

CHRONICLE_SOURCE(io, IO,
				 "pg_stat_io, every (backend_type, object, context) row and column",
				 .analysis = &io_analysis,
				 .page_columns = (const char *const[]) {"read_bytes", "write_bytes", "extend_bytes", NULL});
