/*-------------------------------------------------------------------------
 *
 * functions.c
 *		The SQL functions that talk to the collector: chronicle.snapshot(),
 *		.status(), .source_status(), .start(), .stop(), .server(),
 *		._retention().
 *
 * They read the shared state (shared.h) and the settings of the module
 * (pg_chronicle.c); chronicle.snapshot() takes a snapshot through the same
 * code as the worker (collector.c).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <signal.h>

#include "access/xlog.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "collector.h"
#include "bgworker.h"
#include "pg_chronicle.h"
#include "shared.h"
#include "source.h"

PG_FUNCTION_INFO_V1(chronicle_snapshot);
PG_FUNCTION_INFO_V1(chronicle_status);
PG_FUNCTION_INFO_V1(chronicle_source_status);
PG_FUNCTION_INFO_V1(chronicle_start);
PG_FUNCTION_INFO_V1(chronicle_stop);
PG_FUNCTION_INFO_V1(chronicle_retention_interval);
PG_FUNCTION_INFO_V1(chronicle_rollup_retention_interval);
PG_FUNCTION_INFO_V1(chronicle_server);
PG_FUNCTION_INFO_V1(chronicle_origin_now);

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
	char	   *installed;
	Oid			extoid;
	int			nestlevel;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take a snapshot during recovery"),
				 errhint("On a standby the collector keeps its snapshots in memory; "
						 "they are written after promotion.")));

	/* Locked until the end of the transaction, as for the worker. */
	installed = chronicle_extension_lock(&extoid);
	if (installed == NULL || strcmp(installed, PG_CHRONICLE_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_chronicle library version %s does not match the version installed in this database (%s)",
						PG_CHRONICLE_VERSION, installed ? installed : "none"),
				 errhint("Run ALTER EXTENSION pg_chronicle UPDATE.")));

	/*
	 * Its SPI statements are nested, tracked by pg_stat_statements only with
	 * track = all: turn tracking off for them, as the worker does for its
	 * session.  The caller's own statement stays tracked.  An error undoes
	 * the setting with the transaction.
	 */
	nestlevel = NewGUCNestLevel();
	if (GetConfigOption("pg_stat_statements.track", true, false) != NULL)
		(void) set_config_option("pg_stat_statements.track", "none",
								 PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	res = chronicle_take_snapshot(CHRONICLE_BY_SQL, 0, true);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);

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

/*
 * chronicle._retention(): chronicle.retention as an interval.  Calling it
 * loads the library, whose definition of the setting parses what the
 * session had as raw text by the GUC's rules (a bare number is minutes), so
 * that chronicle.maintain() reads it the same way with or without preload.
 */
Datum
chronicle_retention_interval(PG_FUNCTION_ARGS)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) chronicle_retention * USECS_PER_MINUTE;
	PG_RETURN_INTERVAL_P(result);
}

/* chronicle._rollup_retention(): chronicle.rollup_retention, likewise. */
Datum
chronicle_rollup_retention_interval(PG_FUNCTION_ARGS)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) chronicle_rollup_retention * USECS_PER_MINUTE;
	PG_RETURN_INTERVAL_P(result);
}

/*
 * chronicle.server(): the identity this server records in every snapshot
 * row, the system identifier (as pg_control_system() shows it; shared by
 * a primary and its physical standbys) and the name.
 */
Datum
chronicle_server(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = Int64GetDatum((int64) GetSystemIdentifier());
	values[1] = CStringGetTextDatum(chronicle_server_name_now());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * chronicle._origin(): the origin the analysis reads now, chronicle.origin
 * (docs/storage.md, "Origins").  A function, not current_setting(), so that
 * the library that defines the setting is loaded and the value is an
 * integer whatever a session wrote before loading it.
 */
Datum
chronicle_origin_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(chronicle_origin);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * The costs of the ncost most recent snapshots, copied out of s a slice at
 * a time (see chronicle_status()); NULL when none.
 */
static double *
copy_costs(ChronicleShared *s, int ncost)
{
#define COST_SLICE	64
	double	   *costs = NULL;

	if (ncost > 0)
		costs = palloc(sizeof(double) * ncost);
	for (int off = 0; off < ncost; off += COST_SLICE)
	{
		int			n = Min(COST_SLICE, ncost - off);

		SpinLockAcquire(&s->mutex);
		memcpy(costs + off, s->cost_us + off, sizeof(double) * n);
		SpinLockRelease(&s->mutex);
	}
	return costs;
}

/* The collector's state as chronicle.status() shows it. */
static const char *
collector_state(bool running, const char *worker_state, bool dynamic_lost)
{
	const char *state;

	if (running)
		state = worker_state;
	else if (chronicle_preloaded)
		state = "stopped";
	else if (dynamic_lost)
		state = "stopped (crash restart; call chronicle.start() again)";
	else
		state = "not preloaded";
	return state;
}

/*
 * The columns of chronicle.status() on the cost of the ncost recent
 * snapshots: sorts costs.
 */
static void
put_costs(Datum *values, bool *nulls, double *costs, int ncost,
		  int64 snapshots, int64 wal_bytes)
{
	/* Cost of recent snapshots: p50, p99, max of worker time, in ms. */
	if (ncost > 0)
	{
		qsort(costs, ncost, sizeof(double), cmp_double);
		values[11] = Float8GetDatum(costs[(ncost - 1) / 2] / 1000.0);
		values[12] = Float8GetDatum(costs[(int) floor((ncost - 1) * 0.99)] / 1000.0);
		values[13] = Float8GetDatum(costs[ncost - 1] / 1000.0);
		values[14] = Float8GetDatum(snapshots > 0 ?
									(double) wal_bytes / snapshots : 0);
	}
	else
	{
		nulls[11] = nulls[12] = nulls[13] = nulls[14] = true;
	}
}

/*
 * chronicle.status(): is the collector running, what did it record, and
 * what did that cost.
 */
Datum
chronicle_status(PG_FUNCTION_ARGS)
{
#define STATUS_COLS 21
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS] = {0};
	bool		nulls[STATUS_COLS] = {0};
	ChronicleShared *s = chronicle_shared();
	pid_t		worker_pid = 0;
	char		worker_state[sizeof(s->worker_state)] = "";
	bool		dynamic_lost = false;
	TimestampTz worker_started = 0;
	TimestampTz last_snapshot = 0;
	int64		snapshots = 0;
	int64		snapshot_errors = 0;
	int64		ticks_due = 0;
	int64		ticks_missed = 0;
	int64		rows = 0;
	int64		wal_bytes = 0;
	TimestampTz maint_last = 0;
	int64		maint_created = 0;
	int64		maint_dropped = 0;
	int64		maint_skipped = 0;
	int64		maint_errors = 0;
	char		maint_last_error[sizeof(s->maint_last_error)] = "";
	int			ncost = 0;
	double	   *costs = NULL;
	bool		running;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	/*
	 * Only what is shown is copied, and the spinlock is held for a few
	 * words at a time: the 8 kB of recent costs are copied a slice at a
	 * time (each slot is written whole under the lock; slices of two
	 * different moments make no difference to percentiles).
	 */
	if (s != NULL)
	{
		int64		cost_next;

		SpinLockAcquire(&s->mutex);
		worker_pid = s->worker_pid;
		memcpy(worker_state, s->worker_state, sizeof(worker_state));
		dynamic_lost = s->dynamic_lost;
		worker_started = s->worker_started;
		last_snapshot = s->last_snapshot;
		snapshots = s->snapshots;
		snapshot_errors = s->snapshot_errors;
		ticks_due = s->ticks_due;
		ticks_missed = s->ticks_missed;
		rows = s->rows;
		wal_bytes = s->wal_bytes;
		cost_next = s->cost_next;
		maint_last = s->maint_last;
		maint_created = s->maint_created;
		maint_dropped = s->maint_dropped;
		maint_skipped = s->maint_skipped;
		maint_errors = s->maint_errors;
		memcpy(maint_last_error, s->maint_last_error, sizeof(maint_last_error));
		SpinLockRelease(&s->mutex);
		worker_state[sizeof(worker_state) - 1] = '\0';
		maint_last_error[sizeof(maint_last_error) - 1] = '\0';

		ncost = (int) Min(cost_next, CHRONICLE_COST_SLOTS);
		costs = copy_costs(s, ncost);
	}

	running = worker_pid != 0;
	/* What is not known (0, or no text) is NULL. */
	values[0] = BoolGetDatum(running);
	values[1] = Int32GetDatum(worker_pid);
	nulls[1] = !running;
	values[2] = CStringGetTextDatum(collector_state(running, worker_state,
													dynamic_lost));
	values[3] = TimestampTzGetDatum(worker_started);
	nulls[3] = worker_started == 0;
	values[4] = TimestampTzGetDatum(last_snapshot);
	nulls[4] = last_snapshot == 0;
	values[5] = Int64GetDatum(snapshots);
	values[6] = Int64GetDatum(snapshot_errors);
	values[7] = Int64GetDatum(ticks_due);
	values[8] = Int64GetDatum(ticks_missed);
	values[9] = Int64GetDatum(rows);
	values[10] = Int64GetDatum(wal_bytes);

	put_costs(values, nulls, costs, ncost, snapshots, wal_bytes);

	/* Housekeeping. */
	values[15] = TimestampTzGetDatum(maint_last);
	nulls[15] = maint_last == 0;
	values[16] = Int64GetDatum(maint_created);
	values[17] = Int64GetDatum(maint_dropped);
	values[18] = Int64GetDatum(maint_skipped);
	values[19] = Int64GetDatum(maint_errors);
	values[20] = CStringGetTextDatum(maint_last_error);
	nulls[20] = maint_last_error[0] == '\0';

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

/*
 * Workers that chronicle.start() launches and chronicle.stop() stops when
 * pg_chronicle is not preloaded.  Each is a main function of this library
 * that takes the database oid as bgw_main_arg, claims its place in shared
 * state itself (and exits when another copy runs), and reports its PID.
 * A further worker (the wait-event sampler) is one more line here.
 */
typedef struct ChronicleDynamicWorker
{
	const char *name;			/* as chronicle.start() reports it */
	const char *function;		/* bgw_function_name */
	const char *type;			/* bgw_type */
	pid_t		(*running) (void);	/* PID when running, else 0 */
	bool		marked;			/* leaves the crash-restart marker */
} ChronicleDynamicWorker;

static pid_t
collector_pid(void)
{
	ChronicleShared *s = chronicle_shared();
	pid_t		pid;

	if (s == NULL)
		return 0;
	SpinLockAcquire(&s->mutex);
	pid = s->worker_pid;
	SpinLockRelease(&s->mutex);
	return pid;
}

static const ChronicleDynamicWorker dynamic_workers[] = {
	{"collector", "chronicle_worker_main", "pg_chronicle collector", collector_pid, true},
};

/* Launch one dynamic worker in the current database; returns its PID. */
static pid_t
launch_dynamic_worker(const ChronicleDynamicWorker *dw)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	BgwHandleStatus status;
	pid_t		pid;

	chronicle_worker_describe(&worker, dw->function, dw->type,
							  BGWORKER_SHMEM_ACCESS |
							  BGWORKER_BACKEND_DATABASE_CONNECTION,
							  BgWorkerStart_ConsistentState, BGW_NEVER_RESTART);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s (dynamic)", dw->type);
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the pg_chronicle %s: no free background worker slot",
						dw->name),
				 errhint("Raise max_worker_processes (needs a restart) or stop another background worker.")));

	status = WaitForBackgroundWorkerStartup(handle, &pid);
	if (status == BGWH_STOPPED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pg_chronicle %s exited right after it started", dw->name),
				 errhint("The server log says why.")));
	if (status == BGWH_POSTMASTER_DIED)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("cannot start the pg_chronicle %s without the postmaster", dw->name)));
	Assert(status == BGWH_STARTED);
	return pid;
}

/*
 * The rows of chronicle.start() and chronicle.stop(): for each dynamic
 * worker, act() on it (given its PID, 0 when it does not run; it leaves
 * there the PID to show) and a row of its name, that PID (NULL when none)
 * and whether act() started or stopped it.
 */
static Datum
worker_rows(FunctionCallInfo fcinfo,
			bool (*act) (const ChronicleDynamicWorker *dw, pid_t *pid))
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < lengthof(dynamic_workers); i++)
	{
		const ChronicleDynamicWorker *dw = &dynamic_workers[i];
		Datum		values[3];
		bool		nulls[3] = {0};
		pid_t		pid = dw->running();
		bool		done = act(dw, &pid);

		values[0] = CStringGetTextDatum(dw->name);
		values[1] = Int32GetDatum((int32) pid);
		nulls[1] = (pid == 0);
		values[2] = BoolGetDatum(done);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* chronicle.start() of one worker: whether it started it. */
static bool
start_worker(const ChronicleDynamicWorker *dw, pid_t *pid)
{
	if (chronicle_preloaded)
	{
		ereport(NOTICE,
				(errmsg("pg_chronicle is preloaded: the postmaster runs the %s", dw->name),
				 errhint("Use chronicle.enabled to pause and resume recording.")));
		return false;
	}
	if (*pid != 0)
	{
		ereport(NOTICE,
				(errmsg("the pg_chronicle %s is already running (PID %d)",
						dw->name, (int) *pid)));
		return false;
	}
	/* Before the launch: a worker that ends at once removes it. */
	if (dw->marked)
		chronicle_dynamic_collector_remember();
	PG_TRY();
	{
		*pid = launch_dynamic_worker(dw);
	}
	PG_CATCH();
	{
		if (dw->marked)
			chronicle_dynamic_collector_forget();
		PG_RE_THROW();
	}
	PG_END_TRY();
	return true;
}

/* chronicle.stop() of one worker: whether it stopped it. */
static bool
stop_worker(const ChronicleDynamicWorker *dw, pid_t *pid)
{
	bool		stopped;

	if (dw->marked)
	{
		chronicle_dynamic_collector_lost_clear();
		chronicle_dynamic_collector_forget();
	}
	if (*pid == 0)
	{
		ereport(NOTICE,
				(errmsg("the pg_chronicle %s is not running", dw->name)));
		return false;
	}
	if (kill(*pid, SIGTERM) != 0)
	{
		ereport(WARNING,
				(errmsg("could not signal the pg_chronicle %s (PID %d): %m",
						dw->name, (int) *pid)));
		return false;
	}
	/* Wait up to 10 s for it to leave. */
	for (int n = 0; n < 1000 && dw->running() == *pid; n++)
	{
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	stopped = dw->running() != *pid;
	if (!stopped)
		ereport(WARNING,
				(errmsg("the pg_chronicle %s (PID %d) did not stop within 10 s",
						dw->name, (int) *pid)));
	return stopped;
}

/*
 * chronicle.start(): start the collector (and any other dynamic worker) as
 * a dynamic background worker in the current database, when pg_chronicle
 * is not preloaded.  One row per worker: its PID and whether this call
 * started it.  A worker that already runs is reported with a NOTICE.
 */
Datum
chronicle_start(PG_FUNCTION_ARGS)
{
	if (chronicle_shared() == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("chronicle.start() needs PostgreSQL 17 or later when pg_chronicle is not preloaded"),
				 errhint("Add pg_chronicle to shared_preload_libraries and restart, "
						 "or schedule SELECT chronicle.snapshot() with pg_cron.")));
	return worker_rows(fcinfo, start_worker);
}

/*
 * chronicle.stop(): stop the dynamic workers chronicle.start() started
 * (SIGTERM, then wait until they are gone).  A preloaded collector is
 * refused: the postmaster would start it again; chronicle.enabled = off
 * pauses it instead.
 */
Datum
chronicle_stop(PG_FUNCTION_ARGS)
{
	if (chronicle_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pg_chronicle collector is preloaded and cannot be stopped from SQL"),
				 errhint("Set chronicle.enabled = off and reload to pause recording, "
						 "or remove pg_chronicle from shared_preload_libraries and restart.")));
	return worker_rows(fcinfo, stop_worker);
}
