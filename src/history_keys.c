/*-------------------------------------------------------------------------
 *
 * history_keys.c
 *		The key dictionary, chronicle.history_key: a source's key (its key
 *		columns as text) as a small integer id, which the packed values hold
 *		instead of the key (history_pack.c).
 *
 * Two sides.  The writers (the collector, chronicle._pack(), the views'
 * triggers) turn keys into ids: the collector through a cache of key
 * string -> id kept across snapshots, adding the keys it has not seen; a
 * new key is added in a dictionary row of its own, so a key's id never
 * changes.  The readers (the views through chronicle._unpack(), the
 * analysis engine) turn ids back into key values, with a dictionary read
 * once per query.
 *
 * The cache must never keep an id that was rolled back with the
 * dictionary row that gave it: it is forgotten at every abort (see
 * key_cache_xact_callback()).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "history_int.h"
#include "pg_chronicle.h"

/* Type facts of a source's columns, looked up once per process. */
typedef struct SourceTypes
{
	bool		ready;
	int16		typlen[CHRONICLE_MAX_COLUMNS];
	bool		typbyval[CHRONICLE_MAX_COLUMNS];
	FmgrInfo	infunc[CHRONICLE_MAX_COLUMNS];
	FmgrInfo	outfunc[CHRONICLE_MAX_COLUMNS];
	Oid			ioparam[CHRONICLE_MAX_COLUMNS];
} SourceTypes;

static SourceTypes source_types[CHRONICLE_MAX_SOURCES];

/* The collector's cache of key ids: key string -> id, per source. */
typedef struct KeyIdEntry
{
	char		key[CHRONICLE_KEY_LEN];
	int32		id;
} KeyIdEntry;

static HTAB *key_ids[CHRONICLE_MAX_SOURCES];
static MemoryContext key_cxt[CHRONICLE_MAX_SOURCES];

static SourceTypes *
types_of(int si)
{
	const ChronicleSource *src = chronicle_sources[si];
	SourceTypes *t = &source_types[si];

	if (t->ready)
		return t;
	for (int c = 0; c < src->ncolumns; c++)
	{
		Oid			func;
		bool		isvarlena;

		get_typlenbyval(src->columns[c].type, &t->typlen[c], &t->typbyval[c]);
		getTypeInputInfo(src->columns[c].type, &func, &t->ioparam[c]);
		fmgr_info_cxt(func, &t->infunc[c], TopMemoryContext);
		getTypeOutputInfo(src->columns[c].type, &func, &isvarlena);
		fmgr_info_cxt(func, &t->outfunc[c], TopMemoryContext);
	}
	t->ready = true;
	return t;
}

/*
 * A timestamptz key column's text: ISO, in UTC, with its offset
 * ("2026-11-26 18:58:36.123456+00").  Not timestamptz_out's, which follows
 * the session's DateStyle and TimeZone: the same key would have another
 * text in another session (the worker and chronicle.snapshot()), and so
 * another entry in chronicle.history_key.  timestamptz_in reads it back in
 * any session.
 */
static void
append_timestamptz_key(StringInfo buf, TimestampTz ts)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		text[MAXDATELEN + 1];

	if (TIMESTAMP_NOT_FINITE(ts))
		EncodeSpecialTimestamp(ts, text);
	else if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) == 0)
		EncodeDateTime(&tm, fsec, true, 0, NULL, USE_ISO_DATES, text);
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	appendStringInfoString(buf, text);
}

/*
 * The key string of a row (history.h): its key columns' text, joined by
 * \x1f, \x1e for a NULL; what the collector's cache and the emitter's
 * previous readings are keyed by.
 */
void
chronicle_key_string(const ChronicleSource *src, const Datum *values,
					 const bool *nulls, StringInfo buf)
{
	resetStringInfo(buf);
	for (int c = 0; c < src->nkeys; c++)
	{
		if (c > 0)
			appendStringInfoChar(buf, '\x1f');
		if (nulls[c])
		{
			appendStringInfoChar(buf, '\x1e');
			continue;
		}
		/*
		 * Every row of every snapshot comes through here: the text is
		 * appended without a copy and the numbers are formatted as their
		 * output functions do, without snprintf (the same digits).
		 */
		switch (src->columns[c].type)
		{
			case TEXTOID:
				{
					text	   *t = DatumGetTextPP(values[c]);

					appendBinaryStringInfo(buf, VARDATA_ANY(t),
										   strnlen(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
					break;
				}
			case INT8OID:
				enlargeStringInfo(buf, MAXINT8LEN + 1);
				buf->len += pg_lltoa(DatumGetInt64(values[c]), buf->data + buf->len);
				break;
			case INT4OID:
				enlargeStringInfo(buf, 12);	/* as int4out: sign, 10 digits, NUL */
				buf->len += pg_ltoa(DatumGetInt32(values[c]), buf->data + buf->len);
				break;
			case OIDOID:
				enlargeStringInfo(buf, 12);	/* as int4out: sign, 10 digits, NUL */
				buf->len += pg_ultoa_n(DatumGetObjectId(values[c]), buf->data + buf->len);
				buf->data[buf->len] = '\0';
				break;
			case BOOLOID:
				appendStringInfoChar(buf, DatumGetBool(values[c]) ? 't' : 'f');
				break;
			case TIMESTAMPTZOID:
				append_timestamptz_key(buf, DatumGetTimestampTz(values[c]));
				break;
			default:
				elog(ERROR, "unsupported key column type %u in source \"%s\"",
					 src->columns[c].type, src->name);
		}
	}
	if (buf->len >= CHRONICLE_KEY_LEN)
		elog(ERROR, "key of source \"%s\" too long: \"%s\"",
			 src->name, buf->data);
}

/* The key as chronicle.history_key stores it: each column's text. */
Datum
chronicle_key_array(int si, const Datum *values, const bool *nulls)
{
	const ChronicleSource *src = chronicle_sources[si];
	SourceTypes *t = types_of(si);
	Datum		elems[CHRONICLE_MAX_COLUMNS];
	bool		enulls[CHRONICLE_MAX_COLUMNS];
	int			dims[1] = {src->nkeys};
	int			lbs[1] = {1};

	for (int c = 0; c < src->nkeys; c++)
	{
		enulls[c] = nulls[c];
		if (nulls[c])
			elems[c] = (Datum) 0;
		else if (src->columns[c].type == TIMESTAMPTZOID)
		{
			/* the key string's text, whatever the session's settings */
			StringInfoData ts;

			initStringInfo(&ts);
			append_timestamptz_key(&ts, DatumGetTimestampTz(values[c]));
			elems[c] = CStringGetTextDatum(ts.data);
		}
		else
			elems[c] = CStringGetTextDatum(OutputFunctionCall(&t->outfunc[c], values[c]));
	}
	return PointerGetDatum(construct_md_array(elems, enulls, 1, dims, lbs,
											  TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Every key of a source in chronicle.history_key: each(arg, id, elems,
 * enulls) with the key's columns as text (the number of the source's key
 * columns; a row with another number is not this library's and skipped).
 * SPI connected.
 */
typedef void (*KeyVisitor) (void *arg, int32 id, const Datum *elems,
							const bool *enulls);

static void
read_keys(int si, KeyVisitor each, void *arg)
{
	const ChronicleSource *src = chronicle_sources[si];
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;

	args[0] = CStringGetTextDatum(src->name);
	ret = SPI_execute_with_args("SELECT key_id, key FROM chronicle.history_key"
								" WHERE source = $1",
								1, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read chronicle.history_key: %s",
			 SPI_result_code_string(ret));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		arrd = SPI_getbinval(tup, desc, 2, &isnull);
		Datum	   *elems;
		bool	   *enulls;
		int			nelems;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(arrd), TEXTOID, -1, false,
						  TYPALIGN_INT, &elems, &enulls, &nelems);
		if (nelems == src->nkeys)
			each(arg, id, elems, enulls);
	}
}

/* The collector's cache: key string -> id. */
static void
cache_key(void *arg, int32 id, const Datum *elems, const bool *enulls)
{
	int			si = *(int *) arg;
	const ChronicleSource *src = chronicle_sources[si];
	StringInfoData keybuf;
	KeyIdEntry *e;

	initStringInfo(&keybuf);
	for (int c = 0; c < src->nkeys; c++)
	{
		if (c > 0)
			appendStringInfoChar(&keybuf, '\x1f');
		if (enulls[c])
			appendStringInfoChar(&keybuf, '\x1e');
		else
			appendStringInfoString(&keybuf, TextDatumGetCString(elems[c]));
	}
	if (keybuf.len < CHRONICLE_KEY_LEN)
	{
		e = hash_search(key_ids[si], keybuf.data, HASH_ENTER, NULL);
		e->id = id;
	}
	pfree(keybuf.data);
}

/* Load every key of a source into the collector's cache. */
static void
key_cache_load(int si)
{
	HASHCTL		ctl;

	if (key_cxt[si] == NULL)
		key_cxt[si] = AllocSetContextCreate(TopMemoryContext,
											"chronicle key ids",
											ALLOCSET_SMALL_SIZES);
	MemoryContextReset(key_cxt[si]);
	ctl.keysize = CHRONICLE_KEY_LEN;
	ctl.entrysize = sizeof(KeyIdEntry);
	ctl.hcxt = key_cxt[si];
	key_ids[si] = hash_create("chronicle key ids", 64, &ctl,
							  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	read_keys(si, cache_key, &si);
}

/*
 * The cache must never keep the id of a key whose dictionary row was
 * rolled back: forget every id when a transaction or subtransaction
 * aborts (the collector's source subtransactions, a caller of
 * chronicle.snapshot() or chronicle._pack() that rolls back).
 */
static void
key_cache_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		chronicle_key_cache_forget(-1);
}

static void
key_cache_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		chronicle_key_cache_forget(-1);
}

/* Forget the cached key ids of source si, or of every source (si < 0). */
void
chronicle_key_cache_forget(int si)
{
	for (int i = 0; i < chronicle_nsources; i++)
	{
		if (si >= 0 && i != si)
			continue;
		if (key_cxt[i])
			MemoryContextReset(key_cxt[i]);
		key_ids[i] = NULL;
	}
}

/*
 * Before a transaction writes a dictionary row that another writer may
 * write too (a new key here, a statement's text in source_statements.c):
 * SHARE ROW EXCLUSIVE on chronicle.history_key, held to the end of the
 * transaction.  Without it, two transactions that each added a row the
 * other then needs wait for each other: chronicle.snapshot() called many
 * times in one transaction by two sessions deadlocked, the worker could
 * join in.  With it, the transactions that add dictionary rows take turns
 * (one that holds the lock never waits for another's rows), and the
 * readers (ACCESS SHARE) and the snapshots that add nothing never wait.
 * The price: a snapshot that adds a row waits for a transaction that
 * added rows earlier to end, the worker's for a chronicle.snapshot() in
 * a transaction still open (superuser only).
 */
void
chronicle_dictionary_lock(void)
{
	Oid			relid = get_relname_relid("history_key",
										  get_namespace_oid("chronicle", false));

	if (!OidIsValid(relid))
		elog(ERROR, "chronicle.history_key does not exist");
	LockRelationOid(relid, ShareRowExclusiveLock);
}

/*
 * The id of a key (source, its columns as text[]) in chronicle.history_key,
 * added when new, under the dictionaries' lock: a writer that added the
 * same key in the meantime has committed, and its id is found by the
 * SELECT, a statement of its own.  SPI connected.
 */
int32
chronicle_key_add(Datum source, Datum key)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2] = {source, key};
	int			ret;
	bool		isnull;

	chronicle_dictionary_lock();
	ret = SPI_execute_with_args("INSERT INTO chronicle.history_key (source, key)"
								" VALUES ($1, $2)"
								" ON CONFLICT (source, key) DO NOTHING"
								" RETURNING key_id",
								2, argtypes, args, NULL, false, 1);
	if (ret != SPI_OK_INSERT_RETURNING)
		elog(ERROR, "could not add to chronicle.history_key: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 0)
	{
		ret = SPI_execute_with_args("SELECT key_id FROM chronicle.history_key"
									" WHERE source = $1 AND key = $2",
									2, argtypes, args, NULL, false, 1);
		if (ret != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not find key %s of source \"%s\" in chronicle.history_key",
				 OidOutputFunctionCall(F_ARRAY_OUT, key), TextDatumGetCString(source));
	}
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/* chronicle_key_id() of a key whose key string is known */
static int32
key_id_of(int si, const char *key, const Datum *values, const bool *nulls,
		  bool cache)
{
	const ChronicleSource *src = chronicle_sources[si];
	int32		id;
	KeyIdEntry *e;

	if (cache)
	{
		static bool callbacks = false;

		if (!callbacks)
		{
			RegisterXactCallback(key_cache_xact_callback, NULL);
			RegisterSubXactCallback(key_cache_subxact_callback, NULL);
			callbacks = true;
		}
		if (key_ids[si] == NULL)
			key_cache_load(si);
		e = hash_search(key_ids[si], key, HASH_FIND, NULL);
		if (e)
			return e->id;
	}

	id = chronicle_key_add(CStringGetTextDatum(src->name),
						   chronicle_key_array(si, values, nulls));
	if (cache)
	{
		e = hash_search(key_ids[si], key, HASH_ENTER, NULL);
		e->id = id;
	}
	return id;
}

int32
chronicle_key_id(int si, const Datum *values, const bool *nulls, bool cache)
{
	StringInfoData keybuf;
	int32		id;

	initStringInfo(&keybuf);
	chronicle_key_string(chronicle_sources[si], values, nulls, &keybuf);
	id = key_id_of(si, keybuf.data, values, nulls, cache);
	pfree(keybuf.data);
	return id;
}

/*
 * The key ids of a set of rows of one source.  New keys are added to the
 * dictionary in the order of their key strings, whatever the rows' order:
 * two transactions adding overlapping new keys (the worker and
 * chronicle.snapshot() after a restart, when every key is new) then wait
 * for each other in one order, never in a circle.  The sources go in the
 * order of src/sources.c, so one snapshot's additions are in one order too.
 */
typedef struct KeyedRow
{
	char	   *key;
	int			row;
} KeyedRow;

static int
keyed_row_cmp(const void *a, const void *b)
{
	return strcmp(((const KeyedRow *) a)->key, ((const KeyedRow *) b)->key);
}

void
chronicle_rows_key_ids(ChronicleRows *rows)
{
	const ChronicleSource *src = chronicle_sources[rows->source_index];
	KeyedRow   *order;
	StringInfoData keybuf;

	if (src->nkeys == 0 || rows->nrows == 0)
		return;
	order = palloc(sizeof(KeyedRow) * rows->nrows);
	initStringInfo(&keybuf);
	for (int r = 0; r < rows->nrows; r++)
	{
		Datum		kv[CHRONICLE_MAX_COLUMNS];
		bool		kn[CHRONICLE_MAX_COLUMNS];

		for (int c = 0; c < src->nkeys; c++)
		{
			kv[c] = rows->values[c][r];
			kn[c] = rows->nulls[c][r];
		}
		chronicle_key_string(src, kv, kn, &keybuf);
		order[r].key = pstrdup(keybuf.data);
		order[r].row = r;
	}
	qsort(order, rows->nrows, sizeof(KeyedRow), keyed_row_cmp);
	for (int i = 0; i < rows->nrows; i++)
	{
		int			r = order[i].row;
		Datum		kv[CHRONICLE_MAX_COLUMNS];
		bool		kn[CHRONICLE_MAX_COLUMNS];

		for (int c = 0; c < src->nkeys; c++)
		{
			kv[c] = rows->values[c][r];
			kn[c] = rows->nulls[c][r];
		}
		rows->key_ids[r] = key_id_of(rows->source_index, order[i].key, kv, kn, true);
	}
	for (int i = 0; i < rows->nrows; i++)
		pfree(order[i].key);
	pfree(order);
	pfree(keybuf.data);
}

/* The reader's side: id -> key values, for one source, per query. */
typedef struct KeyValsEntry
{
	int32		id;
	Datum	   *values;
} KeyValsEntry;

/* The reader's dictionary: id -> key values, in dict->cxt. */
static void
dict_key(void *arg, int32 id, const Datum *elems, const bool *enulls)
{
	KeyDict    *dict = (KeyDict *) arg;
	const ChronicleSource *src = chronicle_sources[dict->si];
	SourceTypes *t = types_of(dict->si);
	MemoryContext oldcxt = MemoryContextSwitchTo(dict->cxt);
	KeyValsEntry *e;

	e = hash_search(dict->ids, &id, HASH_ENTER, NULL);
	e->values = palloc(sizeof(Datum) * src->nkeys);
	for (int c = 0; c < src->nkeys; c++)
		e->values[c] = enulls[c] ? (Datum) 0 :
			InputFunctionCall(&t->infunc[c], TextDatumGetCString(elems[c]),
							  t->ioparam[c], -1);
	MemoryContextSwitchTo(oldcxt);
}

static void
key_dict_load(KeyDict *dict)
{
	HASHCTL		ctl;

	MemoryContextReset(dict->cxt);
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(KeyValsEntry);
	ctl.hcxt = dict->cxt;
	dict->ids = hash_create("chronicle keys", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	read_keys(dict->si, dict_key, dict);
	SPI_finish();
}

static const Datum *
key_dict_find(KeyDict *dict, int32 id)
{
	KeyValsEntry *e;

	if (dict->ids == NULL)
		key_dict_load(dict);
	e = hash_search(dict->ids, &id, HASH_FIND, NULL);
	if (e == NULL && !dict->reloaded)
	{
		/* added since the dictionary was read (by this very statement?) */
		dict->reloaded = true;
		key_dict_load(dict);
		e = hash_search(dict->ids, &id, HASH_FIND, NULL);
	}
	if (e == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("chronicle: key id %d of source \"%s\" is not in chronicle.history_key",
						id, chronicle_sources[dict->si]->name),
				 errhint("Packed history is read with the key dictionary of the database that wrote it.")));
	return e->values;
}

/* The key columns of rows first .. nrows - 1, from their key ids. */
void
chronicle_rows_fill_keys(ChronicleRows *rows, int first, KeyDict *dict)
{
	const ChronicleSource *src = chronicle_sources[rows->source_index];

	for (int r = first; r < rows->nrows && src->nkeys > 0; r++)
	{
		const Datum *kv = key_dict_find(dict, rows->key_ids[r]);

		for (int c = 0; c < src->nkeys; c++)
		{
			rows->values[c][r] = kv[c];
			rows->nulls[c][r] = false;
		}
	}
}
