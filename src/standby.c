/*-------------------------------------------------------------------------
 *
 * standby.c
 *		The standby ring: snapshots taken while the server is in recovery,
 *		kept in shared memory until promotion.
 *
 * During recovery no table can be written, so the collector serializes
 * each snapshot (the same sparse rows it would have inserted, as the text
 * output of every value) into one record of a byte ring in shared memory,
 * sized by chronicle.standby_ring_size.  When the ring is full the oldest
 * snapshots are evicted, and counted.  SQL functions read the ring from any
 * backend of the standby (chronicle.standby_history(), .standby_ring());
 * after promotion the worker writes the ring's snapshots into the history
 * tables (collector.c, chronicle_write_ring()) and empties it.
 *
 * The ring lives right after ChronicleShared, in the main shared memory
 * when preloaded and in the named DSM segment otherwise.  Readers copy the
 * used bytes under the ring's LWLock in shared mode and parse the copy
 * after releasing it, so a slow reader never stalls the collector for
 * longer than one memcpy.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "shared.h"
#include "source.h"
#include "standby.h"

PG_FUNCTION_INFO_V1(chronicle_standby_history);
PG_FUNCTION_INFO_V1(chronicle_standby_ring);

static void
ring_write(ChronicleShared *s, uint64 pos, const char *src, uint64 len)
{
	char	   *data = ChronicleRingData(s);
	uint64		off = pos % s->ring_size;
	uint64		first = Min(len, s->ring_size - off);

	memcpy(data + off, src, first);
	if (first < len)
		memcpy(data, src + first, len - first);
}

static void
ring_read(ChronicleShared *s, uint64 pos, char *dst, uint64 len)
{
	char	   *data = ChronicleRingData(s);
	uint64		off = pos % s->ring_size;
	uint64		first = Min(len, s->ring_size - off);

	memcpy(dst, data + off, first);
	if (first < len)
		memcpy(dst + first, data, len - first);
}

/*
 * Append one record (a whole snapshot), evicting the oldest ones to make
 * room.  Returns false when the record is larger than the whole ring (it
 * is then dropped, and counted as evicted).
 */
bool
chronicle_ring_append(const char *data, uint32 len, TimestampTz ts)
{
	ChronicleShared *s = chronicle_shared();

	if (s == NULL)
		return false;
	LWLockAcquire(&s->ring_lock, LW_EXCLUSIVE);
	if (len > s->ring_size)
	{
		s->ring_evicted++;
		LWLockRelease(&s->ring_lock);
		return false;
	}
	while (s->ring_head - s->ring_tail + len > s->ring_size)
	{
		ChronicleRingRecord old;

		ring_read(s, s->ring_tail, (char *) &old, sizeof(old));
		s->ring_tail += old.len;
		s->ring_records--;
		s->ring_evicted++;
		if (s->ring_tail < s->ring_head)
		{
			ring_read(s, s->ring_tail, (char *) &old, sizeof(old));
			s->ring_oldest = old.ts;
		}
	}
	ring_write(s, s->ring_head, data, len);
	if (s->ring_records == 0)
		s->ring_oldest = ts;
	s->ring_head += len;
	s->ring_records++;
	s->ring_newest = ts;
	LWLockRelease(&s->ring_lock);
	return true;
}

/*
 * A private copy of the ring's records, oldest first, and the positions
 * it covers.  NULL when the ring is empty.
 */
char *
chronicle_ring_copy(uint64 *tail, uint64 *head)
{
	ChronicleShared *s = chronicle_shared();
	char	   *copy = NULL;

	*tail = *head = 0;
	if (s == NULL || s->ring_size == 0)
		return NULL;
	LWLockAcquire(&s->ring_lock, LW_SHARED);
	*tail = s->ring_tail;
	*head = s->ring_head;
	if (*head > *tail)
	{
		/* palloc_extended: a huge ring may need more than 1 GB - 1 */
		copy = palloc_extended(*head - *tail, MCXT_ALLOC_HUGE);
		ring_read(s, *tail, copy, *head - *tail);
	}
	LWLockRelease(&s->ring_lock);
	return copy;
}

/* Forget the records before position upto: they were written. */
void
chronicle_ring_consume(uint64 upto, int64 written)
{
	ChronicleShared *s = chronicle_shared();

	LWLockAcquire(&s->ring_lock, LW_EXCLUSIVE);
	while (s->ring_tail < upto && s->ring_tail < s->ring_head)
	{
		ChronicleRingRecord old;

		ring_read(s, s->ring_tail, (char *) &old, sizeof(old));
		s->ring_tail += old.len;
		s->ring_records--;
	}
	s->ring_written += written;
	if (s->ring_tail < s->ring_head)
	{
		ChronicleRingRecord old;

		ring_read(s, s->ring_tail, (char *) &old, sizeof(old));
		s->ring_oldest = old.ts;
	}
	else
		s->ring_oldest = s->ring_newest = 0;
	LWLockRelease(&s->ring_lock);
}

/* Are there snapshots waiting to be written?  (No lock: a hint.) */
bool
chronicle_ring_pending(void)
{
	ChronicleShared *s = chronicle_shared();

	return s != NULL && s->ring_size > 0 && s->ring_head != s->ring_tail;
}

/*
 * The record format, in one place: records are built in a StringInfo by
 * the collector and read from a private copy of the ring (see standby.h).
 */

/* Start a record: room for the header, filled in by _record_end(). */
void
chronicle_ring_record_begin(StringInfo buf)
{
	appendStringInfoSpaces(buf, sizeof(ChronicleRingRecord));
}

/* Append one row: the text output of every column, NULL for SQL NULL. */
void
chronicle_ring_put_row(StringInfo buf, int source_index, int ncolumns,
					   char *const *values)
{
	uint16		si = (uint16) source_index;

	appendBinaryStringInfo(buf, (char *) &si, sizeof(si));
	for (int c = 0; c < ncolumns; c++)
	{
		int32		len = values[c] ? strlen(values[c]) : -1;

		appendBinaryStringInfo(buf, (char *) &len, sizeof(len));
		if (len > 0)
			appendBinaryStringInfo(buf, values[c], len);
	}
}

/* Finish a record: its header, with the record's length, goes first. */
void
chronicle_ring_record_end(StringInfo buf, ChronicleRingRecord *header)
{
	header->len = buf->len;
	memcpy(buf->data, header, sizeof(*header));
}

void
chronicle_ring_reader_init(ChronicleRingReader *reader, const char *data,
						   uint64 size)
{
	reader->data = data;
	reader->size = data ? size : 0;
	reader->next = 0;
	reader->row = NULL;
	reader->rows_left = 0;
}

/*
 * The next record's header; false after the last one.  Its rows, which
 * chronicle_ring_next_row() returns, may be skipped.
 */
bool
chronicle_ring_next_record(ChronicleRingReader *reader,
						   ChronicleRingRecord *rec)
{
	if (reader->next >= reader->size)
		return false;
	memcpy(rec, reader->data + reader->next, sizeof(*rec));
	reader->row = reader->data + reader->next + sizeof(*rec);
	reader->rows_left = rec->nrows;
	reader->next += rec->len;
	return true;
}

/* The current record's next row; false after its last one. */
bool
chronicle_ring_next_row(ChronicleRingReader *reader, ChronicleRingRow *row)
{
	const char *p = reader->row;
	const ChronicleSource *src;
	uint16		si;

	if (reader->rows_left == 0)
		return false;
	memcpy(&si, p, sizeof(si));
	p += sizeof(si);
	if (si >= chronicle_nsources)
		elog(ERROR, "corrupt standby ring record");
	src = chronicle_sources[si];
	row->source_index = si;
	for (int c = 0; c < src->ncolumns; c++)
	{
		int32		len;

		memcpy(&len, p, sizeof(len));
		p += sizeof(len);
		row->lens[c] = len;
		row->values[c] = len < 0 ? NULL : p;
		if (len > 0)
			p += len;
	}
	reader->row = p;
	reader->rows_left--;
	return true;
}

static int
source_index(text *name)
{
	char	   *cname = text_to_cstring(name);
	StringInfoData names;

	for (int i = 0; i < chronicle_nsources; i++)
		if (strcmp(chronicle_sources[i]->name, cname) == 0)
			return i;

	initStringInfo(&names);
	for (int i = 0; i < chronicle_nsources; i++)
		appendStringInfo(&names, "%s%s", i > 0 ? ", " : "",
						 chronicle_sources[i]->name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown source \"%s\"", cname),
			 errhint("The sources are: %s.", names.data)));
	return -1;					/* not reached */
}

/* Append a value's text output to a JSON object as the right JSON type. */
static void
json_value(StringInfo buf, Oid type, const char *val, int len)
{
	char	   *s = pnstrdup(val, len);

	switch (type)
	{
		case INT8OID:
		case INT4OID:
		case OIDOID:
			appendStringInfoString(buf, s);
			break;
		case FLOAT8OID:
			/* NaN and infinities are not JSON numbers */
			if (strspn(s, "0123456789.-+eE") == strlen(s))
				appendStringInfoString(buf, s);
			else
				escape_json(buf, s);
			break;
		case BOOLOID:
			appendStringInfoString(buf, s[0] == 't' ? "true" : "false");
			break;
		default:
			escape_json(buf, s);
	}
	pfree(s);
}

/*
 * chronicle.standby_history(source): the rows of one source in the standby
 * ring, as recorded (sparse, with the snapshot's keyframe flag), one jsonb
 * object of column -> value a row.
 */
Datum
chronicle_standby_history(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			want;
	char	   *copy;
	uint64		tail,
				head;
	ChronicleRingReader reader;
	ChronicleRingRecord rec;
	ChronicleRingRow row;
	StringInfoData buf;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("source must not be NULL"),
				 errhint("Pass a source name such as 'io' or 'wal'.")));
	want = source_index(PG_GETARG_TEXT_PP(0));

	InitMaterializedSRF(fcinfo, 0);
	copy = chronicle_ring_copy(&tail, &head);
	if (copy == NULL)
		return (Datum) 0;

	initStringInfo(&buf);
	chronicle_ring_reader_init(&reader, copy, head - tail);
	while (chronicle_ring_next_record(&reader, &rec))
	{
		while (chronicle_ring_next_row(&reader, &row))
		{
			const ChronicleSource *rsrc = chronicle_sources[row.source_index];
			Datum		values[3];
			bool		nulls[3] = {0};

			if (row.source_index != want)
				continue;
			resetStringInfo(&buf);
			appendStringInfoChar(&buf, '{');
			for (int c = 0; c < rsrc->ncolumns; c++)
			{
				if (c > 0)
					appendStringInfoString(&buf, ", ");
				escape_json(&buf, rsrc->columns[c].name);
				appendStringInfoString(&buf, ": ");
				if (row.values[c] == NULL)
					appendStringInfoString(&buf, "null");
				else
					json_value(&buf, rsrc->columns[c].type, row.values[c],
							   row.lens[c]);
			}
			appendStringInfoChar(&buf, '}');
			values[0] = TimestampTzGetDatum(rec.ts);
			values[1] = BoolGetDatum(rec.keyframe);
			values[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
	}
	pfree(copy);
	return (Datum) 0;
}

/* chronicle.standby_ring(): how full the ring is and what it holds. */
Datum
chronicle_standby_ring(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[8] = {0};
	bool		nulls[8] = {0};
	ChronicleShared *s = chronicle_shared();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	if (s == NULL)
	{
		for (int i = 0; i < 8; i++)
			nulls[i] = true;
		values[0] = Int64GetDatum(0);
		nulls[0] = false;
	}
	else
	{
		LWLockAcquire(&s->ring_lock, LW_SHARED);
		values[0] = Int64GetDatum(s->ring_records);
		values[1] = TimestampTzGetDatum(s->ring_oldest);
		nulls[1] = s->ring_records == 0;
		values[2] = TimestampTzGetDatum(s->ring_newest);
		nulls[2] = s->ring_records == 0;
		values[3] = Int64GetDatum((int64) (s->ring_head - s->ring_tail));
		values[4] = Int64GetDatum((int64) s->ring_size);
		values[5] = Int64GetDatum(s->ring_evicted);
		values[6] = Int64GetDatum(s->ring_written);
		LWLockRelease(&s->ring_lock);
		values[7] = BoolGetDatum(RecoveryInProgress());
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
