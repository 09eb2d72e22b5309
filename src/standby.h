/*-------------------------------------------------------------------------
 *
 * standby.h
 *		The standby ring: snapshots taken during recovery, kept in shared
 *		memory until promotion, and the format of its records.
 *
 * standby.c owns the ring and its record format: the collector writes a
 * record with chronicle_ring_record_begin(), chronicle_ring_put_row() and
 * chronicle_ring_record_end(), and everything that reads the ring (the
 * write after promotion in collector.c, chronicle.standby_history())
 * walks a copy of it with a ChronicleRingReader.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_STANDBY_H
#define CHRONICLE_STANDBY_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

#include "source.h"

/*
 * The header of one ring record (one snapshot).  The rows follow it, each
 * a uint16 source index followed by, for every column of the source, an
 * int32 length (-1 for NULL) and that many bytes of the value's text
 * output; all copied with memcpy (no alignment).
 */
typedef struct ChronicleRingRecord
{
	uint32		len;			/* of the whole record, header included */
	uint32		nrows;
	TimestampTz ts;
	double		duration_ms;
	int32		errors;
	bool		keyframe;
	bool		newsegment;		/* first snapshot of a recording */
} ChronicleRingRecord;

/* One row of a record, pointing into the reader's copy of the ring. */
typedef struct ChronicleRingRow
{
	int			source_index;	/* in chronicle_sources[] */
	const char *values[CHRONICLE_MAX_COLUMNS];	/* text output, not
												 * terminated; NULL: SQL NULL */
	int32		lens[CHRONICLE_MAX_COLUMNS];
} ChronicleRingRow;

/* Walks a copy of the ring (chronicle_ring_copy()), record by record. */
typedef struct ChronicleRingReader
{
	const char *data;
	uint64		size;
	uint64		next;			/* offset of the next record */
	const char *row;			/* the next row of the current record */
	uint32		rows_left;		/* in the current record */
} ChronicleRingReader;

/* Writing a record (collector.c). */
extern void chronicle_ring_record_begin(StringInfo buf);
extern void chronicle_ring_put_row(StringInfo buf, int source_index,
								   int ncolumns, char *const *values);
extern void chronicle_ring_record_end(StringInfo buf,
									  ChronicleRingRecord *header);

/* Reading a copy: every record, and within one, every row. */
extern void chronicle_ring_reader_init(ChronicleRingReader *reader,
									   const char *data, uint64 size);
extern bool chronicle_ring_next_record(ChronicleRingReader *reader,
									   ChronicleRingRecord *rec);
extern bool chronicle_ring_next_row(ChronicleRingReader *reader,
									ChronicleRingRow *row);

/* The ring in shared memory. */
extern bool chronicle_ring_append(const char *data, uint32 len,
								  TimestampTz ts);
extern char *chronicle_ring_copy(uint64 *tail, uint64 *head);
extern void chronicle_ring_consume(uint64 upto, int64 written);
extern bool chronicle_ring_pending(void);

#endif							/* CHRONICLE_STANDBY_H */
