/*-------------------------------------------------------------------------
 *
 * emitter.h
 *		The row emitter behind chronicle_emit_row(): the collector's state
 *		of one source across snapshots, and of one source's collection.
 *
 * Sources see ChronicleEmitter as an opaque type (source.h); the collector
 * (collector.c) sets these up around a source's collect callback and
 * writes the rows queued in them.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_EMITTER_H
#define CHRONICLE_EMITTER_H

#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"

#include "shared.h"
#include "source.h"

/* The previous reading of one key. */
typedef struct ChronicleRow
{
	char		key[CHRONICLE_KEY_LEN];
	Datum	   *values;
	bool	   *nulls;
} ChronicleRow;

/* Collector-private state of one source, kept across snapshots. */
typedef struct ChronicleSourceState
{
	MemoryContext cxt[2];		/* previous and next reading */
	int			cur;			/* which of cxt holds the previous reading */
	HTAB	   *prev;			/* in cxt[cur]; NULL before the first one */
	int16		typlen[CHRONICLE_MAX_COLUMNS];
	bool		typbyval[CHRONICLE_MAX_COLUMNS];
	char		typalign[CHRONICLE_MAX_COLUMNS];
	FmgrInfo	outfunc[CHRONICLE_MAX_COLUMNS]; /* for the standby ring */
	FmgrInfo	infunc[CHRONICLE_MAX_COLUMNS];
	Oid			typioparam[CHRONICLE_MAX_COLUMNS];
	bool		initialized;

	/* error backoff */
	int			failures;		/* consecutive failed collections */
	int			skip;			/* snapshots left to skip */
	TimestampTz last_logged;
	char		last_error[CHRONICLE_ERRMSG_LEN];
} ChronicleSourceState;

struct ChronicleEmitter
{
	const ChronicleSource *source;
	ChronicleSourceState *state;
	bool		keyframe;
	HTAB	   *next;			/* this reading, in cxt[1 - cur] */
	StringInfo	ring;			/* recovery: rows go here, not to a table */
	int			source_index;

	/* changed rows, column-major, in the snapshot's memory context */
	int			nrows;
	int			maxrows;
	Datum	   *values[CHRONICLE_MAX_COLUMNS];
	bool	   *nulls[CHRONICLE_MAX_COLUMNS];
	StringInfoData keybuf;

	bytea	   *packed;			/* the rows packed, once written */
};

#endif							/* CHRONICLE_EMITTER_H */
