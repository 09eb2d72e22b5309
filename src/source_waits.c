/*-------------------------------------------------------------------------
 *
 * source_waits.c
 *		Two sources over the wait-event sampler's shared counters (sampler.c):
 *		"waits" (chronicle.waits_history: cumulative samples per backend
 *		type, state, wait event and query id) and "wait_sampler"
 *		(chronicle.wait_sampler_history: ticks due and taken, samples
 *		dropped, the sampler's own CPU time, samples of active sessions by
 *		wait class and of background processes at work).
 *
 * Both are in one file because they must describe the same instant: the
 * share of a wait event in an interval is its samples delta over the ticks
 * taken delta, and a tick falling between the two readings would skew it.
 * The waits source reads the entries and the counters under one
 * acquisition of the sampler's lock and keeps the counters; the
 * wait_sampler source, collected right after it in the same snapshot
 * (same transaction), emits those counters instead of reading again.
 *
 * Neither is available when pg_chronicle is not preloaded: there is no
 * sampler then.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "sampler.h"
#include "source.h"

#define W_COLUMNS(C) \
	C(W_BACKEND_TYPE, "backend_type", TEXTOID, KEY)								\
	/*																			\
	 * the backend state as in pg_stat_activity ('active', 'idle', 'idle in		\
	 * transaction', ...), '' for processes without one; an idle session		\
	 * waiting in ClientRead has state 'idle', a backend waiting for its		\
	 * client mid-transaction 'idle in transaction' or 'active'					\
	 */																			\
	C(W_STATE, "state", TEXTOID, KEY)											\
	/*																			\
	 * 'CPU'/'CPU' when the process runs without a wait event;					\
	 * 'Client'/'IdleInTransaction' for a session idle in						\
	 * transaction without one (sampler.h)										\
	 */																			\
	C(W_WAIT_EVENT_TYPE, "wait_event_type", TEXTOID, KEY)						\
	C(W_WAIT_EVENT, "wait_event", TEXTOID, KEY)									\
	C(W_QUERYID, "queryid", INT8OID, KEY)	/* 0 when none is known */			\
	C(W_SAMPLES, "samples", INT8OID, COUNTER)	/* since the sampler started */

CHRONICLE_COLUMNS(W_COLUMNS, waits_columns, W_NCOLUMNS, W_NKEYS);

#define S_COLUMNS(C) \
	C(S_TICKS_DUE, "ticks_due", INT8OID, COUNTER)													\
	C(S_TICKS_TAKEN, "ticks_taken", INT8OID, COUNTER)												\
	C(S_SAMPLES_DROPPED, "samples_dropped", INT8OID, COUNTER)										\
	C(S_SAMPLER_STARTED, "sampler_started", TIMESTAMPTZOID, RESET)									\
	C(S_SAMPLER_CPU_MS, "sampler_cpu_ms", FLOAT8OID, RECORDED)	/* its own user + system CPU */		\
	C(S_SAMPLES_RESET, "samples_reset", TIMESTAMPTZOID, RECORDED)	/* last wait_samples_reset() */	\
	/*																								\
	 * Database time: samples of active client backends and the processes							\
	 * working for them (walsenders, autovacuum workers, parallel workers) by						\
	 * wait class, in ChronicleWaitClass order: sum / ticks_taken = average							\
	 * active sessions.  Not active: idle sessions, main-loop waits, throttle						\
	 * sleeps (docs/sources.md, "Wait events").  Before 0.2.0: every active							\
	 * process, background ones included (background_active NULL then).								\
	 */																								\
	C(S_ACTIVE_CPU, "active_cpu", INT8OID, COUNTER)													\
	C(S_ACTIVE_IO, "active_io", INT8OID, COUNTER)													\
	C(S_ACTIVE_LWLOCK, "active_lwlock", INT8OID, COUNTER)											\
	C(S_ACTIVE_LOCK, "active_lock", INT8OID, COUNTER)												\
	C(S_ACTIVE_IPC, "active_ipc", INT8OID, COUNTER)													\
	C(S_ACTIVE_CLIENT, "active_client", INT8OID, COUNTER)											\
	C(S_ACTIVE_TIMEOUT, "active_timeout", INT8OID, COUNTER)											\
	C(S_ACTIVE_OTHER, "active_other", INT8OID, COUNTER)	/* BufferPin, Extension, InjectionPoint */	\
	/*																								\
	 * background processes at work (checkpointer writing, not in its main							\
	 * loop or throttle sleep); 0.2.0+																\
	 */																								\
	C(S_BACKGROUND_ACTIVE, "background_active", INT8OID, COUNTER)

CHRONICLE_COLUMNS(S_COLUMNS, wait_sampler_columns, S_NCOLUMNS, S_NKEYS);

/* collect writes values[S_ACTIVE_CPU + class] */
StaticAssertDecl(S_ACTIVE_IO == S_ACTIVE_CPU + WAIT_CLASS_IO &&
				 S_ACTIVE_LWLOCK == S_ACTIVE_CPU + WAIT_CLASS_LWLOCK &&
				 S_ACTIVE_LOCK == S_ACTIVE_CPU + WAIT_CLASS_LOCK &&
				 S_ACTIVE_IPC == S_ACTIVE_CPU + WAIT_CLASS_IPC &&
				 S_ACTIVE_CLIENT == S_ACTIVE_CPU + WAIT_CLASS_CLIENT &&
				 S_ACTIVE_TIMEOUT == S_ACTIVE_CPU + WAIT_CLASS_TIMEOUT &&
				 S_ACTIVE_OTHER == S_ACTIVE_CPU + WAIT_CLASS_OTHER &&
				 S_BACKGROUND_ACTIVE == S_ACTIVE_CPU + WAIT_CLASS_COUNT,
				 "the active_* columns are in ChronicleWaitClass order");

/* The counters read together with the entries, for wait_sampler. */
static ChronicleSamplerCounters kept_counters;
static TimestampTz kept_xact_start = 0;

/* One aggregated row: distinct raw keys can share names. */
typedef struct WaitRow
{
	char		key[CHRONICLE_KEY_LEN];
	const char *backend_type;
	const char *state;
	const char *wait_event_type;
	const char *wait_event;
	int64		queryid;
	int64		samples;
} WaitRow;

/*
 * The names of a key's wait event: as pg_stat_activity's, CPU/CPU for a
 * process in none, Client/IdleInTransaction for a session idle in a
 * transaction in none (sampler.h).  A name PostgreSQL does not know is
 * "unknown".
 */
static void
wait_names(const ChronicleSampleKey *k, const char **wtype, const char **wevent)
{
	if (k->wait_event_info != 0)
	{
		*wtype = pgstat_get_wait_event_type(k->wait_event_info);
		*wevent = pgstat_get_wait_event(k->wait_event_info);
		if (*wtype == NULL)
			*wtype = "unknown";
		if (*wevent == NULL)
			*wevent = "unknown";
	}
	else if (chronicle_state_between_statements(k->state))
	{
		*wtype = "Client";
		*wevent = CHRONICLE_IDLE_IN_XACT_EVENT;
	}
	else
		*wtype = *wevent = "CPU";
}

static bool
waits_available(void)
{
	return chronicle_sampler_available();
}

static void
waits_collect(ChronicleEmitter *emitter)
{
	ChronicleSampleEntry *entries;
	int			nentries;
	HASHCTL		ctl;
	HTAB	   *rows;
	HASH_SEQ_STATUS seq;
	WaitRow    *row;

	if (!chronicle_sampler_read(&kept_counters, &entries, &nentries))
		return;
	kept_xact_start = GetCurrentTransactionStartTimestamp();

	ctl.keysize = CHRONICLE_KEY_LEN;
	ctl.entrysize = sizeof(WaitRow);
	ctl.hcxt = CurrentMemoryContext;
	rows = hash_create("chronicle waits", Max(nentries, 16), &ctl,
					   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	for (int i = 0; i < nentries; i++)
	{
		const ChronicleSampleKey *k = &entries[i].key;
		const char *bt;
		const char *st;
		const char *wtype;
		const char *wevent;
		char		key[CHRONICLE_KEY_LEN];
		bool		found;

		bt = chronicle_backend_type_name(k->backend_type);
		st = chronicle_backend_state_name(k->state);
		wait_names(k, &wtype, &wevent);
		snprintf(key, sizeof(key), "%s|%s|%s|%s|" INT64_FORMAT,
				 bt, st, wtype, wevent, k->queryid);

		row = hash_search(rows, key, HASH_ENTER, &found);
		if (!found)
		{
			/* Custom wait event names may live in shared memory: copy. */
			row->backend_type = pstrdup(bt);
			row->state = st;
			row->wait_event_type = pstrdup(wtype);
			row->wait_event = pstrdup(wevent);
			row->queryid = k->queryid;
			row->samples = 0;
		}
		row->samples += (int64) Min(entries[i].samples, (uint64) PG_INT64_MAX);
	}

	hash_seq_init(&seq, rows);
	while ((row = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[W_NCOLUMNS];
		bool		nulls[W_NCOLUMNS] = {0};

		values[W_BACKEND_TYPE] = CStringGetTextDatum(row->backend_type);
		values[W_STATE] = CStringGetTextDatum(row->state);
		values[W_WAIT_EVENT_TYPE] = CStringGetTextDatum(row->wait_event_type);
		values[W_WAIT_EVENT] = CStringGetTextDatum(row->wait_event);
		values[W_QUERYID] = Int64GetDatum(row->queryid);
		values[W_SAMPLES] = Int64GetDatum(row->samples);
		chronicle_emit_row(emitter, values, nulls);
	}
}

static void
wait_sampler_collect(ChronicleEmitter *emitter)
{
	ChronicleSamplerCounters c;
	Datum		values[S_NCOLUMNS];
	bool		nulls[S_NCOLUMNS] = {0};

	/* The counters read with the entries in this snapshot, if any. */
	if (kept_xact_start != 0 &&
		kept_xact_start == GetCurrentTransactionStartTimestamp())
		c = kept_counters;
	else if (!chronicle_sampler_read(&c, NULL, NULL))
		return;
	kept_xact_start = 0;

	values[S_TICKS_DUE] = Int64GetDatum(c.ticks_due);
	values[S_TICKS_TAKEN] = Int64GetDatum(c.ticks_taken);
	values[S_SAMPLES_DROPPED] = Int64GetDatum(c.samples_dropped);
	chronicle_set_timestamp(values, nulls, S_SAMPLER_STARTED, c.started);
	values[S_SAMPLER_CPU_MS] = Float8GetDatum((double) c.cpu_us / 1000.0);
	chronicle_set_timestamp(values, nulls, S_SAMPLES_RESET, c.reset_time);
	for (int i = 0; i < WAIT_CLASS_COUNT; i++)
		values[S_ACTIVE_CPU + i] = Int64GetDatum(c.active[i]);
	values[S_BACKGROUND_ACTIVE] = Int64GetDatum(c.background_active);
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis waits_analysis = {
	.prefix = "wait",
	.filters = (const char *const[]) {"backend_type", "wait_event_type", "wait_event", NULL},
	.born_at_zero = true,
};

CHRONICLE_SOURCE(waits, W,
				 "wait event samples per (backend_type, state, wait_event_type, wait_event, queryid), cumulative",
				 .analysis = &waits_analysis,
				 .available = waits_available);

static const ChronicleAnalysis wait_sampler_analysis = {
	.prefix = "wait_sampler",
};

CHRONICLE_SOURCE(wait_sampler, S,
				 "the wait sampler's ticks due and taken, samples dropped, samples of active sessions (database time) by wait class and of background processes at work",
				 .analysis = &wait_sampler_analysis,
				 .available = waits_available);

/*
 * chronicle.wait_sampler_status(): whether the sampler runs and its
 * counters now.  Works without the sampler: running is false, and the
 * counters are NULL when there is no sampler at all (not preloaded).
 */
PG_FUNCTION_INFO_V1(chronicle_wait_sampler_status);

Datum
chronicle_wait_sampler_status(PG_FUNCTION_ARGS)
{
#define WSS_COLS 11
	TupleDesc	tupdesc;
	Datum		values[WSS_COLS] = {0};
	bool		nulls[WSS_COLS] = {0};
	ChronicleSamplerCounters c;
	bool		exists;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	exists = chronicle_sampler_read(&c, NULL, NULL);
	values[0] = BoolGetDatum(exists && c.pid != 0);
	if (exists && c.pid != 0)
		values[1] = Int32GetDatum(c.pid);
	else
		nulls[1] = true;
	values[2] = Int32GetDatum(chronicle_wait_sample_interval);
	if (!exists)
	{
		for (int i = 3; i < WSS_COLS; i++)
			nulls[i] = true;
	}
	else
	{
		chronicle_set_timestamp(values, nulls, 3, c.started);
		values[4] = Int64GetDatum(c.ticks_due);
		values[5] = Int64GetDatum(c.ticks_taken);
		values[6] = Int64GetDatum(c.samples_dropped);
		values[7] = Int32GetDatum(c.entries);
		values[8] = Int32GetDatum(c.max_entries);
		values[9] = Float8GetDatum((double) c.cpu_us / 1000.0);
		chronicle_set_timestamp(values, nulls, 10, c.reset_time);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * chronicle.wait_samples(): the sampler's cumulative counts now, one row
 * per key, as the waits source records them.
 */
PG_FUNCTION_INFO_V1(chronicle_wait_samples);

Datum
chronicle_wait_samples(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ChronicleSamplerCounters c;
	ChronicleSampleEntry *entries;
	int			nentries;

	if (!chronicle_sampler_read(&c, &entries, &nentries))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pg_chronicle wait sampler is not running"),
				 errhint("Add pg_chronicle to shared_preload_libraries and restart the server.")));

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nentries; i++)
	{
		const ChronicleSampleKey *k = &entries[i].key;
		Datum		values[W_NCOLUMNS];
		bool		nulls[W_NCOLUMNS] = {0};
		const char *wtype;
		const char *wevent;

		wait_names(k, &wtype, &wevent);
		values[W_BACKEND_TYPE] =
			CStringGetTextDatum(chronicle_backend_type_name(k->backend_type));
		values[W_STATE] = CStringGetTextDatum(chronicle_backend_state_name(k->state));
		values[W_WAIT_EVENT_TYPE] = CStringGetTextDatum(wtype);
		values[W_WAIT_EVENT] = CStringGetTextDatum(wevent);
		values[W_QUERYID] = Int64GetDatum(k->queryid);
		values[W_SAMPLES] = Int64GetDatum((int64) Min(entries[i].samples,
													  (uint64) PG_INT64_MAX));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * chronicle.wait_samples_reset(): forget the keys and their counts (the
 * ticks go on).  Superuser only by default: it changes what is recorded.
 */
PG_FUNCTION_INFO_V1(chronicle_wait_samples_reset);

Datum
chronicle_wait_samples_reset(PG_FUNCTION_ARGS)
{
	if (!chronicle_sampler_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pg_chronicle wait sampler is not running"),
				 errhint("Add pg_chronicle to shared_preload_libraries and restart the server.")));
	chronicle_sampler_reset();
	PG_RETURN_VOID();
}
