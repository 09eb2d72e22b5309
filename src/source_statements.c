/*-------------------------------------------------------------------------
 *
 * source_statements.c
 *		pg_stat_statements: per snapshot, the statements whose counters
 *		changed, the top chronicle.statements_max of them by execution plus
 *		planning time, and the query text once per (dbid, queryid).
 *
 * pg_stat_statements exports no C API, so its SQL function is called
 * through SPI, in the schema the extension lives in, with showtext =
 * false: the query texts live in a file that would otherwise be read every
 * snapshot.  Texts are fetched (showtext = true) only in a snapshot that
 * records a (dbid, queryid) this process has not stored yet.
 *
 * Versions: the columns of the installed extension version are looked up
 * from its function's OUT parameter names rather than assumed from
 * PG_VERSION_NUM, because an old extension version can be installed on a
 * new server until ALTER EXTENSION ... UPDATE.  blk_read_time and
 * blk_write_time are recorded from shared_blk_read_time and
 * shared_blk_write_time on 1.11 (PostgreSQL 17) and later; columns the
 * installed version lacks stay NULL.
 *
 * Which rows are written, and why deltas stay exact:
 *
 * The source keeps its own baseline per statement: the counters as last
 * recorded.  A statement is a candidate when its counters differ from that
 * baseline, and the candidates are ranked by the growth of total_exec_time
 * + total_plan_time since their baseline; the top N are emitted (and
 * become their own new baseline).  Every row written is a cumulative
 * reading, so the difference between two rows of a statement is exactly
 * its activity between them.  A statement that changed but fell outside
 * the top N is simply not written: it stays a candidate, its unrecorded
 * time keeps growing, and when it is written later its whole activity
 * since its previous row shows up in that later interval.  Sums over a
 * range are exact for the statements that were recorded at both ends;
 * only the attribution to intervals is coarser for the statements outside
 * the top N.  The first snapshot of a process (the start of a segment)
 * writes every statement, so each one has a baseline row in the segment.
 *
 * The collector treats a key that is not emitted as gone; when it comes
 * back it is written again, which is what we want: we only leave out keys
 * whose row would have been a repetition or which were outranked.
 *
 * The baselines and the set of texts stored follow what was written, not
 * what was read: a reading's changes to them wait until its rows are part
 * of the snapshot (statements_written, after the source's subtransaction
 * committed).  If the transaction, or a savepoint that holds those rows,
 * is rolled back later (a cancel, an error after this source, the caller
 * of chronicle.snapshot() rolling back), the next reading forgets every
 * baseline and stored text and starts over with a full baseline, as the
 * first reading of a process does; texts already stored are skipped by ON
 * CONFLICT DO NOTHING.
 *
 * Eviction: pg_stat_statements evicts the least used entries when full.
 * An entry evicted and re-added starts from zero, so its counters go
 * backwards (and stats_since changes, since 1.11): the source takes zero
 * as its baseline, and readers of the history treat a decrease or a new
 * stats_since as a reset, as for every other cumulative counter.  Nothing
 * here ever resets pg_stat_statements.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "source.h"

#define ST_COLUMNS(C) \
	C(ST_USERID, "userid", OIDOID, KEY)																\
	C(ST_DBID, "dbid", OIDOID, KEY)																	\
	C(ST_QUERYID, "queryid", INT8OID, KEY)															\
	C(ST_TOPLEVEL, "toplevel", BOOLOID, KEY)														\
	C(ST_PLANS, "plans", INT8OID, COUNTER)															\
	C(ST_TOTAL_PLAN_TIME, "total_plan_time", FLOAT8OID, TIME)										\
	C(ST_CALLS, "calls", INT8OID, COUNTER)															\
	C(ST_TOTAL_EXEC_TIME, "total_exec_time", FLOAT8OID, TIME)										\
	C(ST_ROWS, "rows", INT8OID, COUNTER)															\
	C(ST_SHARED_BLKS_HIT, "shared_blks_hit", INT8OID, COUNTER)										\
	C(ST_SHARED_BLKS_READ, "shared_blks_read", INT8OID, COUNTER)									\
	C(ST_SHARED_BLKS_DIRTIED, "shared_blks_dirtied", INT8OID, COUNTER)								\
	C(ST_SHARED_BLKS_WRITTEN, "shared_blks_written", INT8OID, COUNTER)								\
	C(ST_LOCAL_BLKS_HIT, "local_blks_hit", INT8OID, COUNTER)										\
	C(ST_LOCAL_BLKS_READ, "local_blks_read", INT8OID, COUNTER)										\
	C(ST_LOCAL_BLKS_DIRTIED, "local_blks_dirtied", INT8OID, COUNTER)								\
	C(ST_LOCAL_BLKS_WRITTEN, "local_blks_written", INT8OID, COUNTER)								\
	C(ST_TEMP_BLKS_READ, "temp_blks_read", INT8OID, COUNTER)										\
	C(ST_TEMP_BLKS_WRITTEN, "temp_blks_written", INT8OID, COUNTER)									\
	C(ST_BLK_READ_TIME, "blk_read_time", FLOAT8OID, TIME)	/* shared_blk_read_time on 1.11+ */		\
	C(ST_BLK_WRITE_TIME, "blk_write_time", FLOAT8OID, TIME)	/* shared_blk_write_time on 1.11+ */	\
	C(ST_WAL_RECORDS, "wal_records", INT8OID, COUNTER)												\
	C(ST_WAL_FPI, "wal_fpi", INT8OID, COUNTER)														\
	C(ST_WAL_BYTES, "wal_bytes", INT8OID, COUNTER)													\
	C(ST_STATS_SINCE, "stats_since", TIMESTAMPTZOID, RESET)											\
	/* added with the source (0.2.0): 1.11 (PostgreSQL 17) and 1.12 (18) */							\
	C(ST_LOCAL_BLK_READ_TIME, "local_blk_read_time", FLOAT8OID, TIME)								\
	C(ST_LOCAL_BLK_WRITE_TIME, "local_blk_write_time", FLOAT8OID, TIME)								\
	C(ST_TEMP_BLK_READ_TIME, "temp_blk_read_time", FLOAT8OID, TIME)									\
	C(ST_TEMP_BLK_WRITE_TIME, "temp_blk_write_time", FLOAT8OID, TIME)								\
	C(ST_WAL_BUFFERS_FULL, "wal_buffers_full", INT8OID, COUNTER)	/* 1.12+ */						\
	C(ST_PARALLEL_WORKERS_TO_LAUNCH, "parallel_workers_to_launch", INT8OID, COUNTER)	/* 1.12+ */	\
	C(ST_PARALLEL_WORKERS_LAUNCHED, "parallel_workers_launched", INT8OID, COUNTER)	/* 1.12+ */

CHRONICLE_COLUMNS(ST_COLUMNS, statements_columns, ST_NCOLUMNS, ST_NKEYS);

/*
 * Where each column comes from: the pg_stat_statements OUT parameter of the
 * column's name, except for those renamed over its versions, whose names
 * are listed here newest first.  A column none of whose names the installed
 * version has is NULL (toplevel, before 1.9: true, as every statement was).
 */
static const char *const statements_renamed[ST_NCOLUMNS][2] = {
	[ST_TOTAL_EXEC_TIME] = {"total_exec_time", "total_time"},
	[ST_BLK_READ_TIME] = {"shared_blk_read_time", "blk_read_time"},
	[ST_BLK_WRITE_TIME] = {"shared_blk_write_time", "blk_write_time"},
};

/*
 * chronicle.statements_max, and chronicle.statements_top, its deprecated
 * name of 0.1.0 (renamed: chronicle.statements_top() is a function that
 * means something else).  Each remembers whether it was set (in
 * postgresql.conf, ALTER SYSTEM or on the command line) rather than left at
 * its default; the value in force is statements_max_in_force().
 */
static int	statements_max = 100;
static int	statements_top_old = 100;
static bool statements_max_set = false;
static bool statements_top_old_set = false;

/* A statement's identity in pg_stat_statements. */
typedef struct StmtKey
{
	Oid			userid;
	Oid			dbid;
	int64		queryid;
	bool		toplevel;
} StmtKey;

/* Its counters as last recorded: the baseline of its next delta. */
typedef struct StmtBaseline
{
	StmtKey		key;
	int64		calls;
	int64		plans;
	double		exec_time;
	double		plan_time;
	TimestampTz stats_since;
	uint64		generation;		/* last snapshot that saw it */
} StmtBaseline;

typedef struct TextKey
{
	Oid			dbid;
	int64		queryid;
} TextKey;

/*
 * A text stored, and the day (UTC, days since 2000-01-01) its last_seen
 * was last set: a statement recorded on a later day sets it again, once
 * that day, so that its text is kept as long as the history that refers
 * to it (housekeeping drops texts not seen within chronicle.retention).
 */
typedef struct TextStored
{
	TextKey		key;
	int32		day;
} TextStored;

/* One statement of this reading. */
typedef struct StmtReading
{
	int			row;			/* in SPI_tuptable */
	double		delta_time;
	StmtBaseline now;
	StmtBaseline *base;			/* NULL: never recorded */
	bool		reset;
} StmtReading;

static MemoryContext statements_cxt = NULL;
static HTAB *baselines = NULL;	/* StmtKey -> StmtBaseline */
static HTAB *texts_stored = NULL;	/* TextKey -> TextStored */
static uint64 generation = 0;
static Oid	text_relid = InvalidOid;	/* chronicle.statements_text the caches
										 * belong to */

/*
 * What the last reading recorded, applied to the baselines and the stored
 * texts by statements_written() once its rows are part of the snapshot.
 * In the snapshot's memory: valid from the end of statements_collect() to
 * the statements_written() of the same snapshot, and cleared at the start
 * of every reading.
 */
static struct
{
	bool		valid;
	StmtReading **cand;			/* recorded first (nemit), then the rest */
	int			nemit;
	int			ncand;
	TextKey    *texts;			/* texts stored by this reading */
	int			ntexts;
	int32		day;			/* and the day they were stored */
} recorded;

/*
 * The innermost (sub)transaction holding rows whose readings were applied
 * to the caches, InvalidSubTransactionId when none: if it aborts, the
 * caches are ahead of the history and are forgotten (forget_caches).
 */
static SubTransactionId applied_subid = InvalidSubTransactionId;
static bool forget_caches = false;
static bool callbacks_registered = false;


/*
 * The value in force: chronicle.statements_max when it is set or the old
 * name is not; the old name only when it alone is set.  Decided when read,
 * not when assigned, so that the order of the two lines in the
 * configuration files does not matter.
 */
static int
statements_max_in_force(void)
{
	if (statements_top_old_set && !statements_max_set)
		return statements_top_old;
	return statements_max;
}

/*
 * Check hooks: pass "was it set" (any source but the default) to the
 * assign hook through extra, the only way a check hook may hand something
 * over, since a check does not always lead to an assignment.
 */
static bool
statements_check_set(void **extra, GucSource source)
{
	bool	   *set = guc_malloc(LOG, sizeof(bool));

	if (set == NULL)
		return false;
	*set = (source > PGC_S_DYNAMIC_DEFAULT);
	*extra = set;
	return true;
}

static bool
check_statements_max(int *newval, void **extra, GucSource source)
{
	return statements_check_set(extra, source);
}

static void
assign_statements_max(int newval, void *extra)
{
	statements_max_set = *(bool *) extra;
}

static bool
check_statements_top_old(int *newval, void **extra, GucSource source)
{
	static bool warned = false;

	/*
	 * Warn once, in the postmaster (or a single-user backend): every other
	 * process reads the same files and would repeat it.
	 */
	if (source > PGC_S_DYNAMIC_DEFAULT && !IsUnderPostmaster && !warned)
	{
		ereport(WARNING,
				(errcode(ERRCODE_WARNING_DEPRECATED_FEATURE),
				 errmsg("chronicle.statements_top is deprecated, use chronicle.statements_max"),
				 errdetail("chronicle.statements_top will be removed in the next release; "
						   "while chronicle.statements_max is not set, its value applies."),
				 errhint("Rename the setting in postgresql.conf (or ALTER SYSTEM RESET chronicle.statements_top and SET chronicle.statements_max).")));
		warned = true;
	}
	return statements_check_set(extra, source);
}

static void
assign_statements_top_old(int newval, void *extra)
{
	statements_top_old_set = *(bool *) extra;
}

/* Both names show the value in force. */
static const char *
show_statements_max(void)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%d", statements_max_in_force());
	return buf;
}

static void
statements_define_settings(void)
{
	DefineCustomIntVariable("chronicle.statements_max",
							"How many of the statements that changed are recorded per snapshot.",
							"The ones with the most execution plus planning time since they were "
							"last recorded; 0 records every statement that changed.",
							&statements_max,
							100, 0, INT_MAX,
							PGC_SIGHUP, 0,
							check_statements_max, assign_statements_max,
							show_statements_max);
	DefineCustomIntVariable("chronicle.statements_top",
							"Deprecated name of chronicle.statements_max.",
							"Applies only while chronicle.statements_max is not set; "
							"removed in the next release.",
							&statements_top_old,
							100, 0, INT_MAX,
							PGC_SIGHUP, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							check_statements_top_old, assign_statements_top_old,
							show_statements_max);
}

/* Is pg_stat_statements in shared_preload_libraries? */
static bool
statements_preloaded(void)
{
	const char *spl = GetConfigOption("shared_preload_libraries", true, false);
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (spl == NULL || strstr(spl, "pg_stat_statements") == NULL)
		return false;
	raw = pstrdup(spl);
	if (!SplitIdentifierString(raw, ',', &names))
	{
		pfree(raw);
		return false;
	}
	foreach(lc, names)
	{
		const char *name = (const char *) lfirst(lc);
		const char *base = strrchr(name, '/');

		base = base ? base + 1 : name;
		if (strncmp(base, "pg_stat_statements", 18) == 0 &&
			(base[18] == '\0' || strcmp(base + 18, DLSUFFIX) == 0))
			found = true;
	}
	list_free(names);
	pfree(raw);
	return found;
}

/*
 * Available when the library is preloaded (the function refuses to run
 * otherwise) and the extension is installed in the collector's database.
 */
static bool
statements_available(void)
{
	return statements_preloaded() &&
		OidIsValid(get_extension_oid("pg_stat_statements", true));
}

/*
 * Build "SELECT <our columns> FROM <schema>.pg_stat_statements(false)"
 * from the installed version's OUT parameters.  Returns NULL if the
 * function is not there (extension dropped between the check and now).
 */
static char *
build_query(char **schema_out)
{
	int			ret;
	char	   *schema = NULL;
	List	   *have = NIL;
	StringInfoData sql;

	ret = SPI_execute("SELECT n.nspname::text, a.name::text"
					  " FROM pg_catalog.pg_extension e"
					  " JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace"
					  " JOIN pg_catalog.pg_proc p ON p.pronamespace = e.extnamespace"
					  "  AND p.proname = 'pg_stat_statements' AND p.pronargs = 1"
					  " CROSS JOIN LATERAL pg_catalog.unnest(p.proargnames) AS a(name)"
					  " WHERE e.extname = 'pg_stat_statements'",
					  true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the columns of pg_stat_statements: %s",
			 SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *nsp = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		if (schema == NULL)
			schema = nsp;
		if (name)
			have = lappend(have, name);
	}
	if (schema == NULL)
		return NULL;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int c = 0; c < ST_NCOLUMNS; c++)
	{
		const char *from = NULL;
		const char *type;

		for (int k = 0; k < 2 && from == NULL; k++)
		{
			const char *cand = statements_renamed[c][0] == NULL ?
				(k == 0 ? statements_columns[c].name : NULL) :
				statements_renamed[c][k];
			ListCell   *lc;

			if (cand == NULL)
				break;
			foreach(lc, have)
			{
				if (strcmp((char *) lfirst(lc), cand) == 0)
				{
					from = cand;
					break;
				}
			}
		}
		switch (statements_columns[c].type)
		{
			case OIDOID:
				type = "pg_catalog.oid";
				break;
			case INT8OID:
				type = "pg_catalog.int8";
				break;
			case BOOLOID:
				type = "pg_catalog.bool";
				break;
			case TIMESTAMPTZOID:
				type = "pg_catalog.timestamptz";
				break;
			default:
				type = "pg_catalog.float8";
				break;
		}
		if (c > 0)
			appendStringInfoString(&sql, ", ");
		if (from)
			/* wal_bytes is numeric in the view; the cast keeps the others as they are */
			appendStringInfo(&sql, "s.%s::%s", quote_identifier(from), type);
		else if (c == ST_TOPLEVEL)
			appendStringInfoString(&sql, "true");
		else
			appendStringInfo(&sql, "NULL::%s", type);
	}
	appendStringInfo(&sql, " FROM %s.pg_stat_statements(false) AS s",
					 quote_identifier(schema));
	*schema_out = schema;
	return sql.data;
}

/*
 * The query of build_query(), prepared once and kept across snapshots: it
 * reads three catalogs and is planned with a join, which cost more than
 * the read of pg_stat_statements itself.  Any change to pg_proc or
 * pg_namespace (the function replaced by ALTER EXTENSION UPDATE, moved by
 * SET SCHEMA, dropped, a schema renamed) makes the next snapshot build and
 * prepare it again; the counter tells a build that an invalidation
 * arrived while it ran, so that it is not trusted.
 */
static SPIPlanPtr query_plan = NULL;
static char *query_schema = NULL;	/* in TopMemoryContext */
static uint64 query_invalidations = 0;
static uint64 query_built_at = 0;	/* query_invalidations it was built at */

static void
statements_query_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	query_invalidations++;
}

/*
 * The prepared read of pg_stat_statements(false) and the schema it lives
 * in, or NULL when the function is not there.
 */
static SPIPlanPtr
statements_query(char **schema_out)
{
	static bool registered = false;
	uint64		invalidations;
	char	   *sql;
	char	   *schema = NULL;
	SPIPlanPtr	plan;

	if (!registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, statements_query_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, statements_query_invalidate, (Datum) 0);
		registered = true;
	}
	if (query_plan != NULL && query_built_at == query_invalidations)
	{
		*schema_out = query_schema;
		return query_plan;
	}
	if (query_plan != NULL)
	{
		SPI_freeplan(query_plan);
		query_plan = NULL;
	}
	if (query_schema != NULL)
	{
		pfree(query_schema);
		query_schema = NULL;
	}

	invalidations = query_invalidations;
	sql = build_query(&schema);
	if (sql == NULL)
		return NULL;			/* dropped meanwhile */
	plan = SPI_prepare(sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	query_plan = plan;
	query_schema = MemoryContextStrdup(TopMemoryContext, schema);
	query_built_at = invalidations;
	*schema_out = query_schema;
	return plan;
}

static void
statements_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (applied_subid != InvalidSubTransactionId)
				forget_caches = true;
			applied_subid = InvalidSubTransactionId;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			applied_subid = InvalidSubTransactionId;
			break;
		default:
			break;
	}
}

static void
statements_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	if (applied_subid == InvalidSubTransactionId)
		return;
	/* Subtransaction ids grow: an abort at or above the rows loses them. */
	if (event == SUBXACT_EVENT_ABORT_SUB && mySubid <= applied_subid)
	{
		forget_caches = true;
		applied_subid = InvalidSubTransactionId;
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB && mySubid == applied_subid)
		applied_subid = parentSubid;
}

/* Forget the baselines and the stored texts: the next reading is a first. */
static void
statements_forget(void)
{
	if (statements_cxt != NULL)
		MemoryContextReset(statements_cxt);
	baselines = NULL;
	texts_stored = NULL;
	generation = 0;
	forget_caches = false;
}

/* A hash table of the source's, in statements_cxt (reset to forget it). */
static HTAB *
statements_hash(const char *name, Size keysize, Size entrysize)
{
	HASHCTL		ctl = {0};

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = statements_cxt;
	return hash_create(name, 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

static void
statements_init(void)
{
	if (statements_cxt == NULL)
		statements_cxt = AllocSetContextCreate(TopMemoryContext,
											   "chronicle statements",
											   ALLOCSET_DEFAULT_SIZES);
	if (!callbacks_registered)
	{
		RegisterXactCallback(statements_xact_callback, NULL);
		RegisterSubXactCallback(statements_subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (baselines == NULL)
		baselines = statements_hash("chronicle statements baselines",
									sizeof(StmtKey), sizeof(StmtBaseline));
	if (texts_stored == NULL)
		texts_stored = statements_hash("chronicle statements texts",
									   sizeof(TextKey), sizeof(TextStored));
}

static int
cmp_reading(const void *a, const void *b)
{
	const StmtReading *x = *(StmtReading *const *) a;
	const StmtReading *y = *(StmtReading *const *) b;

	if (x->delta_time != y->delta_time)
		return x->delta_time > y->delta_time ? -1 : 1;
	return (x->row > y->row) - (x->row < y->row);
}

static int64
get_int8(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col + 1, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

static double
get_float8(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col + 1, &isnull);

	return isnull ? 0.0 : DatumGetFloat8(d);
}

/* The UTC day of the snapshot, as TextStored keeps it. */
static int32
snapshot_day(void)
{
	return (int32) (GetCurrentTransactionStartTimestamp() / USECS_PER_DAY);
}

/*
 * Store the query texts of the recorded statements not stored yet (or not
 * seen yet today: their last_seen moves on), without their passwords
 * (chronicle._redact_statement()).
 */
static void
store_texts(const char *schema, StmtReading **emit, int nemit,
			TextKey **newtexts, int *nnew)
{
	int32		today = snapshot_day();
	Datum	   *dbids = palloc(sizeof(Datum) * nemit);
	Datum	   *queryids = palloc(sizeof(Datum) * nemit);
	int			n = 0;
	Datum		args[2];
	Oid			argtypes[2] = {OIDARRAYOID, INT8ARRAYOID};
	char	   *sql;
	int			ret;

	*newtexts = palloc(sizeof(TextKey) * Max(nemit, 1));
	for (int i = 0; i < nemit; i++)
	{
		TextKey		tk;
		TextStored *stored;
		bool		dup = false;

		memset(&tk, 0, sizeof(tk));
		tk.dbid = emit[i]->now.key.dbid;
		tk.queryid = emit[i]->now.key.queryid;
		stored = hash_search(texts_stored, &tk, HASH_FIND, NULL);
		if (stored != NULL && stored->day == today)
			continue;
		for (int j = 0; j < n && !dup; j++)
			dup = ((*newtexts)[j].dbid == tk.dbid &&
				   (*newtexts)[j].queryid == tk.queryid);
		if (dup)
			continue;
		(*newtexts)[n] = tk;
		dbids[n] = ObjectIdGetDatum(tk.dbid);
		queryids[n] = Int64GetDatum(tk.queryid);
		n++;
	}
	*nnew = n;
	if (n == 0)
		return;

	/* Another snapshot's transaction may be storing the same texts. */
	chronicle_dictionary_lock();
	args[0] = PointerGetDatum(construct_array_builtin(dbids, n, OIDOID));
	args[1] = PointerGetDatum(construct_array_builtin(queryids, n, INT8OID));
	sql = psprintf("INSERT INTO chronicle.statements_text AS t (dbid, queryid, query, last_seen)"
				   " SELECT DISTINCT ON (s.dbid, s.queryid) s.dbid, s.queryid,"
				   "  chronicle._redact_statement(s.query), pg_catalog.now()"
				   " FROM %s.pg_stat_statements(true) AS s"
				   " JOIN ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(dbid, queryid)"
				   "  ON s.dbid = u.dbid AND s.queryid = u.queryid"
				   " WHERE s.query IS NOT NULL"
				   " ON CONFLICT (dbid, queryid) DO UPDATE SET last_seen = excluded.last_seen"
				   "  WHERE t.last_seen < excluded.last_seen",
				   quote_identifier(schema));
	ret = SPI_execute_with_args(sql, 2, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not store query texts: %s",
			 SPI_result_code_string(ret));
}

/*
 * One row of pg_stat_statements into r, held against its baseline: is it a
 * candidate for the snapshot (new, reset, or changed since recorded)?
 */
static bool
read_statement(HeapTuple tup, TupleDesc desc, StmtReading *r)
{
	bool		isnull;
	Datum		d;
	double		base_time;

	memset(&r->now.key, 0, sizeof(StmtKey));
	d = SPI_getbinval(tup, desc, ST_QUERYID + 1, &isnull);
	if (isnull)
		return false;			/* nothing to key it by */
	r->now.key.queryid = DatumGetInt64(d);
	r->now.key.userid = DatumGetObjectId(SPI_getbinval(tup, desc, ST_USERID + 1, &isnull));
	r->now.key.dbid = DatumGetObjectId(SPI_getbinval(tup, desc, ST_DBID + 1, &isnull));
	r->now.key.toplevel = DatumGetBool(SPI_getbinval(tup, desc, ST_TOPLEVEL + 1, &isnull));
	r->now.calls = get_int8(tup, desc, ST_CALLS);
	r->now.plans = get_int8(tup, desc, ST_PLANS);
	r->now.exec_time = get_float8(tup, desc, ST_TOTAL_EXEC_TIME);
	r->now.plan_time = get_float8(tup, desc, ST_TOTAL_PLAN_TIME);
	d = SPI_getbinval(tup, desc, ST_STATS_SINCE + 1, &isnull);
	r->now.stats_since = isnull ? 0 : DatumGetTimestampTz(d);

	r->base = hash_search(baselines, &r->now.key, HASH_FIND, NULL);
	if (r->base)
	{
		r->base->generation = generation + 1;
		/* evicted and re-added: it counts from zero again */
		r->reset = (r->now.calls < r->base->calls ||
					r->now.plans < r->base->plans ||
					r->now.exec_time < r->base->exec_time ||
					r->now.plan_time < r->base->plan_time ||
					r->now.stats_since != r->base->stats_since);
	}
	if (r->base && !r->reset)
	{
		if (r->now.calls == r->base->calls &&
			r->now.plans == r->base->plans &&
			r->now.exec_time == r->base->exec_time &&
			r->now.plan_time == r->base->plan_time)
			return false;		/* unchanged since recorded */
		base_time = r->base->exec_time + r->base->plan_time;
	}
	else
		base_time = 0.0;
	r->delta_time = r->now.exec_time + r->now.plan_time - base_time;
	return true;
}

static void
statements_collect(ChronicleEmitter *emitter)
{
	char	   *schema = NULL;
	SPIPlanPtr	plan;
	int			ret;
	SPITupleTable *tuptable;
	TupleDesc	desc;
	uint64		nrows;
	StmtReading *readings;
	StmtReading **cand;
	int			ncand = 0;
	int			nemit;
	int			limit = statements_max_in_force();
	bool		first;
	TextKey    *newtexts;
	int			nnew;

	/*
	 * The extension dropped and created again means an empty history: start
	 * over with a full baseline and store the texts again.
	 */
	{
		Oid			nsp = get_namespace_oid(CHRONICLE_SCHEMA, false);
		Oid			relid = get_relname_relid("statements_text", nsp);

		if (relid != text_relid || forget_caches)
			statements_forget();
		text_relid = relid;
	}
	recorded.valid = false;
	statements_init();
	first = (hash_get_num_entries(baselines) == 0 && generation == 0);

	plan = statements_query(&schema);
	if (plan == NULL)
		return;					/* dropped meanwhile */
	ret = SPI_execute_plan(plan, NULL, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_stat_statements: %s",
			 SPI_result_code_string(ret));
	tuptable = SPI_tuptable;
	desc = tuptable->tupdesc;
	nrows = SPI_processed;

	readings = palloc0(sizeof(StmtReading) * Max(nrows, 1));
	cand = palloc(sizeof(StmtReading *) * Max(nrows, 1));
	for (uint64 i = 0; i < nrows; i++)
	{
		StmtReading *r = &readings[i];

		r->row = (int) i;
		if (read_statement(tuptable->vals[i], desc, r))
			cand[ncand++] = r;
	}

	/* The first snapshot of a segment records everything: the baselines. */
	if (first || limit == 0 || ncand <= limit)
		nemit = ncand;
	else
	{
		qsort(cand, ncand, sizeof(StmtReading *), cmp_reading);
		nemit = limit;
	}

	for (int i = 0; i < nemit; i++)
	{
		HeapTuple	tup = tuptable->vals[cand[i]->row];
		Datum		values[ST_NCOLUMNS];
		bool		nulls[ST_NCOLUMNS];

		heap_deform_tuple(tup, desc, values, nulls);
		chronicle_emit_row(emitter, values, nulls);
	}

	store_texts(schema, cand, nemit, &newtexts, &nnew);

	/* The caches move on when the rows are written: statements_written(). */
	recorded.cand = cand;
	recorded.nemit = nemit;
	recorded.ncand = ncand;
	recorded.texts = newtexts;
	recorded.ntexts = nnew;
	recorded.day = snapshot_day();
	recorded.valid = true;
}

/*
 * The rows of the last reading are part of the snapshot: the recorded
 * readings become the baselines and their texts count as stored.
 */
static void
statements_written(void)
{
	StmtReading **cand = recorded.cand;

	if (!recorded.valid)
		return;
	recorded.valid = false;

	generation++;
	for (int i = 0; i < recorded.nemit; i++)
	{
		StmtBaseline *b = hash_search(baselines, &cand[i]->now.key, HASH_ENTER, NULL);
		StmtKey		key = b->key;

		*b = cand[i]->now;
		b->key = key;
		b->generation = generation;
	}
	for (int i = 0; i < recorded.ntexts; i++)
	{
		TextStored *stored = hash_search(texts_stored, &recorded.texts[i],
										 HASH_ENTER, NULL);

		stored->day = recorded.day;
	}

	/* A reset entry not recorded now counts from zero from now on. */
	for (int i = recorded.nemit; i < recorded.ncand; i++)
	{
		if (cand[i]->base && cand[i]->reset)
			(void) hash_search(baselines, &cand[i]->now.key, HASH_REMOVE, NULL);
	}

	/* Forget the statements pg_stat_statements no longer has. */
	{
		HASH_SEQ_STATUS seq;
		StmtBaseline *b;

		hash_seq_init(&seq, baselines);
		while ((b = hash_seq_search(&seq)) != NULL)
		{
			if (b->generation != generation)
				(void) hash_search(baselines, &b->key, HASH_REMOVE, NULL);
		}
	}

	/* Remember where these rows live, in case it is rolled back. */
	if (applied_subid == InvalidSubTransactionId ||
		GetCurrentSubTransactionId() > applied_subid)
		applied_subid = GetCurrentSubTransactionId();
}

CHRONICLE_SOURCE(statements, ST,
				 "pg_stat_statements counters of the statements that changed (top N by total time)",
				 .available = statements_available,
				 .written = statements_written,
				 .define_settings = statements_define_settings);
