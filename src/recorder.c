/*-------------------------------------------------------------------------
 *
 * recorder.c
 *		What every process and every piece of work of the recorder shares:
 *		the settings of its own sessions, the lock on the extension that it
 *		takes before it touches any table of it, and which errors end its
 *		transaction rather than one piece of its work.
 *
 * The collector (worker.c) and the housekeeper (housekeeper.c) are
 * processes; a snapshot (collector.c, also run by chronicle.snapshot())
 * and the housekeeping (housekeeping.c) are the work they do.  Each needs
 * these, and none of them needs another of them for these: they are here,
 * below all four, so that no two of them depend on each other both ways.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "recorder.h"

/*
 * The recorder's session settings (the collector's and the housekeeper's),
 * whatever the server's configuration, ALTER SYSTEM or ALTER DATABASE /
 * ROLE SET say: set with PGC_S_OVERRIDE, which outranks all of them, so a
 * reload does not bring another value back.  Each of these, set otherwise
 * for everyone, would stop recording (every snapshot failing, or the
 * worker exiting), change what it records, or make the recorder compete
 * with the workload it records; docs/design.md lists them.
 */
static const struct
{
	const char *name;
	const char *value;
}			recorder_settings[] =
{
	/* its writes need not wait for the WAL flush, nor a synchronous standby */
	{"synchronous_commit", "off"},
	{"search_path", "pg_catalog"},
	/* on: every snapshot's INSERT fails */
	{"default_transaction_read_only", "off"},
	/* serializable: a snapshot can fail on a conflict with a reader */
	{"default_transaction_isolation", "read committed"},
	/* meant for clients: a short one cancels every snapshot */
	{"statement_timeout", "0"},
	{"lock_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
	{"transaction_timeout", "0"},
	/* replica: the history's triggers would not fire */
	{"session_replication_role", "origin"},
	/* on: a source's caught error would end the worker */
	{"exit_on_error", "off"},
	/* lower: float values converted to text would lose digits */
	{"extra_float_digits", "1"},
	/* the recorder's queries take one process, never the workload's cores */
	{"max_parallel_workers_per_gather", "0"},
	{"jit", "off"},
	/*
	 * this server's history: a database's or role's chronicle.origin
	 * (ALTER DATABASE ... SET) must not turn the recorder's reads of the
	 * history (rollups, run_end) to an imported origin (05_origin.sql)
	 */
	{"chronicle.origin", "0"},
	{"chronicle.run_server", "0"},

	/*
	 * The recorder's own statements (its INSERTs, catalog look-ups and the
	 * pg_stat_statements read) are not the workload being measured: keep
	 * them out of pg_stat_statements, so they neither fill the statements
	 * history nor top a quiet run's statements.  Without pg_stat_statements
	 * loaded this sets a placeholder nobody reads; the library can only be
	 * preloaded, so it is never loaded later in this process.
	 */
	{"pg_stat_statements.track", "none"},
};

/* The recorder's settings, and its name in pg_stat_activity. */
void
chronicle_recorder_session(const char *appname)
{
	for (int i = 0; i < lengthof(recorder_settings); i++)
		SetConfigOption(recorder_settings[i].name, recorder_settings[i].value,
						PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", appname, PGC_USERSET, PGC_S_SESSION);
	pgstat_report_appname(appname);
}

/*
 * The version of pg_chronicle installed in the database we are connected to
 * (palloc'd) and its oid, or NULL and InvalidOid when it is not installed.
 * From 18 on through the catalog cache (pg_extension has one by name), which
 * spares every snapshot an index scan of pg_extension.
 */
static char *
extension_lookup(Oid *extoid)
{
	HeapTuple	tup;
	char	   *version = NULL;
	bool		isnull;
	Datum		d;
#if PG_VERSION_NUM < 180000
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
#endif

	*extoid = InvalidOid;
#if PG_VERSION_NUM >= 180000
	tup = SearchSysCache1(EXTENSIONNAME, CStringGetDatum("pg_chronicle"));
	if (HeapTupleIsValid(tup))
	{
		*extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		d = SysCacheGetAttr(EXTENSIONNAME, tup, Anum_pg_extension_extversion, &isnull);
		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
		ReleaseSysCache(tup);
	}
#else
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("pg_chronicle"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		*extoid = ((Form_pg_extension) GETSTRUCT(tup))->oid;
		d = heap_getattr(tup, Anum_pg_extension_extversion,
						 RelationGetDescr(rel), &isnull);
		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
#endif
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
 * Is this error the snapshot's rather than the source's?  A cancel, a
 * statement, lock or transaction timeout, a shutdown, a recovery conflict
 * or a serialization failure asks for the end of the statement or the
 * transaction; swallowing it in a source's subtransaction would let the
 * snapshot go on and commit.  So would any error raised while a cancel or
 * a termination is pending.  The housekeeping asks the same of its own
 * subtransactions' errors (housekeeping.c).
 */
bool
chronicle_error_ends_snapshot(int sqlerrcode)
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
