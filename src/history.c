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
 * The packed value of one source at one snapshot (all integers are
 * unsigned LEB128 varints; signed ones zigzag-encoded first):
 *
 *	byte 0			format version (2) in the high four bits, flags in the low
 *					four: CHRONICLE_PACK_COMPLETE when the rows are every key of
 *					the source (a keyframe), not only the changed ones;
 *					CHRONICLE_PACK_NULLS when a NULL bitmap follows;
 *					CHRONICLE_PACK_ONE when the value holds one row (no count)
 *	varint			number of rows, unless CHRONICLE_PACK_ONE
 *	present bitmap	a bit per row and value column (row-major, low bit
 *					first): the value has a payload.  A value without one is
 *					its type's zero (0, 0.0, false, '') unless it is NULL.
 *	NULL bitmap		the same shape, only with CHRONICLE_PACK_NULLS
 *					Or, with CHRONICLE_PACK_COLUMNS (never with
 *					CHRONICLE_PACK_NULLS), the same facts by column, when that
 *					is shorter: two bits a value column (its mode: every row
 *					zero, every row present, a bit a row, two bits a row),
 *					then the bits a row of the columns that have them, in
 *					column order, one bit stream (low bit first) padded to a
 *					byte.  The counters that stay zero (temp, local, times)
 *					and those that always move take two bits, not a bit a row.
 *	then per row:
 *	  varint		the key's id in chronicle.history_key (sources with
 *					keys): the first row's as it is, each next row's as the
 *					zigzag of its difference to the row before (the rows of a
 *					source come in a stable order, and keys seen together got
 *					ids close together: one byte instead of two)
 *	  payloads		of its present values, in column order, by type:
 *					int8, int4	zigzag varint
 *					oid			varint
 *					float8		the IEEE bits big-endian (8 bytes) when the sign
 *								bit is clear; else 0x80 and those 8 bytes; or a
 *								shorter exact form, a tag byte and a varint N:
 *								0x81 N / 1000.0 (pg_stat_database's times),
 *								0x82 N (whole numbers), 0x83 N * 0.001
 *								(pg_stat_io's times), used only when that
 *								expression gives back the same bits
 *					timestamptz	zigzag varint of (base - value), wrapping:
 *								exact for every value.  The base is the
 *								previous timestamp of the value (row-major),
 *								the snapshot's ts for the first: the reset
 *								times of a source's rows are mostly equal (one
 *								byte), and the first is recent (never zero:
 *								always present)
 *					bool		none: present is true
 *					text		varint length, then the bytes
 *
 * Everything stays inside the value: a value is decoded without any other
 * value, row or snapshot.  Version 2 (0.2.0) took 70 bytes off a second
 * of history under pgbench (docs/storage.md, "Where the bytes go").
 *
 * Bitmaps across the rows, not a byte or two per row: most counters of a
 * snapshot are zero (temp blocks, local buffers, times without
 * track_io_timing), and a single-value source like waits would spend more
 * on per-row flags than on its values.
 *
 * Every value is self-contained: a packed value is read without any other
 * row, so the views are a plain LATERAL join and a WHERE on ts reaches the
 * table's primary key.  Values are the sources' exact readings; zero and
 * NULL are told apart.  Decoding checks every length against the value's
 * end: a malformed value is an error, never a read out of bounds (the
 * monitoring roles may call chronicle._unpack() on bytes of their own).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "history.h"
#include "pg_chronicle.h"

#define PACK_VERSION		2		/* in the high four bits of byte 0 */
#define CHRONICLE_PACK_COMPLETE	0x01	/* every key of the source */
#define CHRONICLE_PACK_NULLS	0x02	/* a NULL bitmap follows */
#define CHRONICLE_PACK_ONE		0x04	/* one row: no row count */
#define CHRONICLE_PACK_COLUMNS	0x08	/* the bitmaps by column (see above) */
#define CHRONICLE_PACK_FLAGS	0x0F	/* the flags there are */

/* Modes of a value column in the layout by column. */
#define COLUMN_ZERO			0		/* every row's value is its zero */
#define COLUMN_PRESENT		1		/* every row's value has a payload */
#define COLUMN_MIXED		2		/* a bit a row: present */
#define COLUMN_CODES		3		/* two bits a row: 0 zero, 1 present, 2 NULL */

/* Tags of a float8 payload (the high byte of a positive double is < 0x80). */
#define FLOAT8_RAW_NEG		0x80	/* 8 bytes follow: a negative double */
#define FLOAT8_MILLI_DIV	0x81	/* varint N: N / 1000.0 */
#define FLOAT8_WHOLE		0x82	/* varint N: N */
#define FLOAT8_MILLI_MUL	0x83	/* varint N: N * 0.001 */

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
static SPIPlanPtr history_plan = NULL;

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
 * Encoding
 * ---------------------------------------------------------------------
 */
static void
put_varint(StringInfo buf, uint64 v)
{
	while (v >= 0x80)
	{
		appendStringInfoChar(buf, (char) ((v & 0x7F) | 0x80));
		v >>= 7;
	}
	appendStringInfoChar(buf, (char) v);
}

static inline uint64
zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
unzigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

/* Is a value the type's zero (encoded by its code alone)? */
static bool
is_zero(Oid type, Datum d)
{
	switch (type)
	{
		case INT8OID:
			return DatumGetInt64(d) == 0;
		case INT4OID:
			return DatumGetInt32(d) == 0;
		case OIDOID:
			return DatumGetObjectId(d) == InvalidOid;
		case FLOAT8OID:
			{
				float8		f = DatumGetFloat8(d);

				/* not -0.0: it must come back as it was */
				return f == 0.0 && !signbit(f);
			}
		case BOOLOID:
			return !DatumGetBool(d);
		case TEXTOID:
			return VARSIZE_ANY_EXHDR(DatumGetPointer(d)) == 0;
		default:
			return false;
	}
}

static int
varint_len(uint64 v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * A float8: its 8 IEEE bytes, or a tag and a varint when one of the short
 * forms gives back exactly the same bits and takes fewer bytes.  The
 * statistics views compute many times from integer microseconds
 * (pg_stat_database divides by 1000.0, pg_stat_io multiplies by 0.001),
 * so those take 3 to 6 bytes; other values keep their 8.
 */
static void
put_float8(StringInfo buf, float8 f)
{
	uint64		bits;

	if (f > 0.0 && f < 4.0e15)
	{
		int64		whole = (int64) f;
		int64		milli = (int64) llround(f * 1000.0);
		int			tag = 0;
		int64		n = 0;

		if ((float8) whole == f)
		{
			tag = FLOAT8_WHOLE;
			n = whole;
		}
		else if ((float8) milli / 1000.0 == f)
		{
			tag = FLOAT8_MILLI_DIV;
			n = milli;
		}
		else if ((float8) milli * 0.001 == f)
		{
			tag = FLOAT8_MILLI_MUL;
			n = milli;
		}
		if (tag != 0 && 1 + varint_len((uint64) n) < 8)
		{
			appendStringInfoChar(buf, (char) tag);
			put_varint(buf, (uint64) n);
			return;
		}
	}
	memcpy(&bits, &f, sizeof(bits));
	if (bits >> 63)
		appendStringInfoChar(buf, (char) FLOAT8_RAW_NEG);
	for (int i = 7; i >= 0; i--)
		appendStringInfoChar(buf, (char) ((bits >> (8 * i)) & 0xFF));
}

/*
 * A value's payload.  ts is the base of a timestamp: the previous
 * timestamp of the packed value, or the snapshot's ts for the first.
 */
static void
put_value(StringInfo buf, Oid type, Datum d, TimestampTz ts)
{
	switch (type)
	{
		case INT8OID:
			put_varint(buf, zigzag(DatumGetInt64(d)));
			break;
		case INT4OID:
			put_varint(buf, zigzag(DatumGetInt32(d)));
			break;
		case OIDOID:
			put_varint(buf, DatumGetObjectId(d));
			break;
		case FLOAT8OID:
			put_float8(buf, DatumGetFloat8(d));
			break;
		case TIMESTAMPTZOID:
			put_varint(buf, zigzag((int64) ((uint64) ts - (uint64) DatumGetTimestampTz(d))));
			break;
		case BOOLOID:
			break;				/* code 2 is true */
		case TEXTOID:
			{
				text	   *t = DatumGetTextPP(d);

				put_varint(buf, VARSIZE_ANY_EXHDR(t));
				appendBinaryStringInfo(buf, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				break;
			}
		default:
			elog(ERROR, "unsupported column type %u in packed history", type);
	}
}

static inline bool
bit_of(const uint8 *bits, uint64 bit)
{
	return (bits[bit / 8] >> (bit % 8)) & 1;
}

/*
 * The present and NULL bitmaps (row-major, nrows x nvals bits each; isnull
 * all clear when no value is NULL) in the layout by column, if that takes
 * fewer bytes than rowmajor: palloc'd, its length in *len; else NULL.
 */
static uint8 *
pack_columns(const uint8 *present, const uint8 *isnull, int nrows, int nvals,
			 int rowmajor, int *len)
{
	int			modes[CHRONICLE_MAX_COLUMNS];
	int64		nbits = 2 * (int64) nvals;
	uint8	   *out;
	int64		at = 0;

	for (int v = 0; v < nvals; v++)
	{
		int			npresent = 0;
		int			nnull = 0;

		for (int r = 0; r < nrows; r++)
		{
			npresent += bit_of(present, (uint64) r * nvals + v);
			nnull += bit_of(isnull, (uint64) r * nvals + v);
		}
		if (nnull > 0)
			modes[v] = COLUMN_CODES;
		else if (npresent == 0)
			modes[v] = COLUMN_ZERO;
		else if (npresent == nrows)
			modes[v] = COLUMN_PRESENT;
		else
			modes[v] = COLUMN_MIXED;
		nbits += modes[v] == COLUMN_CODES ? 2 * (int64) nrows :
			modes[v] == COLUMN_MIXED ? nrows : 0;
	}
	if ((nbits + 7) / 8 >= rowmajor)
		return NULL;
	*len = (int) ((nbits + 7) / 8);
	out = palloc0(*len);
#define PUT_BIT(b) do { if (b) out[at / 8] |= 1 << (at % 8); at++; } while (0)
	for (int v = 0; v < nvals; v++)
	{
		PUT_BIT(modes[v] & 1);
		PUT_BIT(modes[v] & 2);
	}
	for (int v = 0; v < nvals; v++)
		for (int r = 0; r < nrows && modes[v] >= COLUMN_MIXED; r++)
		{
			uint64		bit = (uint64) r * nvals + v;

			PUT_BIT(bit_of(present, bit));
			if (modes[v] == COLUMN_CODES)
				PUT_BIT(bit_of(isnull, bit));
		}
#undef PUT_BIT
	return out;
}

bytea *
chronicle_pack(const ChronicleRows *rows, TimestampTz ts)
{
	const ChronicleSource *src = chronicle_sources[rows->source_index];
	int			nvals = src->ncolumns - src->nkeys;
	int64		nbits = (int64) rows->nrows * nvals;
	int			nbytes = (int) ((nbits + 7) / 8);
	bool		has_nulls = false;
	uint8	   *present = palloc0(Max(nbytes, 1));
	uint8	   *isnull = palloc0(Max(nbytes, 1));
	TimestampTz tsbase = ts;
	uint8	   *columns;
	int			ncolbytes = 0;
	StringInfoData body;
	StringInfoData buf;
	bytea	   *result;

	/* The rows' payloads, and which values have one, which are NULL. */
	initStringInfo(&body);
	for (int r = 0; r < rows->nrows; r++)
	{
		if (src->nkeys > 0 && r == 0)
			put_varint(&body, (uint32) rows->key_ids[r]);
		else if (src->nkeys > 0)
			put_varint(&body, zigzag((int64) rows->key_ids[r] - rows->key_ids[r - 1]));
		for (int v = 0; v < nvals; v++)
		{
			int			c = src->nkeys + v;
			int64		bit = (int64) r * nvals + v;
			Oid			type = src->columns[c].type;

			if (rows->nulls[c][r])
			{
				isnull[bit / 8] |= 1 << (bit % 8);
				has_nulls = true;
			}
			else if (!is_zero(type, rows->values[c][r]))
			{
				present[bit / 8] |= 1 << (bit % 8);
				put_value(&body, type, rows->values[c][r], tsbase);
				if (type == TIMESTAMPTZOID)
					tsbase = DatumGetTimestampTz(rows->values[c][r]);
			}
		}
	}

	columns = pack_columns(present, isnull, rows->nrows, nvals,
						   nbytes * (has_nulls ? 2 : 1), &ncolbytes);

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	appendStringInfoChar(&buf, (char) ((PACK_VERSION << 4) |
									   (rows->complete ? CHRONICLE_PACK_COMPLETE : 0) |
									   (columns ? CHRONICLE_PACK_COLUMNS :
										has_nulls ? CHRONICLE_PACK_NULLS : 0) |
									   (rows->nrows == 1 ? CHRONICLE_PACK_ONE : 0)));
	if (rows->nrows != 1)
		put_varint(&buf, rows->nrows);
	if (columns)
		appendBinaryStringInfo(&buf, (char *) columns, ncolbytes);
	else
	{
		appendBinaryStringInfo(&buf, (char *) present, nbytes);
		if (has_nulls)
			appendBinaryStringInfo(&buf, (char *) isnull, nbytes);
	}
	appendBinaryStringInfo(&buf, body.data, body.len);
	pfree(body.data);
	pfree(present);
	pfree(isnull);
	if (columns)
		pfree(columns);
	result = (bytea *) buf.data;
	SET_VARSIZE(result, buf.len);
	return result;
}

/* ---------------------------------------------------------------------
 * Decoding
 * ---------------------------------------------------------------------
 */
typedef struct Reader
{
	const uint8 *p;
	const uint8 *end;
	const char *source;
} Reader;

static pg_noinline void
malformed(const Reader *rd)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("chronicle: malformed packed history of source \"%s\"",
					rd->source),
			 errhint("Packed history is written by pg_chronicle only; "
					 "this value was not, or was damaged.")));
}

static uint64
get_varint(Reader *rd)
{
	uint64		v = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8		b;

		if (rd->p >= rd->end)
			malformed(rd);
		b = *rd->p++;
		v |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	malformed(rd);
	return 0;					/* keep compiler quiet */
}

/*
 * A value's payload.  ts is the base of a timestamp (see put_value): a
 * caller that decodes a timestamp passes the one before, the snapshot's ts
 * first.
 */
static Datum
get_value(Reader *rd, Oid type, TimestampTz ts)
{
	switch (type)
	{
		case INT8OID:
			return Int64GetDatum(unzigzag(get_varint(rd)));
		case INT4OID:
			{
				int64		v = unzigzag(get_varint(rd));

				if (v < PG_INT32_MIN || v > PG_INT32_MAX)
					malformed(rd);
				return Int32GetDatum((int32) v);
			}
		case OIDOID:
			{
				uint64		v = get_varint(rd);

				if (v > PG_UINT32_MAX)
					malformed(rd);
				return ObjectIdGetDatum((Oid) v);
			}
		case FLOAT8OID:
			{
				uint64		bits = 0;
				uint8		tag;
				float8		f;

				if (rd->p >= rd->end)
					malformed(rd);
				tag = *rd->p;
				if (tag >= 0x80)
				{
					rd->p++;
					if (tag == FLOAT8_WHOLE)
						return Float8GetDatum((float8) get_varint(rd));
					if (tag == FLOAT8_MILLI_DIV)
						return Float8GetDatum((float8) get_varint(rd) / 1000.0);
					if (tag == FLOAT8_MILLI_MUL)
						return Float8GetDatum((float8) get_varint(rd) * 0.001);
					if (tag != FLOAT8_RAW_NEG)
						malformed(rd);
				}
				if (rd->end - rd->p < 8)
					malformed(rd);
				for (int i = 0; i < 8; i++)
					bits = (bits << 8) | rd->p[i];
				rd->p += 8;
				memcpy(&f, &bits, sizeof(f));
				return Float8GetDatum(f);
			}
		case TIMESTAMPTZOID:
			return TimestampTzGetDatum((int64) ((uint64) ts - (uint64) unzigzag(get_varint(rd))));
		case BOOLOID:
			return BoolGetDatum(true);
		case TEXTOID:
			{
				uint64		len = get_varint(rd);

				if (len > (uint64) (rd->end - rd->p) || len > MaxAllocSize - VARHDRSZ)
					malformed(rd);
				/* text the database can hold, or an error */
				(void) pg_verify_mbstr(GetDatabaseEncoding(), (const char *) rd->p, (int) len, false);
				rd->p += len;
				return PointerGetDatum(cstring_to_text_with_len((const char *) rd->p - len, (int) len));
			}
		default:
			elog(ERROR, "unsupported column type %u in packed history", type);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

static Datum
zero_of(Oid type)
{
	switch (type)
	{
		case INT8OID:
			return Int64GetDatum(0);
		case INT4OID:
			return Int32GetDatum(0);
		case OIDOID:
			return ObjectIdGetDatum(InvalidOid);
		case FLOAT8OID:
			return Float8GetDatum(0.0);
		case BOOLOID:
			return BoolGetDatum(false);
		case TEXTOID:
			return PointerGetDatum(cstring_to_text(""));
		case TIMESTAMPTZOID:
			break;				/* never encoded as zero */
	}
	return (Datum) 0;
}

static void
rows_grow(ChronicleRows *rows, const ChronicleSource *src, int need)
{
	int			newmax;

	if (need <= rows->maxrows)
		return;
	newmax = Max(need, Max(rows->maxrows * 2, 8));
	for (int c = 0; c < src->ncolumns; c++)
	{
		if (rows->maxrows == 0)
		{
			rows->values[c] = palloc(sizeof(Datum) * newmax);
			rows->nulls[c] = palloc(sizeof(bool) * newmax);
		}
		else
		{
			rows->values[c] = repalloc(rows->values[c], sizeof(Datum) * newmax);
			rows->nulls[c] = repalloc(rows->nulls[c], sizeof(bool) * newmax);
		}
	}
	if (rows->maxrows == 0)
		rows->key_ids = palloc(sizeof(int32) * newmax);
	else
		rows->key_ids = repalloc(rows->key_ids, sizeof(int32) * newmax);
	rows->maxrows = newmax;
}

/*
 * The layout by column (see pack_columns) read into row-major present and
 * NULL bitmaps of nbytes each (palloc'd; *isnull NULL when no value is).
 */
static void
unpack_columns(Reader *rd, uint64 n, int nvals, uint64 nbytes,
			   const uint8 **present_out, const uint8 **isnull_out)
{
	int			modes[CHRONICLE_MAX_COLUMNS];
	uint64		nbits = 2 * (uint64) nvals;
	uint64		at;
	uint8	   *present = palloc0(Max(nbytes, 1));
	uint8	   *isnull = NULL;
	const uint8 *bits = rd->p;

	if ((uint64) (rd->end - rd->p) < (nbits + 7) / 8)
		malformed(rd);
	for (int v = 0; v < nvals; v++)
	{
		modes[v] = bit_of(bits, 2 * v) | (bit_of(bits, 2 * v + 1) << 1);
		nbits += modes[v] == COLUMN_CODES ? 2 * n : modes[v] == COLUMN_MIXED ? n : 0;
	}
	if ((uint64) (rd->end - rd->p) < (nbits + 7) / 8)
		malformed(rd);
	at = 2 * (uint64) nvals;
	for (int v = 0; v < nvals; v++)
		for (uint64 r = 0; r < n; r++)
		{
			uint64		bit = r * nvals + v;
			bool		has = modes[v] == COLUMN_PRESENT;
			bool		null = false;

			if ((r & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			if (modes[v] >= COLUMN_MIXED)
				has = bit_of(bits, at++);
			if (modes[v] == COLUMN_CODES)
				null = bit_of(bits, at++);
			if (has && null)
				malformed(rd);
			if (has)
				present[bit / 8] |= 1 << (bit % 8);
			if (null)
			{
				if (isnull == NULL)
					isnull = palloc0(Max(nbytes, 1));
				isnull[bit / 8] |= 1 << (bit % 8);
			}
		}
	rd->p += (nbits + 7) / 8;
	*present_out = present;
	*isnull_out = isnull;
}

/*
 * Where unpack() hands decoded rows, a batch at a time, when its caller
 * must not hold all of them at once: flush(rows 0 .. nrows - 1, arg), which
 * keeps no pointer into them (the next batch overwrites them).  The values
 * a row's decoding allocates (text) are made in valcxt, which flush
 * resets.
 */
typedef struct UnpackBatches
{
	void		(*flush) (ChronicleRows *rows, void *arg);
	void	   *arg;
	MemoryContext valcxt;
} UnpackBatches;

/*
 * Rows a batch.  A row of a keyed source may take a single byte of the
 * packed value, and about 10 bytes a column decoded: chronicle._unpack()
 * on bytes of a caller's choosing hands them on in batches, so that its
 * memory is a batch's, not some hundred times the input's.
 */
#define UNPACK_BATCH_ROWS	4096

/*
 * Decode a packed value into rows (appended to rows, which names the
 * source).  Key columns are left NULL: the caller fills them from key_ids.
 * With batches, rows are handed to its flush every UNPACK_BATCH_ROWS rows,
 * and the caller flushes what is left at the end.
 */
static void
unpack(ChronicleRows *rows, TimestampTz ts, bytea *data,
	   const UnpackBatches *batches)
{
	const ChronicleSource *src = chronicle_sources[rows->source_index];
	int			nvals = src->ncolumns - src->nkeys;
	Reader		rd;
	uint64		n;
	uint64		nbytes;
	const uint8 *present;
	const uint8 *isnull = NULL;
	uint8		flags;
	TimestampTz tsbase = ts;
	int32		prev_id = 0;

	rd.p = (const uint8 *) VARDATA_ANY(data);
	rd.end = rd.p + VARSIZE_ANY_EXHDR(data);
	rd.source = src->name;
	if (rd.end - rd.p < 1 || (rd.p[0] >> 4) != PACK_VERSION ||
		(rd.p[0] & 0x0F & ~CHRONICLE_PACK_FLAGS) != 0)
		malformed(&rd);
	flags = rd.p[0] & CHRONICLE_PACK_FLAGS;
	rows->complete = (flags & CHRONICLE_PACK_COMPLETE) != 0;
	rd.p += 1;
	n = (flags & CHRONICLE_PACK_ONE) ? 1 : get_varint(&rd);
	/*
	 * A source without keys has one row at a snapshot; a row of a keyed one
	 * takes a byte of key id at least; and the row arrays must stay within
	 * what palloc gives (a value of our own never comes near it).
	 */
	if ((src->nkeys == 0 && n > 1) ||
		n > (uint64) (rd.end - rd.p) ||
		(!batches && (rows->nrows + n) * sizeof(Datum) > MaxAllocSize))
		malformed(&rd);
	nbytes = (n * nvals + 7) / 8;
	if (flags & CHRONICLE_PACK_COLUMNS)
	{
		if (flags & CHRONICLE_PACK_NULLS)
			malformed(&rd);
		unpack_columns(&rd, n, nvals, nbytes, &present, &isnull);
	}
	else
	{
		if (nbytes * ((flags & CHRONICLE_PACK_NULLS) ? 2 : 1) > (uint64) (rd.end - rd.p))
			malformed(&rd);
		present = rd.p;
		rd.p += nbytes;
		if (flags & CHRONICLE_PACK_NULLS)
		{
			isnull = rd.p;
			rd.p += nbytes;
		}
	}
	rows_grow(rows, src, rows->nrows + (int) (batches ? Min(n, UNPACK_BATCH_ROWS) : n));
	for (uint64 i = 0; i < n; i++)
	{
		int			r;
		MemoryContext oldcxt = NULL;

		CHECK_FOR_INTERRUPTS();
		if (batches && rows->nrows >= UNPACK_BATCH_ROWS)
		{
			batches->flush(rows, batches->arg);
			rows->nrows = 0;
		}
		if (batches)
			oldcxt = MemoryContextSwitchTo(batches->valcxt);
		r = rows->nrows;
		if (src->nkeys > 0)
		{
			uint64		v = get_varint(&rd);
			int64		id;

			if (i == 0)
				id = v > PG_INT32_MAX ? -1 : (int64) v;
			else if (v > (uint64) PG_INT32_MAX * 2)
				id = -1;
			else
				id = prev_id + unzigzag(v);
			if (id < 0 || id > PG_INT32_MAX)
				malformed(&rd);
			rows->key_ids[r] = prev_id = (int32) id;
		}
		else
			rows->key_ids[r] = 0;
		for (int c = 0; c < src->nkeys; c++)
		{
			rows->values[c][r] = (Datum) 0;
			rows->nulls[c][r] = true;
		}
		for (int v = 0; v < nvals; v++)
		{
			int			c = src->nkeys + v;
			Oid			type = src->columns[c].type;
			uint64		bit = i * nvals + v;
			bool		has = (present[bit / 8] >> (bit % 8)) & 1;
			bool		null = isnull && ((isnull[bit / 8] >> (bit % 8)) & 1);

			if (has && null)
				malformed(&rd);
			rows->nulls[c][r] = null;
			if (null)
				rows->values[c][r] = (Datum) 0;
			else if (has)
			{
				rows->values[c][r] = get_value(&rd, type, tsbase);
				if (type == TIMESTAMPTZOID)
					tsbase = DatumGetTimestampTz(rows->values[c][r]);
			}
			else if (type == TIMESTAMPTZOID)
				malformed(&rd);	/* never written as a zero */
			else
				rows->values[c][r] = zero_of(type);
		}
		rows->nrows++;
		if (batches)
			MemoryContextSwitchTo(oldcxt);
	}
	if (rd.p != rd.end)
		malformed(&rd);
	if (flags & CHRONICLE_PACK_COLUMNS)
	{
		pfree((void *) present);
		if (isnull)
			pfree((void *) isnull);
	}
}

/* ---------------------------------------------------------------------
 * The key dictionary, chronicle.history_key
 * ---------------------------------------------------------------------
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
static Datum
key_array(int si, const Datum *values, const bool *nulls)
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
		elems[c] = nulls[c] ? (Datum) 0 :
			CStringGetTextDatum(OutputFunctionCall(&t->outfunc[c], values[c]));
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
		chronicle_history_forget(-2);
}

static void
key_cache_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		chronicle_history_forget(-2);
}

/*
 * Forget the cached key ids of source si, or of every source (si < 0);
 * with si == -1 also the prepared INSERT.
 */
void
chronicle_history_forget(int si)
{
	for (int i = 0; i < chronicle_nsources; i++)
	{
		if (si >= 0 && i != si)
			continue;
		if (key_cxt[i])
			MemoryContextReset(key_cxt[i]);
		key_ids[i] = NULL;
	}
	if (si == -1 && history_plan)
	{
		SPI_freeplan(history_plan);
		history_plan = NULL;
	}
}

/* chronicle_key_id() of a key whose key string is known */
static int32
key_id_of(int si, const char *key, const Datum *values, const bool *nulls,
		  bool cache)
{
	const ChronicleSource *src = chronicle_sources[si];
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	int			ret;
	bool		isnull;
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

	/*
	 * A new key: add it.  Two collectors may add the same key at once (the
	 * worker and chronicle.snapshot()): the second waits for the first and
	 * finds its id.
	 */
	args[0] = CStringGetTextDatum(src->name);
	args[1] = key_array(si, values, nulls);
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
			elog(ERROR, "could not find key \"%s\" of source \"%s\" in chronicle.history_key",
				 key, src->name);
	}
	id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									 SPI_tuptable->tupdesc, 1, &isnull));
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

typedef struct KeyDict
{
	int			si;
	MemoryContext cxt;
	HTAB	   *ids;
	bool		reloaded;		/* reloaded once after a miss */
} KeyDict;

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
static void
fill_keys(ChronicleRows *rows, int first, KeyDict *dict)
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

/* Decode and fill the key columns from the dictionary. */
static void
unpack_with_keys(ChronicleRows *rows, TimestampTz ts, bytea *data, KeyDict *dict)
{
	int			first = rows->nrows;

	unpack(rows, ts, data, NULL);
	fill_keys(rows, first, dict);
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
	/* allocated here: rows_grow() repallocs them in this context later */
	rows_grow(&reader->rows, chronicle_sources[si], 64);
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

	fill_keys(rows, 0, srf->dict);
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
	unpack(&rows, PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_BYTEA_PP(2), &srf.batches);
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

	get_typlenbyvalalign(elemtype, &elemlen, &elembyval, &elemalign);
	deconstruct_array(arr, elemtype, elemlen, elembyval, elemalign,
					  &elems, &elemnulls, &nelems);
	memset(&rows, 0, sizeof(rows));
	rows.source_index = si;
	rows.complete = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	rows_grow(&rows, src, Max(nelems, 1));
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
		HeapTupleHeader th;
		HeapTupleData tup;
		Datum		vals[MaxTupleAttributeNumber];
		bool		nulls[MaxTupleAttributeNumber];
		int			r = rows.nrows;

		if (elemnulls[e])
			continue;
		th = DatumGetHeapTupleHeader(elems[e]);
		tup.t_len = HeapTupleHeaderGetDatumLength(th);
		ItemPointerSetInvalid(&tup.t_self);
		tup.t_tableOid = InvalidOid;
		tup.t_data = th;
		heap_deform_tuple(&tup, td, vals, nulls);
		for (int c = 0; c < src->ncolumns; c++)
		{
			rows.nulls[c][r] = attno[c] < 0 || nulls[attno[c]];
			rows.values[c][r] = rows.nulls[c][r] ? (Datum) 0 : vals[attno[c]];
			if (c < src->nkeys && rows.nulls[c][r])
				ereport(ERROR,
						(errcode(ERRCODE_NOT_NULL_VIOLATION),
						 errmsg("chronicle._pack: key column %s of source \"%s\" must not be NULL",
								src->columns[c].name, src->name)));
		}
		if (src->nkeys > 0)
		{
			bool		found;

			/* the key columns of row r, gathered */
			{
				Datum		kv[CHRONICLE_MAX_COLUMNS];
				bool		kn[CHRONICLE_MAX_COLUMNS];

				for (int c = 0; c < src->nkeys; c++)
				{
					kv[c] = rows.values[c][r];
					kn[c] = false;
				}
				chronicle_key_string(src, kv, kn, &keybuf);
				(void) hash_search(seen, keybuf.data, HASH_ENTER, &found);
				if (found)
				{
					/* the key as the dictionary shows it: {a,b,c} */
					ereport(ERROR,
							(errcode(ERRCODE_UNIQUE_VIOLATION),
							 errmsg("chronicle._pack: two rows of key %s of source \"%s\" at one ts",
									OidOutputFunctionCall(F_ARRAY_OUT, key_array(si, kv, kn)),
									src->name)));
				}
			}
		}
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
			unpack(&rows, ts, DatumGetByteaPP(d), NULL);
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
			rows_grow(&rows, src, rows.nrows + 1);
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
