/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The collector background worker: one loop, one snapshot per tick.
 *
 * Ticks are scheduled against absolute deadlines (start + k * interval), so
 * the cadence does not drift with the time a snapshot takes; a snapshot
 * that overruns makes the loop skip the ticks it missed, and counts them.
 * The deadlines are on the monotonic clock, as the sampler's: a wall clock
 * stepped back must not stop the loop until it catches up (the snapshots'
 * ts stay on the wall clock; collector.c keeps them increasing).
 *
 * Every snapshot is its own transaction, with synchronous_commit off; no
 * transaction or snapshot is held while sleeping, so the worker never holds
 * back the xmin horizon.  An error that escapes a snapshot (the sources'
 * own errors are caught in collector.c) aborts that transaction only: it is
 * logged once, the loop backs off and goes on.
 *
 * The loop knows nothing about the sources.
 *
 * Two ways to run: preloaded (registered by _PG_init, connects to
 * chronicle.database, restarted by the postmaster) or dynamic (started by
 * chronicle.start() in the caller's database, whose oid is bgw_main_arg,
 * never restarted).  Only one collector runs at a time: a second one that
 * finds another live collector in the shared state exits at once.
 *
 * During recovery the snapshots go to the standby ring (standby.c); after
 * promotion the ring is written to the tables in a transaction of its own
 * and recording goes on in a new segment.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
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

#include "collector.h"
#include "housekeeper.h"
#include "pg_chronicle.h"
#include "recorder.h"
#include "shared.h"
#include "standby.h"

/* What the loop is doing, for chronicle.status() and for logging once. */
typedef enum WorkerState
{
	WS_RECORDING,
	WS_DISABLED,
	WS_NO_EXTENSION,
	WS_OLD_EXTENSION,
	WS_RECOVERY,
	WS_ERROR,
	WS_CONNECTING,
} WorkerState;

static const char *const state_names[] = {
	[WS_RECORDING] = "recording",
	[WS_DISABLED] = "disabled (chronicle.enabled = off)",
	[WS_NO_EXTENSION] = "waiting for CREATE EXTENSION pg_chronicle",
	[WS_OLD_EXTENSION] = "waiting for ALTER EXTENSION pg_chronicle UPDATE",
	[WS_RECOVERY] = "in recovery: recording into the standby ring",
	[WS_ERROR] = "backing off after an error",
	[WS_CONNECTING] = "waiting to connect to chronicle.database",
};

static WorkerState state = WS_RECORDING;
static char *connected_database = NULL;
static bool dynamic_worker = false;

/* The extension the snapshots go into (its oid), InvalidOid before one. */
static Oid	recording_extoid = InvalidOid;

/* Failed attempts to write the standby ring after promotion, in a row. */
static int	ring_write_failures = 0;

#define CHRONICLE_RING_WRITE_ATTEMPTS	3

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
					(errmsg("pg_chronicle: server is in recovery; keeping snapshots in the standby ring "
							"(chronicle.standby_ring_size = %d kB) until promotion",
							chronicle_standby_ring_kb)));
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

/* Now on the monotonic clock, in microseconds: for deadlines only. */
static int64
monotonic_us(void)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	return INSTR_TIME_GET_MICROSEC(now);
}

static void
worker_detach(int code, Datum arg)
{
	ChronicleShared *shared = chronicle_shared();

	SpinLockAcquire(&shared->mutex);
	if (shared->worker_pid == MyProcPid)
		shared->worker_pid = 0;
	SpinLockRelease(&shared->mutex);

	/*
	 * A dynamic collector that ends (chronicle.stop(), an error, the
	 * server's shutdown) was not lost in a crash restart.
	 */
	if (dynamic_worker)
		chronicle_dynamic_collector_forget();
}

/*
 * One collector at a time: claim the shared state, unless another live
 * collector holds it.  Returns the PID of that other one, or 0 once the
 * state is ours.  Whether a PID is alive is asked with kill(), a system
 * call, outside the spinlock; the claim is taken only if the holder did
 * not change meanwhile.
 */
static pid_t
claim_collector(ChronicleShared *shared)
{
	TimestampTz started = GetCurrentTimestamp();

	for (;;)
	{
		pid_t		holder;

		SpinLockAcquire(&shared->mutex);
		holder = shared->worker_pid;
		if (holder == 0 || holder == MyProcPid)
		{
			shared->worker_pid = MyProcPid;
			shared->worker_started = started;
			shared->force_keyframe = true;
			SpinLockRelease(&shared->mutex);
			return 0;
		}
		SpinLockRelease(&shared->mutex);

		if (kill(holder, 0) == 0)
			return holder;

		/* A collector that died without detaching: take its place. */
		SpinLockAcquire(&shared->mutex);
		if (shared->worker_pid == holder)
			shared->worker_pid = 0;
		SpinLockRelease(&shared->mutex);
	}
}

/* In recovery: a snapshot into the standby ring, when there is one. */
static void
tick_in_recovery(TimestampTz *segment)
{
	/* Entering recovery starts a new recording in the ring. */
	if (state != WS_RECOVERY)
		*segment = 0;
	set_state(WS_RECOVERY);
	if (chronicle_ring_bytes() > 0)
	{
		ChronicleSnapshotResult res;

		res = chronicle_take_snapshot(CHRONICLE_BY_WORKER, *segment, false);
		*segment = res.segment;
	}
}

/*
 * What a tick does in its transaction, by the state of the server and of
 * the extension: a snapshot into the standby ring in recovery; nothing but
 * a state without the extension or with another version of it; the
 * standby ring written after promotion (*ring_attempted, and what to
 * consume once committed in *ring_upto and *ring_written); else a
 * snapshot.  Returns whether it recorded a snapshot into the tables.
 */
static bool
tick_work(TimestampTz *segment, volatile bool *ring_attempted,
		  uint64 *ring_upto, int64 *ring_written)
{
	char	   *installed;
	Oid			extoid;
	ChronicleSnapshotResult res;

	if (RecoveryInProgress())
	{
		tick_in_recovery(segment);
		return false;
	}

	/*
	 * First of all, lock the extension (see chronicle_extension_lock()): a
	 * DROP EXTENSION then waits for this snapshot to end.  An extension
	 * that is not the one recorded into (dropped and created again between
	 * two snapshots) starts a new recording, with a keyframe, as after a
	 * snapshot that found it missing.
	 */
	installed = chronicle_extension_lock(&extoid);
	if (installed != NULL && extoid != recording_extoid)
	{
		chronicle_forget_previous();
		*segment = 0;
		recording_extoid = extoid;
	}

	if (installed == NULL)
	{
		if (state != WS_NO_EXTENSION)
			chronicle_forget_previous();
		*segment = 0;
		recording_extoid = InvalidOid;
		set_state(WS_NO_EXTENSION);
		return false;
	}
	if (strcmp(installed, PG_CHRONICLE_VERSION) != 0)
	{
		if (state != WS_OLD_EXTENSION)
		{
			chronicle_forget_previous();
			ereport(LOG,
					(errmsg("pg_chronicle: the library is version %s but version %s is installed in database \"%s\"; "
							"waiting for ALTER EXTENSION pg_chronicle UPDATE",
							PG_CHRONICLE_VERSION, installed, connected_database)));
		}
		*segment = 0;
		set_state(WS_OLD_EXTENSION);
		return false;
	}
	if (chronicle_ring_pending())
	{
		/*
		 * Promoted (or started on a primary whose ring still holds a
		 * standby's snapshots): write the ring first, in a transaction of
		 * its own, so a failure of the live snapshot cannot lose it.
		 * Recording then goes on in a new segment, with a keyframe.
		 */
		*ring_attempted = true;
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		*ring_written = chronicle_write_ring(ring_upto);
		SPI_finish();
		*segment = 0;
		chronicle_forget_previous();
		return false;
	}

	/* Promoted: the live recording is a new segment. */
	if (state == WS_RECOVERY)
		*segment = 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	res = chronicle_take_snapshot(CHRONICLE_BY_WORKER, *segment, false);
	SPI_finish();
	*segment = res.segment;
	set_state(WS_RECORDING);
	return true;
}

/*
 * An error escaped the tick: its transaction aborted, the error logged
 * and counted, and the next snapshot a keyframe.  In PG_CATCH; oldcxt is
 * the context the tick began in.
 */
static void
tick_failed(MemoryContext oldcxt, bool ring_attempted)
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

	/*
	 * A ring that cannot be written must not block recording forever:
	 * after a few attempts it is dropped, and that is said.
	 */
	if (ring_attempted &&
		++ring_write_failures >= CHRONICLE_RING_WRITE_ATTEMPTS)
	{
		uint64		tail,
					head;
		char	   *copy = chronicle_ring_copy(&tail, &head);

		ereport(WARNING,
				(errmsg("pg_chronicle: dropping the standby ring after %d failed attempts to write it",
						ring_write_failures)));
		if (copy)
			pfree(copy);
		chronicle_ring_consume(head, 0);
		ring_write_failures = 0;
	}
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

	volatile bool ring_attempted = false;
	uint64		ring_upto = 0;
	int64		ring_written = 0;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_chronicle: snapshot");

	PG_TRY();
	{
		bool		recording;

		recording = tick_work(segment, &ring_attempted, &ring_upto,
							  &ring_written);
		PopActiveSnapshot();
		CommitTransactionCommand();

		/* The rollups run beside the recording, never before a snapshot. */
		if (recording)
			chronicle_housekeeper_ensure();

		if (ring_attempted)
		{
			chronicle_ring_consume(ring_upto, ring_written);
			ring_write_failures = 0;
			ereport(LOG,
					(errmsg("pg_chronicle: wrote %lld snapshots of the standby ring into the history",
							(long long) ring_written)));
		}
	}
	PG_CATCH();
	{
		tick_failed(oldcxt, ring_attempted);
		ok = false;
	}
	PG_END_TRY();

	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

/*
 * The preloaded worker cannot know whether chronicle.database exists before
 * it connects, and connecting to a missing one is FATAL: the postmaster
 * restarts it every bgw_restart_time (10 s).  To keep the log quiet it
 * counts its failed attempts in shared memory and waits longer before each
 * new one, doubling up to five minutes between attempts; a reload that
 * changes chronicle.database ends the wait at once.
 */
static void
wait_before_connecting(ChronicleShared *shared)
{
	int			failures;
	int64		wait_ms;
	int64		until;
	char	   *wanted;

	SpinLockAcquire(&shared->mutex);
	failures = shared->connect_failures;
	SpinLockRelease(&shared->mutex);
	if (failures == 0)
		return;

	/* 10 s (the restart time) + this: 10, 20, 40, 80, 160, 300 s */
	wait_ms = Min((int64) 10000 << Min(failures - 1, 5), 300000) - 10000;
	if (wait_ms <= 0)
		return;

	ereport(LOG,
			(errmsg("pg_chronicle: could not connect to database \"%s\" (%d attempts in a row); "
					"next attempt in %d s",
					chronicle_database, failures, (int) ((wait_ms + 10000) / 1000)),
			 errhint("Create the database, or set chronicle.database to one that exists and reload.")));
	connected_database = chronicle_database;
	set_state(WS_CONNECTING);

	wanted = pstrdup(chronicle_database);
	until = monotonic_us() + wait_ms * 1000;
	for (;;)
	{
		long		left;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (strcmp(wanted, chronicle_database) != 0)
				break;
		}
		left = (long) ((until - monotonic_us()) / 1000);
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	pfree(wanted);
}

/*
 * Connect to the database recorded into: the one chronicle.start() was
 * called in (dboid, a dynamic collector), or chronicle.database, after a
 * wait when earlier attempts failed.
 */
static void
worker_connect(ChronicleShared *shared, Oid dboid)
{
	if (dynamic_worker)
	{
		/* chronicle.start(): the database it was called in. */
		BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
		StartTransactionCommand();
		connected_database = get_database_name(MyDatabaseId);
		if (connected_database == NULL)
			ereport(FATAL,
					(errcode(ERRCODE_UNDEFINED_DATABASE),
					 errmsg("pg_chronicle: the database of chronicle.start() no longer exists")));
		connected_database = MemoryContextStrdup(TopMemoryContext, connected_database);
		CommitTransactionCommand();
	}
	else
	{
		wait_before_connecting(shared);
		connected_database = MemoryContextStrdup(TopMemoryContext, chronicle_database);
		SpinLockAcquire(&shared->mutex);
		shared->connect_failures++;
		SpinLockRelease(&shared->mutex);
		/* FATAL when the database does not exist: counted above */
		BackgroundWorkerInitializeConnection(connected_database, NULL, 0);
		SpinLockAcquire(&shared->mutex);
		shared->connect_failures = 0;
		SpinLockRelease(&shared->mutex);
	}
}

/* A reload: the new settings, and a restart for another database. */
static void
worker_reload(void)
{
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	/* A dynamic collector stays in the database it was started in. */
	if (!dynamic_worker &&
		strcmp(chronicle_database, connected_database) != 0)
	{
		ereport(LOG,
				(errmsg("pg_chronicle: chronicle.database changed from \"%s\" to \"%s\"; "
						"restarting the collector",
						connected_database, chronicle_database)));
		proc_exit(1);
	}
}

/*
 * A tick that is due: a snapshot, unless recording is off or the loop
 * backs off after an escaped error (*backoff ticks to wait, after
 * *failures in a row).
 */
static void
worker_tick(ChronicleShared *shared, TimestampTz *segment, int *backoff,
			int *failures)
{
	if (!chronicle_worker_should_record())
	{
		*segment = 0;
		set_state(WS_DISABLED);
	}
	else if (*backoff > 0)
	{
		(*backoff)--;
		SpinLockAcquire(&shared->mutex);
		shared->ticks_missed++;
		SpinLockRelease(&shared->mutex);
	}
	else if (snapshot_transaction(segment))
		*failures = 0;
	else
	{
		(*failures)++;
		*backoff = Min(1 << Min(*failures - 1, 6), CHRONICLE_MAX_BACKOFF);
	}
}

void
chronicle_worker_main(Datum main_arg)
{
	ChronicleShared *shared = chronicle_shared();
	int64		next_tick;		/* monotonic_us() */
	TimestampTz segment = 0;
	int			backoff = 0;	/* ticks to wait after an escaped error */
	int			failures = 0;	/* consecutive escaped errors */

	pid_t		other = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (shared == NULL)
		elog(ERROR, "pg_chronicle: no shared state for the collector");
	dynamic_worker = DatumGetObjectId(main_arg) != InvalidOid;

	/* One collector at a time: claim the shared state, or leave. */
	other = claim_collector(shared);
	if (other != 0)
	{
		ereport(LOG,
				(errmsg("pg_chronicle: another collector is running (PID %d); exiting",
						(int) other)));
		proc_exit(0);			/* 0: a dynamic worker is not restarted */
	}
	before_shmem_exit(worker_detach, (Datum) 0);

	worker_connect(shared, DatumGetObjectId(main_arg));
	chronicle_recorder_session("pg_chronicle collector");

	ereport(LOG,
			(errmsg("pg_chronicle: %s collector started in database \"%s\", one snapshot every %d ms",
					dynamic_worker ? "dynamic" : "preloaded",
					connected_database, chronicle_snapshot_interval)));
	set_state(WS_RECORDING);

	next_tick = monotonic_us();
	for (;;)
	{
		int64		now;
		long		delay_ms;

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			worker_reload();
			next_tick = monotonic_us();
		}

		now = monotonic_us();
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

			worker_tick(shared, &segment, &backoff, &failures);
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
