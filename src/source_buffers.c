/*-------------------------------------------------------------------------
 *
 * source_buffers.c
 *		The buffer cache summary (chronicle.buffers_history): used, unused,
 *		dirty and pinned buffers and the usage-count histogram, read from
 *		the buffer headers in C, without pg_buffercache.
 *
 * The headers are read without locks, as contrib/pg_buffercache's
 * pg_buffercache_summary() does: one atomic read of each header's state
 * word, which holds the flags, the usage count and the pin count together.
 * The numbers are therefore not a consistent picture of the whole cache
 * (buffers change while the scan runs) but each buffer's are its own.
 *
 * The scan touches every buffer header, so its cost grows with
 * shared_buffers (measured by bench/sampling.sh, docs/benchmarks.md).
 * chronicle.buffers_interval sets how often it runs; in the snapshots in
 * between the previous reading is emitted again, which the collector's
 * change detection turns into no row (or into the same values on a
 * keyframe): the history says "unchanged since the last scan".
 *
 * These are gauges, not counters.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "source.h"

#define NUSAGE	(BM_MAX_USAGE_COUNT + 1)

#define B_COLUMNS(C) \
	C(B_TOTAL, "buffers_total", INT8OID, GAUGE)								\
	C(B_USED, "buffers_used", INT8OID, GAUGE)								\
	C(B_UNUSED, "buffers_unused", INT8OID, GAUGE)							\
	C(B_DIRTY, "buffers_dirty", INT8OID, GAUGE)								\
	C(B_PINNED, "buffers_pinned", INT8OID, GAUGE)							\
	C(B_USAGECOUNT_AVG, "usagecount_avg", FLOAT8OID, GAUGE)					\
	/* usage_N: buffers with usage count N; dirty_N, pinned_N: of those */	\
	C(B_USAGE_0, "usage_0", INT8OID, GAUGE)									\
	C(B_USAGE_1, "usage_1", INT8OID, GAUGE)									\
	C(B_USAGE_2, "usage_2", INT8OID, GAUGE)									\
	C(B_USAGE_3, "usage_3", INT8OID, GAUGE)									\
	C(B_USAGE_4, "usage_4", INT8OID, GAUGE)									\
	C(B_USAGE_5, "usage_5", INT8OID, GAUGE)									\
	C(B_DIRTY_0, "dirty_0", INT8OID, GAUGE)									\
	C(B_DIRTY_1, "dirty_1", INT8OID, GAUGE)									\
	C(B_DIRTY_2, "dirty_2", INT8OID, GAUGE)									\
	C(B_DIRTY_3, "dirty_3", INT8OID, GAUGE)									\
	C(B_DIRTY_4, "dirty_4", INT8OID, GAUGE)									\
	C(B_DIRTY_5, "dirty_5", INT8OID, GAUGE)									\
	C(B_PINNED_0, "pinned_0", INT8OID, GAUGE)								\
	C(B_PINNED_1, "pinned_1", INT8OID, GAUGE)								\
	C(B_PINNED_2, "pinned_2", INT8OID, GAUGE)								\
	C(B_PINNED_3, "pinned_3", INT8OID, GAUGE)								\
	C(B_PINNED_4, "pinned_4", INT8OID, GAUGE)								\
	C(B_PINNED_5, "pinned_5", INT8OID, GAUGE)

CHRONICLE_COLUMNS(B_COLUMNS, buffers_columns, B_NCOLUMNS, B_NKEYS);

/* collect writes values[B_USAGE_0 + u], B_DIRTY_0 + u, B_PINNED_0 + u */
StaticAssertDecl(BM_MAX_USAGE_COUNT == 5 &&
				 B_DIRTY_0 == B_USAGE_0 + NUSAGE &&
				 B_PINNED_0 == B_DIRTY_0 + NUSAGE &&
				 B_NCOLUMNS == B_PINNED_0 + NUSAGE,
				 "buffers_history has usage_N, dirty_N, pinned_N for N = 0 .. 5");

/* Setting: time between two scans, 0 = every snapshot. */
static int	chronicle_buffers_interval = 1000;	/* ms */

/* The last scan of this process, emitted again until the next one. */
typedef struct BufferSummary
{
	int64		total;
	int64		used;
	int64		dirty;
	int64		pinned;
	int64		usage[NUSAGE];
	int64		dirty_by_usage[NUSAGE];
	int64		pinned_by_usage[NUSAGE];
	double		usagecount_avg;
	bool		has_avg;
} BufferSummary;

static BufferSummary last;
static TimestampTz last_scan = 0;

/*
 * chronicle.snapshot_interval, by name: a source knows only the source
 * interface (source.h), not the module's variables.
 */
static int
snapshot_interval_ms(void)
{
	return pg_strtoint32(GetConfigOption("chronicle.snapshot_interval",
										 false, false));
}

static void
buffers_define_settings(void)
{
	DefineCustomIntVariable("chronicle.buffers_interval",
							"Time between two scans of the buffer cache headers.",
							"The scan reads every buffer header, so its cost grows with "
							"shared_buffers; snapshots in between record the previous scan.  "
							"0 scans at every snapshot.",
							&chronicle_buffers_interval,
							1000, 0, 24 * 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * Scan every buffer header once.  Per buffer: one atomic read of the state
 * word, no lock, no pin.  The histogram counts used (valid) buffers only,
 * so usage_0 .. usage_5 add up to buffers_used; usage_0 are the buffers
 * the clock sweep evicts first.
 */
static void
scan_buffers(BufferSummary *s)
{
	int64		usage_sum = 0;

	memset(s, 0, sizeof(*s));
	s->total = NBuffers;

	for (int i = 0; i < NBuffers; i++)
	{
		BufferDesc *hdr = GetBufferDescriptor(i);
		uint32		state = pg_atomic_read_u32(&hdr->state);
		int			usage;

		if (!(state & BM_VALID))
			continue;
		usage = Min(BUF_STATE_GET_USAGECOUNT(state), BM_MAX_USAGE_COUNT);
		s->used++;
		s->usage[usage]++;
		usage_sum += usage;
		if (state & BM_DIRTY)
		{
			s->dirty++;
			s->dirty_by_usage[usage]++;
		}
		if (BUF_STATE_GET_REFCOUNT(state) > 0)
		{
			s->pinned++;
			s->pinned_by_usage[usage]++;
		}
	}
	s->has_avg = s->used > 0;
	if (s->has_avg)
		s->usagecount_avg = (double) usage_sum / s->used;
}

static void
summary_values(const BufferSummary *s, Datum *values, bool *nulls)
{
	values[B_TOTAL] = Int64GetDatum(s->total);
	values[B_USED] = Int64GetDatum(s->used);
	values[B_UNUSED] = Int64GetDatum(s->total - s->used);
	values[B_DIRTY] = Int64GetDatum(s->dirty);
	values[B_PINNED] = Int64GetDatum(s->pinned);
	values[B_USAGECOUNT_AVG] = Float8GetDatum(s->usagecount_avg);
	nulls[B_USAGECOUNT_AVG] = !s->has_avg;
	for (int u = 0; u < NUSAGE; u++)
	{
		values[B_USAGE_0 + u] = Int64GetDatum(s->usage[u]);
		values[B_DIRTY_0 + u] = Int64GetDatum(s->dirty_by_usage[u]);
		values[B_PINNED_0 + u] = Int64GetDatum(s->pinned_by_usage[u]);
	}
}

static void
buffers_collect(ChronicleEmitter *emitter)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[B_NCOLUMNS];
	bool		nulls[B_NCOLUMNS] = {0};

	/*
	 * Scan when the interval has passed.  Snapshots arrive with some
	 * jitter, so half a snapshot interval early counts as on time:
	 * otherwise an interval equal to the snapshot interval would scan only
	 * every second snapshot.
	 */
	if (last_scan == 0 ||
		now - last_scan >= (int64) chronicle_buffers_interval * 1000 -
		(int64) snapshot_interval_ms() * 500)
	{
		scan_buffers(&last);
		last_scan = now;
	}

	summary_values(&last, values, nulls);
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis buffers_analysis = {
	.prefix = "buffers",
	.gauge_unit = "buffers",
};

CHRONICLE_SOURCE(buffers, B,
				 "the buffer cache summary (gauges): used, unused, dirty, pinned, usage-count histogram",
				 .analysis = &buffers_analysis,
				 .define_settings = buffers_define_settings);

/*
 * chronicle.buffers_summary(): a scan now, with the same columns as
 * buffers_history (without ts).
 */
PG_FUNCTION_INFO_V1(chronicle_buffers_summary);

Datum
chronicle_buffers_summary(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	BufferSummary s;
	Datum		values[B_NCOLUMNS];
	bool		nulls[B_NCOLUMNS] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (tupdesc->natts != B_NCOLUMNS)
		elog(ERROR, "chronicle.buffers_summary() must return %d columns",
			 B_NCOLUMNS);

	scan_buffers(&s);
	summary_values(&s, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
