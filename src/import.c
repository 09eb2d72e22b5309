/*-------------------------------------------------------------------------
 *
 * import.c
 *		chronicle._import_transactions(): the pgbench rows of a run archive
 *		(docs/runs.md "Run archives"), decoded and inserted in one pass.
 *
 * An archive stores a run's pgbench transactions coded (format 2): ts in
 * microseconds since the row before (the first since 1970), tx_no as the
 * difference to the row before, status NULL for ok.  The client copies
 * that member into a temporary table whose identity column n numbers the
 * rows in the order of the file, and chronicle._import_run() inserts them
 * into chronicle.app_transaction.  Done in SQL, that is a window sum over
 * millions of rows sorted by n (external when they exceed work_mem) and
 * an insert of one row at a time.  This function reads the table once, in
 * the order its rows were copied in, adds the differences up as it goes
 * and inserts the rows in batches (table_multi_insert(), as COPY does),
 * with their index entries and constraints.
 *
 * The order: a heap scan of a table that was only ever appended to by one
 * COPY, in the transaction that created it, returns its rows in the order
 * they were copied in (a temporary table has no synchronized scans, and
 * nothing updated or deleted a row).  That is checked, not assumed: n of
 * every row must be the one after the row before's, or the import fails.
 *
 * No trigger of chronicle.app_transaction fires: the caller inserts the
 * run in its own transaction (so the foreign key holds without a check a
 * row) and calls this only while the table's triggers are the known ones
 * (chronicle._app_transaction_triggers_known(): the rollup's and the kept
 * results' ignore runs of other origins and uncommitted ones, the
 * central's stores rows of apply workers only).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* rows a batch, as COPY's (copyfrom.c, MAX_BUFFERED_TUPLES) */
#define IMPORT_BATCH 1000

/* The coded table's columns, read by name. */
enum
{
	IN_N, IN_TS, IN_CLIENT_ID, IN_TX_NO, IN_SCRIPT_NO, IN_LATENCY_US,
	IN_LAG_US, IN_RETRIES, IN_STATUS, IN_SOURCE, IN_NCOLS
};

static const struct
{
	const char *name;
	Oid			type;
}			coded_columns[IN_NCOLS] =
{
	{"n", INT8OID},
	{"ts", INT8OID},
	{"client_id", INT4OID},
	{"tx_no", INT8OID},
	{"script_no", INT4OID},
	{"latency_us", INT8OID},
	{"lag_us", INT8OID},
	{"retries", INT4OID},
	{"status", TEXTOID},
	{"source", TEXTOID},
};

/*
 * app_transaction's column of each coded column (run_id and ts are the
 * target's own), by name, with its type checked: the two tables are
 * defined in two places (50_app.sql, the client's archive.py).
 */
static void
map_columns(Relation coded, Relation target, AttrNumber *in, AttrNumber *out,
			AttrNumber *run_id)
{
	TupleDesc	cd = RelationGetDescr(coded);
	TupleDesc	td = RelationGetDescr(target);

	for (int c = 0; c < IN_NCOLS; c++)
	{
		in[c] = InvalidAttrNumber;
		out[c] = InvalidAttrNumber;
		for (int i = 0; i < cd->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(cd, i);

			if (!a->attisdropped && strcmp(NameStr(a->attname), coded_columns[c].name) == 0)
				in[c] = a->attnum;
		}
		if (in[c] == InvalidAttrNumber ||
			TupleDescAttr(cd, in[c] - 1)->atttypid != coded_columns[c].type)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("chronicle._import_transactions: table \"%s\" has no column %s of type %s",
							RelationGetRelationName(coded), coded_columns[c].name,
							format_type_be(coded_columns[c].type))));
		if (c == IN_N)
			continue;
		out[c] = get_attnum(RelationGetRelid(target), coded_columns[c].name);
		if (out[c] == InvalidAttrNumber)
			elog(ERROR, "chronicle.app_transaction has no column %s", coded_columns[c].name);
	}
	*run_id = get_attnum(RelationGetRelid(target), "run_id");
	if (*run_id == InvalidAttrNumber ||
		TupleDescAttr(td, *run_id - 1)->atttypid != INT4OID ||
		TupleDescAttr(td, out[IN_TS] - 1)->atttypid != TIMESTAMPTZOID)
		elog(ERROR, "chronicle.app_transaction is not as 50_app.sql defines it");
}

/* a + b, or the import fails: the archive's differences are damaged */
static int64
add_difference(int64 a, int64 b, const char *what)
{
	int64		sum;

	if (pg_add_s64_overflow(a, b, &sum))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("chronicle._import_transactions: the %s of the pgbench rows add up beyond bigint",
						what),
				 errhint("The archive's app_transaction member is damaged.")));
	return sum;
}

/* Inserts the batch's rows, then their index entries (as COPY does). */
static void
flush_batch(Relation target, ResultRelInfo *rri, EState *estate,
			TupleTableSlot **slots, int nslots, BulkInsertState bistate)
{
	table_multi_insert(target, slots, nslots, GetCurrentCommandId(true), 0, bistate);
	for (int i = 0; i < nslots; i++)
	{
		List	   *recheck;

		recheck = ExecInsertIndexTuples(rri, slots[i], estate, false, false,
										NULL, NIL, false);
		list_free(recheck);
		ExecClearTuple(slots[i]);
	}
}

PG_FUNCTION_INFO_V1(chronicle_import_transactions);

/*
 * chronicle._import_transactions(run_id integer, coded regclass) RETURNS
 * bigint: the rows of coded, decoded, inserted into app_transaction under
 * run_id; returns how many.
 */
Datum
chronicle_import_transactions(PG_FUNCTION_ARGS)
{
	int32		run;
	Oid			coded_oid;
	Oid			target_oid;
	Relation	coded;
	Relation	target;
	AttrNumber	in[IN_NCOLS];
	AttrNumber	out[IN_NCOLS];
	AttrNumber	run_attno;
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	TupleTableSlot *inslot;
	TupleTableSlot *slots[IMPORT_BATCH];
	TableScanDesc scan;
	MemoryContext batch_cxt;
	MemoryContext old;
	int			nslots = 0;
	int64		rows = 0;
	int64		us = 0;
	int64		tx_no = 0;
	const int64 epoch_shift = (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

	/*
	 * Not STRICT: the planner folds a STRICT call with a NULL constant away
	 * before its EXECUTE privilege is checked; a NULL is refused instead.
	 */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle._import_transactions: the run and the table must not be NULL")));
	run = PG_GETARG_INT32(0);
	coded_oid = PG_GETARG_OID(1);
	target_oid = get_relname_relid("app_transaction", get_namespace_oid("chronicle", false));
	if (!OidIsValid(target_oid))
		elog(ERROR, "chronicle.app_transaction does not exist");
	coded = table_open(coded_oid, AccessShareLock);
	if (coded->rd_rel->relpersistence != RELPERSISTENCE_TEMP ||
		coded->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("chronicle._import_transactions: \"%s\" is not a temporary table",
						RelationGetRelationName(coded))));
	target = table_open(target_oid, RowExclusiveLock);
	map_columns(coded, target, in, out, &run_attno);

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, target, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	bistate = GetBulkInsertState();
	for (int i = 0; i < IMPORT_BATCH; i++)
		slots[i] = table_slot_create(target, NULL);
	inslot = table_slot_create(coded, NULL);
	/* the batch's values (the text columns' copies); reset after each */
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "import batch",
									  ALLOCSET_DEFAULT_SIZES);

	scan = table_beginscan(coded, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, inslot))
	{
		TupleTableSlot *slot = slots[nslots];
		Datum	   *v = slot->tts_values;
		bool	   *isnull = slot->tts_isnull;
		bool		null;
		Datum		d;
		int64		ts;

		CHECK_FOR_INTERRUPTS();
		d = slot_getattr(inslot, in[IN_N], &null);
		if (null || DatumGetInt64(d) != rows + 1)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("chronicle._import_transactions: row %lld of \"%s\" is not the row after %lld",
							null ? -1LL : (long long) DatumGetInt64(d),
							RelationGetRelationName(coded), (long long) rows),
					 errdetail("The rows must be read in the order they were copied in.")));
		rows++;

		ExecClearTuple(slot);
		memset(isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
		old = MemoryContextSwitchTo(batch_cxt);
		for (int c = IN_TS; c < IN_NCOLS; c++)
		{
			d = slot_getattr(inslot, in[c], &null);
			if (c == IN_TS || c == IN_TX_NO)
			{
				/* a difference: NULL is damage, which the constraint tells */
				if (!null)
				{
					if (c == IN_TS)
					{
						us = add_difference(us, DatumGetInt64(d), "timestamps");
						if (pg_sub_s64_overflow(us, epoch_shift, &ts) || !IS_VALID_TIMESTAMP(ts))
							ereport(ERROR,
									(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
									 errmsg("chronicle._import_transactions: timestamp of row %lld out of range",
											(long long) rows),
									 errhint("The archive's app_transaction member is damaged.")));
						d = TimestampTzGetDatum(ts);
					}
					else
					{
						tx_no = add_difference(tx_no, DatumGetInt64(d), "transaction numbers");
						d = Int64GetDatum(tx_no);
					}
				}
			}
			else if (c == IN_STATUS && null)
			{
				d = CStringGetTextDatum("ok");
				null = false;
			}
			else if (!null && (c == IN_STATUS || c == IN_SOURCE))
				d = PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
			v[out[c] - 1] = d;
			isnull[out[c] - 1] = null;
		}
		MemoryContextSwitchTo(old);
		v[run_attno - 1] = Int32GetDatum(run);
		isnull[run_attno - 1] = false;
		ExecStoreVirtualTuple(slot);
		if (target->rd_att->constr)
			ExecConstraints(rri, slot, estate);

		if (++nslots == IMPORT_BATCH)
		{
			flush_batch(target, rri, estate, slots, nslots, bistate);
			nslots = 0;
			MemoryContextReset(batch_cxt);
			ResetPerTupleExprContext(estate);
		}
	}
	if (nslots > 0)
		flush_batch(target, rri, estate, slots, nslots, bistate);
	table_endscan(scan);

	for (int i = 0; i < IMPORT_BATCH; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	ExecDropSingleTupleTableSlot(inslot);
	FreeBulkInsertState(bistate);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	MemoryContextDelete(batch_cxt);
	/* the locks are kept to the end of the transaction */
	table_close(target, NoLock);
	table_close(coded, NoLock);
	PG_RETURN_INT64(rows);
}
