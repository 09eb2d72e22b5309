/*-------------------------------------------------------------------------
 *
 * source_checkpointer.c
 *		pg_stat_checkpointer: one row per snapshot.
 *
 * pg_stat_checkpointer exists since PostgreSQL 17; 18 adds num_done and
 * slru_written.  Columns the running version lacks stay NULL.
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

#define CKPT_COLUMNS(C) \
	C(CKPT_NUM_TIMED, "num_timed", INT8OID, COUNTER)						\
	C(CKPT_NUM_REQUESTED, "num_requested", INT8OID, COUNTER)				\
	C(CKPT_NUM_DONE, "num_done", INT8OID, COUNTER)	/* 18+ */				\
	C(CKPT_RESTARTPOINTS_TIMED, "restartpoints_timed", INT8OID, COUNTER)	\
	C(CKPT_RESTARTPOINTS_REQ, "restartpoints_req", INT8OID, COUNTER)		\
	C(CKPT_RESTARTPOINTS_DONE, "restartpoints_done", INT8OID, COUNTER)		\
	C(CKPT_WRITE_TIME, "write_time", FLOAT8OID, TIME)						\
	C(CKPT_SYNC_TIME, "sync_time", FLOAT8OID, TIME)							\
	C(CKPT_BUFFERS_WRITTEN, "buffers_written", INT8OID, COUNTER)			\
	C(CKPT_SLRU_WRITTEN, "slru_written", INT8OID, COUNTER)	/* 18+ */		\
	C(CKPT_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(CKPT_COLUMNS, checkpointer_columns, CKPT_NCOLUMNS, CKPT_NKEYS);

static void
checkpointer_collect(ChronicleEmitter *emitter)
{
	PgStat_CheckpointerStats *s = pgstat_fetch_stat_checkpointer();
	Datum		values[CKPT_NCOLUMNS] = {0};
	bool		nulls[CKPT_NCOLUMNS] = {0};

	values[CKPT_NUM_TIMED] = Int64GetDatum(s->num_timed);
	values[CKPT_NUM_REQUESTED] = Int64GetDatum(s->num_requested);
	values[CKPT_RESTARTPOINTS_TIMED] = Int64GetDatum(s->restartpoints_timed);
	values[CKPT_RESTARTPOINTS_REQ] = Int64GetDatum(s->restartpoints_requested);
	values[CKPT_RESTARTPOINTS_DONE] = Int64GetDatum(s->restartpoints_performed);
	/* already in milliseconds */
	values[CKPT_WRITE_TIME] = Float8GetDatum((double) s->write_time);
	values[CKPT_SYNC_TIME] = Float8GetDatum((double) s->sync_time);
	values[CKPT_BUFFERS_WRITTEN] = Int64GetDatum(s->buffers_written);
#if PG_VERSION_NUM >= 180000
	values[CKPT_NUM_DONE] = Int64GetDatum(s->num_performed);
	values[CKPT_SLRU_WRITTEN] = Int64GetDatum(s->slru_written);
#else
	nulls[CKPT_NUM_DONE] = nulls[CKPT_SLRU_WRITTEN] = true;
#endif
	chronicle_set_timestamp(values, nulls, CKPT_STATS_RESET, s->stat_reset_timestamp);
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis checkpointer_analysis = {
	.prefix = "checkpointer",
};

CHRONICLE_SOURCE(checkpointer, CKPT,
				 "pg_stat_checkpointer",
				 .analysis = &checkpointer_analysis);
