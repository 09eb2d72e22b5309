/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The collector background worker: one loop, one snapshot per tick.
 *
 * Ticks are scheduled against absolute deadlines (start + k * interval), so
 * the cadence does not drift with the time a snapshot takes; a snapshot
 * that overruns makes the loop skip the ticks it missed, and counts them.
 *
 * Every snapshot is its own transaction, with synchronous_commit off; no
 * transaction or snapshot is held while sleeping, so the worker never holds
 * back the xmin horizon.  An error that escapes a snapshot (the sources'
 * own errors are caught in collector.c) aborts that transaction only: it is
 * logged once, the loop backs off and goes on.
 *
 * The loop knows nothing about the sources.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_chronicle.h"

/* What the loop is doing, for chronicle.status() and for logging once. */
typedef enum WorkerState
{
	WS_RECORDING,
	WS_DISABLED,
	WS_NO_EXTENSION,
	WS_RECOVERY,
	WS_ERROR,
} WorkerState;

static const char *const state_names[] = {
	[WS_RECORDING] = "recording",
	[WS_DISABLED] = "disabled (chronicle.enabled = off)",
	[WS_NO_EXTENSION] = "waiting for CREATE EXTENSION pg_chronicle",
	[WS_RECOVERY] = "in recovery: not writing",
	[WS_ERROR] = "backing off after an error",
};

static WorkerState state = WS_RECORDING;
static char *connected_database = NULL;

static void
set_state(WorkerState newstate)
{
	ChronicleShared *shared = chronicle_shared();

	if (newstate != state)
	{
		/* Say it once, when it changes, not every second. */
		if (newstate == WS_NO_EXTENSION)
			ereport(LOG,
					(errmsg("pg_chronicle: extension is not installed in database \"%s\"; "
							"waiting for CREATE EXTENSION pg_chronicle",
							connected_database)));
		else if (newstate == WS_RECOVERY)
			ereport(LOG,
					(errmsg("pg_chronicle: server is in recovery; not writing history")));
		else if (newstate == WS_RECORDING)
			ereport(LOG,
					(errmsg("pg_chronicle: recording into database \"%s\"",
							connected_database)));
		state = newstate;
	}
	SpinLockAcquire(&shared->mutex);
	strlcpy(shared->worker_state, state_names[state], sizeof(shared->worker_state));
	SpinLockRelease(&shared->mutex);
}

static void
worker_detach(int code, Datum arg)
{
	ChronicleShared *shared = chronicle_shared();

	SpinLockAcquire(&shared->mutex);
	shared->worker_pid = 0;
	SpinLockRelease(&shared->mutex);
}

/*
 * Take one snapshot in its own transaction.  Returns false when an error
 * escaped, after cleaning up.
 */
static bool
snapshot_transaction(TimestampTz *segment)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_chronicle: snapshot");

	PG_TRY();
	{
		if (RecoveryInProgress())
			set_state(WS_RECOVERY);
		else if (!chronicle_extension_ready())
		{
			if (state != WS_NO_EXTENSION)
				chronicle_forget_previous();
			*segment = 0;
			set_state(WS_NO_EXTENSION);
		}
		else
		{
			ChronicleSnapshotResult res;

			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			res = chronicle_take_snapshot(CHRONICLE_BY_WORKER, *segment, false);
			SPI_finish();
			*segment = res.segment;
			set_state(WS_RECORDING);
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		ChronicleShared *shared = chronicle_shared();
		static char last_error[CHRONICLE_ERRMSG_LEN];
		static TimestampTz last_logged = 0;
		TimestampTz now = GetCurrentTimestamp();

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();

		/* Log once per distinct error, again every ten minutes at most. */
		if (strcmp(last_error, edata->message) != 0 ||
			now - last_logged >= 600 * USECS_PER_SEC)
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("pg_chronicle: snapshot failed: %s", edata->message),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
					 errhint("The collector backs off and tries again; "
							 "this message is repeated at most every ten minutes.")));
			last_logged = now;
			strlcpy(last_error, edata->message, sizeof(last_error));
		}
		SpinLockAcquire(&shared->mutex);
		shared->snapshot_errors++;
		SpinLockRelease(&shared->mutex);
		FreeErrorData(edata);

		/* Nothing half-known is trusted: the next snapshot is a keyframe. */
		chronicle_forget_previous();
		set_state(WS_ERROR);
		ok = false;
	}
	PG_END_TRY();

	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

void
chronicle_worker_main(Datum main_arg)
{
	ChronicleShared *shared = chronicle_shared();
	TimestampTz next_tick;
	TimestampTz segment = 0;
	int			backoff = 0;	/* ticks to wait after an escaped error */
	int			failures = 0;	/* consecutive escaped errors */

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	connected_database = MemoryContextStrdup(TopMemoryContext, chronicle_database);
	BackgroundWorkerInitializeConnection(connected_database, NULL, 0);

	SpinLockAcquire(&shared->mutex);
	shared->worker_pid = MyProcPid;
	shared->worker_started = GetCurrentTimestamp();
	shared->force_keyframe = true;
	SpinLockRelease(&shared->mutex);
	before_shmem_exit(worker_detach, (Datum) 0);

	/* The recorder's writes need not wait for the WAL flush. */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "pg_chronicle collector",
					PGC_USERSET, PGC_S_SESSION);
	pgstat_report_appname("pg_chronicle collector");

	ereport(LOG,
			(errmsg("pg_chronicle: collector started in database \"%s\", one snapshot every %d ms",
					connected_database, chronicle_snapshot_interval)));
	set_state(WS_RECORDING);

	next_tick = GetCurrentTimestamp();
	for (;;)
	{
		TimestampTz now;
		long		delay_ms;

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (strcmp(chronicle_database, connected_database) != 0)
			{
				ereport(LOG,
						(errmsg("pg_chronicle: chronicle.database changed from \"%s\" to \"%s\"; "
								"restarting the collector",
								connected_database, chronicle_database)));
				proc_exit(1);
			}
			next_tick = GetCurrentTimestamp();
		}

		now = GetCurrentTimestamp();
		if (now >= next_tick)
		{
			int64		missed;
			int64		interval_us = (int64) chronicle_snapshot_interval * 1000;

			/* Ticks that passed while the previous snapshot ran. */
			missed = (now - next_tick) / interval_us;
			next_tick += (missed + 1) * interval_us;

			SpinLockAcquire(&shared->mutex);
			shared->ticks_due += missed + 1;
			shared->ticks_missed += missed;
			SpinLockRelease(&shared->mutex);

			if (!chronicle_worker_should_record())
			{
				segment = 0;
				set_state(WS_DISABLED);
			}
			else if (backoff > 0)
			{
				backoff--;
				SpinLockAcquire(&shared->mutex);
				shared->ticks_missed++;
				SpinLockRelease(&shared->mutex);
			}
			else if (snapshot_transaction(&segment))
				failures = 0;
			else
			{
				failures++;
				backoff = Min(1 << Min(failures - 1, 6), 60);
			}
			continue;
		}

		delay_ms = (long) ((next_tick - now + 999) / 1000);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 delay_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
