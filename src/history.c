/*-------------------------------------------------------------------------
 *
 * history.c
 *		The packed history: one row of chronicle.history per snapshot,
 *		holding every source's changed rows in a compact binary value, and
 *		the views that show them as chronicle.<source>_history rows.
 *
 * Why: one heap tuple, one index entry and one WAL record per key and
 * snapshot was the cost of the row-per-key tables (docs/storage.md): about
 * 50 tuples, 100 WAL records and 15 kB of WAL a second under pgbench, more
 * than half of it index entries with repeated text keys.  Here a snapshot
 * is one tuple and one index entry, its keys are dictionary ids, and each
 * value takes the bytes it needs.
 *
 * The pieces, one concern a file:
 *
 *	history_pack.c	the packed format: rows to bytes and back (the byte-level
 *					description is there)
 *	history_keys.c	the key dictionary, chronicle.history_key: keys to ids and
 *					back
 *	history_sql.c	the SQL functions behind the views: chronicle._unpack(),
 *					chronicle._pack() and the views' INSTEAD OF trigger
 *	history.c		this file: the history row written for a snapshot, and
 *					read back for the analysis engine (history.h)
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "history_int.h"
#include "pg_chronicle.h"

static SPIPlanPtr history_plan = NULL;

/*
 * Forget the cached key ids of source si, or of every source (si < 0);
 * with si == -1 also the prepared INSERT.
 */
void
chronicle_history_forget(int si)
{
	chronicle_key_cache_forget(si);
	if (si == -1 && history_plan)
	{
		SPI_freeplan(history_plan);
		history_plan = NULL;
	}
}

/* ---------------------------------------------------------------------
 * The analysis engine's reader (history.h)
 * ---------------------------------------------------------------------
 */
struct ChronicleReader
{
	KeyDict		dict;
	ChronicleRows rows;			/* its arrays outlive the values */
	MemoryContext valcxt;		/* the last value's detoasted bytes and text */
};

/* Decode and fill the key columns from the dictionary. */
static void
unpack_with_keys(ChronicleRows *rows, TimestampTz ts, bytea *data,
				 KeyDict *dict)
{
	int			first = rows->nrows;

	chronicle_history_unpack(rows, ts, data, NULL);
	chronicle_rows_fill_keys(rows, first, dict);
}

ChronicleReader *
chronicle_reader_create(int si)
{
	ChronicleReader *reader = palloc0(sizeof(ChronicleReader));

	Assert(si >= 0 && si < chronicle_nsources);
	reader->dict.si = si;
	reader->dict.cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "chronicle reader keys",
											 ALLOCSET_SMALL_SIZES);
	reader->valcxt = AllocSetContextCreate(CurrentMemoryContext,
										   "chronicle reader values",
										   ALLOCSET_DEFAULT_SIZES);
	reader->rows.source_index = si;
	/* allocated here: chronicle_rows_grow() repallocs them in this context */
	chronicle_rows_grow(&reader->rows, chronicle_sources[si], 64);
	return reader;
}

const ChronicleRows *
chronicle_reader_unpack(ChronicleReader *reader, TimestampTz ts, Datum data)
{
	MemoryContext oldcxt;

	MemoryContextReset(reader->valcxt);
	oldcxt = MemoryContextSwitchTo(reader->valcxt);
	reader->rows.nrows = 0;
	unpack_with_keys(&reader->rows, ts, DatumGetByteaPP(data), &reader->dict);
	MemoryContextSwitchTo(oldcxt);
	return &reader->rows;
}

/* ---------------------------------------------------------------------
 * Writing the history row
 * ---------------------------------------------------------------------
 */
void
chronicle_history_insert(TimestampTz ts, bytea *const *packed)
{
	Datum		args[CHRONICLE_MAX_SOURCES + 3];
	char		nulls[CHRONICLE_MAX_SOURCES + 3];
	int			ret;

	if (history_plan == NULL)
	{
		StringInfoData sql;
		Oid			argtypes[CHRONICLE_MAX_SOURCES + 3];

		initStringInfo(&sql);
		appendStringInfoString(&sql, "INSERT INTO chronicle.history (ts, system_identifier, server_name");
		for (int i = 0; i < chronicle_nsources; i++)
			appendStringInfo(&sql, ", %s", quote_identifier(chronicle_sources[i]->name));
		appendStringInfoString(&sql, ") VALUES ($1, $2, $3");
		argtypes[0] = TIMESTAMPTZOID;
		argtypes[1] = INT8OID;
		argtypes[2] = TEXTOID;
		for (int i = 0; i < chronicle_nsources; i++)
		{
			appendStringInfo(&sql, ", $%d", i + 4);
			argtypes[i + 3] = BYTEAOID;
		}
		appendStringInfoChar(&sql, ')');
		history_plan = SPI_prepare(sql.data, chronicle_nsources + 3, argtypes);
		if (history_plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(history_plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		pfree(sql.data);
	}
	args[0] = TimestampTzGetDatum(ts);
	args[1] = Int64GetDatum((int64) GetSystemIdentifier());
	args[2] = CStringGetTextDatum(chronicle_server_name_now());
	nulls[0] = nulls[1] = nulls[2] = ' ';
	for (int i = 0; i < chronicle_nsources; i++)
	{
		args[i + 3] = PointerGetDatum(packed[i]);
		nulls[i + 3] = packed[i] ? ' ' : 'n';
	}
	ret = SPI_execute_plan(history_plan, args, nulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "insert into chronicle.history failed: %s",
			 SPI_result_code_string(ret));
}
