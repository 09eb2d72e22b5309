/*-------------------------------------------------------------------------
 *
 * central_publisher.c
 *		The publisher's side of chronicle.subscribe() (docs/central.md),
 *		run on the central database over a replication connection to the
 *		recording server: its slot, made in a transaction that reads with
 *		the slot's own snapshot the key dictionary and the runs to bring;
 *		the slot dropped when subscribe() fails after it; and the backfill
 *		of the history the server holds from before.  What comes through
 *		the slot afterwards is stored by the trigger of central.c.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "replication/walreceiver.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "central.h"

/* The conninfo and slot arguments, never NULL. */
static void
publisher_args(FunctionCallInfo fcinfo, char **conninfo, char **slot)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle: the publisher's conninfo and the slot's name must not be NULL")));
	*conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	*slot = text_to_cstring(PG_GETARG_TEXT_PP(1));
}

static WalReceiverConn *
publisher_connect(const char *conninfo)
{
	WalReceiverConn *conn;
	char	   *err = NULL;

	/* as CREATE SUBSCRIPTION: the library of the libpq calls */
	load_file("libpqwalreceiver", false);
	conn = walrcv_connect(conninfo, true, true, !superuser(), "pg_chronicle", &err);
	if (conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to the publisher: %s", err)));
	return conn;
}

typedef struct RunsBackfill RunsBackfill;
static RunsBackfill *backfill_runs_read(WalReceiverConn *conn, int32 origin,
										bool has_since, TimestampTz since);
static void backfill_runs_store(RunsBackfill *rb, int32 origin);

/* A command on the publisher that must succeed. */
static void
publisher_command(WalReceiverConn *conn, const char *sql)
{
	WalRcvExecResult *res = walrcv_exec(conn, sql, 0, NULL);

	if (res->status != WALRCV_OK_COMMAND)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not run \"%s\" on the publisher: %s", sql, res->err)));
	walrcv_clear_result(res);
}

static void
drop_slot(WalReceiverConn *conn, const char *slot)
{
	WalRcvExecResult *res;

	res = walrcv_exec(conn, psprintf("DROP_REPLICATION_SLOT %s WAIT", quote_identifier(slot)), 0, NULL);
	if (res->status != WALRCV_OK_COMMAND)
		ereport(WARNING,
				(errmsg("could not drop the replication slot \"%s\" on the publisher: %s",
						slot, res->err)));
	walrcv_clear_result(res);
}

/*
 * chronicle._publisher_prepare(conninfo, slot, origin, runs_since): on the
 * publisher, the logical replication slot the subscription will use,
 * created now in a transaction that reads with the slot's snapshot
 * (CRS_USE_SNAPSHOT, as a table synchronization does): every row
 * committed before the slot's start is read there, every row after comes
 * through the slot, none both ways.  Read with it: every key of the
 * dictionary, and the server's runs to backfill (backfill_runs()), stored
 * here under origin.  Returns the publisher's system identifier, version,
 * and keys (ids, sources, keys as text).  (One function of about 100
 * lines: its one PG_CATCH undoes, in order, what the steps between BEGIN
 * and COMMIT on the publisher made, the transaction and the slot, and
 * every one of those steps reads with the slot's snapshot.)
 */
PG_FUNCTION_INFO_V1(chronicle_publisher_prepare);

Datum
chronicle_publisher_prepare(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	char	   *slot;
	WalReceiverConn *conn;
	TupleDesc	tupdesc;
	Datum		result[5];
	bool		rnulls[5] = {false, false, false, false, false};
	volatile bool slot_made = false;	/* read in PG_CATCH */
	volatile bool in_xact = false;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	publisher_args(fcinfo, &conninfo, &slot);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle._publisher_prepare: origin must not be NULL")));
	conn = publisher_connect(conninfo);
	PG_TRY();
	{
		TimeLineID	tli;
		char	   *sysid = walrcv_identify_system(conn, &tli);
		XLogRecPtr	lsn;
		Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
		WalRcvExecResult *res;
		TupleTableSlot *ts;
		RunsBackfill *runs;
		TimestampTz began;
		ArrayBuildState *ids = initArrayResult(INT4OID, CurrentMemoryContext, false);
		ArrayBuildState *srcs = initArrayResult(TEXTOID, CurrentMemoryContext, false);
		ArrayBuildState *keys = initArrayResult(TEXTOID, CurrentMemoryContext, false);

		result[0] = DirectFunctionCall1(int8in, CStringGetDatum(sysid));
		result[1] = Int32GetDatum(walrcv_server_version(conn));

		/* the publisher can be read before the slot holds its WAL back */
		res = walrcv_exec(conn, "SELECT count(*) FROM chronicle.history_key", 1, types);
		if (res->status != WALRCV_OK_TUPLES)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not read chronicle.history_key on the publisher: %s", res->err),
					 errhint("The role of the connection needs pg_read_all_stats (or pg_monitor) and the pg_chronicle extension in the publisher's database.")));
		walrcv_clear_result(res);

		publisher_command(conn, "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ");
		in_xact = true;
		began = GetCurrentTimestamp();
		walrcv_create_slot(conn, slot, false, false, false, CRS_USE_SNAPSHOT, &lsn);
		slot_made = true;
		res = walrcv_exec(conn, "SELECT key_id, source, key::text FROM chronicle.history_key ORDER BY key_id",
						  3, types);
		if (res->status != WALRCV_OK_TUPLES)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not read chronicle.history_key on the publisher: %s", res->err)));
		ts = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
		while (tuplestore_gettupleslot(res->tuplestore, true, false, ts))
		{
			bool		n1,
						n2,
						n3;
			Datum		id = slot_getattr(ts, 1, &n1);
			Datum		s = slot_getattr(ts, 2, &n2);
			Datum		k = slot_getattr(ts, 3, &n3);

			if (n1 || n2 || n3)
				continue;
			accumArrayResult(ids, id, false, INT4OID, CurrentMemoryContext);
			accumArrayResult(srcs, s, false, TEXTOID, CurrentMemoryContext);
			accumArrayResult(keys, k, false, TEXTOID, CurrentMemoryContext);
		}
		ExecDropSingleTupleTableSlot(ts);
		walrcv_clear_result(res);
		result[2] = makeArrayResult(ids, CurrentMemoryContext);
		result[3] = makeArrayResult(srcs, CurrentMemoryContext);
		result[4] = makeArrayResult(keys, CurrentMemoryContext);

		/*
		 * The runs read in the snapshot, stored here after it ended: the
		 * publisher's VACUUM is held back for the reading only.
		 */
		runs = backfill_runs_read(conn, PG_GETARG_INT32(2), !PG_ARGISNULL(3),
								  PG_ARGISNULL(3) ? 0 : PG_GETARG_TIMESTAMPTZ(3));
		publisher_command(conn, "COMMIT");
		in_xact = false;
		elog(DEBUG1, "chronicle._publisher_prepare: the publisher's snapshot was held for %.3f s",
			 (double) (GetCurrentTimestamp() - began) / USECS_PER_SEC);
		backfill_runs_store(runs, PG_GETARG_INT32(2));
	}
	PG_CATCH();
	{
		/* no slot left behind to hold the publisher's WAL */
		if (in_xact)
			walrcv_clear_result(walrcv_exec(conn, "ROLLBACK", 0, NULL));
		if (slot_made)
			drop_slot(conn, slot);
		walrcv_disconnect(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	walrcv_disconnect(conn);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), result, rnulls)));
}

/*
 * chronicle._publisher_drop_slot(conninfo, slot): drops the slot made by
 * chronicle._publisher_prepare() when chronicle.subscribe() fails after it.
 */
PG_FUNCTION_INFO_V1(chronicle_publisher_drop_slot);

Datum
chronicle_publisher_drop_slot(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	char	   *slot;
	WalReceiverConn *conn;

	publisher_args(fcinfo, &conninfo, &slot);
	conn = publisher_connect(conninfo);

	PG_TRY();
	{
		drop_slot(conn, slot);
	}
	PG_FINALLY();
	{
		walrcv_disconnect(conn);
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * Backfill: what the publisher recorded before its slot, from its tables
 * ---------------------------------------------------------------------
 */

/* A timestamp as an exact SQL expression, whatever either side's DateStyle. */
static char *
ts_sql(TimestampTz ts)
{
	return psprintf("('epoch'::timestamptz + " INT64_FORMAT " * interval '1 microsecond')",
					ts + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
}

/* A query on the publisher that must return rows. */
static WalRcvExecResult *
publisher_query(WalReceiverConn *conn, const char *sql, int ntypes, const Oid *types)
{
	WalRcvExecResult *res = walrcv_exec(conn, sql, ntypes, types);

	if (res->status != WALRCV_OK_TUPLES)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read the publisher's history: %s", res->err)));
	return res;
}

/* The first timestamptz of the first row of a query (the publisher's). */
static bool
publisher_ts(WalReceiverConn *conn, const char *sql, TimestampTz *ts)
{
	Oid			types[1] = {TIMESTAMPTZOID};
	WalRcvExecResult *res = publisher_query(conn, sql, 1, types);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	bool		isnull = true;

	if (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		Datum		d = slot_getattr(slot, 1, &isnull);

		if (!isnull)
			*ts = DatumGetTimestampTz(d);
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	return !isnull;
}

/*
 * The columns of the publisher's table that chronicle.<archive> has too,
 * with this database's types: "a, b, c" into cols, their types.
 */
static int
publisher_columns(WalReceiverConn *conn, const char *table, const char *archive,
				  StringInfo cols, Oid *types, char **names)
{
	Oid			qtypes[2] = {TEXTOID, TEXTOID};
	Oid			relid = get_relname_relid(archive, get_namespace_oid("chronicle", false));
	WalRcvExecResult *res;
	TupleTableSlot *slot;
	int			n = 0;

	res = publisher_query(conn, psprintf("SELECT a.attname::text, a.atttypid::regtype::text FROM pg_catalog.pg_attribute a"
										 " WHERE a.attrelid = 'chronicle.%s'::pg_catalog.regclass"
										 " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", table),
						  2, qtypes);
	slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	resetStringInfo(cols);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		bool		isnull;
		char	   *name = TextDatumGetCString(slot_getattr(slot, 1, &isnull));
		char	   *type = TextDatumGetCString(slot_getattr(slot, 2, &isnull));
		AttrNumber	att = get_attnum(relid, name);
		Oid			typid;

		if (att == InvalidAttrNumber || strcmp(name, "origin") == 0)
			continue;
		typid = DatumGetObjectId(DirectFunctionCall1(regtypein, CStringGetDatum(type)));
		if (typid != get_atttype(relid, att))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column %s of the publisher's chronicle.%s is of type %s, not as here",
							name, table, type)));
		appendStringInfo(cols, "%s%s", n > 0 ? ", " : "", quote_identifier(name));
		if (names)
			names[n] = name;
		types[n++] = typid;
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	return n;
}

/* Each row of a query on the publisher into chronicle.<archive>. */
static int64
backfill_rows(WalReceiverConn *conn, int32 origin, const char *sql, int ntypes,
			  const Oid *types, const char *archive, bool history)
{
	WalRcvExecResult *res = publisher_query(conn, sql, ntypes, types);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "chronicle backfill row",
												 ALLOCSET_DEFAULT_SIZES);
	int64		n = 0;

	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(rowcxt);
		bool		should_free;
		HeapTuple	tup = ExecFetchSlotHeapTuple(slot, true, &should_free);

		CHECK_FOR_INTERRUPTS();

		/*
		 * A row naming a key committed after the dictionary was read came
		 * after the slot: the subscription brings it.
		 */
		if (chronicle_central_store_row(origin, archive, tup, res->tupledesc, history, true))
			n++;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(rowcxt);
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	MemoryContextDelete(rowcxt);
	return n;
}

/*
 * The rows of a run table (app_transaction, app_interval, app_metric) read
 * from the publisher, to be stored here in batches: the arrays of each
 * column, in one INSERT of unnest() a batch.
 */
#define APP_BATCH_ROWS 10000

typedef struct AppRows
{
	const char *table;
	int			ncols;
	int			run_col;		/* the column of run_id */
	Oid		   *types;
	int16	   *typlen;
	bool	   *typbyval;
	char	   *typalign;
	char	  **names;
	WalRcvExecResult *res;		/* the rows as read */
	/* the batch being filled */
	Datum	  **values;
	bool	  **nulls;
	int			nrows;
	MemoryContext cxt;			/* the batch's values, reset at each flush */
	SPIPlanPtr	plan;
} AppRows;

/* The runs a subscription brings (backfill_runs_read()). */
struct RunsBackfill
{
	int			nruns;
	int32	   *remote;			/* the server's run ids */
	int32	   *local;			/* the same runs' ids here */
	AppRows		app[3];
	WalRcvExecResult *marks;	/* NULL: none read */
};

/* Reads the rows of a.table of the runs of rb from the publisher. */
static void
app_rows_read(WalReceiverConn *conn, AppRows *a, const RunsBackfill *rb)
{
	StringInfoData cols;
	StringInfoData ids;

	initStringInfo(&cols);
	initStringInfo(&ids);
	a->types = palloc(sizeof(Oid) * MaxTupleAttributeNumber);
	a->names = palloc(sizeof(char *) * MaxTupleAttributeNumber);
	a->ncols = publisher_columns(conn, a->table, a->table, &cols, a->types, a->names);
	a->run_col = -1;
	for (int c = 0; c < a->ncols; c++)
		if (strcmp(a->names[c], "run_id") == 0)
			a->run_col = c;
	if (a->run_col < 0)
		elog(ERROR, "chronicle.%s has no run_id", a->table);
	for (int r = 0; r < rb->nruns; r++)
		appendStringInfo(&ids, "%s%d", r > 0 ? ", " : "", rb->remote[r]);
	a->res = publisher_query(conn, psprintf("SELECT %s FROM chronicle.%s WHERE run_id IN (%s)",
											cols.data, a->table, ids.data),
							 a->ncols, a->types);
}

/* The batch's rows into chronicle.<table>. */
static void
app_rows_flush(AppRows *a)
{
	Datum	   *args;

	if (a->nrows == 0)
		return;
	args = palloc(sizeof(Datum) * a->ncols);
	for (int c = 0; c < a->ncols; c++)
	{
		int			dims[1] = {a->nrows};
		int			lbs[1] = {1};

		args[c] = PointerGetDatum(construct_md_array(a->values[c], a->nulls[c], 1, dims, lbs,
													 a->types[c], a->typlen[c], a->typbyval[c],
													 a->typalign[c]));
	}
	if (SPI_execute_plan(a->plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write chronicle.%s", a->table);
	pfree(args);
	a->nrows = 0;
	MemoryContextReset(a->cxt);
}

/* Stores the rows read by app_rows_read(), each with its run here. */
static void
app_rows_store(AppRows *a, const RunsBackfill *rb)
{
	StringInfoData sql;
	Oid		   *argtypes = palloc(sizeof(Oid) * a->ncols);
	TupleTableSlot *slot;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO chronicle.%s (", a->table);
	for (int c = 0; c < a->ncols; c++)
		appendStringInfo(&sql, "%s%s", c > 0 ? ", " : "", quote_identifier(a->names[c]));
	appendStringInfoString(&sql, ") SELECT * FROM ROWS FROM (");
	a->typlen = palloc(sizeof(int16) * a->ncols);
	a->typbyval = palloc(sizeof(bool) * a->ncols);
	a->typalign = palloc(sizeof(char) * a->ncols);
	a->values = palloc(sizeof(Datum *) * a->ncols);
	a->nulls = palloc(sizeof(bool *) * a->ncols);
	for (int c = 0; c < a->ncols; c++)
	{
		argtypes[c] = get_array_type(a->types[c]);
		get_typlenbyvalalign(a->types[c], &a->typlen[c], &a->typbyval[c], &a->typalign[c]);
		a->values[c] = palloc(sizeof(Datum) * APP_BATCH_ROWS);
		a->nulls[c] = palloc(sizeof(bool) * APP_BATCH_ROWS);
		appendStringInfo(&sql, "%spg_catalog.unnest($%d)", c > 0 ? ", " : "", c + 1);
	}
	appendStringInfoChar(&sql, ')');
	a->plan = SPI_prepare(sql.data, a->ncols, argtypes);
	if (a->plan == NULL)
		elog(ERROR, "could not prepare the write of chronicle.%s: %s", a->table,
			 SPI_result_code_string(SPI_result));
	a->cxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle backfill batch",
								   ALLOCSET_DEFAULT_SIZES);
	a->nrows = 0;

	slot = MakeSingleTupleTableSlot(a->res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(a->res->tuplestore, true, false, slot))
	{
		MemoryContext oldcxt;
		int32		remote_run;
		int			i;

		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(slot);
		remote_run = DatumGetInt32(slot->tts_values[a->run_col]);
		for (i = 0; i < rb->nruns && rb->remote[i] != remote_run; i++)
			;
		if (i == rb->nruns)
			elog(ERROR, "a row of chronicle.%s of a run not asked for", a->table);
		oldcxt = MemoryContextSwitchTo(a->cxt);
		for (int c = 0; c < a->ncols; c++)
		{
			bool		isnull = slot->tts_isnull[c];
			Datum		d = slot->tts_values[c];

			if (c == a->run_col)
				d = Int32GetDatum(rb->local[i]);
			else if (!isnull)
				d = datumCopy(d, a->typbyval[c], a->typlen[c]);
			a->values[c][a->nrows] = d;
			a->nulls[c][a->nrows] = isnull;
		}
		MemoryContextSwitchTo(oldcxt);
		if (++a->nrows == APP_BATCH_ROWS)
			app_rows_flush(a);
	}
	app_rows_flush(a);
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(a->res);
	SPI_freeplan(a->plan);
	MemoryContextDelete(a->cxt);
}

/*
 * In the slot's snapshot: the publisher's runs deleted that the central
 * side holds (subscribed again after they were deleted), deleted here as
 * chronicle._central_store_run() deletes one whose deletion comes through
 * the slot.  SPI connected.
 */
static void
runs_deleted(WalReceiverConn *conn, int32 origin)
{
	Oid			types[1] = {INT4OID};
	WalRcvExecResult *res = publisher_query(conn, "SELECT run_id FROM chronicle.run_deleted",
											1, types);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);

	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		bool		isnull;
		Datum		id = slot_getattr(slot, 1, &isnull);
		Oid			argtypes[2] = {INT4OID, INT4OID};
		Datum		args[2] = {Int32GetDatum(origin), id};

		if (isnull || chronicle_central_local_run(origin, id) == 0)
			continue;
		if (SPI_execute_with_args("SELECT chronicle._central_store_run($1, 'run_deleted',"
								  " pg_catalog.jsonb_build_object('run_id', $2))",
								  2, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not delete a run the publisher deleted");
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
}

/*
 * In the slot's snapshot (chronicle._publisher_prepare()): the runs the
 * publisher deleted, deleted here (runs_deleted()); then the
 * publisher's runs that the central side does not hold yet, with a
 * backfill (has_since) those that ended at or after since or are still
 * open, without, those still open (whose later rows would come through
 * the slot to a run the central side lacks).  Each is stored here as
 * chronicle._central_store_run() stores one that comes through the slot
 * (the run rows' ended and warm-up as of the snapshot: later changes come
 * through the slot); their pgbench rows and metrics, and the marks from
 * since on (or from the first such run's start), are read, to be stored
 * by backfill_runs_store() once the publisher's transaction has ended.
 */
static RunsBackfill *
backfill_runs_read(WalReceiverConn *conn, int32 origin, bool has_since, TimestampTz since)
{
	MemoryContext cxt = CurrentMemoryContext;	/* rb's, past SPI_finish() */
	RunsBackfill *rb = palloc0(sizeof(RunsBackfill));
	Oid			types[3] = {INT4OID, TEXTOID, TIMESTAMPTZOID};
	WalRcvExecResult *res;
	TupleTableSlot *slot;
	TimestampTz first = 0;
	int64		n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	runs_deleted(conn, origin);
	res = publisher_query(conn,
						  psprintf("SELECT r.run_id, pg_catalog.to_jsonb(r)::text, r.started"
								   " FROM chronicle.run r WHERE r.origin = 0 AND (r.ended IS NULL%s)"
								   " ORDER BY r.run_id",
								   has_since ? psprintf(" OR r.ended >= %s", ts_sql(since)) : ""),
						  3, types);
	n = Max(tuplestore_tuple_count(res->tuplestore), 1);
	rb->remote = MemoryContextAlloc(cxt, sizeof(int32) * n);
	rb->local = MemoryContextAlloc(cxt, sizeof(int32) * n);
	slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		bool		isnull;
		Datum		id = slot_getattr(slot, 1, &isnull);
		TimestampTz started = DatumGetTimestampTz(slot_getattr(slot, 3, &isnull));
		Oid			store_types[2] = {INT4OID, TEXTOID};
		Datum		store_args[2] = {Int32GetDatum(origin), slot_getattr(slot, 2, &isnull)};
		Oid			map_types[2] = {INT4OID, INT4OID};
		Datum		map_args[2] = {Int32GetDatum(origin), id};

		/* a run the central side holds already (subscribed again) */
		if (chronicle_central_local_run(origin, id) != 0)
			continue;
		if (SPI_execute_with_args("SELECT chronicle._central_store_run($1, 'run', $2::jsonb)",
								  2, store_types, store_args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not store a run of the publisher");
		/*
		 * Read here, not by chronicle_central_local_run(): its read-only
		 * plan does not see that row yet.
		 */
		if (SPI_execute_with_args("SELECT run_id FROM chronicle.archive_run"
								  " WHERE origin = $1 AND remote_id = $2",
								  2, map_types, map_args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read chronicle.archive_run");
		if (SPI_processed == 0)
			continue;			/* not one of its own runs */
		rb->remote[rb->nruns] = DatumGetInt32(id);
		rb->local[rb->nruns] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
														   SPI_tuptable->tupdesc, 1, &isnull));
		if (rb->nruns == 0 || started < first)
			first = started;
		rb->nruns++;
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	SPI_finish();

	if (rb->nruns > 0)
	{
		rb->app[0].table = "app_transaction";
		rb->app[1].table = "app_interval";
		rb->app[2].table = "app_metric";
		for (int t = 0; t < lengthof(rb->app); t++)
			app_rows_read(conn, &rb->app[t], rb);
	}

	/*
	 * The marks: of each (ts, event, owner) how many the server holds, so
	 * that as many are stored less those stored already (before a lost
	 * slot): none twice, and two alike (one transaction's) stay two.
	 */
	if (has_since || rb->nruns > 0)
	{
		Oid			mtypes[4] = {TIMESTAMPTZOID, TEXTOID, TEXTOID, INT8OID};

		rb->marks = publisher_query(conn,
									psprintf("SELECT m.ts, m.event, m.owner, count(*) FROM chronicle.mark m"
											 " WHERE m.origin = 0 AND m.ts >= %s GROUP BY 1, 2, 3 ORDER BY 1",
											 ts_sql(has_since && (rb->nruns == 0 || since < first) ?
													since : first)),
									4, mtypes);
	}
	return rb;
}

/*
 * Sets session_replication_role for the rest of the transaction to value,
 * and returns what it was.
 */
static char *
replication_role_set(const char *value)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(value)};
	bool		isnull;
	char	   *was;

	if (SPI_execute("SELECT pg_catalog.current_setting('session_replication_role')", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read session_replication_role");
	was = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (SPI_execute_with_args("SELECT pg_catalog.set_config('session_replication_role', $1, true)",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not set session_replication_role");
	return was;
}

/*
 * Whether the pgbench rows of rb may be stored with app_transaction's
 * triggers skipped, their foreign key checked once here rather than once
 * per row by its trigger (half the time of the insert), as the import does
 * (39_import.sql, chronicle._app_transaction_triggers_known(): only while
 * the triggers are the known ones): every row's run is one of rb's, which
 * this transaction stored (backfill_runs_read(): the runs the central side
 * did not hold), and which no other session sees before it commits.
 */
static bool
app_transaction_checked_once(const RunsBackfill *rb)
{
	Datum	   *ids = palloc(sizeof(Datum) * rb->nruns);
	Oid			argtypes[2] = {INT4ARRAYOID, INT8OID};
	Datum		args[2];
	bool		isnull;
	bool		known;

	for (int r = 0; r < rb->nruns; r++)
		ids[r] = Int32GetDatum(rb->local[r]);
	args[0] = PointerGetDatum(construct_array_builtin(ids, rb->nruns, INT4OID));
	args[1] = Int64GetDatum(rb->nruns);
	if (SPI_execute_with_args("SELECT (SELECT count(*) FROM chronicle.run r WHERE r.run_id = ANY ($1)) = $2"
							  " AND chronicle._app_transaction_triggers_known()",
							  2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the triggers of chronicle.app_transaction");
	known = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return known && !isnull;
}

/* Stores what backfill_runs_read() read, under origin. */
static void
backfill_runs_store(RunsBackfill *rb, int32 origin)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int t = 0; t < lengthof(rb->app); t++)
	{
		char	   *role = NULL;

		if (rb->app[t].res == NULL)
			continue;
		/* rb->app[0]: the pgbench rows (backfill_runs_read()) */
		if (t == 0 && app_transaction_checked_once(rb))
			role = replication_role_set("replica");
		app_rows_store(&rb->app[t], rb);
		if (role != NULL)
			(void) replication_role_set(role);
	}
	if (rb->marks != NULL)
	{
		Oid			argtypes[5] = {INT4OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, INT8OID};
		Datum		args[5];
		TupleTableSlot *slot = MakeSingleTupleTableSlot(rb->marks->tupledesc, &TTSOpsMinimalTuple);

		args[0] = Int32GetDatum(origin);
		while (tuplestore_gettupleslot(rb->marks->tuplestore, true, false, slot))
		{
			bool		isnull;

			for (int c = 0; c < 4; c++)
				args[c + 1] = slot_getattr(slot, c + 1, &isnull);
			if (SPI_execute_with_args("INSERT INTO chronicle.mark (ts, event, owner, origin)"
									  " SELECT $2, $3, $4, $1 FROM pg_catalog.generate_series(1,"
									  "  $5 - (SELECT count(*) FROM chronicle.mark m WHERE m.origin = $1"
									  "         AND m.ts = $2 AND m.event = $3 AND m.owner = $4))",
									  5, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not store a mark of the publisher");
		}
		ExecDropSingleTupleTableSlot(slot);
		walrcv_clear_result(rb->marks);
	}
	SPI_finish();
}

/*
 * chronicle._publisher_backfill(conninfo, origin, since): the publisher's
 * snapshots and history from its latest keyframe at or before since (its
 * first snapshot when none), and its statement texts, into the archive
 * tables under origin, read an hour at a time: each query a snapshot of
 * its own on the publisher, so none holds back its VACUUM for long.
 * Called by chronicle.subscribe() once the slot exists and the keys it
 * read are mapped: every row committed before the slot is in the tables
 * read, every row after it comes through the subscription, and a row
 * that comes both ways is stored once.  Returns the snapshots stored.
 */
PG_FUNCTION_INFO_V1(chronicle_publisher_backfill);

Datum
chronicle_publisher_backfill(PG_FUNCTION_ARGS)
{
	char	   *conninfo;
	int32		origin;
	TimestampTz since;
	WalReceiverConn *conn;
	int64		nsnap = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle._publisher_backfill: conninfo, origin and since must not be NULL")));
	conninfo = text_to_cstring(PG_GETARG_TEXT_PP(0));
	origin = PG_GETARG_INT32(1);
	since = PG_GETARG_TIMESTAMPTZ(2);
	conn = publisher_connect(conninfo);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PG_TRY();
	{
		TimestampTz from;
		TimestampTz last;
		StringInfoData hcols;
		StringInfoData scols;
		StringInfoData tcols;
		Oid			htypes[MaxTupleAttributeNumber];
		Oid			stypes[MaxTupleAttributeNumber];
		Oid			ttypes[MaxTupleAttributeNumber];
		int			nh,
					ns,
					nt;

		initStringInfo(&hcols);
		initStringInfo(&scols);
		initStringInfo(&tcols);
		nh = publisher_columns(conn, "history", "archive_history", &hcols, htypes, NULL);
		ns = publisher_columns(conn, "snapshot", "archive_snapshot", &scols, stypes, NULL);
		nt = publisher_columns(conn, "statements_text", "archive_statements_text", &tcols, ttypes, NULL);
		if (publisher_ts(conn, psprintf("SELECT coalesce((SELECT max(ts) FROM chronicle.snapshot"
										"                  WHERE keyframe AND ts <= %s),"
										"                 (SELECT min(ts) FROM chronicle.snapshot))",
										ts_sql(since)), &from) &&
			publisher_ts(conn, "SELECT max(ts) FROM chronicle.snapshot", &last))
		{
			for (TimestampTz lo = from; lo <= last; lo += USECS_PER_HOUR)
			{
				TimestampTz hi = lo + USECS_PER_HOUR;

				backfill_rows(conn, origin,
							  psprintf("SELECT %s FROM chronicle.history WHERE ts >= %s AND ts < %s",
									   hcols.data, ts_sql(lo), ts_sql(hi)),
							  nh, htypes, "archive_history", true);
				nsnap += backfill_rows(conn, origin,
									   psprintf("SELECT %s FROM chronicle.snapshot WHERE ts >= %s AND ts < %s",
												scols.data, ts_sql(lo), ts_sql(hi)),
									   ns, stypes, "archive_snapshot", false);
			}
			backfill_rows(conn, origin,
						  psprintf("SELECT %s FROM chronicle.statements_text", tcols.data),
						  nt, ttypes, "archive_statements_text", false);
		}
	}
	PG_FINALLY();
	{
		walrcv_disconnect(conn);
	}
	PG_END_TRY();
	SPI_finish();
	PG_RETURN_INT64(nsnap);
}
