/*-------------------------------------------------------------------------
 *
 * history_int.h
 *		What the pieces of the packed history tell each other and nobody
 *		else: the decoder (history_pack.c), the key dictionary
 *		(history_keys.c), and their users in history.c and history_sql.c.
 *
 * The rest of the extension sees the packed history through history.h
 * only.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_HISTORY_INT_H
#define CHRONICLE_HISTORY_INT_H

#include "utils/hsearch.h"

#include "history.h"

/* ---------------------------------------------------------------------
 * The packed format (history_pack.c)
 * ---------------------------------------------------------------------
 */

/*
 * Where chronicle_history_unpack() hands decoded rows, a batch at a time,
 * when its caller must not hold all of them at once: flush(rows 0 ..
 * nrows - 1, arg), which keeps no pointer into them (the next batch
 * overwrites them).  The values a row's decoding allocates (text) are made
 * in valcxt, which flush resets.
 */
typedef struct UnpackBatches
{
	void		(*flush) (ChronicleRows *rows, void *arg);
	void	   *arg;
	MemoryContext valcxt;
} UnpackBatches;

extern void chronicle_history_unpack(ChronicleRows *rows, TimestampTz ts,
									 bytea *data,
									 const UnpackBatches *batches);
extern void chronicle_rows_grow(ChronicleRows *rows,
								const ChronicleSource *src, int need);

/* ---------------------------------------------------------------------
 * The key dictionary (history_keys.c)
 * ---------------------------------------------------------------------
 */

/* The reader's side: id -> key values, for one source, per query. */
typedef struct KeyDict
{
	int			si;
	MemoryContext cxt;
	HTAB	   *ids;
	bool		reloaded;		/* reloaded once after a miss */
} KeyDict;

extern void chronicle_rows_fill_keys(ChronicleRows *rows, int first,
									 KeyDict *dict);
extern Datum chronicle_key_array(int si, const Datum *values,
								 const bool *nulls);
extern void chronicle_key_cache_forget(int si);
extern int32 chronicle_key_add(Datum source, Datum key);

#endif							/* CHRONICLE_HISTORY_INT_H */
