/*-------------------------------------------------------------------------
 *
 * history.h
 *		The packed history row: every source's changed rows of one snapshot
 *		in one row of chronicle.history (history.c; the format in
 *		history_pack.c, the key dictionary in history_keys.c).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_HISTORY_H
#define CHRONICLE_HISTORY_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "lib/stringinfo.h"

#include "source.h"

/*
 * The rows of one source at one snapshot, column-major, in the order of the
 * source's columns (keys first).  key_ids[r] is the dictionary id of row
 * r's key (sources with keys only).
 */
typedef struct ChronicleRows
{
	int			source_index;
	bool		complete;		/* every key of the source (a keyframe) */
	int			nrows;
	int			maxrows;
	int32	   *key_ids;
	Datum	   *values[CHRONICLE_MAX_COLUMNS];
	bool	   *nulls[CHRONICLE_MAX_COLUMNS];
} ChronicleRows;

/* Encode rows (their key_ids set) as one packed value. */
extern bytea *chronicle_pack(const ChronicleRows *rows, TimestampTz ts);

/*
 * The key string of a row (as the emitter hashes it), from its key
 * columns.
 */
extern void chronicle_key_string(const ChronicleSource *src,
								 const Datum *values, const bool *nulls,
								 StringInfo buf);

/*
 * The dictionary id of a key, added to chronicle.history_key if new.
 * SPI connected.  Ids are cached in the collector's process until
 * chronicle_history_forget() (a failed snapshot, another extension).
 */
extern int32 chronicle_key_id(int source_index, const Datum *values,
							  const bool *nulls, bool cache);
extern void chronicle_history_forget(int source_index);

/*
 * rows->key_ids of every row, from the cached dictionary, new keys added
 * in the order of their key strings (see history_keys.c).  SPI connected.
 */
extern void chronicle_rows_key_ids(ChronicleRows *rows);

/*
 * A reader of one source's packed values, for the analysis engine
 * (deltas_read.c), which reads chronicle.history itself rather than through
 * the source's view: each value's rows with their key columns filled from
 * the dictionary, in memory that the next value reuses.  Created in the
 * current memory context; SPI connected while it reads.
 */
typedef struct ChronicleReader ChronicleReader;

extern ChronicleReader *chronicle_reader_create(int source_index);
extern const ChronicleRows *chronicle_reader_unpack(ChronicleReader *reader,
													TimestampTz ts, Datum data);

/* INSERT the history row of a snapshot: packed[i] for source i, or NULL. */
extern void chronicle_history_insert(TimestampTz ts, bytea *const *packed);

#endif							/* CHRONICLE_HISTORY_H */
