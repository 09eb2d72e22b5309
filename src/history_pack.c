/*-------------------------------------------------------------------------
 *
 * history_pack.c
 *		The packed format: one source's rows of one snapshot encoded as one
 *		compact binary value of chronicle.history, and decoded again.
 *
 * The format is the one concern of this file, encoder and decoder side by
 * side, so that a change to one is made beside the other.  Which rows go
 * in and where their keys' ids come from is history_keys.c's and the
 * collector's business; this file only turns rows into bytes and back.
 *
 * The packed value of one source at one snapshot (all integers are
 * unsigned LEB128 varints; signed ones zigzag-encoded first):
 *
 *	byte 0			format version (3; 2 is read too, see below) in the high
 *					four bits, flags in the low
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
 *					zigzag of its difference to the row before (keys seen
 *					together got ids close together, and the encoder writes
 *					the rows in key id order since 0.3.0: one byte instead
 *					of two; the decoder takes any order)
 *	  payloads		of its present values, in column order, by type:
 *					int8, int4	zigzag varint
 *					int8 of pages	(the source's page_columns, source.h) the
 *								value's whole 4096-byte pages q (C's
 *								division, toward zero) and remainder r:
 *								varint of zigzag(q) * 2 + (r != 0), then,
 *								when r != 0, the zigzag varint of r (its sign
 *								that of the value): 8 kB blocks take two
 *								bytes fewer than their bytes would
 *					oid			varint
 *					float8		the IEEE bits big-endian (8 bytes) when the sign
 *								bit is clear; else 0x80 and those 8 bytes; or a
 *								shorter exact form, a tag byte and a varint N:
 *								0x81 N / 1000.0 (pg_stat_database's times),
 *								0x82 N (whole numbers), 0x83 N * 0.001
 *								(pg_stat_io's times), 0x84 N * 10 (whole
 *								multiples of 10, when a byte shorter than
 *								0x82: clock ticks in ms; version 3), used
 *								only when that expression gives back the
 *								same bits
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
 * Version 3 (0.3.0) adds the pages of page_columns and the float8 form
 * N * 10 (60 bytes off a second under the same load, docs/benchmarks.md);
 * a value of version 2 is read as it was written, its page_columns as
 * plain int8.
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

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "varatt.h"

#include "history_int.h"
#include "pg_chronicle.h"

#define PACK_VERSION		3		/* in the high four bits of byte 0 */
#define PACK_VERSION_V2		2		/* read too: no pages */
#define PAGE_BYTES			4096	/* the unit of page_columns */
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
#define FLOAT8_TENS			0x84	/* varint N: N * 10 (version 3) */

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

/*
 * The columns of source si stored in pages (bit c set for column c): its
 * page_columns, checked when the library was loaded (sources.c).
 */
static uint64
page_mask(int si)
{
	static uint64 masks[CHRONICLE_MAX_SOURCES];
	static bool done[CHRONICLE_MAX_SOURCES];
	const ChronicleSource *src = chronicle_sources[si];

	StaticAssertStmt(CHRONICLE_MAX_COLUMNS <= 64, "a column mask is a uint64");
	if (!done[si])
	{
		for (int i = 0; src->page_columns && src->page_columns[i]; i++)
		{
			int			c = chronicle_source_column(src, src->page_columns[i]);

			if (c < 0 || src->columns[c].type != INT8OID)
				elog(ERROR, "source \"%s\": \"%s\" is no bigint column",
					 src->name, src->page_columns[i]);
			masks[si] |= UINT64CONST(1) << c;
		}
		done[si] = true;
	}
	return masks[si];
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

		if ((float8) whole == f && whole % 10 == 0 &&
			varint_len((uint64) whole / 10) < varint_len((uint64) whole))
		{
			/* clock ticks of 10 ms in ms (os_cpu, os_process_cpu) */
			tag = FLOAT8_TENS;
			n = whole / 10;
		}
		else if ((float8) whole == f)
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
put_value(StringInfo buf, Oid type, Datum d, TimestampTz ts, bool pages)
{
	switch (type)
	{
		case INT8OID:
			if (pages)
			{
				int64		v = DatumGetInt64(d);
				int64		q = v / PAGE_BYTES;
				int64		r = v - q * PAGE_BYTES;

				/* |q| <= 2^51: zigzag(q) * 2 fits */
				put_varint(buf, (zigzag(q) << 1) | (r != 0));
				if (r != 0)
					put_varint(buf, zigzag(r));
			}
			else
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

/* qsort_arg comparator of row indexes by their key ids (arg) */
static int
key_id_cmp(const void *a, const void *b, void *arg)
{
	const int32 *ids = (const int32 *) arg;
	int32		ia = ids[*(const int *) a];
	int32		ib = ids[*(const int *) b];

	return (ia > ib) - (ia < ib);
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
	uint64		pages = page_mask(rows->source_index);
	uint8	   *columns;
	int			ncolbytes = 0;
	StringInfoData body;
	StringInfoData buf;
	bytea	   *result;
	int		   *order = palloc(sizeof(int) * Max(rows->nrows, 1));

	/*
	 * The rows in the order of their key ids: each id's difference to the
	 * one before is small and positive, one byte where the order the source
	 * emits (a hash table's, for waits) takes two for a third of the rows.
	 */
	for (int i = 0; i < rows->nrows; i++)
		order[i] = i;
	if (src->nkeys > 0)
		qsort_arg(order, rows->nrows, sizeof(int), key_id_cmp, rows->key_ids);

	/* The rows' payloads, and which values have one, which are NULL. */
	initStringInfo(&body);
	for (int i = 0; i < rows->nrows; i++)
	{
		int			r = order[i];

		if (src->nkeys > 0 && i == 0)
			put_varint(&body, (uint32) rows->key_ids[r]);
		else if (src->nkeys > 0)
			put_varint(&body, zigzag((int64) rows->key_ids[r] - rows->key_ids[order[i - 1]]));
		for (int v = 0; v < nvals; v++)
		{
			int			c = src->nkeys + v;
			int64		bit = (int64) i * nvals + v;
			Oid			type = src->columns[c].type;

			if (rows->nulls[c][r])
			{
				isnull[bit / 8] |= 1 << (bit % 8);
				has_nulls = true;
			}
			else if (!is_zero(type, rows->values[c][r]))
			{
				present[bit / 8] |= 1 << (bit % 8);
				put_value(&body, type, rows->values[c][r], tsbase,
						  (pages >> c) & 1);
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
	pfree(order);
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
get_value(Reader *rd, Oid type, TimestampTz ts, bool pages)
{
	switch (type)
	{
		case INT8OID:
			if (pages)
			{
				uint64		u = get_varint(rd);
				int64		q;
				int64		r = 0;
				int64		v;

				if (u >> 53)
					malformed(rd);	/* |q| <= 2^51 */
				q = unzigzag(u >> 1);
				if (u & 1)
					r = unzigzag(get_varint(rd));
				/* v's one form: no wrap, r nonzero, r as v / 4096 leaves it */
				v = (int64) ((uint64) q * PAGE_BYTES + (uint64) r);
				if ((u & 1) != (r != 0) || v / PAGE_BYTES != q || v - q * PAGE_BYTES != r)
					malformed(rd);
				return Int64GetDatum(v);
			}
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
					if (tag == FLOAT8_TENS)
					{
						uint64		n = get_varint(rd);

						if (n > PG_UINT64_MAX / 10)
							malformed(rd);
						return Float8GetDatum((float8) (n * 10));
					}
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

/*
 * Room for need rows in rows' arrays: allocated in the current memory
 * context the first time, repalloc'd (in theirs) after.
 */
void
chronicle_rows_grow(ChronicleRows *rows, const ChronicleSource *src, int need)
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
 * Rows a batch.  A row of a keyed source may take a single byte of the
 * packed value, and about 10 bytes a column decoded: chronicle._unpack()
 * on bytes of a caller's choosing hands them on in batches, so that its
 * memory is a batch's, not some hundred times the input's.
 */
#define UNPACK_BATCH_ROWS	4096

/*
 * What comes before the rows of a packed value: its flags, its number of
 * rows, and the present and NULL bitmaps (row-major; isnull NULL when no
 * value is NULL).  In the layout by column the bitmaps are palloc'd by
 * unpack_columns(), else they point into the value.
 */
typedef struct PackHead
{
	uint8		flags;
	uint64		n;
	uint64		pages;			/* the columns in pages: none in version 2 */
	const uint8 *present;
	const uint8 *isnull;
} PackHead;

/*
 * Read the head of a packed value of rows' source, every length checked
 * against the value's end, and set rows->complete from its flags.
 * Unbatched, rows' arrays must hold its rows and the rows' own.
 */
static void
unpack_head(Reader *rd, const ChronicleSource *src, ChronicleRows *rows,
			bool batched, PackHead *head)
{
	int			nvals = src->ncolumns - src->nkeys;
	uint64		n;
	uint64		nbytes;
	uint8		flags;

	if (rd->end - rd->p < 1 ||
		((rd->p[0] >> 4) != PACK_VERSION && (rd->p[0] >> 4) != PACK_VERSION_V2) ||
		(rd->p[0] & 0x0F & ~CHRONICLE_PACK_FLAGS) != 0)
		malformed(rd);
	head->pages = (rd->p[0] >> 4) == PACK_VERSION ? page_mask(rows->source_index) : 0;
	flags = rd->p[0] & CHRONICLE_PACK_FLAGS;
	rows->complete = (flags & CHRONICLE_PACK_COMPLETE) != 0;
	rd->p += 1;
	n = (flags & CHRONICLE_PACK_ONE) ? 1 : get_varint(rd);
	/*
	 * A source without keys has one row at a snapshot; a row of a keyed one
	 * takes a byte of key id at least; and the row arrays must stay within
	 * what palloc gives (a value of our own never comes near it).
	 */
	if ((src->nkeys == 0 && n > 1) ||
		n > (uint64) (rd->end - rd->p) ||
		(!batched && (rows->nrows + n) * sizeof(Datum) > MaxAllocSize))
		malformed(rd);
	head->flags = flags;
	head->n = n;
	head->isnull = NULL;
	nbytes = (n * nvals + 7) / 8;
	if (flags & CHRONICLE_PACK_COLUMNS)
	{
		if (flags & CHRONICLE_PACK_NULLS)
			malformed(rd);
		unpack_columns(rd, n, nvals, nbytes, &head->present, &head->isnull);
	}
	else
	{
		if (nbytes * ((flags & CHRONICLE_PACK_NULLS) ? 2 : 1) > (uint64) (rd->end - rd->p))
			malformed(rd);
		head->present = rd->p;
		rd->p += nbytes;
		if (flags & CHRONICLE_PACK_NULLS)
		{
			head->isnull = rd->p;
			rd->p += nbytes;
		}
	}
}

/*
 * The key id of row i: the first row's as it is, each next row's as the
 * zigzag of its difference to the one before, *prev_id (set to this one).
 */
static int32
get_key_id(Reader *rd, uint64 i, int32 *prev_id)
{
	uint64		v = get_varint(rd);
	int64		id;

	if (i == 0)
		id = v > PG_INT32_MAX ? -1 : (int64) v;
	else if (v > (uint64) PG_INT32_MAX * 2)
		id = -1;
	else
		id = *prev_id + unzigzag(v);
	if (id < 0 || id > PG_INT32_MAX)
		malformed(rd);
	*prev_id = (int32) id;
	return (int32) id;
}

/*
 * Row i of the value into row rows->nrows (the caller counts it): its key
 * id, its key columns NULL, its values.  *tsbase is the base of the next
 * timestamp (see put_value), moved on by each one decoded.
 */
static void
unpack_row(Reader *rd, ChronicleRows *rows, const ChronicleSource *src,
		   const PackHead *head, uint64 i, int32 *prev_id, TimestampTz *tsbase)
{
	int			nvals = src->ncolumns - src->nkeys;
	int			r = rows->nrows;

	if (src->nkeys > 0)
		rows->key_ids[r] = get_key_id(rd, i, prev_id);
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
		bool		has = (head->present[bit / 8] >> (bit % 8)) & 1;
		bool		null = head->isnull && ((head->isnull[bit / 8] >> (bit % 8)) & 1);

		if (has && null)
			malformed(rd);
		rows->nulls[c][r] = null;
		if (null)
			rows->values[c][r] = (Datum) 0;
		else if (has)
		{
			rows->values[c][r] = get_value(rd, type, *tsbase,
										   (head->pages >> c) & 1);
			if (type == TIMESTAMPTZOID)
				*tsbase = DatumGetTimestampTz(rows->values[c][r]);
		}
		else if (type == TIMESTAMPTZOID)
			malformed(rd);		/* never written as a zero */
		else
			rows->values[c][r] = zero_of(type);
	}
}

/*
 * Decode a packed value into rows (appended to rows, which names the
 * source).  Key columns are left NULL: the caller fills them from key_ids.
 * With batches, rows are handed to its flush every UNPACK_BATCH_ROWS rows,
 * and the caller flushes what is left at the end.
 */
void
chronicle_history_unpack(ChronicleRows *rows, TimestampTz ts, bytea *data,
						 const UnpackBatches *batches)
{
	const ChronicleSource *src = chronicle_sources[rows->source_index];
	Reader		rd;
	PackHead	head;
	TimestampTz tsbase = ts;
	int32		prev_id = 0;

	rd.p = (const uint8 *) VARDATA_ANY(data);
	rd.end = rd.p + VARSIZE_ANY_EXHDR(data);
	rd.source = src->name;
	unpack_head(&rd, src, rows, batches != NULL, &head);
	chronicle_rows_grow(rows, src, rows->nrows +
						(int) (batches ? Min(head.n, UNPACK_BATCH_ROWS) : head.n));
	for (uint64 i = 0; i < head.n; i++)
	{
		MemoryContext oldcxt = NULL;

		CHECK_FOR_INTERRUPTS();
		if (batches && rows->nrows >= UNPACK_BATCH_ROWS)
		{
			batches->flush(rows, batches->arg);
			rows->nrows = 0;
		}
		if (batches)
			oldcxt = MemoryContextSwitchTo(batches->valcxt);
		unpack_row(&rd, rows, src, &head, i, &prev_id, &tsbase);
		rows->nrows++;
		if (batches)
			MemoryContextSwitchTo(oldcxt);
	}
	if (rd.p != rd.end)
		malformed(&rd);
	if (head.flags & CHRONICLE_PACK_COLUMNS)
	{
		pfree((void *) head.present);
		if (head.isnull)
			pfree((void *) head.isnull);
	}
}
