/*-------------------------------------------------------------------------
 *
 * source_bgwriter.c
 *		pg_stat_bgwriter: one row per snapshot.
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

#define BGW_COLUMNS(C) \
	C(BGW_BUFFERS_CLEAN, "buffers_clean", INT8OID, COUNTER)			\
	C(BGW_MAXWRITTEN_CLEAN, "maxwritten_clean", INT8OID, COUNTER)	\
	C(BGW_BUFFERS_ALLOC, "buffers_alloc", INT8OID, COUNTER)			\
	C(BGW_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(BGW_COLUMNS, bgwriter_columns, BGW_NCOLUMNS, BGW_NKEYS);

static void
bgwriter_collect(ChronicleEmitter *emitter)
{
	PgStat_BgWriterStats *s = pgstat_fetch_stat_bgwriter();
	Datum		values[BGW_NCOLUMNS] = {0};
	bool		nulls[BGW_NCOLUMNS] = {0};

	values[BGW_BUFFERS_CLEAN] = Int64GetDatum(s->buf_written_clean);
	values[BGW_MAXWRITTEN_CLEAN] = Int64GetDatum(s->maxwritten_clean);
	values[BGW_BUFFERS_ALLOC] = Int64GetDatum(s->buf_alloc);
	chronicle_set_timestamp(values, nulls, BGW_STATS_RESET, s->stat_reset_timestamp);
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis bgwriter_analysis = {
	.prefix = "bgwriter",
};

CHRONICLE_SOURCE(bgwriter, BGW,
				 "pg_stat_bgwriter",
				 .analysis = &bgwriter_analysis);
