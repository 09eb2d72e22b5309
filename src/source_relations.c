/*-------------------------------------------------------------------------
 *
 * source_relations.c
 *		Relation sizes and table activity of the largest relations of every
 *		database (chronicle.relations_history): the forks, the indexes and
 *		the TOAST of each, and its pg_stat_all_tables and
 *		pg_statio_all_tables counters.
 *
 * A benchmark usually runs in another database than chronicle.database,
 * and a background worker connects to one database in its life.  So the
 * collector does not read the relations itself: every
 * chronicle.relations_interval it starts a round over the databases named
 * by chronicle.relations_databases, and for each in turn launches a
 * short-lived dynamic background worker, the relation reader, which
 * connects to that database, reads the top chronicle.relations_max tables
 * and materialized views by total size with one SPI query, writes them into
 * a DSM segment and exits.  One reader at a time: the recording needs one
 * background worker slot more, for a few milliseconds every interval.
 *
 * The collector never waits for a reader.  collect (every snapshot) looks
 * whether the reader in flight is done; if so it takes its rows, frees the
 * segment and launches the reader of the next database of the round; and it
 * emits, at every snapshot, the latest rows of every database, which the
 * sparse storage turns into no row unless they changed (and into the same
 * rows at a keyframe).  read_at says when the values were read.  A reading
 * that finds a relation's values unchanged keeps its earlier read_at, so
 * an idle relation writes nothing.
 *
 * The DSM segment is created by the collector (dsm_create, its mapping
 * pinned for the life of the session, not of the snapshot's transaction),
 * its handle passed to the reader in bgw_main_arg.  The collector owns it:
 * it detaches (and so frees it, the reader having detached at its exit)
 * once it took the rows, or once the reader stopped without writing them,
 * or after READER_TIMEOUT.  Should the collector exit first, the segment
 * goes with the last process attached.  The reader sets status last, after
 * a write barrier; the collector reads the rows after reading DONE and a
 * read barrier.
 *
 * Cost: an idle database is not read again, so it costs one look-up in
 * the cumulative statistics a round.  Idle: the sum of its
 * pg_stat_database counters (database_signature()) is what the last reader
 * left behind, its own counts flushed ("after").  The reader's own counts
 * are in that sum, and another session's flushed while the reader ran
 * would be too, without being in its rows: so the reader also takes the
 * sum before its reading ("before"), and the database counts as idle only
 * if the last two readings added the same to it (after - before: a
 * reader's own counts are the same from one reading of an unchanged
 * database to the next, being a new process with cold caches each time).
 * Anything else is read again: an idle database is read twice after its
 * last change (a few times more after DDL: the dead catalog rows a reader
 * meets change its own counts until they are pruned), then no more.  The reader's own transactions (its
 * connection's and its query's) count in the database's xact_commit and
 * blks_hit (two commits every interval of a database under load).
 *
 * Bad input:
 * - A database dropped: the collector's list of databases (read from
 *   pg_database again only after an invalidation, as source_database.c
 *   does) loses it and its rows stop.  Dropped between the launch and the
 *   connection, the reader cannot connect: it exits, quietly (its
 *   connection is made with log_min_messages at PANIC, since that FATAL is
 *   an expected race, not an error of the server), and the collector counts
 *   a skip (read_skips) and goes on with the next database.
 * - A relation dropped, rewritten or locked: the query skips relations an
 *   AccessExclusiveLock is held or awaited on (TRUNCATE, VACUUM FULL,
 *   CLUSTER, DROP in a transaction; REINDEX on an index of theirs), so
 *   that a table's owner cannot hold the database's readings up with
 *   one, reporting them as busy: their previous
 *   values are carried, since waiting would hold the reader behind the
 *   rewrite.  The race with a lock taken after that check ends in
 *   lock_timeout, which the reader catches: a counted skip, never an error
 *   in the log.  A relation dropped between the query's catalog read and its
 *   size (pg_relation_size() gives NULL) is busy too, and is gone from the
 *   next reading.  A rewrite keeps the oid and the counters: the sizes are
 *   those of the new files.
 * - A relation dropped and created again under the same name has another
 *   oid: relid is the RESET column, so that interval is a reset (its deltas
 *   NULL), never a negative or huge delta.  pg_stat_reset() and
 *   pg_stat_reset_single_table_counters() make the counters go backwards,
 *   which the engine takes as a reset too.  A rename is a new key: the old
 *   name keeps its history as recorded.
 * - A relation that leaves the top chronicle.relations_max and comes back
 *   is paired with its last row in the segment: the activity of its absence
 *   falls in the interval it comes back in (totals stay exact).
 *
 * Only the collector process reads relations: a chronicle.snapshot() from
 * another session records none (its process would exit before the reader
 * is done).
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
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "bgworker.h"
#include "databases.h"
#include "recorder.h"
#include "shared.h"
#include "source.h"

#define REL_COLUMNS(C) \
	/* the database, as named when read */										\
	C(REL_DATNAME, "datname", TEXTOID, KEY)										\
	/* schema.name, quoted where needed (format('%I.%I')), as when read */		\
	C(REL_RELATION, "relation", TEXTOID, KEY)									\
	/* pg_class.relkind: r (table) or m (materialized view) */					\
	C(REL_RELKIND, "relkind", TEXTOID, ATTRIBUTE)								\
	/* pg_class.oid: another oid under the same name is another relation */	\
	C(REL_RELID, "relid", OIDOID, RESET)										\
	/* when the reading that first saw these values started */				\
	C(REL_READ_AT, "read_at", TIMESTAMPTZOID, RECORDED)							\
	/* readings of the database skipped since the collector started */		\
	C(REL_READ_SKIPS, "read_skips", INT8OID, RECORDED)							\
	/* bytes: the main fork, free space map, visibility map (heap) */			\
	C(REL_MAIN_BYTES, "main_bytes", INT8OID, GAUGE)								\
	C(REL_FSM_BYTES, "fsm_bytes", INT8OID, GAUGE)								\
	C(REL_VM_BYTES, "vm_bytes", INT8OID, GAUGE)									\
	/* the TOAST table and its index, all forks; 0 without one */				\
	C(REL_TOAST_BYTES, "toast_bytes", INT8OID, GAUGE)							\
	/* the indexes, all forks (pg_indexes_size) */								\
	C(REL_INDEX_BYTES, "index_bytes", INT8OID, GAUGE)							\
	/* pg_total_relation_size: all of the above */							\
	C(REL_TOTAL_BYTES, "total_bytes", INT8OID, GAUGE)							\
	/* pg_stat_all_tables, as the view computes them */						\
	C(REL_SEQ_SCAN, "seq_scan", INT8OID, COUNTER)								\
	C(REL_SEQ_TUP_READ, "seq_tup_read", INT8OID, COUNTER)						\
	/* NULL without an index, as in the view */								\
	C(REL_IDX_SCAN, "idx_scan", INT8OID, COUNTER)								\
	C(REL_IDX_TUP_FETCH, "idx_tup_fetch", INT8OID, COUNTER)						\
	C(REL_N_TUP_INS, "n_tup_ins", INT8OID, COUNTER)								\
	C(REL_N_TUP_UPD, "n_tup_upd", INT8OID, COUNTER)								\
	C(REL_N_TUP_HOT_UPD, "n_tup_hot_upd", INT8OID, COUNTER)						\
	C(REL_N_TUP_NEWPAGE_UPD, "n_tup_newpage_upd", INT8OID, COUNTER)				\
	C(REL_N_TUP_DEL, "n_tup_del", INT8OID, COUNTER)								\
	C(REL_N_LIVE_TUP, "n_live_tup", INT8OID, GAUGE)								\
	C(REL_N_DEAD_TUP, "n_dead_tup", INT8OID, GAUGE)								\
	C(REL_N_MOD_SINCE_ANALYZE, "n_mod_since_analyze", INT8OID, GAUGE)			\
	C(REL_VACUUM_COUNT, "vacuum_count", INT8OID, COUNTER)						\
	C(REL_AUTOVACUUM_COUNT, "autovacuum_count", INT8OID, COUNTER)				\
	C(REL_ANALYZE_COUNT, "analyze_count", INT8OID, COUNTER)						\
	C(REL_AUTOANALYZE_COUNT, "autoanalyze_count", INT8OID, COUNTER)				\
	/* pg_statio_all_tables; idx_ NULL without an index, toast_ and tidx_ */	\
	/* NULL without TOAST, as in the view */									\
	C(REL_HEAP_BLKS_READ, "heap_blks_read", INT8OID, COUNTER)					\
	C(REL_HEAP_BLKS_HIT, "heap_blks_hit", INT8OID, COUNTER)						\
	C(REL_IDX_BLKS_READ, "idx_blks_read", INT8OID, COUNTER)						\
	C(REL_IDX_BLKS_HIT, "idx_blks_hit", INT8OID, COUNTER)						\
	C(REL_TOAST_BLKS_READ, "toast_blks_read", INT8OID, COUNTER)					\
	C(REL_TOAST_BLKS_HIT, "toast_blks_hit", INT8OID, COUNTER)					\
	C(REL_TIDX_BLKS_READ, "tidx_blks_read", INT8OID, COUNTER)					\
	C(REL_TIDX_BLKS_HIT, "tidx_blks_hit", INT8OID, COUNTER)

CHRONICLE_COLUMNS(REL_COLUMNS, relations_columns, REL_NCOLUMNS, REL_NKEYS);

/* The values the reader reads: the columns from main_bytes on. */
#define REL_FIRST_VALUE		REL_MAIN_BYTES
#define REL_NVALUES			(REL_NCOLUMNS - REL_FIRST_VALUE)

/* schema.name, each quoted: 2 * (63 * 2 + 2) + 1 + '\0' */
#define REL_NAME_LEN		(4 * NAMEDATALEN + 8)

/* A reader still running this long after its launch is stopped. */
#define READER_TIMEOUT_USECS	(60 * USECS_PER_SEC)

/* One relation of a reading, in the segment and in the collector's state. */
typedef struct RelEntry
{
	Oid			relid;
	char		relkind;
	bool		busy;			/* locked or gone: carry the previous values */
	TimestampTz read_at;
	char		relation[REL_NAME_LEN];
	int64		v[REL_NVALUES];
	bool		n[REL_NVALUES];
} RelEntry;

#define READING_LAUNCHED	0
#define READING_DONE		1
#define READING_FAILED		2	/* an expected error, caught: a skip */

/* The DSM segment of one reading: written by the reader, then status. */
typedef struct RelReading
{
	pg_atomic_uint32 status;
	int			max;			/* room for this many entries */
	int			n;
	TimestampTz read_at;
	uint64		before;			/* the database's statistics before it */
	uint64		after;			/* and after it, its own counts flushed */
	bool		have_signature;
	RelEntry	entries[FLEXIBLE_ARRAY_MEMBER];
} RelReading;

/* Settings. */
static int	relations_interval = 10;	/* s */
static int	relations_max = 20;
static char *relations_databases = NULL;

/* What the collector keeps of a database. */
typedef struct RelDatabase
{
	Oid			oid;
	NameData	name;			/* in pg_database now */
	NameData	read_name;		/* when its rows were read */
	bool		have_signature;
	uint64		signature;		/* "after" of its last reading */
	uint64		own;			/* after - before of its last reading */
	uint64		own_prev;		/* and of the reading before */
	bool		have_own_prev;
	int64		skips;
	int			nrows;
	RelEntry   *rows;			/* in rel_cxt */
} RelDatabase;

/*
 * Everything below outlives the snapshots: it lives in rel_cxt, a child of
 * TopMemoryContext made at the first collect, for the life of the
 * collector process (the rows emitted at every snapshot are these).
 */
static MemoryContext rel_cxt = NULL;
static RelDatabase *databases = NULL;
static int	ndatabases = 0;
static uint64 databases_gen = 0;	/* of databases.c's list matched up */

/* The round: databases still to read, in order, and when it started. */
static Oid *round_oids = NULL;
static int	round_len = 0;
static int	round_next = 0;
static TimestampTz round_started = 0;

/* The reader in flight, if any. */
static dsm_segment *reader_seg = NULL;
static BackgroundWorkerHandle *reader_handle = NULL;
static Oid	reader_db = InvalidOid;
static TimestampTz reader_launched = 0;

/* Said once in the log until a reading succeeds again. */
static bool said_no_slot = false;

PGDLLEXPORT void chronicle_relation_reader_main(Datum main_arg);

static void
relations_define_settings(void)
{
	DefineCustomIntVariable("chronicle.relations_interval",
							"Time between two rounds of reading relation sizes and table activity.",
							"Each round reads the databases of chronicle.relations_databases "
							"one after another, each in a short-lived background worker.",
							&relations_interval,
							10, 1, 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("chronicle.relations_max",
							"How many relations of each database are recorded, the largest by total size.",
							NULL,
							&relations_max,
							20, 1, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("chronicle.relations_databases",
							   "The databases whose relations are recorded: '*' for every database "
							   "that allows connections (templates aside), or a comma-separated list.",
							   NULL,
							   &relations_databases,
							   "*",
							   PGC_SIGHUP, GUC_LIST_INPUT,
							   NULL, NULL, NULL);
}

/* ----------------------------------------------------------------
 * The collector's side
 * ----------------------------------------------------------------
 */

/* The state of database oid, or NULL. */
static RelDatabase *
find_database(Oid oid)
{
	for (int i = 0; i < ndatabases; i++)
		if (databases[i].oid == oid)
			return &databases[i];
	return NULL;
}

/*
 * Match what is kept of each database up with the list of databases.c
 * after it was read again: the connectable ones (templates and databases
 * half-dropped aside), keeping the state and rows of those still there;
 * the rows of those gone go with them.  No catalog access here: nothing
 * between building the new list and swapping it in can fail but memory.
 */
static void
databases_sync(const ChronicleDatabase *dbs, int ndbs)
{
	RelDatabase *list;
	int			n = 0;

	list = MemoryContextAllocZero(rel_cxt, sizeof(RelDatabase) * Max(ndbs, 1));
	for (int i = 0; i < ndbs; i++)
	{
		RelDatabase *old;

		if (!dbs[i].connectable)
			continue;
		old = find_database(dbs[i].oid);
		if (old != NULL)
		{
			list[n] = *old;
			old->rows = NULL;	/* moved */
		}
		else
			list[n].oid = dbs[i].oid;
		list[n].name = dbs[i].name;
		n++;
	}

	for (int i = 0; i < ndatabases; i++)
		if (databases[i].rows != NULL)
			pfree(databases[i].rows);
	if (databases != NULL)
		pfree(databases);
	databases = list;
	ndatabases = n;
}

/* Is database name one of chronicle.relations_databases? */
static bool
database_selected(const char *name)
{
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (relations_databases == NULL || strcmp(relations_databases, "*") == 0)
		return true;
	raw = pstrdup(relations_databases);
	if (!SplitIdentifierString(raw, ',', &names))
		return false;			/* not a list: nothing selected */
	foreach(lc, names)
	{
		const char *item = (const char *) lfirst(lc);

		if (strcmp(item, "*") == 0 || strcmp(item, name) == 0)
		{
			found = true;
			break;
		}
	}
	list_free(names);
	pfree(raw);
	return found;
}

/*
 * What the statistics say of a database's activity, as one number: the
 * sum of counters that only grow, so that it changes when any of them
 * does.  Session counts and times are left out: the reader's exit moves
 * them after it took its own reading of this.
 */
static uint64
database_signature(PgStat_StatDBEntry *e)
{
	return (uint64) e->xact_commit + (uint64) e->xact_rollback +
		(uint64) e->blocks_fetched + (uint64) e->tuples_returned +
		(uint64) e->tuples_fetched + (uint64) e->tuples_inserted +
		(uint64) e->tuples_updated + (uint64) e->tuples_deleted;
}

static bool
values_equal(const RelEntry *a, const RelEntry *b)
{
	for (int i = 0; i < REL_NVALUES; i++)
		if (a->n[i] != b->n[i] || (!a->n[i] && a->v[i] != b->v[i]))
			return false;
	return true;
}

/*
 * A reading of database db is done: it replaces the database's rows.  A
 * busy relation keeps its previous row (or none); a relation whose values
 * did not change keeps its read_at.
 */
static void
take_reading(RelDatabase *db, RelReading *r)
{
	RelEntry   *rows = MemoryContextAlloc(rel_cxt, sizeof(RelEntry) * Max(r->n, 1));
	int			n = 0;

	for (int i = 0; i < r->n && i < r->max; i++)
	{
		const RelEntry *e = &r->entries[i];
		const RelEntry *old = NULL;
		bool		dup = false;

		for (int j = 0; j < db->nrows; j++)
			if (db->rows[j].relid == e->relid)
				old = &db->rows[j];
		if (e->busy)
		{
			if (old == NULL)
				continue;
			rows[n] = *old;
		}
		else
		{
			rows[n] = *e;
			rows[n].relation[REL_NAME_LEN - 1] = '\0';
			rows[n].read_at = r->read_at;
			if (old != NULL && strcmp(old->relation, e->relation) == 0 &&
				values_equal(old, e))
				rows[n].read_at = old->read_at;
		}
		/* one row a name (a carried name taken by another relation since) */
		for (int j = 0; j < n && !dup; j++)
			dup = strcmp(rows[j].relation, rows[n].relation) == 0;
		if (!dup)
			n++;
	}
	if (db->rows != NULL)
		pfree(db->rows);
	db->rows = rows;
	db->nrows = n;
	db->read_name = db->name;
	db->have_own_prev = db->have_signature && r->have_signature;
	db->own_prev = db->own;
	db->have_signature = r->have_signature;
	if (r->have_signature)
	{
		db->signature = r->after;
		db->own = r->after - r->before;
	}
}

/* The reader in flight is over: its segment and handle go. */
static void
reader_forget(void)
{
	if (reader_seg != NULL)
		dsm_detach(reader_seg);
	if (reader_handle != NULL)
		pfree(reader_handle);
	reader_seg = NULL;
	reader_handle = NULL;
	reader_db = InvalidOid;
}

/* A reading of db that did not happen. */
static void
count_skip(Oid dboid)
{
	RelDatabase *db = find_database(dboid);

	if (db != NULL)
		db->skips++;
}

/*
 * Look at the reader in flight: its rows taken when it is done, a skip
 * counted when it stopped without them or ran too long.  True while it
 * still runs.
 */
static bool
reader_poll(TimestampTz now)
{
	RelReading *r;
	uint32		status;
	pid_t		pid;
	BgwHandleStatus hs;

	if (reader_seg == NULL)
		return false;
	r = dsm_segment_address(reader_seg);
	hs = GetBackgroundWorkerPid(reader_handle, &pid);
	status = pg_atomic_read_u32(&r->status);
	if (status == READING_DONE)
	{
		RelDatabase *db;

		pg_read_barrier();
		db = find_database(reader_db);
		if (db != NULL)
			take_reading(db, r);
		reader_forget();
		return false;
	}
	if (status == READING_FAILED || hs == BGWH_STOPPED ||
		hs == BGWH_POSTMASTER_DIED)
	{
		/* could not connect (a database dropped), or a caught error */
		count_skip(reader_db);
		reader_forget();
		return false;
	}
	if (now - reader_launched > Max(READER_TIMEOUT_USECS,
									(int64) relations_interval * USECS_PER_SEC))
	{
		TerminateBackgroundWorker(reader_handle);
		count_skip(reader_db);
		reader_forget();
		return false;
	}
	return true;
}

/*
 * Launch the reader of database dboid; false when no background worker
 * slot is free (said once until a launch succeeds).
 */
static bool
reader_launch(Oid dboid, TimestampTz now)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	dsm_segment *seg;
	RelReading *r;
	Size		size = offsetof(RelReading, entries) +
		sizeof(RelEntry) * (Size) relations_max;
	MemoryContext oldcxt;
	bool		recording = (dboid == MyDatabaseId);

	seg = dsm_create(size, 0);
	/* the collector's for the life of the session, not of this transaction */
	dsm_pin_mapping(seg);
	r = dsm_segment_address(seg);
	memset(r, 0, offsetof(RelReading, entries));
	pg_atomic_init_u32(&r->status, READING_LAUNCHED);
	r->max = relations_max;

	chronicle_worker_describe(&worker, "chronicle_relation_reader_main",
							  "pg_chronicle relation reader",
							  BGWORKER_SHMEM_ACCESS |
							  BGWORKER_BACKEND_DATABASE_CONNECTION,
							  BgWorkerStart_ConsistentState, BGW_NEVER_RESTART);
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	memcpy(worker.bgw_extra, &dboid, sizeof(dboid));
	/* is it the database the collector records into? */
	memcpy(worker.bgw_extra + sizeof(dboid), &recording, sizeof(recording));

	oldcxt = MemoryContextSwitchTo(rel_cxt);
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		MemoryContextSwitchTo(oldcxt);
		dsm_detach(seg);
		if (!said_no_slot)
		{
			ereport(LOG,
					(errmsg("pg_chronicle: could not start a relation reader: no free background worker slot; "
							"the reading is tried again at the next snapshot"),
					 errhint("Raise max_worker_processes (needs a restart).")));
			said_no_slot = true;
		}
		return false;
	}
	MemoryContextSwitchTo(oldcxt);
	said_no_slot = false;
	reader_seg = seg;
	reader_handle = handle;
	reader_db = dboid;
	reader_launched = now;
	return true;
}

/* A new round: the selected databases, in pg_database's order. */
static void
round_start(TimestampTz now)
{
	int			n = 0;

	if (round_oids != NULL)
		pfree(round_oids);
	round_oids = MemoryContextAlloc(rel_cxt, sizeof(Oid) * Max(ndatabases, 1));
	for (int i = 0; i < ndatabases; i++)
		if (database_selected(NameStr(databases[i].name)))
			round_oids[n++] = databases[i].oid;
	round_len = n;
	round_next = 0;
	round_started = now;
}

/*
 * The next database of the round that needs reading is launched, if any:
 * those gone or not selected any more are passed over, and so are those
 * whose statistics did not move since their last reading.
 */
static void
round_advance(TimestampTz now)
{
	while (round_next < round_len)
	{
		Oid			oid = round_oids[round_next];
		RelDatabase *db = find_database(oid);
		PgStat_StatDBEntry *e;

		if (db == NULL || !database_selected(NameStr(db->name)))
		{
			round_next++;
			continue;
		}
		e = pgstat_fetch_stat_dbentry(oid);
		if (db->have_signature && db->have_own_prev && e != NULL &&
			database_signature(e) == db->signature &&
			db->own == db->own_prev &&
			strcmp(NameStr(db->name), NameStr(db->read_name)) == 0)
		{
			round_next++;		/* idle since: its rows stand */
			continue;
		}
		if (!reader_launch(oid, now))
		{
			/* no slot: this database again at the next snapshot */
			db->skips++;
			return;
		}
		round_next++;
		return;
	}
}

static void
emit_database(ChronicleEmitter *emitter, RelDatabase *db)
{
	for (int i = 0; i < db->nrows; i++)
	{
		const RelEntry *e = &db->rows[i];
		Datum		values[REL_NCOLUMNS] = {0};
		bool		nulls[REL_NCOLUMNS] = {0};
		char		kind[2] = {e->relkind, '\0'};

		values[REL_DATNAME] = CStringGetTextDatum(NameStr(db->read_name));
		values[REL_RELATION] = CStringGetTextDatum(e->relation);
		values[REL_RELKIND] = CStringGetTextDatum(kind);
		values[REL_RELID] = ObjectIdGetDatum(e->relid);
		values[REL_READ_AT] = TimestampTzGetDatum(e->read_at);
		values[REL_READ_SKIPS] = Int64GetDatum(db->skips);
		for (int v = 0; v < REL_NVALUES; v++)
		{
			values[REL_FIRST_VALUE + v] = Int64GetDatum(e->v[v]);
			nulls[REL_FIRST_VALUE + v] = e->n[v];
		}
		chronicle_emit_row(emitter, values, nulls);
	}
}

static void
relations_collect(ChronicleEmitter *emitter)
{
	TimestampTz now = GetCurrentTimestamp();
	const ChronicleDatabase *dbs;
	int			ndbs;
	uint64		gen;

	if (!chronicle_is_collector())
		return;
	if (rel_cxt == NULL)
		rel_cxt = AllocSetContextCreate(TopMemoryContext,
										"pg_chronicle relations",
										ALLOCSET_SMALL_SIZES);
	dbs = chronicle_databases(&ndbs, &gen);
	if (databases == NULL || gen != databases_gen)
	{
		databases_sync(dbs, ndbs);
		databases_gen = gen;
	}

	if (!reader_poll(now))
	{
		/*
		 * A new round when the interval has passed (half a snapshot
		 * interval early counts as on time, as chronicle.buffers_interval)
		 * and the last one is over.
		 */
		if (round_next >= round_len &&
			(round_started == 0 ||
			 now - round_started >= (int64) relations_interval * USECS_PER_SEC -
			 (int64) pg_strtoint32(GetConfigOption("chronicle.snapshot_interval",
												   false, false)) * 500))
			round_start(now);
		round_advance(now);
	}

	for (int i = 0; i < ndatabases; i++)
		if (databases[i].nrows > 0 && database_selected(NameStr(databases[i].name)))
			emit_database(emitter, &databases[i]);
}

/* ----------------------------------------------------------------
 * The reader
 * ----------------------------------------------------------------
 */

/*
 * The top $1 tables and materialized views by total size: user relations
 * (not the catalogs, not TOAST, not other sessions' temporary tables, not
 * the recorder's own schema in the database it records into, whose growth
 * is the recording's), each with its sizes and the columns of
 * pg_stat_all_tables and pg_statio_all_tables computed as those views do
 * (PostgreSQL 17 and 18), for the selected relations only.  A relation
 * with an AccessExclusiveLock held or awaited on it, its TOAST table or one
 * of their indexes (REINDEX holds one on the index alone) is busy: no size
 * is read (the size functions would wait for the lock), it ranks by
 * relpages.
 */
static const char *const reader_query =
"WITH locked AS MATERIALIZED ("
"  SELECT DISTINCT l.relation FROM pg_catalog.pg_locks l"
"   WHERE l.locktype = 'relation' AND l.database = $2"
"     AND l.mode = 'AccessExclusiveLock'),"
" c AS ("
"  SELECT c.oid, c.relkind, c.reltoastrelid,"
"         pg_catalog.format('%I.%I', n.nspname, c.relname) AS relation,"
"         EXISTS (SELECT FROM locked k"
"                  WHERE k.relation IN (c.oid, c.reltoastrelid)"
"                     OR k.relation IN (SELECT ix.indexrelid FROM pg_catalog.pg_index ix"
"                                        WHERE ix.indrelid IN (c.oid, c.reltoastrelid)))"
"           AS busy, c.relpages"
"    FROM pg_catalog.pg_class c"
"    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
"   WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'"
"     AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
"     AND n.nspname !~ '^pg_toast'"
"     AND NOT (n.nspname = $3 AND $4)),"
" t AS MATERIALIZED ("
"  SELECT c.*, s.total FROM c,"
"   LATERAL (SELECT CASE WHEN c.busy THEN NULL"
"                   ELSE pg_catalog.pg_total_relation_size(c.oid) END AS total) s"
"   ORDER BY coalesce(s.total, c.relpages::int8 * 8192) DESC, c.oid"
"   LIMIT $1)"
"SELECT t.oid, t.relkind, t.relation, t.busy OR t.total IS NULL,"
"       CASE WHEN NOT t.busy THEN pg_catalog.pg_relation_size(t.oid, 'main') END,"
"       CASE WHEN NOT t.busy THEN pg_catalog.pg_relation_size(t.oid, 'fsm') END,"
"       CASE WHEN NOT t.busy THEN pg_catalog.pg_relation_size(t.oid, 'vm') END,"
"       CASE WHEN t.busy THEN NULL WHEN t.reltoastrelid = 0 THEN 0"
"            ELSE pg_catalog.pg_total_relation_size(t.reltoastrelid) END,"
"       CASE WHEN NOT t.busy THEN pg_catalog.pg_indexes_size(t.oid) END,"
"       t.total,"
"       pg_catalog.pg_stat_get_numscans(t.oid),"
"       pg_catalog.pg_stat_get_tuples_returned(t.oid),"
"       i.idx_scan,"
"       i.idx_tup_fetch + pg_catalog.pg_stat_get_tuples_fetched(t.oid),"
"       pg_catalog.pg_stat_get_tuples_inserted(t.oid),"
"       pg_catalog.pg_stat_get_tuples_updated(t.oid),"
"       pg_catalog.pg_stat_get_tuples_hot_updated(t.oid),"
"       pg_catalog.pg_stat_get_tuples_newpage_updated(t.oid),"
"       pg_catalog.pg_stat_get_tuples_deleted(t.oid),"
"       pg_catalog.pg_stat_get_live_tuples(t.oid),"
"       pg_catalog.pg_stat_get_dead_tuples(t.oid),"
"       pg_catalog.pg_stat_get_mod_since_analyze(t.oid),"
"       pg_catalog.pg_stat_get_vacuum_count(t.oid),"
"       pg_catalog.pg_stat_get_autovacuum_count(t.oid),"
"       pg_catalog.pg_stat_get_analyze_count(t.oid),"
"       pg_catalog.pg_stat_get_autoanalyze_count(t.oid),"
"       pg_catalog.pg_stat_get_blocks_fetched(t.oid) - pg_catalog.pg_stat_get_blocks_hit(t.oid),"
"       pg_catalog.pg_stat_get_blocks_hit(t.oid),"
"       i.idx_blks_read, i.idx_blks_hit,"
"       CASE WHEN t.reltoastrelid <> 0 THEN"
"         pg_catalog.pg_stat_get_blocks_fetched(t.reltoastrelid) - pg_catalog.pg_stat_get_blocks_hit(t.reltoastrelid) END,"
"       CASE WHEN t.reltoastrelid <> 0 THEN pg_catalog.pg_stat_get_blocks_hit(t.reltoastrelid) END,"
"       x.idx_blks_read, x.idx_blks_hit"
"  FROM t"
"  LEFT JOIN LATERAL ("
"    SELECT sum(pg_catalog.pg_stat_get_numscans(ix.indexrelid))::int8 AS idx_scan,"
"           sum(pg_catalog.pg_stat_get_tuples_fetched(ix.indexrelid))::int8 AS idx_tup_fetch,"
"           sum(pg_catalog.pg_stat_get_blocks_fetched(ix.indexrelid)"
"               - pg_catalog.pg_stat_get_blocks_hit(ix.indexrelid))::int8 AS idx_blks_read,"
"           sum(pg_catalog.pg_stat_get_blocks_hit(ix.indexrelid))::int8 AS idx_blks_hit"
"      FROM pg_catalog.pg_index ix WHERE ix.indrelid = t.oid) i ON true"
"  LEFT JOIN LATERAL ("
"    SELECT sum(pg_catalog.pg_stat_get_blocks_fetched(ix.indexrelid)"
"               - pg_catalog.pg_stat_get_blocks_hit(ix.indexrelid))::int8 AS idx_blks_read,"
"           sum(pg_catalog.pg_stat_get_blocks_hit(ix.indexrelid))::int8 AS idx_blks_hit"
"      FROM pg_catalog.pg_index ix WHERE ix.indrelid = t.reltoastrelid) x"
"    ON t.reltoastrelid <> 0"
" ORDER BY t.total DESC NULLS LAST, t.oid";

/* The query's columns before the values. */
#define READER_LEADING	4

/* Errors a reading may meet on a busy server, caught and counted as skips. */
static bool
reader_expected_error(int sqlerrcode)
{
	return sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		sqlerrcode == ERRCODE_QUERY_CANCELED ||
		sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
		sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
		sqlerrcode == ERRCODE_UNDEFINED_TABLE ||
		sqlerrcode == ERRCODE_UNDEFINED_OBJECT;
}

/* Run the query and copy its rows into the segment. */
static void
reader_read(RelReading *r, bool recording_database)
{
	Oid			argtypes[4] = {INT4OID, OIDOID, TEXTOID, BOOLOID};
	Datum		args[4];
	int			ret;

	args[0] = Int32GetDatum(r->max);
	args[1] = ObjectIdGetDatum(MyDatabaseId);
	args[2] = CStringGetTextDatum(CHRONICLE_SCHEMA);
	args[3] = BoolGetDatum(recording_database);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	r->read_at = GetCurrentTimestamp();
	ret = SPI_execute_with_args(reader_query, 4, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "pg_chronicle: the relation reader's query failed: %d", ret);
	if (SPI_tuptable->tupdesc->natts != READER_LEADING + REL_NVALUES)
		elog(ERROR, "pg_chronicle: the relation reader's query returns %d columns",
			 SPI_tuptable->tupdesc->natts);
	for (uint64 i = 0; i < SPI_processed && i < (uint64) r->max; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		RelEntry   *e = &r->entries[r->n];
		bool		isnull;
		Datum		d;

		memset(e, 0, sizeof(RelEntry));
		e->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		e->relkind = DatumGetChar(SPI_getbinval(tup, desc, 2, &isnull));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		text_to_cstring_buffer(DatumGetTextPP(d), e->relation, REL_NAME_LEN);
		e->busy = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		for (int v = 0; v < REL_NVALUES; v++)
		{
			d = SPI_getbinval(tup, desc, READER_LEADING + 1 + v, &isnull);
			e->n[v] = isnull;
			e->v[v] = isnull ? 0 : DatumGetInt64(d);
		}
		r->n++;
	}
	SPI_finish();
}

/*
 * The relation reader: connect to the database of bgw_extra, read, write
 * into the segment of main_arg, exit.
 */
void
chronicle_relation_reader_main(Datum main_arg)
{
	dsm_segment *seg;
	RelReading *r;
	Oid			dboid;
	char	   *log_level;
	bool		recording_database;
	bool		have_before;
	MemoryContext cxt;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(dboid));
	memcpy(&recording_database, MyBgworkerEntry->bgw_extra + sizeof(dboid),
		   sizeof(recording_database));

	/* no resource owner yet: the mapping lasts until this process exits */
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		proc_exit(0);			/* the collector is gone, and its segment */
	r = dsm_segment_address(seg);

	/*
	 * The database may be gone since the collector launched this process: a
	 * race the collector counts as a skip, not an error to log.
	 */
	log_level = pstrdup(GetConfigOption("log_min_messages", false, false));
	SetConfigOption("log_min_messages", "panic", PGC_SUSET, PGC_S_OVERRIDE);
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	SetConfigOption("log_min_messages", log_level, PGC_SUSET, PGC_S_OVERRIDE);

	chronicle_recorder_session("pg_chronicle relation reader");
	/* never wait behind a rewrite: a lock not granted at once is a skip */
	SetConfigOption("lock_timeout", "200ms", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "30s", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * The database's statistics before the reading: nothing of this process
	 * is flushed yet (see the idle check, relations_collect).
	 */
	pgstat_clear_snapshot();
	{
		PgStat_StatDBEntry *e = pgstat_fetch_stat_dbentry(MyDatabaseId);

		have_before = (e != NULL);
		if (e != NULL)
			r->before = database_signature(e);
	}
	pgstat_clear_snapshot();

	cxt = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "pg_chronicle: relation sizes and activity");
	PG_TRY();
	{
		reader_read(r, recording_database);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (!reader_expected_error(edata->sqlerrcode))
			PG_RE_THROW();
		FlushErrorState();
		AbortCurrentTransaction();
		pg_write_barrier();
		pg_atomic_write_u32(&r->status, READING_FAILED);
		proc_exit(0);
	}
	PG_END_TRY();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	/*
	 * The database's statistics with this reading's own counts in them: the
	 * next round reads the database again only if they moved since.  Read
	 * outside a transaction, so that none is counted after it.
	 */
	pgstat_report_stat(true);
	pgstat_clear_snapshot();
	{
		PgStat_StatDBEntry *e = pgstat_fetch_stat_dbentry(MyDatabaseId);

		if (e != NULL)
		{
			r->after = database_signature(e);
			r->have_signature = have_before;
		}
	}
	pgstat_clear_snapshot();

	pg_write_barrier();
	pg_atomic_write_u32(&r->status, READING_DONE);
	proc_exit(0);
}

static const ChronicleAnalysis relations_analysis = {
	.prefix = "relation",
	.filters = (const char *const[]) {"datname", "relation", NULL},

	/*
	 * A relation enters the selection with the counts of its whole life (a
	 * table grows into the top, or the recording starts after it was
	 * made): its first row is a baseline.
	 */
	.born_at_zero = false,
	.gauge_unit = "bytes or tuples",
};

CHRONICLE_SOURCE(relations, REL,
				 "sizes (forks, indexes, TOAST) and pg_stat_all_tables / pg_statio_all_tables "
				 "counters of the largest relations of each database, read every chronicle.relations_interval",
				 .analysis = &relations_analysis,
				 .page_columns = (const char *const[]) {"main_bytes", "fsm_bytes", "vm_bytes", "toast_bytes",
				 "index_bytes", "total_bytes", NULL},
				 .define_settings = relations_define_settings);
