/*-------------------------------------------------------------------------
 *
 * housekeeper.c
 *		The rollups of the history, in a process of their own beside the
 *		collector.
 *
 * A rollup aggregates the complete minutes of the history and of
 * pgbench's transactions (src/sql/60_rollups.sql).  After a benchmark of
 * millions of transactions one run takes seconds to tens of seconds: run
 * before a snapshot, as the collector did until 0.3.0, it stalled the
 * recording for that long, in the middle of the next benchmark.  So the
 * collector launches this process (a dynamic background worker, in its
 * database) once it records, and goes on taking its snapshots while the
 * housekeeper rolls up every five minutes.
 *
 * The housekeeper competes with the workload as little as it can: it runs
 * at the lowest CPU priority (nice 19: on a saturated machine it gets
 * about 1.5 % of a core beside a process at nice 0), without parallel
 * query or JIT (chronicle_recorder_session()), and none of its processes
 * is database time for the wait sampler (a background worker).
 *
 * It lives as long as the collector that launched it: it leaves when that
 * collector is gone (stopped, restarted, the server shutting down), and
 * the next collector launches its own.  One at a time, claimed in shared
 * memory as the collector is.  When no background worker slot is free the
 * collector rolls up before a snapshot as before (collector.c).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>
#include <signal.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "bgworker.h"
#include "housekeeper.h"
#include "housekeeping.h"
#include "pg_chronicle.h"
#include "recorder.h"
#include "shared.h"

/* Between two looks at the schedule and at the collector. */
#define HOUSEKEEPER_NAP_MS	1000

/* A collector launches a housekeeper at most this often. */
#define HOUSEKEEPER_RELAUNCH_USECS	(10 * USECS_PER_SEC)

/* Is a housekeeper running for the collector of this process? */
bool
chronicle_housekeeper_running(void)
{
	ChronicleShared *shared = chronicle_shared();
	bool		running;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	running = shared->housekeeper_pid != 0 &&
		shared->housekeeper_collector == MyProcPid;
	SpinLockRelease(&shared->mutex);
	return running;
}

/*
 * Called by the collector after each snapshot it recorded: launch a
 * housekeeper when none runs for it, without waiting for it to start.  A
 * launch that fails (no free slot) is said once; the collector then rolls
 * up itself and tries again later.
 */
void
chronicle_housekeeper_ensure(void)
{
	/* Kept across snapshots: plain values in this process's memory. */
	static TimestampTz last_launch = 0;
	static bool said = false;
	TimestampTz now = GetCurrentTimestamp();
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	if (chronicle_housekeeper_running() ||
		now < last_launch + HOUSEKEEPER_RELAUNCH_USECS)
		return;
	last_launch = now;

	chronicle_worker_describe(&worker, "chronicle_housekeeper_main",
							  "pg_chronicle housekeeper",
							  BGWORKER_SHMEM_ACCESS |
							  BGWORKER_BACKEND_DATABASE_CONNECTION,
							  BgWorkerStart_RecoveryFinished, BGW_NEVER_RESTART);
	worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
	memcpy(worker.bgw_extra, &MyProcPid, sizeof(MyProcPid));
	if (RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		said = false;
		pfree(handle);
	}
	else if (!said)
	{
		ereport(LOG,
				(errmsg("pg_chronicle: could not start the housekeeper: no free background worker slot; "
						"the collector rolls up before its snapshots"),
				 errhint("Raise max_worker_processes (needs a restart).")));
		said = true;
	}
}

/* Leaving: the claim goes, if it is still ours. */
static void
housekeeper_detach(int code, Datum arg)
{
	ChronicleShared *shared = chronicle_shared();

	SpinLockAcquire(&shared->mutex);
	if (shared->housekeeper_pid == MyProcPid)
	{
		shared->housekeeper_pid = 0;
		shared->housekeeper_collector = 0;
	}
	SpinLockRelease(&shared->mutex);
}

/*
 * Claim the housekeeper's place for the collector that launched us: false
 * when that collector is gone already, or another housekeeper still
 * serves it.
 */
static bool
housekeeper_claim(ChronicleShared *shared, pid_t collector)
{
	bool		ok = false;

	SpinLockAcquire(&shared->mutex);
	if (shared->worker_pid == collector &&
		(shared->housekeeper_pid == 0 ||
		 shared->housekeeper_collector != collector))
	{
		shared->housekeeper_pid = MyProcPid;
		shared->housekeeper_collector = collector;
		ok = true;
	}
	SpinLockRelease(&shared->mutex);
	return ok;
}

/* Does the collector that launched us still run, and we for it? */
static bool
collector_alive(ChronicleShared *shared, pid_t collector)
{
	bool		alive;

	SpinLockAcquire(&shared->mutex);
	alive = shared->worker_pid == collector &&
		shared->housekeeper_pid == MyProcPid;
	SpinLockRelease(&shared->mutex);
	return alive;
}

/*
 * One rollup, in a transaction of its own, when the extension this library
 * records into is installed (it may have been dropped, or be waiting for
 * ALTER EXTENSION UPDATE).
 */
static void
housekeeper_rollup(void)
{
	Oid			extoid;
	char	   *installed;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_chronicle: rollup");
	installed = chronicle_extension_lock(&extoid);
	if (installed != NULL && strcmp(installed, PG_CHRONICLE_VERSION) == 0)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		chronicle_maintain_rollups(GetCurrentTimestamp(), true);
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	/* its I/O in pg_stat_io now, as the collector's: not at the next run */
	pgstat_report_stat(true);
}

void
chronicle_housekeeper_main(Datum main_arg)
{
	ChronicleShared *shared = chronicle_shared();
	pid_t		collector;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	memcpy(&collector, MyBgworkerEntry->bgw_extra, sizeof(collector));
	if (shared == NULL || !housekeeper_claim(shared, collector))
		proc_exit(0);
	before_shmem_exit(housekeeper_detach, (Datum) 0);

	/* The lowest priority: the workload's cores are the workload's. */
	if (setpriority(PRIO_PROCESS, 0, 19) != 0)
		ereport(LOG,
				(errmsg("pg_chronicle: the housekeeper could not lower its priority: %m")));

	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg),
											  InvalidOid, 0);
	chronicle_recorder_session("pg_chronicle housekeeper");

	for (;;)
	{
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!collector_alive(shared, collector))
			break;

		now = GetCurrentTimestamp();
		if (now >= chronicle_next_rollup())
			housekeeper_rollup();

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 HOUSEKEEPER_NAP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}
