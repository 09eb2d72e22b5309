/*-------------------------------------------------------------------------
 *
 * pg_chronicle.c
 *		Module entry point: settings, shared state, the collector worker's
 *		registration, and the SQL functions that talk to the collector.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xlog.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif

#include "pg_chronicle.h"
#include "sampler.h"

PG_MODULE_MAGIC;

/* Settings */
int			chronicle_snapshot_interval = 1000; /* ms */
char	   *chronicle_database = NULL;
int			chronicle_retention = 7 * 24 * 60;	/* minutes */
bool		chronicle_source_enabled[CHRONICLE_MAX_SOURCES];
char	   *chronicle_debug_fail_source = NULL;
static bool chronicle_worker_enabled = true;

bool		chronicle_preloaded = false;

static ChronicleShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(chronicle_snapshot);
PG_FUNCTION_INFO_V1(chronicle_status);
PG_FUNCTION_INFO_V1(chronicle_source_status);

static void
shared_init(void *ptr)
{
	ChronicleShared *s = (ChronicleShared *) ptr;

	memset(s, 0, sizeof(ChronicleShared));
	SpinLockInit(&s->mutex);
	s->force_keyframe = true;
}

static void
chronicle_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(ChronicleShared)));
	/* The wait-event sampler's hash table and lock (sampler.c). */
	chronicle_sampler_shmem_request();
}

static void
chronicle_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("pg_chronicle", sizeof(ChronicleShared), &found);
	if (!found)
		shared_init(shared);
	/* The wait-event sampler's hash table and lock (sampler.c). */
	chronicle_sampler_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * The collector's shared state.  When pg_chronicle is not preloaded it
 * lives in a named DSM segment (PostgreSQL 17 and later), created by the
 * first backend that asks; before 17 there is none, and NULL is returned.
 */
ChronicleShared *
chronicle_shared(void)
{
	if (shared != NULL)
		return shared;
#if PG_VERSION_NUM >= 170000
	if (!chronicle_preloaded && IsUnderPostmaster)
	{
		bool		found;

		shared = GetNamedDSMSegment("pg_chronicle", sizeof(ChronicleShared),
									shared_init, &found);
	}
#endif
	return shared;
}

static bool
check_database(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || **newval == '\0')
	{
		GUC_check_errdetail("chronicle.database must name a database.");
		return false;
	}
	if (strlen(*newval) >= NAMEDATALEN)
	{
		GUC_check_errdetail("A database name is at most %d bytes.",
							NAMEDATALEN - 1);
		return false;
	}
	return true;
}

static void
register_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* On a hot standby too: it keeps its readings in memory there. */
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 10;
	strcpy(worker.bgw_library_name, "pg_chronicle");
	strcpy(worker.bgw_function_name, "chronicle_worker_main");
	strcpy(worker.bgw_name, "pg_chronicle collector");
	strcpy(worker.bgw_type, "pg_chronicle collector");
	worker.bgw_main_arg = (Datum) 0;
	RegisterBackgroundWorker(&worker);
}

void
_PG_init(void)
{
	chronicle_preloaded = process_shared_preload_libraries_in_progress;

	DefineCustomIntVariable("chronicle.snapshot_interval",
							"Time between two snapshots of the statistics.",
							"Counters in pg_stat_io and friends advance at most once a second "
							"per backend, so less than 1s adds little but cost.",
							&chronicle_snapshot_interval,
							1000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomStringVariable("chronicle.database",
							   "Database the collector connects to and records into.",
							   "pg_chronicle must be installed there with CREATE EXTENSION.",
							   &chronicle_database,
							   "postgres",
							   PGC_SIGHUP, 0,
							   check_database, NULL, NULL);
	DefineCustomIntVariable("chronicle.retention",
							"How long history is kept; older daily partitions are dropped.",
							"0 keeps history forever.",
							&chronicle_retention,
							7 * 24 * 60, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("chronicle.enabled",
							 "Whether the preloaded collector records snapshots.",
							 "When off the worker stays connected and idle.",
							 &chronicle_worker_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("chronicle.debug_fail_source",
							   "Makes the named source fail on every snapshot (for tests).",
							   NULL,
							   &chronicle_debug_fail_source,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);

	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];

		DefineCustomBoolVariable(psprintf("chronicle.collect_%s", src->name),
								 psprintf("Whether snapshots record %s.",
										  src->description),
								 NULL,
								 &chronicle_source_enabled[i],
								 true,
								 PGC_SIGHUP, 0,
								 NULL, NULL, NULL);
	}

	/* Sampling settings: sampler.c, source_buffers.c. */
	chronicle_sampler_define_settings();
	chronicle_buffers_define_settings();

	MarkGUCPrefixReserved("chronicle");

	if (!chronicle_preloaded)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = chronicle_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = chronicle_shmem_startup;

	register_worker();
	/* The wait-event sampler, a worker of its own (sampler.c). */
	chronicle_sampler_register();
}

bool
chronicle_worker_should_record(void)
{
	return chronicle_worker_enabled;
}

/*
 * chronicle.snapshot(): one snapshot from SQL, through the same code path
 * as the worker, inside the caller's transaction.  Always a keyframe: the
 * caller's backend has no previous reading to compare with.
 */
Datum
chronicle_snapshot(PG_FUNCTION_ARGS)
{
	ChronicleSnapshotResult res;
	ChronicleShared *s;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take a snapshot during recovery"),
				 errhint("On a standby the collector keeps its snapshots in memory; "
						 "they are written after promotion.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	res = chronicle_take_snapshot(CHRONICLE_BY_SQL, 0, true);
	SPI_finish();

	/* The worker's next snapshot cannot rely on its own previous one. */
	s = chronicle_shared();
	if (s)
	{
		SpinLockAcquire(&s->mutex);
		s->force_keyframe = true;
		SpinLockRelease(&s->mutex);
	}

	PG_RETURN_TIMESTAMPTZ(res.ts);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * chronicle.status(): is the collector running, what did it record, and
 * what did that cost.
 */
Datum
chronicle_status(PG_FUNCTION_ARGS)
{
#define STATUS_COLS 15
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS] = {0};
	bool		nulls[STATUS_COLS] = {0};
	ChronicleShared *s = chronicle_shared();
	ChronicleShared copy;
	int			ncost;
	double	   *costs;
	bool		running;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	if (s == NULL)
	{
		memset(&copy, 0, sizeof(copy));
	}
	else
	{
		SpinLockAcquire(&s->mutex);
		memcpy(&copy, s, sizeof(copy));
		SpinLockRelease(&s->mutex);
	}

	running = copy.worker_pid != 0;
	values[0] = BoolGetDatum(running);
	if (running)
		values[1] = Int32GetDatum(copy.worker_pid);
	else
		nulls[1] = true;
	values[2] = CStringGetTextDatum(running ? copy.worker_state :
									(chronicle_preloaded ? "stopped" : "not preloaded"));
	if (copy.worker_started)
		values[3] = TimestampTzGetDatum(copy.worker_started);
	else
		nulls[3] = true;
	if (copy.last_snapshot)
		values[4] = TimestampTzGetDatum(copy.last_snapshot);
	else
		nulls[4] = true;
	values[5] = Int64GetDatum(copy.snapshots);
	values[6] = Int64GetDatum(copy.snapshot_errors);
	values[7] = Int64GetDatum(copy.ticks_due);
	values[8] = Int64GetDatum(copy.ticks_missed);
	values[9] = Int64GetDatum(copy.rows);
	values[10] = Int64GetDatum(copy.wal_bytes);

	/* Cost of recent snapshots: p50, p99, max of worker time, in ms. */
	ncost = (int) Min(copy.cost_next, CHRONICLE_COST_SLOTS);
	if (ncost > 0)
	{
		costs = palloc(sizeof(double) * ncost);
		memcpy(costs, copy.cost_us, sizeof(double) * ncost);
		qsort(costs, ncost, sizeof(double), cmp_double);
		values[11] = Float8GetDatum(costs[(ncost - 1) / 2] / 1000.0);
		values[12] = Float8GetDatum(costs[(int) floor((ncost - 1) * 0.99)] / 1000.0);
		values[13] = Float8GetDatum(costs[ncost - 1] / 1000.0);
		values[14] = Float8GetDatum(copy.snapshots > 0 ?
									(double) copy.wal_bytes / copy.snapshots : 0);
	}
	else
	{
		nulls[11] = nulls[12] = nulls[13] = nulls[14] = true;
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* chronicle.source_status(): one row per source. */
Datum
chronicle_source_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ChronicleShared *s = chronicle_shared();

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < chronicle_nsources; i++)
	{
		Datum		values[8] = {0};
		bool		nulls[8] = {0};
		ChronicleSourceStatus st;

		memset(&st, 0, sizeof(st));
		if (s)
		{
			SpinLockAcquire(&s->mutex);
			memcpy(&st, &s->sources[i], sizeof(st));
			SpinLockRelease(&s->mutex);
		}
		values[0] = CStringGetTextDatum(chronicle_sources[i]->name);
		values[1] = BoolGetDatum(chronicle_source_enabled[i]);
		values[2] = Int64GetDatum(st.snapshots);
		values[3] = Int64GetDatum(st.rows);
		values[4] = Int64GetDatum(st.errors);
		values[5] = Int64GetDatum(st.skipped);
		if (st.last_error_time)
		{
			values[6] = TimestampTzGetDatum(st.last_error_time);
			values[7] = CStringGetTextDatum(st.last_error);
		}
		else
			nulls[6] = nulls[7] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
