/*-------------------------------------------------------------------------
 *
 * emitter.c
 *		chronicle_emit_row(): what a source emits, compared with its
 *		previous reading.
 *
 * Every row a source emits is remembered as the source's next reading, in
 * a hash table by the row's key; it is queued for writing only when it
 * differs from the previous reading of the same key, or when the snapshot
 * is a keyframe.  The collector (collector.c) swaps the readings once the
 * source's rows are written.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/memutils.h"

#include "emitter.h"
#include "history.h"

void
chronicle_emit_row(ChronicleEmitter *em, const Datum *values, const bool *nulls)
{
	const ChronicleSource *src = em->source;
	ChronicleSourceState *st = em->state;
	ChronicleRow *next;
	ChronicleRow *prev = NULL;
	bool		found;
	bool		changed;
	uint32		hashvalue;
	MemoryContext oldcxt;

	chronicle_key_string(src, values, nulls, &em->keybuf);
	/* the same hash in both readings' tables (same key size and function) */
	hashvalue = get_hash_value(em->next, em->keybuf.data);

	/* Remember this reading of the key, whether or not it gets written. */
	oldcxt = MemoryContextSwitchTo(st->cxt[1 - st->cur]);
	next = hash_search_with_hash_value(em->next, em->keybuf.data, hashvalue,
									   HASH_ENTER, &found);
	if (found)
		elog(ERROR, "source \"%s\" emitted key \"%s\" twice",
			 src->name, em->keybuf.data);
	next->values = palloc(sizeof(Datum) * src->ncolumns);
	next->nulls = palloc(sizeof(bool) * src->ncolumns);
	for (int c = 0; c < src->ncolumns; c++)
	{
		next->nulls[c] = nulls[c];
		next->values[c] = nulls[c] ? (Datum) 0 :
			datumCopy(values[c], st->typbyval[c], st->typlen[c]);
	}
	MemoryContextSwitchTo(oldcxt);

	/* Did it change since the previous reading? */
	if (!em->keyframe && st->prev != NULL)
		prev = hash_search_with_hash_value(st->prev, em->keybuf.data, hashvalue,
										   HASH_FIND, NULL);
	changed = (prev == NULL);
	for (int c = src->nkeys; !changed && c < src->ncolumns; c++)
	{
		if (prev->nulls[c] != nulls[c])
			changed = true;
		else if (!nulls[c] &&
				 !datumIsEqual(prev->values[c], values[c],
							   st->typbyval[c], st->typlen[c]))
			changed = true;
	}
	if (!changed)
		return;

	/* Queue it for the INSERT. */
	if (em->nrows == em->maxrows)
	{
		int			newmax = em->maxrows * 2;

		for (int c = 0; c < src->ncolumns; c++)
		{
			em->values[c] = repalloc(em->values[c], sizeof(Datum) * newmax);
			em->nulls[c] = repalloc(em->nulls[c], sizeof(bool) * newmax);
		}
		em->maxrows = newmax;
	}
	for (int c = 0; c < src->ncolumns; c++)
	{
		em->values[c][em->nrows] = next->values[c];
		em->nulls[c][em->nrows] = next->nulls[c];
	}
	em->nrows++;
}
