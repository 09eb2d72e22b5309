/*-------------------------------------------------------------------------
 *
 * collector.c
 *		One snapshot: every source read, changed rows written, the snapshot
 *		row with its own cost written last.
 *
 * The collector is source-agnostic.  For each source it keeps the previous
 * reading of every key (in a hash table, in the source's own memory
 * context; chronicle_emit_row() in emitter.c compares with it) and writes
 * only the rows that changed since then; a keyframe writes every row.  Each
 * source's rows are packed into one value (history.c), and the snapshot's
 * values of every source go into one row of chronicle.history: one tuple,
 * one index entry and one WAL record a snapshot, whatever the number of
 * rows.  The worker makes a keyframe at least every
 * chronicle.keyframe_interval, so that reading a key's latest value never
 * goes back further than that (docs/storage.md).
 *
 * Each source runs inside its own subtransaction: an error in one source
 * is caught, counted, logged once and retried with exponential backoff,
 * while the other sources go on recording.  The reading of a source only
 * replaces the previous one after its rows were written, so a failed
 * insert never leaves the sparse chain with a hole.  A cancel, a timeout or
 * a shutdown is not a source's error but the whole snapshot's: it is
 * re-thrown, and the snapshot (its transaction) ends with it.
 *
 * Time: ts is the wall clock, but it never goes backwards.  Within a
 * segment the worker measures the time between two snapshots on the
 * monotonic clock; when the wall clock advanced by less than half of that
 * (it was stepped back), ts advances by the time that really passed
 * instead, so ts stays increasing and every interval keeps its true
 * length; ts then runs ahead of the wall clock by the step, until the
 * clock is stepped forward again or the segment ends.  A new segment (and
 * every snapshot from SQL) never starts at or before the latest snapshot
 * recorded: if the wall clock is behind it, ts is that snapshot's plus one
 * microsecond, and a snapshot from SQL then starts a segment of its own
 * rather than make an interval of a microsecond.
 *
 * During recovery (a standby) nothing can be written: the same rows are
 * serialized into one record of the standby ring in shared memory instead
 * (standby.c, which owns the record format), and written to the tables after promotion by
 * chronicle_write_ring(), in the order they were taken.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/instrument.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "collector.h"
#include "emitter.h"
#include "history.h"
#include "pg_chronicle.h"
#include "shared.h"
#include "source.h"
#include "standby.h"

static ChronicleSourceState source_state[CHRONICLE_MAX_SOURCES];
static SPIPlanPtr snapshot_plan = NULL;
static TimestampTz next_maintenance = 0;
static TimestampTz next_rollup = 0;
static char rollup_logged[CHRONICLE_ERRMSG_LEN];	/* the last error logged */
/*
 * The skips logged at the last housekeeping run, to log each once while it
 * repeats.  Kept across snapshots, so the list and its strings both live
 * in TopMemoryContext (remember_logged()): the per-snapshot context that
 * housekeeping runs in is reset after every snapshot.
 */
static List *maintenance_logged = NIL;
static bool keyframe_pending = true;	/* no previous reading to trust */
static TimestampTz last_keyframe = 0;	/* the worker's latest keyframe */

static bool error_ends_snapshot(int sqlerrcode);
static int	ring_since_keyframe = 0;	/* ring snapshots since a keyframe */

/* The worker's previous snapshot, for its clock (see the header). */
static TimestampTz clock_segment = 0;
static TimestampTz clock_ts = 0;
static instr_time clock_taken;

/*
 * In the standby ring every this many snapshots is a keyframe, so that the
 * ring stays readable (and writable after promotion) from a keyframe on
 * when its oldest snapshots are evicted.
 */
#define CHRONICLE_RING_KEYFRAME_EVERY	60

/* A repeated identical error is logged again after this long. */
#define CHRONICLE_RELOG_USECS	(10 * 60 * USECS_PER_SEC)
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

/* Each of the intervals above, or chronicle.debug_housekeeping_interval. */
#define HOUSEKEEPING_USECS(usecs) \
	(chronicle_debug_housekeeping_ms > 0 ? \
	 (int64) chronicle_debug_housekeeping_ms * 1000 : (int64) (usecs))
#define CHRONICLE_ROLLUP_MAX_MINUTES	30

static void
source_state_init(int i)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];

	if (st->initialized)
		return;
	if (src->ncolumns > CHRONICLE_MAX_COLUMNS)
		elog(ERROR, "source \"%s\" has too many columns", src->name);

	for (int c = 0; c < src->ncolumns; c++)
	{
		Oid			func;
		bool		isvarlena;

		get_typlenbyvalalign(src->columns[c].type, &st->typlen[c],
							 &st->typbyval[c], &st->typalign[c]);
		getTypeOutputInfo(src->columns[c].type, &func, &isvarlena);
		fmgr_info_cxt(func, &st->outfunc[c], TopMemoryContext);
		getTypeInputInfo(src->columns[c].type, &func, &st->typioparam[c]);
		fmgr_info_cxt(func, &st->infunc[c], TopMemoryContext);
	}
	st->cxt[0] = AllocSetContextCreate(TopMemoryContext, "chronicle source",
									   ALLOCSET_SMALL_SIZES);
	st->cxt[1] = AllocSetContextCreate(TopMemoryContext, "chronicle source",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextSetIdentifier(st->cxt[0], src->name);
	MemoryContextSetIdentifier(st->cxt[1], src->name);
	st->cur = 0;
	st->prev = NULL;
	st->initialized = true;
}

/*
 * Forget every previous reading and every prepared statement, so that the
 * next snapshot is a keyframe planned afresh.  Used when the extension was
 * dropped, after an error that aborted a whole snapshot, and at start.
 */
void
chronicle_forget_previous(void)
{
	for (int i = 0; i < chronicle_nsources; i++)
	{
		ChronicleSourceState *st = &source_state[i];

		if (!st->initialized)
			continue;
		MemoryContextReset(st->cxt[0]);
		MemoryContextReset(st->cxt[1]);
		st->prev = NULL;
	}
	/* and every key id: the dictionary may be another one now */
	chronicle_history_forget(-1);
	if (snapshot_plan)
		SPI_freeplan(snapshot_plan);
	snapshot_plan = NULL;
	next_maintenance = 0;
	keyframe_pending = true;
	/* A new recording in this database checks its partitions at once. */
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
 * The version of pg_chronicle installed in the database we are connected to
 * (palloc'd) and its oid, or NULL and InvalidOid when it is not installed.
 */
static char *
extension_lookup(Oid *extoid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	*extoid = InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("pg_chronicle"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		*extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * The version of pg_chronicle installed in the database we are connected to
 * (palloc'd) and its oid, or NULL and InvalidOid when it is not installed;
 * when it is, the extension itself is locked (SHARE) until the end of the
 * transaction.  Every snapshot calls this first, before it touches any
 * table of the extension.
 *
 * Why the lock: DROP EXTENSION locks the extension (ACCESS EXCLUSIVE, in
 * get_object_address()) before any of its objects, then locks its tables
 * one by one as it finds them, chronicle.snapshot among the first.  A
 * snapshot locks the history tables one by one and chronicle.snapshot
 * last.  Without a lock on the extension, a DROP that began during a
 * snapshot could hold chronicle.snapshot and wait for a history table the
 * snapshot held, while the snapshot waited for chronicle.snapshot: a
 * deadlock, and the DROP or the snapshot failed.  With it, a DROP waits
 * for the snapshot in progress, and the next snapshot waits for the DROP
 * and then finds the extension gone.  SHARE rather than ACCESS SHARE: it
 * also conflicts with SHARE UPDATE EXCLUSIVE, which COMMENT ON EXTENSION
 * takes, so that an update script beginning with that statement waits for
 * the snapshot in progress and holds off the next ones (ALTER EXTENSION
 * UPDATE itself locks nothing).  Snapshots do not conflict with each other.
 *
 * The oid found last is locked first, so that the usual snapshot costs one
 * catalog look-up; the look-up after the lock (which accepts the pending
 * invalidations) tells whether it is still the installed extension.  When
 * not (dropped, or dropped and created again), the lock is moved to the
 * oid found and the look-up repeated, as get_object_address() does.
 *
 * After a new build is installed and the server restarted, the library is
 * newer than the SQL objects until ALTER EXTENSION pg_chronicle UPDATE:
 * writing its rows into the old tables would fail or, worse, misplace
 * values.  The collector and chronicle.snapshot() compare the version with
 * PG_CHRONICLE_VERSION and wait instead.  Must be called inside a
 * transaction, not during recovery.
 */
char *
chronicle_extension_lock(Oid *extoid)
{
	static Oid	guess = InvalidOid;
	Oid			locked = InvalidOid;

	if (OidIsValid(guess))
	{
		LockDatabaseObject(ExtensionRelationId, guess, 0, ShareLock);
		locked = guess;
	}
	for (;;)
	{
		Oid			found;
		char	   *version = extension_lookup(&found);

		if (found == locked)
		{
			guess = found;
			*extoid = found;
			return version;
		}
		/* Not (or no longer) the installed one: lock the one found. */
		if (OidIsValid(locked))
			UnlockDatabaseObject(ExtensionRelationId, locked, 0, ShareLock);
		locked = InvalidOid;
		if (version)
			pfree(version);
		if (!OidIsValid(found))
		{
			guess = InvalidOid;
			*extoid = InvalidOid;
			return NULL;
		}
		LockDatabaseObject(ExtensionRelationId, found, 0, ShareLock);
		locked = found;
	}
}

/*
 * Write the queued rows of a source: into the standby ring during
 * recovery, else packed (with their keys' dictionary ids) into em->packed,
 * for the snapshot's history row.
 */
static void
flush_rows(ChronicleEmitter *em, TimestampTz ts)
{
	const ChronicleSource *src = em->source;
	ChronicleSourceState *st = em->state;
	ChronicleRows rows;

	if (em->nrows == 0)
		return;

	if (em->ring)
	{
		/* Recovery: serialize the rows into the ring record. */
		for (int r = 0; r < em->nrows; r++)
		{
			char	   *out[CHRONICLE_MAX_COLUMNS];

			for (int c = 0; c < src->ncolumns; c++)
				out[c] = em->nulls[c][r] ? NULL :
					OutputFunctionCall(&st->outfunc[c], em->values[c][r]);
			chronicle_ring_put_row(em->ring, em->source_index,
								   src->ncolumns, out);
			for (int c = 0; c < src->ncolumns; c++)
				if (out[c])
					pfree(out[c]);
		}
		return;
	}

	memset(&rows, 0, sizeof(rows));
	rows.source_index = em->source_index;
	rows.complete = em->keyframe;
	rows.nrows = rows.maxrows = em->nrows;
	for (int c = 0; c < src->ncolumns; c++)
	{
		rows.values[c] = em->values[c];
		rows.nulls[c] = em->nulls[c];
	}
	if (src->nkeys > 0)
	{
		rows.key_ids = palloc(sizeof(int32) * em->nrows);
		chronicle_rows_key_ids(&rows);
	}
	em->packed = chronicle_pack(&rows, ts);
}

/*
 * Report a source's failure: once per distinct message, and again only
 * every ten minutes while it keeps failing the same way.
 */
static void
report_source_error(const ChronicleSource *src, ChronicleSourceState *st,
					ErrorData *edata, ChronicleCollector by, TimestampTz now)
{
	bool		same = strncmp(st->last_error, edata->message,
							   CHRONICLE_ERRMSG_LEN - 1) == 0;

	if (by == CHRONICLE_BY_SQL ||
		!same || now - st->last_logged >= CHRONICLE_RELOG_USECS)
	{
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_chronicle: source \"%s\" failed: %s",
						src->name, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 by == CHRONICLE_BY_WORKER ?
				 errhint("The other sources go on recording; \"%s\" is retried with backoff "
						 "(%d consecutive failures) and this message is repeated at most every ten minutes.",
						 src->name, st->failures) : 0));
		st->last_logged = now;
	}
	strlcpy(st->last_error, edata->message, CHRONICLE_ERRMSG_LEN);
}

/* A housekeeping query (a SELECT of one of its functions), through SPI. */
static void
housekeeping_query(const char *query)
{
	int			ret = SPI_execute(query, false, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "%s failed: %s", query, SPI_result_code_string(ret));
}

/*
 * The end of a housekeeping subtransaction (maintain_partitions() and
 * maintain_rollups() run in one of their own): back in cxt, under the
 * caller's resource owner.
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
		error_ends_snapshot(edata->sqlerrcode))
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
static void
maintain_partitions(TimestampTz now, MemoryContext cxt, ChronicleCollector by)
{
	ChronicleShared *shared = chronicle_shared();
	ResourceOwner oldowner = CurrentResourceOwner;
	int64		created = 0;
	int64		dropped = 0;
	int64		skipped = 0;
	List	   *skips = NIL;
	ListCell   *lc;
	char	   *reason = NULL;
	bool		failed = false;

	if (now < next_maintenance)
		return;

	/*
	 * Housekeeping is per database, not per session: when another session
	 * (the collector, a pg_cron job) ran it in this database and does not
	 * want the next run yet, a snapshot from SQL in a new session does not
	 * run it again, nor wait for a run in progress.  The collector keeps
	 * its own schedule: it runs housekeeping when it starts.
	 */
	if (shared && by == CHRONICLE_BY_SQL)
	{
		bool		recent;

		SpinLockAcquire(&shared->mutex);
		recent = shared->maint_db == MyDatabaseId && now < shared->maint_next;
		SpinLockRelease(&shared->mutex);
		if (recent)
			return;
	}

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		housekeeping_query("SELECT action, relation, ok, code, message"
						   " FROM chronicle._maintain(NULL)");
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
					created++;
				else
					dropped++;
				continue;
			}
			code = SPI_getvalue(tup, desc, 4);
			message = SPI_getvalue(tup, desc, 5);
			if (relation == NULL)
			{
				/* the run as a whole: another one held it up */
				failed = true;
				reason = MemoryContextStrdup(cxt,
											 psprintf("housekeeping skipped: %s",
													  message ? message : "?"));
			}
			else
			{
				skipped++;
				reason = MemoryContextStrdup(cxt,
											 psprintf("could not %s %s%s.%s: %s",
													  action,
													  strcmp(action, "prune") == 0 ? "" : "partition ",
													  CHRONICLE_SCHEMA, relation,
													  message ? message : "?"));
			}
			/* the SQLSTATE first, for the log line */
			skips = lappend(skips,
							MemoryContextStrdup(cxt,
												psprintf("%s%s",
														 code && strlen(code) == 5 ? code : "XX000",
														 reason)));
		}
		housekeeping_commit(cxt, oldowner);
	}
	PG_CATCH();
	{
		ErrorData  *edata = housekeeping_abort(cxt, oldowner);

		/* Whatever it had done was rolled back with it. */
		created = dropped = skipped = 0;
		failed = true;
		reason = psprintf("housekeeping failed: %s", edata->message);
		/* Logged once per distinct message, as a skip is. */
		skips = list_make1(psprintf("%s%s", unpack_sql_state(edata->sqlerrcode),
									reason));
		FreeErrorData(edata);
	}
	PG_END_TRY();

	/* Log what was not logged at the previous run. */
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

	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->maint_last = now;
		shared->maint_created += created;
		shared->maint_dropped += dropped;
		shared->maint_skipped += skipped;
		if (failed)
			shared->maint_errors++;
		if (reason)
			strlcpy(shared->maint_last_error, reason, CHRONICLE_ERRMSG_LEN);
		SpinLockRelease(&shared->mutex);
	}
	next_maintenance = now + HOUSEKEEPING_USECS(failed || skipped > 0 ?
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
 * The rollup (src/sql/60_rollups.sql): every five minutes,
 * chronicle._rollup() aggregates the complete minutes of the history into
 * chronicle.rollup_minute and rollup_hour.  It must never stop nor stall
 * the recording: it runs in the housekeeper, a process of its own
 * (housekeeper.c), and in the collector before a snapshot only when no
 * housekeeper runs (no background worker slot was free).  In a
 * subtransaction of its own, it takes no lock a writer waits for (it only
 * reads the history and writes the rollup tables; a second run in the
 * database returns at once), and does at most CHRONICLE_ROLLUP_MAX_MINUTES
 * minutes a run.  A failure is logged once while it repeats, and retried
 * at the next run.  SPI connected, in a transaction.
 */
void
chronicle_maintain_rollups(TimestampTz now)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;

	if (now < next_rollup)
		return;
	next_rollup = now + HOUSEKEEPING_USECS(CHRONICLE_ROLLUP_USECS);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		housekeeping_query(psprintf("SELECT * FROM chronicle._rollup(%d)",
									CHRONICLE_ROLLUP_MAX_MINUTES));
		housekeeping_commit(cxt, oldowner);
		rollup_logged[0] = '\0';
	}
	PG_CATCH();
	{
		ErrorData  *edata = housekeeping_abort(cxt, oldowner);

		if (strncmp(rollup_logged, edata->message, CHRONICLE_ERRMSG_LEN - 1) != 0)
		{
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("pg_chronicle: rollup failed: %s", edata->message),
					 errhint("Recording goes on; the rollup is tried again in five minutes "
							 "and says this once while it repeats.")));
			strlcpy(rollup_logged, edata->message, CHRONICLE_ERRMSG_LEN);
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/* When chronicle_maintain_rollups() runs next in this process. */
TimestampTz
chronicle_next_rollup(void)
{
	return next_rollup;
}

/*
 * The latest snapshot recorded: its ts and segment, and whether the server
 * took it since it started (only such a segment can be continued).  False
 * when there is none.
 */
static bool
latest_snapshot(TimestampTz *ts, TimestampTz *segment, bool *since_start)
{
	int			ret;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	ret = SPI_execute("SELECT ts, segment, ts > pg_catalog.pg_postmaster_start_time()"
					  " FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1", true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the latest snapshot: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*ts = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
	*segment = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
	*since_start = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	return true;
}

/*
 * Two snapshots never share a ts.  The worker and chronicle.snapshot() in
 * other sessions may read the clock in the same microsecond, and none of
 * them sees the others' rows before they commit (a unique violation then
 * would fail one of them after it waited for the other's transaction):
 * every ts handed out is later than the one before it, which costs a
 * microsecond at most.
 */
static TimestampTz
unique_ts(TimestampTz ts)
{
	ChronicleShared *s = chronicle_shared();

	if (s == NULL)
		return ts;
	SpinLockAcquire(&s->mutex);
	if (ts <= s->last_ts_given)
		ts = s->last_ts_given + 1;
	s->last_ts_given = ts;
	SpinLockRelease(&s->mutex);
	return ts;
}

static void
insert_snapshot_row(TimestampTz ts, TimestampTz segment, bool keyframe,
					ChronicleCollector by, double duration_ms, int64 rows,
					int64 wal_bytes, int errors)
{
	Datum		args[10];
	Oid			argtypes[10] = {TIMESTAMPTZOID, TIMESTAMPTZOID, BOOLOID, TEXTOID,
	FLOAT8OID, INT8OID, INT8OID, INT4OID, INT8OID, TEXTOID};
	int			ret;

	if (snapshot_plan == NULL)
	{
		snapshot_plan = SPI_prepare("INSERT INTO chronicle.snapshot"
									" (ts, segment, keyframe, collector, duration_ms,"
									" rows_written, wal_bytes, errors,"
									" system_identifier, server_name)"
									" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
									10, argtypes);
		if (snapshot_plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(snapshot_plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
	}
	args[0] = TimestampTzGetDatum(ts);
	args[1] = TimestampTzGetDatum(segment);
	args[2] = BoolGetDatum(keyframe);
	args[3] = CStringGetTextDatum(by == CHRONICLE_BY_WORKER ? "worker" : "sql");
	args[4] = Float8GetDatum(duration_ms);
	args[5] = Int64GetDatum(rows);
	args[6] = Int64GetDatum(wal_bytes);
	args[7] = Int32GetDatum(errors);
	/* who recorded it (chronicle.server()): see docs/storage.md */
	args[8] = Int64GetDatum((int64) GetSystemIdentifier());
	args[9] = CStringGetTextDatum(chronicle_server_name_now());
	ret = SPI_execute_plan(snapshot_plan, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "insert into chronicle.snapshot failed: %s",
			 SPI_result_code_string(ret));
}

/*
 * chronicle.debug_fail_source, for tests: "<source>" makes the source fail
 * before it reads anything, "<source>:write" after it wrote its rows, just
 * before its subtransaction commits (what a failed INSERT looks like to a
 * source that keeps state of its own).
 */
static void
debug_fail(const ChronicleSource *src, const char *point)
{
	const char *v = chronicle_debug_fail_source;
	size_t		len = strlen(src->name);

	if (v == NULL || strncmp(v, src->name, len) != 0)
		return;
	if (point == NULL ? v[len] != '\0' :
		(v[len] != ':' || strcmp(v + len + 1, point) != 0))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("injected failure (chronicle.debug_fail_source = '%s')", v)));
}

/*
 * Is this error the snapshot's rather than the source's?  A cancel, a
 * statement, lock or transaction timeout, a shutdown, a recovery conflict
 * or a serialization failure asks for the end of the statement or the
 * transaction; swallowing it in a source's subtransaction would let the
 * snapshot go on and commit.  So would any error raised while a cancel or
 * a termination is pending.
 */
static bool
error_ends_snapshot(int sqlerrcode)
{
	if (QueryCancelPending || ProcDiePending)
		return true;
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_OPERATOR_INTERVENTION: /* 57: cancel, statement_timeout,
											 * shutdown, database dropped */
		case ERRCODE_TRANSACTION_ROLLBACK:	/* 40: serialization failure,
											 * deadlock, recovery conflict */
			return true;
		default:
			break;
	}
	return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||	/* lock_timeout */
		sqlerrcode == ERRCODE_IDLE_IN_TRANSACTION_SESSION_TIMEOUT ||
		sqlerrcode == ERRCODE_TRANSACTION_TIMEOUT;
}

/*
 * Collect one source, inside a subtransaction: its changed rows packed
 * into *packed (NULL when none), or serialized into the ring.  Returns the
 * number of rows, or -1 on failure.  An error that ends the snapshot
 * (error_ends_snapshot) is re-thrown once the subtransaction is rolled
 * back.
 */
static int64
collect_source(int i, MemoryContext snapcxt, TimestampTz ts, bool keyframe,
			   ChronicleCollector by, StringInfo ring, bytea **packed)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];
	ChronicleShared *shared = chronicle_shared();
	ResourceOwner oldowner = CurrentResourceOwner;
	ChronicleEmitter em;
	HASHCTL		ctl;
	int			ringlen;
	volatile int64 rows = -1;

	source_state_init(i);

	/* Start the next reading in the other memory context. */
	MemoryContextReset(st->cxt[1 - st->cur]);
	memset(&em, 0, sizeof(em));
	em.source = src;
	em.state = st;
	em.ring = ring;
	em.source_index = i;
	em.keyframe = keyframe || st->prev == NULL;
	ctl.keysize = CHRONICLE_KEY_LEN;
	ctl.entrysize = sizeof(ChronicleRow);
	ctl.hcxt = st->cxt[1 - st->cur];
	/* sized for as many keys as the previous reading: it will not grow */
	em.next = hash_create("chronicle reading",
						  st->prev ? Max(hash_get_num_entries(st->prev), 64) : 64,
						  &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	em.maxrows = 64;
	MemoryContextSwitchTo(snapcxt);
	for (int c = 0; c < src->ncolumns; c++)
	{
		em.values[c] = palloc(sizeof(Datum) * em.maxrows);
		em.nulls[c] = palloc(sizeof(bool) * em.maxrows);
	}
	initStringInfo(&em.keybuf);

	ringlen = ring ? ring->len : 0;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(snapcxt);

	PG_TRY();
	{
		debug_fail(src, NULL);
		src->collect(&em);
		flush_rows(&em, ts);
		debug_fail(src, "write");

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(snapcxt);
		CurrentResourceOwner = oldowner;

		/* The new reading becomes the previous one. */
		MemoryContextReset(st->cxt[st->cur]);
		st->cur = 1 - st->cur;
		st->prev = em.next;
		rows = em.nrows;
		*packed = em.packed;

		if (st->failures > 0 && by == CHRONICLE_BY_WORKER)
			ereport(LOG,
					(errmsg("pg_chronicle: source \"%s\" recording again after %d failures",
							src->name, st->failures)));
		st->failures = 0;
		st->last_error[0] = '\0';
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		TimestampTz now = GetCurrentTimestamp();

		MemoryContextSwitchTo(snapcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(snapcxt);
		CurrentResourceOwner = oldowner;

		/* This reading was not written: keep the previous one. */
		MemoryContextReset(st->cxt[1 - st->cur]);

		/* A cancel, a timeout, a shutdown: the whole snapshot ends here. */
		if (error_ends_snapshot(edata->sqlerrcode))
			ReThrowError(edata);

		/* nor half of it serialized into the ring record */
		if (ring)
			ring->len = ringlen;
		/* Key ids it added to the dictionary were rolled back with it. */
		chronicle_history_forget(i);

		st->failures++;
		st->skip = Min(1 << Min(st->failures - 1, 6), CHRONICLE_MAX_BACKOFF) - 1;
		report_source_error(src, st, edata, by, now);

		if (shared)
		{
			SpinLockAcquire(&shared->mutex);
			shared->sources[i].errors++;
			shared->sources[i].last_error_time = now;
			strlcpy(shared->sources[i].last_error, edata->message,
					CHRONICLE_ERRMSG_LEN);
			SpinLockRelease(&shared->mutex);
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();

	if (rows >= 0 && shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->sources[i].snapshots++;
		shared->sources[i].rows += rows;
		SpinLockRelease(&shared->mutex);
	}
	return rows;
}

/*
 * Take one snapshot of every enabled source.  The caller provides the
 * transaction and the SPI connection.  segment is the start of the
 * recording this snapshot continues, 0 to let the collector decide.
 */
ChronicleSnapshotResult
chronicle_take_snapshot(ChronicleCollector by, TimestampTz segment,
						bool keyframe)
{
	ChronicleSnapshotResult result = {0};
	ChronicleShared *shared = chronicle_shared();
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext snapcxt;
	instr_time	start,
				taken,
				duration;
	int64		wal_start = pgWalUsage.wal_bytes;
	double		duration_ms;
	TimestampTz ts;
	StringInfo	ring = NULL;
	bool		newsegment = (segment == 0);
	bool		lost = false;
	bytea	   *packed[CHRONICLE_MAX_SOURCES];
	bool		collected[CHRONICLE_MAX_SOURCES];
	bool		any_rows = false;

	INSTR_TIME_SET_CURRENT(start);

	/*
	 * From SQL, the key ids this backend cached may have been rolled back
	 * with an earlier caller's transaction: read them again.
	 */
	if (by == CHRONICLE_BY_SQL)
		chronicle_history_forget(-1);

	snapcxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle snapshot",
									ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(snapcxt);

	/* In recovery, the worker's snapshots go to the standby ring. */
	if (by == CHRONICLE_BY_WORKER && RecoveryInProgress())
	{
		ring = makeStringInfo();
		chronicle_ring_record_begin(ring);
		if (++ring_since_keyframe >= CHRONICLE_RING_KEYFRAME_EVERY)
			keyframe = true;
	}
	else
	{
		maintain_partitions(GetCurrentTimestamp(), snapcxt, by);
		if (by == CHRONICLE_BY_WORKER && !chronicle_housekeeper_running())
			chronicle_maintain_rollups(GetCurrentTimestamp());
	}

	/*
	 * The snapshot's time is taken after the housekeeping (its cost is still
	 * counted in duration_ms), right before the sources are read.
	 */
	ts = GetCurrentTimestamp();
	INSTR_TIME_SET_CURRENT(taken);

	/*
	 * The worker's next snapshot in its segment: if the wall clock advanced
	 * by less than half of the time that passed, it was stepped back; ts
	 * advances by the time that passed instead (see the header).
	 */
	if (by == CHRONICLE_BY_WORKER && !newsegment && segment == clock_segment)
	{
		instr_time	elapsed = taken;
		int64		elapsed_us;

		INSTR_TIME_SUBTRACT(elapsed, clock_taken);
		elapsed_us = Max(INSTR_TIME_GET_MICROSEC(elapsed), 1);
		if (ts < clock_ts + elapsed_us / 2)
			ts = clock_ts + elapsed_us;
	}

	/*
	 * A new segment, or a snapshot from SQL, never starts at or before the
	 * latest snapshot recorded; a snapshot from SQL continues the latest
	 * segment when the server took it and the clock has moved on since.
	 */
	if (ring == NULL && segment == 0)
	{
		TimestampTz latest_ts,
					latest_segment;
		bool		since_start;

		if (latest_snapshot(&latest_ts, &latest_segment, &since_start))
		{
			if (ts <= latest_ts)
				ts = latest_ts + 1;
			else if (by == CHRONICLE_BY_SQL && since_start)
				segment = latest_segment;
		}
	}
	ts = unique_ts(ts);

	/* A worker outside this transaction must see fresh numbers. */
	pgstat_clear_snapshot();

	if (segment == 0)
		segment = ts;
	result.ts = ts;
	result.segment = segment;

	/*
	 * A new recording starts with a keyframe: its sparse rows could not be
	 * read against anything earlier.
	 */
	if (newsegment && by == CHRONICLE_BY_WORKER)
		keyframe = true;

	if (shared && by == CHRONICLE_BY_WORKER)
	{
		SpinLockAcquire(&shared->mutex);
		if (shared->force_keyframe)
			keyframe = true;
		shared->force_keyframe = false;
		SpinLockRelease(&shared->mutex);
	}
	keyframe |= keyframe_pending;

	/* The worker's periodic keyframe bounds every look back (the header). */
	if (by == CHRONICLE_BY_WORKER && ring == NULL &&
		chronicle_keyframe_interval > 0 &&
		ts - last_keyframe >= (int64) chronicle_keyframe_interval * USECS_PER_SEC)
		keyframe = true;
	result.keyframe = keyframe;

	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];
		ChronicleSourceState *st = &source_state[i];
		int64		rows;

		packed[i] = NULL;
		collected[i] = false;

		if (!chronicle_source_enabled[i])
		{
			/*
			 * Forget the source's last reading: when it is enabled again,
			 * its first rows are a full set, not changes against a reading
			 * that is long out of date.
			 */
			if (st->initialized && st->prev != NULL)
			{
				MemoryContextReset(st->cxt[0]);
				MemoryContextReset(st->cxt[1]);
				st->prev = NULL;
			}
			continue;
		}
		if (src->available && !src->available())
			continue;
		if (by == CHRONICLE_BY_WORKER && st->skip > 0)
		{
			st->skip--;
			if (shared)
			{
				SpinLockAcquire(&shared->mutex);
				shared->sources[i].skipped++;
				SpinLockRelease(&shared->mutex);
			}
			result.errors++;
			continue;
		}
		rows = collect_source(i, snapcxt, ts, keyframe, by, ring, &packed[i]);
		if (rows < 0)
			result.errors++;
		else
		{
			result.rows += rows;
			collected[i] = true;
			any_rows |= (packed[i] != NULL);
		}
	}

	/* Every source's rows in one row: nothing at all when nothing changed. */
	if (ring == NULL && any_rows)
		chronicle_history_insert(ts, packed);

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	duration_ms = INSTR_TIME_GET_MILLISEC(duration);
	if (ring)
	{
		ChronicleRingRecord rec;

		memset(&rec, 0, sizeof(rec));
		rec.nrows = (uint32) result.rows;
		rec.ts = ts;
		rec.duration_ms = duration_ms;
		rec.errors = result.errors;
		rec.keyframe = keyframe;
		rec.newsegment = newsegment;
		chronicle_ring_record_end(ring, &rec);
		if (!chronicle_ring_append(ring->data, ring->len, ts))
			lost = true;		/* too large: the next one must be full */
		else if (keyframe)
			ring_since_keyframe = 0;
	}
	else
		insert_snapshot_row(ts, segment, keyframe, by, duration_ms, result.rows,
							(int64) (pgWalUsage.wal_bytes - wal_start),
							result.errors);

	/*
	 * Sources that keep state of their own move it on now that their rows
	 * are written (an error from here on is no longer a source's).
	 */
	for (int i = 0; i < chronicle_nsources; i++)
		if (collected[i] && chronicle_sources[i]->written)
			chronicle_sources[i]->written();

	keyframe_pending = lost;
	if (keyframe && ring == NULL && by == CHRONICLE_BY_WORKER)
		last_keyframe = ts;
	if (by == CHRONICLE_BY_WORKER)
	{
		clock_segment = segment;
		clock_ts = ts;
		clock_taken = taken;
	}
	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->last_snapshot = ts;
		shared->snapshots++;
		shared->rows += result.rows;
		shared->wal_bytes += (int64) (pgWalUsage.wal_bytes - wal_start);
		shared->cost_us[shared->cost_next % CHRONICLE_COST_SLOTS] = duration_ms * 1000.0;
		shared->cost_next++;
		SpinLockRelease(&shared->mutex);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(snapcxt);
	return result;
}

/*
 * After promotion: write the snapshots of the standby ring into the tables,
 * oldest first, and empty the ring.  The caller provides the transaction
 * and the SPI connection, and has checked that the extension exists.
 * Snapshots before the ring's first keyframe (their predecessors were
 * evicted) cannot be read as sparse rows and are dropped.  Returns the
 * number of snapshots written; *upto is the ring position to consume with
 * chronicle_ring_consume() once the transaction committed.
 */
int64
chronicle_write_ring(uint64 *upto)
{
	uint64		tail,
				head;
	char	   *copy = chronicle_ring_copy(&tail, &head);
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	TimestampTz segment = 0;
	int64		written = 0;
	ChronicleRingReader reader;
	ChronicleRingRecord rec;
	ChronicleRingRow row;

	*upto = head;
	if (copy == NULL)
		return 0;

	/*
	 * No partitions are created here (that could wait for a lock): rows of a
	 * day without its partition land in the default partition, and the
	 * housekeeping of the next snapshot, due at once after promotion
	 * (chronicle_forget_previous()), moves them into their day.
	 */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle ring write",
								ALLOCSET_DEFAULT_SIZES);
	chronicle_ring_reader_init(&reader, copy, head - tail);
	while (chronicle_ring_next_record(&reader, &rec))
	{
		ChronicleEmitter ems[CHRONICLE_MAX_SOURCES];

		if (rec.newsegment || (segment == 0 && rec.keyframe))
			segment = rec.ts;
		if (segment == 0)
			continue;			/* before the first keyframe */

		MemoryContextSwitchTo(cxt);
		memset(ems, 0, sizeof(ems));
		while (chronicle_ring_next_row(&reader, &row))
		{
			int			si = row.source_index;
			ChronicleEmitter *em;
			const ChronicleSource *src;

			source_state_init(si);
			em = &ems[si];
			src = chronicle_sources[si];
			if (em->source == NULL)
			{
				em->source = src;
				em->state = &source_state[si];
				em->maxrows = rec.nrows;
				for (int c = 0; c < src->ncolumns; c++)
				{
					em->values[c] = palloc(sizeof(Datum) * rec.nrows);
					em->nulls[c] = palloc(sizeof(bool) * rec.nrows);
				}
			}
			for (int c = 0; c < src->ncolumns; c++)
			{
				em->nulls[c][em->nrows] = (row.values[c] == NULL);
				if (row.values[c] == NULL)
					em->values[c][em->nrows] = (Datum) 0;
				else
				{
					char	   *str = pnstrdup(row.values[c], row.lens[c]);

					em->values[c][em->nrows] =
						InputFunctionCall(&em->state->infunc[c], str,
										  em->state->typioparam[c], -1);
				}
			}
			em->nrows++;
		}
		{
			bytea	   *packed[CHRONICLE_MAX_SOURCES];
			bool		any = false;

			for (int i = 0; i < chronicle_nsources; i++)
			{
				packed[i] = NULL;
				if (ems[i].source)
				{
					ems[i].source_index = i;
					ems[i].keyframe = rec.keyframe;
					flush_rows(&ems[i], rec.ts);
					packed[i] = ems[i].packed;
					any |= (packed[i] != NULL);
				}
			}
			if (any)
				chronicle_history_insert(rec.ts, packed);
		}
		insert_snapshot_row(rec.ts, segment, rec.keyframe, CHRONICLE_BY_WORKER,
							rec.duration_ms, rec.nrows, 0, rec.errors);
		written++;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(cxt);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	pfree(copy);
	return written;
}
