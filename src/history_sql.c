/*-------------------------------------------------------------------------
 *
 * history_sql.c
 *		The SQL functions of the packed history: chronicle._unpack() behind
 *		the views, chronicle._pack() for bulk loads, and the views' INSTEAD
 *		OF trigger chronicle._history_write().
 *
 * The collector writes packed values itself (collector.c, history.h):
 * these are the ways in and out for SQL, so they take nothing on trust.
 * chronicle._unpack() may be called by the monitoring roles on bytes of
 * their own (the decoder checks every length), and decodes a batch at a
 * time into its tuplestore; chronicle._pack() and the trigger check their
 * rows against the source's columns before anything is packed.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "history_int.h"
#include "pg_chronicle.h"

/* The index of the source named name, or an error. */
static int
source_index(const char *name)
{
	for (int i = 0; i < chronicle_nsources; i++)
		if (strcmp(chronicle_sources[i]->name, name) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("chronicle: no source named \"%s\"", name),
			 errhint("The sources are listed by chronicle.source_status().")));
	return -1;					/* keep compiler quiet */
}

/* ---------------------------------------------------------------------
 * SQL: chronicle._unpack(source, ts, data), behind the views
 * ---------------------------------------------------------------------
 */
PG_FUNCTION_INFO_V1(chronicle_unpack);

typedef struct UnpackSRF
{
	KeyDict    *dict;
	ReturnSetInfo *rsinfo;
	UnpackBatches batches;
} UnpackSRF;

/* UnpackBatches' flush: a batch of rows into the function's tuplestore. */
static void
unpack_flush_srf(ChronicleRows *rows, void *arg)
{
	UnpackSRF  *srf = (UnpackSRF *) arg;
	const ChronicleSource *src = chronicle_sources[rows->source_index];
	MemoryContext oldcxt;

	chronicle_rows_fill_keys(rows, 0, srf->dict);
	oldcxt = MemoryContextSwitchTo(srf->rsinfo->econtext->ecxt_per_query_memory);
	for (int r = 0; r < rows->nrows; r++)
	{
		Datum		values[CHRONICLE_MAX_COLUMNS];
		bool		nulls[CHRONICLE_MAX_COLUMNS];

		for (int c = 0; c < src->ncolumns; c++)
		{
			values[c] = rows->values[c][r];
			nulls[c] = rows->nulls[c][r];
		}
		tuplestore_putvalues(srf->rsinfo->setResult, srf->rsinfo->setDesc,
							 values, nulls);
	}
	MemoryContextSwitchTo(oldcxt);
	/* the batch's text values are in the tuplestore now */
	MemoryContextReset(srf->batches.valcxt);
}

Datum
chronicle_unpack(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KeyDict    *dict = (KeyDict *) fcinfo->flinfo->fn_extra;
	const ChronicleSource *src;
	TupleDesc	tupdesc;
	ChronicleRows rows;
	UnpackSRF	srf;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle._unpack: source must not be NULL")));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		return (Datum) 0;

	if (dict == NULL)
	{
		dict = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KeyDict));
		dict->si = source_index(text_to_cstring(PG_GETARG_TEXT_PP(0)));
		dict->cxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt,
										  "chronicle keys",
										  ALLOCSET_SMALL_SIZES);
		fcinfo->flinfo->fn_extra = dict;
	}
	src = chronicle_sources[dict->si];
	tupdesc = rsinfo->setDesc;
	if (tupdesc->natts != src->ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("chronicle._unpack: source \"%s\" has %d columns, the caller expects %d",
						src->name, src->ncolumns, tupdesc->natts)));
	for (int c = 0; c < src->ncolumns; c++)
		if (TupleDescAttr(tupdesc, c)->atttypid != src->columns[c].type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._unpack: column %d of source \"%s\" (%s) has another type than the caller expects",
							c + 1, src->name, src->columns[c].name)));

	/*
	 * The bytes may be anyone's: decoded a batch at a time into the
	 * tuplestore, which goes to disk past work_mem.
	 */
	memset(&rows, 0, sizeof(rows));
	rows.source_index = dict->si;
	srf.dict = dict;
	srf.rsinfo = rsinfo;
	srf.batches.flush = unpack_flush_srf;
	srf.batches.arg = &srf;
	srf.batches.valcxt = AllocSetContextCreate(CurrentMemoryContext,
											   "chronicle unpack batch",
											   ALLOCSET_DEFAULT_SIZES);
	chronicle_history_unpack(&rows, PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_BYTEA_PP(2), &srf.batches);
	unpack_flush_srf(&rows, &srf);
	MemoryContextDelete(srf.batches.valcxt);
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * SQL: chronicle._pack(source, ts, rows, complete), for bulk loads
 *
 * rows: an array of any row type with the source's columns (by name; a
 * column it lacks is NULL), e.g. array_agg() of a table of the old layout
 * or of the view itself.  Used by the upgrade from 0.1.0 and by
 * chronicle._history_load().
 * ---------------------------------------------------------------------
 */
PG_FUNCTION_INFO_V1(chronicle_pack_rows);

/*
 * attno[c]: the attribute of the row type td that is column c of src, by
 * name, or -1 when it has none (the column is NULL).  An error when its
 * type is another, or when the rows lack a key column.
 */
static void
pack_rows_columns(const ChronicleSource *src, TupleDesc td, int *attno)
{
	for (int c = 0; c < src->ncolumns; c++)
	{
		attno[c] = -1;
		for (int a = 0; a < td->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(td, a);

			if (att->attisdropped || strcmp(NameStr(att->attname), src->columns[c].name) != 0)
				continue;
			if (att->atttypid != src->columns[c].type)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("chronicle._pack: column %s of the rows has type %s, source \"%s\" has %s",
								src->columns[c].name, format_type_be(att->atttypid),
								src->name, format_type_be(src->columns[c].type))));
			attno[c] = a;
		}
		if (c < src->nkeys && attno[c] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("chronicle._pack: the rows have no key column %s of source \"%s\"",
							src->columns[c].name, src->name)));
	}
}

/*
 * One element of the rows (a row of type td) into row rows->nrows, its
 * columns found through attno (the caller counts the row).
 */
static void
pack_rows_row(ChronicleRows *rows, const ChronicleSource *src, TupleDesc td,
			  const int *attno, Datum elem)
{
	HeapTupleHeader th;
	HeapTupleData tup;
	Datum		vals[MaxTupleAttributeNumber];
	bool		nulls[MaxTupleAttributeNumber];
	int			r = rows->nrows;

	th = DatumGetHeapTupleHeader(elem);
	tup.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = th;
	heap_deform_tuple(&tup, td, vals, nulls);
	for (int c = 0; c < src->ncolumns; c++)
	{
		rows->nulls[c][r] = attno[c] < 0 || nulls[attno[c]];
		rows->values[c][r] = rows->nulls[c][r] ? (Datum) 0 : vals[attno[c]];
		if (c < src->nkeys && rows->nulls[c][r])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("chronicle._pack: key column %s of source \"%s\" must not be NULL",
							src->columns[c].name, src->name)));
	}
}

/*
 * An error when the key of row rows->nrows is in seen already (the key
 * strings of the rows before it): two rows of a key at one ts.
 */
static void
pack_rows_check_key(const ChronicleRows *rows, HTAB *seen, StringInfo keybuf)
{
	int			si = rows->source_index;
	const ChronicleSource *src = chronicle_sources[si];
	int			r = rows->nrows;
	Datum		kv[CHRONICLE_MAX_COLUMNS];
	bool		kn[CHRONICLE_MAX_COLUMNS];
	bool		found;

	/* the key columns of row r, gathered */
	for (int c = 0; c < src->nkeys; c++)
	{
		kv[c] = rows->values[c][r];
		kn[c] = false;
	}
	chronicle_key_string(src, kv, kn, keybuf);
	(void) hash_search(seen, keybuf->data, HASH_ENTER, &found);
	if (found)
	{
		/* the key as the dictionary shows it: {a,b,c} */
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("chronicle._pack: two rows of key %s of source \"%s\" at one ts",
						OidOutputFunctionCall(F_ARRAY_OUT, chronicle_key_array(si, kv, kn)),
						src->name)));
	}
}

Datum
chronicle_pack_rows(PG_FUNCTION_ARGS)
{
	const ChronicleSource *src;
	int			si;
	TimestampTz ts;
	ArrayType  *arr;
	Oid			elemtype;
	TupleDesc	td;
	int			attno[CHRONICLE_MAX_COLUMNS];
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
	ChronicleRows rows;
	StringInfoData keybuf;
	HTAB	   *seen = NULL;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("chronicle._pack: source and ts must not be NULL")));
	if (PG_ARGISNULL(2))
		PG_RETURN_NULL();
	si = source_index(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	src = chronicle_sources[si];
	ts = PG_GETARG_TIMESTAMPTZ(1);
	arr = PG_GETARG_ARRAYTYPE_P(2);
	elemtype = ARR_ELEMTYPE(arr);
	if (!type_is_rowtype(elemtype) || elemtype == RECORDOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("chronicle._pack: rows must be an array of a named row type"),
				 errhint("Aggregate the rows of a table or view: array_agg(t) FROM t.")));
	td = lookup_rowtype_tupdesc(elemtype, -1);
	pack_rows_columns(src, td, attno);

	get_typlenbyvalalign(elemtype, &elemlen, &elembyval, &elemalign);
	deconstruct_array(arr, elemtype, elemlen, elembyval, elemalign,
					  &elems, &elemnulls, &nelems);
	memset(&rows, 0, sizeof(rows));
	rows.source_index = si;
	rows.complete = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	chronicle_rows_grow(&rows, src, Max(nelems, 1));
	initStringInfo(&keybuf);
	if (src->nkeys > 0)
	{
		HASHCTL		ctl;

		ctl.keysize = CHRONICLE_KEY_LEN;
		ctl.entrysize = CHRONICLE_KEY_LEN;
		ctl.hcxt = CurrentMemoryContext;
		seen = hash_create("chronicle keys packed", Max(nelems, 16), &ctl,
						   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	/* chronicle_key_id() reads and adds keys; the rows stay in our context */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int e = 0; e < nelems; e++)
	{
		if (elemnulls[e])
			continue;
		pack_rows_row(&rows, src, td, attno, elems[e]);
		if (src->nkeys > 0)
			pack_rows_check_key(&rows, seen, &keybuf);
		else if (rows.nrows > 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("chronicle._pack: source \"%s\" has one row at a time, not %d",
							src->name, nelems)));
		rows.nrows++;
	}
	chronicle_rows_key_ids(&rows);
	SPI_finish();
	ReleaseTupleDesc(td);
	if (rows.nrows == 0)
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(chronicle_pack(&rows, ts));
}

/* ---------------------------------------------------------------------
 * SQL: INSERT, UPDATE and DELETE on the views (INSTEAD OF triggers)
 *
 * For tests, generators and repairs by hand: the collector writes packed
 * rows directly.  A row goes into (or out of) the packed value of its
 * source at its ts: decoded, changed, encoded again.
 * ---------------------------------------------------------------------
 */

/* The row of a view's tuple: ts, then the source's columns. */
static TimestampTz
tuple_row(HeapTuple tup, TupleDesc desc, const ChronicleSource *src,
		  Datum *values, bool *nulls)
{
	bool		isnull;
	Datum		ts = heap_getattr(tup, 1, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("chronicle.%s_history: ts must not be NULL", src->name)));
	for (int c = 0; c < src->ncolumns; c++)
	{
		values[c] = heap_getattr(tup, c + 2, desc, &nulls[c]);
		if (c < src->nkeys && nulls[c])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("chronicle.%s_history: key column %s must not be NULL",
							src->name, src->columns[c].name)));
	}
	return DatumGetTimestampTz(ts);
}

/* Remove (values == NULL) or replace the row of key id at ts. */
static void
history_change(int si, TimestampTz ts, int32 id, const Datum *values,
			   const bool *nulls, bool remove)
{
	const ChronicleSource *src = chronicle_sources[si];
	Oid			argtypes[2] = {TIMESTAMPTZOID, BYTEAOID};
	Datum		args[2];
	char		argnulls[2] = {' ', ' '};
	ChronicleRows rows;
	bytea	   *packed = NULL;
	bool		exists;
	int			ret;
	int			found = -1;
	const char *col = quote_identifier(src->name);

	args[0] = TimestampTzGetDatum(ts);
	ret = SPI_execute_with_args(psprintf("SELECT %s FROM chronicle.history WHERE ts = $1 FOR UPDATE", col),
								1, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read chronicle.history: %s",
			 SPI_result_code_string(ret));
	exists = SPI_processed > 0;
	memset(&rows, 0, sizeof(rows));
	rows.source_index = si;
	if (exists)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			chronicle_history_unpack(&rows, ts, DatumGetByteaPP(d), NULL);
	}
	for (int r = 0; r < rows.nrows; r++)
		if (src->nkeys == 0 || rows.key_ids[r] == id)
			found = r;
	if (remove)
	{
		if (found < 0)
			return;
		for (int c = 0; c < src->ncolumns; c++)
		{
			memmove(&rows.values[c][found], &rows.values[c][found + 1],
					sizeof(Datum) * (rows.nrows - found - 1));
			memmove(&rows.nulls[c][found], &rows.nulls[c][found + 1],
					sizeof(bool) * (rows.nrows - found - 1));
		}
		memmove(&rows.key_ids[found], &rows.key_ids[found + 1],
				sizeof(int32) * (rows.nrows - found - 1));
		rows.nrows--;
	}
	else
	{
		if (found < 0)
		{
			chronicle_rows_grow(&rows, src, rows.nrows + 1);
			found = rows.nrows++;
		}
		rows.key_ids[found] = id;
		for (int c = 0; c < src->ncolumns; c++)
		{
			rows.values[c][found] = values[c];
			rows.nulls[c][found] = nulls[c];
		}
	}
	/* hand-made rows are not known to be every key */
	rows.complete = false;
	if (rows.nrows > 0)
		packed = chronicle_pack(&rows, ts);
	args[1] = PointerGetDatum(packed);
	argnulls[1] = packed ? ' ' : 'n';
	if (exists)
		ret = SPI_execute_with_args(psprintf("UPDATE chronicle.history SET %s = $2 WHERE ts = $1", col),
									2, argtypes, args, argnulls, false, 0);
	else
		ret = SPI_execute_with_args(psprintf("INSERT INTO chronicle.history (ts, %s) VALUES ($1, $2)", col),
									2, argtypes, args, argnulls, false, 0);
	if (ret != (exists ? SPI_OK_UPDATE : SPI_OK_INSERT))
		elog(ERROR, "could not write chronicle.history: %s",
			 SPI_result_code_string(ret));
}

PG_FUNCTION_INFO_V1(chronicle_history_write);

Datum
chronicle_history_write(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	const ChronicleSource *src;
	int			si;
	HeapTuple	result;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_INSTEAD(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		trigdata->tg_trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chronicle._history_write() must be an INSTEAD OF row trigger with the source's name")));
	si = source_index(trigdata->tg_trigger->tgargs[0]);
	src = chronicle_sources[si];
	desc = RelationGetDescr(trigdata->tg_relation);
	if (desc->natts != src->ncolumns + 1)
		elog(ERROR, "view of source \"%s\" has %d columns, expected %d",
			 src->name, desc->natts, src->ncolumns + 1);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		Datum		values[CHRONICLE_MAX_COLUMNS];
		bool		nulls[CHRONICLE_MAX_COLUMNS];
		TimestampTz ts = tuple_row(trigdata->tg_trigtuple, desc, src, values, nulls);
		int32		id = src->nkeys > 0 ? chronicle_key_id(si, values, nulls, false) : 0;

		history_change(si, ts, id, NULL, NULL, true);
	}
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		HeapTuple	tup = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
			trigdata->tg_newtuple : trigdata->tg_trigtuple;
		Datum		values[CHRONICLE_MAX_COLUMNS];
		bool		nulls[CHRONICLE_MAX_COLUMNS];
		TimestampTz ts = tuple_row(tup, desc, src, values, nulls);
		int32		id = src->nkeys > 0 ? chronicle_key_id(si, values, nulls, false) : 0;

		history_change(si, ts, id, values, nulls, false);
	}
	SPI_finish();

	result = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple :
		trigdata->tg_trigtuple;
	return PointerGetDatum(result);
}
