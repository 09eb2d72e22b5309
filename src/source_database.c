/*-------------------------------------------------------------------------
 *
 * source_database.c
 *		pg_stat_database: one row per database, and the shared-objects row
 *		(datid 0) the view also shows.
 *
 * TPS comes from here (xact_commit, xact_rollback).  The databases are
 * listed from pg_database, as the view does, but not on every snapshot
 * (databases.c says why).  numbackends is a gauge of
 * backend status, not a counter: the wait sampler records sessions, so it
 * is left out.  parallel_workers_* exist since PostgreSQL 18.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "databases.h"
#include "source.h"

#define DB_COLUMNS(C) \
	/* numbackends (a gauge) is not recorded */											\
	C(DB_DATID, "datid", OIDOID, KEY)	/* 0: shared objects */							\
	C(DB_DATNAME, "datname", TEXTOID, ATTRIBUTE)										\
	C(DB_XACT_COMMIT, "xact_commit", INT8OID, COUNTER)									\
	C(DB_XACT_ROLLBACK, "xact_rollback", INT8OID, COUNTER)								\
	C(DB_BLKS_READ, "blks_read", INT8OID, COUNTER)										\
	C(DB_BLKS_HIT, "blks_hit", INT8OID, COUNTER)										\
	C(DB_TUP_RETURNED, "tup_returned", INT8OID, COUNTER)								\
	C(DB_TUP_FETCHED, "tup_fetched", INT8OID, COUNTER)									\
	C(DB_TUP_INSERTED, "tup_inserted", INT8OID, COUNTER)								\
	C(DB_TUP_UPDATED, "tup_updated", INT8OID, COUNTER)									\
	C(DB_TUP_DELETED, "tup_deleted", INT8OID, COUNTER)									\
	C(DB_CONFLICTS, "conflicts", INT8OID, COUNTER)										\
	C(DB_TEMP_FILES, "temp_files", INT8OID, COUNTER)									\
	C(DB_TEMP_BYTES, "temp_bytes", INT8OID, COUNTER)									\
	C(DB_DEADLOCKS, "deadlocks", INT8OID, COUNTER)										\
	C(DB_CHECKSUM_FAILURES, "checksum_failures", INT8OID, COUNTER)						\
	C(DB_BLK_READ_TIME, "blk_read_time", FLOAT8OID, TIME)								\
	C(DB_BLK_WRITE_TIME, "blk_write_time", FLOAT8OID, TIME)								\
	C(DB_SESSION_TIME, "session_time", FLOAT8OID, TIME)									\
	C(DB_ACTIVE_TIME, "active_time", FLOAT8OID, TIME)									\
	C(DB_IDLE_IN_TRANSACTION_TIME, "idle_in_transaction_time", FLOAT8OID, TIME)			\
	C(DB_SESSIONS, "sessions", INT8OID, COUNTER)										\
	C(DB_SESSIONS_ABANDONED, "sessions_abandoned", INT8OID, COUNTER)					\
	C(DB_SESSIONS_FATAL, "sessions_fatal", INT8OID, COUNTER)							\
	C(DB_SESSIONS_KILLED, "sessions_killed", INT8OID, COUNTER)							\
	C(DB_PARALLEL_WORKERS_TO_LAUNCH, "parallel_workers_to_launch", INT8OID, COUNTER)	\
	C(DB_PARALLEL_WORKERS_LAUNCHED, "parallel_workers_launched", INT8OID, COUNTER)		\
	C(DB_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(DB_COLUMNS, database_columns, DB_NCOLUMNS, DB_NKEYS);

/* microseconds to the view's milliseconds */
#define US_TO_MS(x) Float8GetDatum((double) (x) / 1000.0)

static void
emit_database(ChronicleEmitter *emitter, Oid datid, const char *datname)
{
	PgStat_StatDBEntry *e = pgstat_fetch_stat_dbentry(datid);
	Datum		values[DB_NCOLUMNS] = {0};
	bool		nulls[DB_NCOLUMNS] = {0};

	/* No entry yet: the view shows zeros; nothing to record. */
	if (e == NULL)
		return;

	values[DB_DATID] = ObjectIdGetDatum(datid);
	if (datname)
		values[DB_DATNAME] = CStringGetTextDatum(datname);
	else
		nulls[DB_DATNAME] = true;
	values[DB_XACT_COMMIT] = Int64GetDatum(e->xact_commit);
	values[DB_XACT_ROLLBACK] = Int64GetDatum(e->xact_rollback);
	values[DB_BLKS_READ] = Int64GetDatum(e->blocks_fetched - e->blocks_hit);
	values[DB_BLKS_HIT] = Int64GetDatum(e->blocks_hit);
	values[DB_TUP_RETURNED] = Int64GetDatum(e->tuples_returned);
	values[DB_TUP_FETCHED] = Int64GetDatum(e->tuples_fetched);
	values[DB_TUP_INSERTED] = Int64GetDatum(e->tuples_inserted);
	values[DB_TUP_UPDATED] = Int64GetDatum(e->tuples_updated);
	values[DB_TUP_DELETED] = Int64GetDatum(e->tuples_deleted);
	values[DB_CONFLICTS] = Int64GetDatum(e->conflict_tablespace +
										 e->conflict_lock +
										 e->conflict_snapshot +
										 e->conflict_logicalslot +
										 e->conflict_bufferpin +
										 e->conflict_startup_deadlock);
	values[DB_TEMP_FILES] = Int64GetDatum(e->temp_files);
	values[DB_TEMP_BYTES] = Int64GetDatum(e->temp_bytes);
	values[DB_DEADLOCKS] = Int64GetDatum(e->deadlocks);
	/* NULL where the view says NULL: without data checksums. */
	values[DB_CHECKSUM_FAILURES] = Int64GetDatum(e->checksum_failures);
	nulls[DB_CHECKSUM_FAILURES] = !DataChecksumsEnabled();
	values[DB_BLK_READ_TIME] = US_TO_MS(e->blk_read_time);
	values[DB_BLK_WRITE_TIME] = US_TO_MS(e->blk_write_time);
	values[DB_SESSION_TIME] = US_TO_MS(e->session_time);
	values[DB_ACTIVE_TIME] = US_TO_MS(e->active_time);
	values[DB_IDLE_IN_TRANSACTION_TIME] = US_TO_MS(e->idle_in_transaction_time);
	values[DB_SESSIONS] = Int64GetDatum(e->sessions);
	values[DB_SESSIONS_ABANDONED] = Int64GetDatum(e->sessions_abandoned);
	values[DB_SESSIONS_FATAL] = Int64GetDatum(e->sessions_fatal);
	values[DB_SESSIONS_KILLED] = Int64GetDatum(e->sessions_killed);
#if PG_VERSION_NUM >= 180000
	values[DB_PARALLEL_WORKERS_TO_LAUNCH] = Int64GetDatum(e->parallel_workers_to_launch);
	values[DB_PARALLEL_WORKERS_LAUNCHED] = Int64GetDatum(e->parallel_workers_launched);
#else
	nulls[DB_PARALLEL_WORKERS_TO_LAUNCH] = nulls[DB_PARALLEL_WORKERS_LAUNCHED] = true;
#endif
	chronicle_set_timestamp(values, nulls, DB_STATS_RESET, e->stat_reset_timestamp);

	chronicle_emit_row(emitter, values, nulls);
}

static void
database_collect(ChronicleEmitter *emitter)
{
	const ChronicleDatabase *dbs;
	int			n;

	/* Shared objects, as the view's row with datid 0. */
	emit_database(emitter, InvalidOid, NULL);

	dbs = chronicle_databases(&n, NULL);
	for (int i = 0; i < n; i++)
		emit_database(emitter, dbs[i].oid, NameStr(dbs[i].name));
}

static const ChronicleAnalysis database_analysis = {
	.prefix = "database",
	.filters = (const char *const[]) {"datname", NULL},
	.per_op = (const ChroniclePerOp[]) {
		{"ms_per_blk_read", "blk_read_time", "blks_read"},
		{NULL}
	},
	.born_at_zero = true,
};

CHRONICLE_SOURCE(database, DB,
				 "pg_stat_database per database, and datid 0 for shared objects",
				 .analysis = &database_analysis);
