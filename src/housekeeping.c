/*-------------------------------------------------------------------------
 *
 * housekeeping.c
 *		The housekeeping of the recorded data: the day partitions of the
 *		history (chronicle._maintain()), its rollups (chronicle._rollup())
 *		and, on a central database, the subscribed servers' retention
 *		(chronicle._prune_servers()), each in a subtransaction of its own.
 *
 * Housekeeping is not a snapshot: a snapshot records, housekeeping keeps
 * what was recorded in shape, and neither may stop or stall the other.
 * The partitions are checked by the snapshots (collector.c) before they
 * take their time; the rollups, which can take seconds after a benchmark,
 * run in the housekeeper (housekeeper.c), and in the collector only when
 * no housekeeper runs.  Their errors are counted, logged once while they
 * repeat, and tried again at the next run; a cancel or a shutdown still
 * ends the transaction they run in (chronicle_error_ends_snapshot()).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "housekeeping.h"
#include "pg_chronicle.h"
#include "recorder.h"
#include "shared.h"

/* Partitions are checked (and old ones dropped) at least this often, */
#define CHRONICLE_MAINTENANCE_USECS	(60 * 60 * USECS_PER_SEC)
/* and again after this long when something was skipped or failed. */
#define CHRONICLE_MAINTENANCE_RETRY_USECS	(5 * 60 * USECS_PER_SEC)
/*
 * The collector rolls up the complete minutes this often (a run costs
 * about as much for one minute as for five: rarer runs keep it out of the
 * snapshots' p99), at most this many minutes a run (a backlog is caught up
 * over runs).
 */
#define CHRONICLE_ROLLUP_USECS	(5 * 60 * USECS_PER_SEC)
/* ... or this soon after a run that found another rollup running, */
#define CHRONICLE_ROLLUP_BUSY_USECS	(10 * USECS_PER_SEC)
/* ... or after one that stopped at its most minutes, in the housekeeper */
#define CHRONICLE_ROLLUP_CATCHUP_USECS	(1 * USECS_PER_SEC)
#define CHRONICLE_ROLLUP_MAX_MINUTES	30

/* Each of the intervals above, or chronicle.debug_housekeeping_interval. */
#define HOUSEKEEPING_USECS(usecs) \
	(chronicle_debug_housekeeping_ms > 0 ? \
	 (int64) chronicle_debug_housekeeping_ms * 1000 : (int64) (usecs))

static TimestampTz next_maintenance = 0;
static TimestampTz next_rollup = 0;
static char rollup_logged[CHRONICLE_ERRMSG_LEN];	/* the last error logged */
static char prune_logged[CHRONICLE_ERRMSG_LEN];	/* the same, of the pruning */
/*
 * The skips logged at the last housekeeping run, to log each once while it
 * repeats.  Kept across snapshots, so the list and its strings both live
 * in TopMemoryContext (remember_logged()): the per-snapshot context that
 * housekeeping runs in is reset after every snapshot.
 */
static List *maintenance_logged = NIL;

/* A housekeeping query (a SELECT of one of its functions), through SPI. */
static void
housekeeping_query(const char *query)
{
	int			ret = SPI_execute(query, false, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "%s failed: %s", query, SPI_result_code_string(ret));
}

/*
 * The end of a housekeeping subtransaction (chronicle_maintain_partitions()
 * and chronicle_maintain_rollups() run in one of their own): back in cxt,
 * under the caller's resource owner.
 */
static void
housekeeping_commit(MemoryContext cxt, ResourceOwner owner)
{
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * Its failure, in PG_CATCH: the error copied into cxt and the
 * subtransaction rolled back.  A cancel, a statement timeout or a shutdown
 * ends the snapshot here as in a source (rethrown); a lock not granted
 * within housekeeping's own lock_timeout is only a failed run of it, which
 * the caller counts and logs.
 */
static ErrorData *
housekeeping_abort(MemoryContext cxt, ResourceOwner owner)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
		chronicle_error_ends_snapshot(edata->sqlerrcode))
		ReThrowError(edata);
	return edata;
}

/*
 * Replace maintenance_logged with a copy of skips made in TopMemoryContext:
 * cells and strings alike (lappend allocates its cells in the current
 * context, which here is the snapshot's).
 */
static void
remember_logged(List *skips)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	ListCell   *lc;

	list_free_deep(maintenance_logged);
	maintenance_logged = NIL;
	foreach(lc, skips)
		maintenance_logged = lappend(maintenance_logged, pstrdup(lfirst(lc)));
	MemoryContextSwitchTo(old);
}

/* What a run of chronicle._maintain() did, and what it could not do. */
typedef struct MaintainRun
{
	int64		created;
	int64		dropped;
	int64		skipped;
	List	   *skips;			/* each SQLSTATE and reason, for the log */
	char	   *reason;			/* the latest, for chronicle.status() */
	bool		failed;			/* the run as a whole */
} MaintainRun;

/*
 * Housekeeping is per database, not per session: when another session
 * (the collector, a pg_cron job) ran it in this database and does not
 * want the next run yet, a snapshot from SQL in a new session does not
 * run it again, nor wait for a run in progress.  The collector keeps
 * its own schedule: it runs housekeeping when it starts.
 */
static bool
maintained_elsewhere(TimestampTz now)
{
	ChronicleShared *shared = chronicle_shared();
	bool		recent;

	if (shared == NULL)
		return false;
	SpinLockAcquire(&shared->mutex);
	recent = shared->maint_db == MyDatabaseId && now < shared->maint_next;
	SpinLockRelease(&shared->mutex);
	return recent;
}

/*
 * chronicle._maintain()'s rows (SPI's result) into run: the partitions
 * created and dropped, and each one skipped, or the run held up as a
 * whole, with its reason (made in cxt).
 */
static void
maintain_result(MaintainRun *run, MemoryContext cxt)
{
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *action = SPI_getvalue(tup, desc, 1);
		char	   *relation = SPI_getvalue(tup, desc, 2);
		char	   *code;
		char	   *message;

		if (DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)))
		{
			if (strcmp(action, "create") == 0)
				run->created++;
			else
				run->dropped++;
			continue;
		}
		code = SPI_getvalue(tup, desc, 4);
		message = SPI_getvalue(tup, desc, 5);
		if (relation == NULL)
		{
			/* the run as a whole: another one held it up */
			run->failed = true;
			run->reason = MemoryContextStrdup(cxt,
											  psprintf("housekeeping skipped: %s",
													   message ? message : "?"));
		}
		else
		{
			run->skipped++;
			run->reason = MemoryContextStrdup(cxt,
											  psprintf("could not %s %s%s.%s: %s",
													   action,
													   strcmp(action, "prune") == 0 ? "" : "partition ",
													   CHRONICLE_SCHEMA, relation,
													   message ? message : "?"));
		}
		/* the SQLSTATE first, for the log line */
		run->skips = lappend(run->skips,
							 MemoryContextStrdup(cxt,
												 psprintf("%s%s",
														  code && strlen(code) == 5 ? code : "XX000",
														  run->reason)));
	}
}

/* Log what was not logged at the previous run, and remember it all. */
static void
log_new_skips(List *skips)
{
	ListCell   *lc;

	foreach(lc, skips)
	{
		char	   *s = lfirst(lc);
		bool		logged = false;
		ListCell   *lc2;

		foreach(lc2, maintenance_logged)
		{
			if (strcmp(lfirst(lc2), s) == 0)
				logged = true;
		}
		if (logged)
			continue;
		ereport(WARNING,
				(errcode(MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4])),
				 errmsg("pg_chronicle: %s", s + 5),
				 errhint("Recording goes on; housekeeping tries again in %d minutes "
						 "and says this once while it repeats.  chronicle.status() counts it.",
						 (int) (CHRONICLE_MAINTENANCE_RETRY_USECS / USECS_PER_MINUTE))));
	}
	remember_logged(skips);
}

/*
 * The run counted in the shared state, for chronicle.status(), and the
 * next one scheduled: sooner when something was skipped or failed.
 */
static void
maintenance_done(const MaintainRun *run, TimestampTz now)
{
	ChronicleShared *shared = chronicle_shared();

	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->maint_last = now;
		shared->maint_created += run->created;
		shared->maint_dropped += run->dropped;
		shared->maint_skipped += run->skipped;
		if (run->failed)
			shared->maint_errors++;
		if (run->reason)
			strlcpy(shared->maint_last_error, run->reason, CHRONICLE_ERRMSG_LEN);
		SpinLockRelease(&shared->mutex);
	}
	next_maintenance = now +
		HOUSEKEEPING_USECS(run->failed || run->skipped > 0 ?
						   CHRONICLE_MAINTENANCE_RETRY_USECS :
						   CHRONICLE_MAINTENANCE_USECS);
	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->maint_db = MyDatabaseId;
		shared->maint_next = next_maintenance;
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * Housekeeping: chronicle._maintain() creates the partitions of the coming
 * days and drops the expired ones.  It must never stop the recording nor
 * stall it: it runs in a subtransaction of its own, so that nothing it does
 * can abort the snapshot; each of its DDL statements is a subtransaction of
 * its own under a short lock_timeout, and a partition it could not create
 * or drop (a lock not granted in time, a view that depends on it, ...) is
 * skipped, counted in chronicle.status(), logged once while it stays
 * skipped, and tried again at the next run, which then comes sooner.
 * Snapshots whose day partition is missing land in the default partition.
 */
void
chronicle_maintain_partitions(TimestampTz now, MemoryContext cxt,
							  bool from_sql)
{
	ResourceOwner oldowner = CurrentResourceOwner;
	MaintainRun run;

	if (now < next_maintenance)
		return;
	if (from_sql && maintained_elsewhere(now))
		return;

	memset(&run, 0, sizeof(run));
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		housekeeping_query("SELECT action, relation, ok, code, message"
						   " FROM chronicle._maintain(NULL)");
		maintain_result(&run, cxt);
		housekeeping_commit(cxt, oldowner);
	}
	PG_CATCH();
	{
		ErrorData  *edata = housekeeping_abort(cxt, oldowner);

		/* Whatever it had done was rolled back with it. */
		run.created = run.dropped = run.skipped = 0;
		run.failed = true;
		run.reason = psprintf("housekeeping failed: %s", edata->message);
		/* Logged once per distinct message, as a skip is. */
		run.skips = list_make1(psprintf("%s%s", unpack_sql_state(edata->sqlerrcode),
										run.reason));
		FreeErrorData(edata);
	}
	PG_END_TRY();

	log_new_skips(run.skips);
	maintenance_done(&run, now);
}

/*
 * The next snapshot in this database checks its partitions at once,
 * whatever process takes it: a new recording starts here
 * (chronicle_forget_previous()).
 */
void
chronicle_maintenance_due(void)
{
	next_maintenance = 0;
	if (chronicle_shared())
	{
		ChronicleShared *shared = chronicle_shared();

		SpinLockAcquire(&shared->mutex);
		if (shared->maint_db == MyDatabaseId)
			shared->maint_next = 0;
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * One query of the housekeeper's, in a subtransaction of its own, so that
 * its failure rolls back nothing else: true when it ran, and *first (if
 * not NULL) the first column of its one row, an integer (0 when NULL or
 * there is no row).  A failure is logged once
 * while the same message repeats (logged: the last one logged for this
 * step, emptied by a success).  SPI connected, in a transaction.
 */
static bool
housekeeper_step(const char *query, const char *what, char *logged, int *first)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		ok = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		bool		isnull = true;
		Datum		d = (Datum) 0;

		housekeeping_query(query);
		if (SPI_processed == 1)
			d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (first != NULL)
			*first = isnull ? 0 : DatumGetInt32(d);
		housekeeping_commit(cxt, oldowner);
		logged[0] = '\0';
		ok = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata = housekeeping_abort(cxt, oldowner);

		if (strncmp(logged, edata->message, CHRONICLE_ERRMSG_LEN - 1) != 0)
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("pg_chronicle: %s failed: %s", what, edata->message),
					 errhint("Recording goes on; it is tried again in five minutes "
							 "and said once while it repeats.")));
			strlcpy(logged, edata->message, CHRONICLE_ERRMSG_LEN);
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return ok;
}

/*
 * The rollup (src/sql/60_rollups.sql): every five minutes,
 * chronicle._rollup() aggregates the complete minutes of the history into
 * chronicle.rollup_minute and rollup_hour.  It must never stop nor stall
 * the recording: it runs in the housekeeper, a process of its own
 * (housekeeper.c), and in the collector before a snapshot only when no
 * housekeeper runs (no background worker slot was free).  In a
 * subtransaction of its own, it takes no lock a writer waits for (it only
 * reads the history and writes the rollup tables; a second run in the
 * database returns at once), and does at most CHRONICLE_ROLLUP_MAX_MINUTES
 * minutes of an origin a run.  A failure is logged once while it repeats,
 * and retried at the next run.
 *
 * A backlog (history not rolled up yet: after an upgrade from 0.1.0, which
 * had no rollups, or after the recording was stopped for a while) is
 * caught up in runs of that many minutes: in the housekeeper (catch_up)
 * one a second while a run stops at its most minutes, each in its own
 * transaction, at the housekeeper's lowest CPU priority, so that 7 days
 * take minutes, not a day at 30 minutes every 5; in the collector, one
 * every five minutes as before, since its runs hold its next snapshot.
 *
 * Then, on a central database, the subscribed servers' history past its
 * retention is deleted (chronicle._prune_servers(), 42_central.sql): rows
 * no recording writes, at most a day of each server a run, in a
 * subtransaction of its own.  With the rollups, in the housekeeper, rather
 * than with the partitions of chronicle._maintain(), which runs before
 * every collector's snapshot that is due for it: a DELETE of a day of rows
 * would hold that snapshot back.  (Where no housekeeper runs, the
 * collector runs both before a snapshot, as it runs the rollups.)
 * SPI connected, in a transaction.
 */
void
chronicle_maintain_rollups(TimestampTz now, bool catch_up)
{
	int			minutes = 0;

	if (now < next_rollup)
		return;
	next_rollup = now + HOUSEKEEPING_USECS(CHRONICLE_ROLLUP_USECS);

	/*
	 * -1: another rollup held the database's (the previous housekeeper
	 * finishing its run after a collector restart, or chronicle.rollup()
	 * from SQL): try again soon rather than in five minutes.  At the most
	 * minutes (of one origin at least, or of several together): a backlog,
	 * most likely; a run that finds none left returns to the five minutes.
	 */
	if (housekeeper_step(psprintf("SELECT coalesce(minutes, -1) FROM chronicle._rollup(%d)",
								  CHRONICLE_ROLLUP_MAX_MINUTES),
						 "rollup", rollup_logged, &minutes))
	{
		if (minutes < 0)
			next_rollup = now + HOUSEKEEPING_USECS(CHRONICLE_ROLLUP_BUSY_USECS);
		else if (catch_up && minutes >= CHRONICLE_ROLLUP_MAX_MINUTES)
			next_rollup = now + CHRONICLE_ROLLUP_CATCHUP_USECS;
	}

	(void) housekeeper_step("SELECT chronicle._prune_servers(NULL) IS NULL",
							"deleting the subscribed servers' expired history",
							prune_logged, NULL);
}

/* When chronicle_maintain_rollups() runs next in this process. */
TimestampTz
chronicle_next_rollup(void)
{
	return next_rollup;
}
