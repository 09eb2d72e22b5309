/*-------------------------------------------------------------------------
 *
 * deltas.c
 *		The engine behind every chronicle.<source>_deltas() and _values()
 *		function: per-interval deltas of the sparse cumulative counters of
 *		one history table, in one pass over its rows in time order.
 *
 * This file is the engine proper: the state of each key, the deltas of a
 * key at a snapshot, the rows and group sums it emits, and the ends mode
 * (the totals' shortcut).  It reads nothing itself: deltas_read.c reads
 * the snapshots and the rows through SPI and hands them over in time
 * order, and deltas_sql.c checks the description and the arguments of
 * the SQL functions (deltas_int.h is what the three share).  It knows no
 * source by name.
 *
 * Why C: the same computation in SQL (lag() per key, the baseline probes,
 * zero-filled keys, a sort for the output order) took seconds over a day
 * of 1 s history; most of it was executor overhead per row and per column,
 * and sorting rows that are already in time order on disk.  Here the rows
 * are read once in time order and each key keeps its previous row in a
 * hash table, so the cost is one comparison and one subtraction per value.
 *
 * Semantics (the same as documented in docs/analysis.md, "Semantics"):
 *
 * - The intervals of a window (from, to] are the pairs (previous snapshot,
 *   snapshot) of one segment whose end lies in (from, to], as
 *   chronicle.intervals() returns them.
 * - A stored row at an interval's end is paired with the previous stored
 *   row of its key in the same segment; before the window that is the
 *   latest row of the key in the segment at or before "from".  The pass
 *   starts at the keyframe before "from" (chronicle._keyframe(), which
 *   holds every key), so the rows before the window are read in the same
 *   time-ordered query: no key is looked up by itself.
 * - A key's first row in a segment has nothing to pair with.  In a table
 *   whose keys are born at zero (born_at_zero: the wait sampler's keys,
 *   databases), a key absent from a keyframe of its segment that recorded
 *   the table did not exist then, so its first row after that keyframe
 *   counts from zero: its whole value is the interval's delta.  Otherwise
 *   (the segment's keyframe itself, a source that recorded no keyframe in
 *   the segment, a table whose keys are not born at zero such as
 *   pg_stat_io) the first row is a baseline: keyed tables give no row for
 *   it, single-row tables a row with NULL deltas.
 * - reset: the reset column changed, or a counter went backwards; the
 *   deltas are NULL, the row is the new baseline.
 * - A key without a row at a snapshot has not changed: zero deltas (unless
 *   changed_only), from the interval after its first row in the segment.
 * - Gauges are the value at the end of the interval (carried forward).
 * - Output in interval order, keys in their type's order within an
 *   interval.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "deltas_int.h"

typedef struct Bucket
{
	uint32		hash;
	KeyState   *first;
} Bucket;

/* ----------------------------------------------------------------
 * Keys
 * ----------------------------------------------------------------
 */

static uint32
key_hash(Engine *e, Datum *key, bool *keynull)
{
	uint32		h = 0;

	for (int i = 0; i < e->nkeys; i++)
	{
		uint32		k;

		if (keynull[i])
			k = 0x9e3779b9;
		else if (e->keybyval[i])
			k = hash_bytes_uint32((uint32) DatumGetInt64(key[i]) ^
								  (uint32) (DatumGetInt64(key[i]) >> 32));
		else if (e->keylen[i] == -1)
			k = hash_bytes((const unsigned char *) VARDATA_ANY(DatumGetPointer(key[i])),
						   VARSIZE_ANY_EXHDR(DatumGetPointer(key[i])));
		else
			k = hash_bytes((const unsigned char *) DatumGetPointer(key[i]),
						   e->keylen[i]);
		h = hash_combine(h, k);
	}
	return h;
}

static bool
key_equal(Engine *e, KeyState *ks, Datum *key, bool *keynull)
{
	for (int i = 0; i < e->nkeys; i++)
	{
		if (ks->keynull[i] != keynull[i])
			return false;
		if (keynull[i])
			continue;
		if (e->keybyval[i])
		{
			if (ks->key[i] != key[i])
				return false;
		}
		else if (e->keylen[i] == -1)
		{
			Pointer		a = DatumGetPointer(ks->key[i]);
			Pointer		b = DatumGetPointer(key[i]);

			if (VARSIZE_ANY_EXHDR(a) != VARSIZE_ANY_EXHDR(b) ||
				memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) != 0)
				return false;
		}
		else if (memcmp(DatumGetPointer(ks->key[i]), DatumGetPointer(key[i]),
						e->keylen[i]) != 0)
			return false;
	}
	return true;
}

/* Order of two values of key column k, NULLs last. */
static inline int
key_value_cmp(Engine *e, int k, Datum a, bool anull, Datum b, bool bnull)
{
	if (anull || bnull)
		return (int) anull - (int) bnull;
	return DatumGetInt32(FunctionCall2Coll(&e->keycmp[k], e->keycoll[k], a, b));
}

static int
key_cmp(const void *a, const void *b, void *arg)
{
	KeyState   *x = *(KeyState *const *) a;
	KeyState   *y = *(KeyState *const *) b;
	Engine	   *e = (Engine *) arg;

	for (int i = 0; i < e->nkeys; i++)
	{
		int			c = key_value_cmp(e, i, x->key[i], x->keynull[i],
									  y->key[i], y->keynull[i]);

		if (c != 0)
			return c;
	}
	return 0;
}

static int
group_cmp(const void *a, const void *b, void *arg)
{
	DeltaGroup *x = *(DeltaGroup *const *) a;
	DeltaGroup *y = *(DeltaGroup *const *) b;
	Engine	   *e = (Engine *) arg;

	for (int i = 0; i < e->ngroupcols; i++)
	{
		int			c = key_value_cmp(e, e->groupcol[i], x->key[i], x->keynull[i],
									  y->key[i], y->keynull[i]);

		if (c != 0)
			return c;
	}
	return 0;
}

/* The group of a new key (groups are few: a linear search). */
static DeltaGroup *
group_of(Engine *e, KeyState *ks)
{
	DeltaGroup *g;

	for (int j = 0; j < e->ngroups; j++)
	{
		bool		same = true;

		g = e->groups[j];
		for (int i = 0; i < e->ngroupcols && same; i++)
		{
			int			k = e->groupcol[i];

			same = key_value_cmp(e, k, g->key[i], g->keynull[i],
								 ks->key[k], ks->keynull[k]) == 0;
		}
		if (same)
			return g;
	}

	g = MemoryContextAllocZero(e->keycxt, sizeof(DeltaGroup));
	g->key = MemoryContextAlloc(e->keycxt, sizeof(Datum) * Max(e->ngroupcols, 1));
	g->keynull = MemoryContextAlloc(e->keycxt, sizeof(bool) * Max(e->ngroupcols, 1));
	for (int i = 0; i < e->ngroupcols; i++)
	{
		g->key[i] = ks->key[e->groupcol[i]];
		g->keynull[i] = ks->keynull[e->groupcol[i]];
	}
	g->sum = MemoryContextAllocZero(e->keycxt, sizeof(Datum) * Max(e->nvals, 1));
	g->dnull = MemoryContextAlloc(e->keycxt, sizeof(bool) * Max(e->nvals, 1));
	for (int i = 0; i < e->nvals; i++)
		g->dnull[i] = true;
	if (e->ngroups == e->maxgroups)
	{
		e->maxgroups = Max(16, e->maxgroups * 2);
		e->groups = e->groups ?
			repalloc(e->groups, sizeof(DeltaGroup *) * e->maxgroups) :
			MemoryContextAlloc(e->keycxt, sizeof(DeltaGroup *) * e->maxgroups);
	}
	e->groups[e->ngroups++] = g;
	e->groups_need_sort = true;
	return g;
}

static void
alloc_row(Engine *e, RowVals *r)
{
	r->v = MemoryContextAllocZero(e->keycxt, sizeof(Datum) * Max(e->nstored, 1));
	r->n = MemoryContextAllocZero(e->keycxt, sizeof(bool) * Max(e->nstored, 1));
}

/* The state of a key, made at its first row (a copy of its key). */
KeyState *
chronicle_engine_key(Engine *e, Datum *key, bool *keynull)
{
	uint32		h = e->nkeys > 0 ? key_hash(e, key, keynull) : 0;
	bool		found;
	Bucket	   *b = hash_search(e->buckets, &h, HASH_ENTER, &found);
	KeyState   *ks;
	MemoryContext old;

	if (!found)
		b->first = NULL;
	for (ks = b->first; ks; ks = ks->next)
		if (key_equal(e, ks, key, keynull))
			return ks;

	old = MemoryContextSwitchTo(e->keycxt);
	ks = palloc0(sizeof(KeyState));
	ks->hash = h;
	ks->key = palloc(sizeof(Datum) * Max(e->nkeys, 1));
	ks->keynull = palloc(sizeof(bool) * Max(e->nkeys, 1));
	for (int i = 0; i < e->nkeys; i++)
	{
		ks->keynull[i] = keynull[i];
		ks->key[i] = keynull[i] ? (Datum) 0 :
			datumCopy(key[i], e->keybyval[i], e->keylen[i]);
	}
	alloc_row(e, &ks->prev);
	alloc_row(e, &ks->cur);
	if (e->nkf > 0)
		ks->present = palloc0(sizeof(bool) * e->nkf);
	MemoryContextSwitchTo(old);
	ks->next = b->first;
	b->first = ks;

	if (e->nsorted == e->maxsorted)
	{
		e->maxsorted *= 2;
		e->sorted = repalloc(e->sorted, sizeof(KeyState *) * e->maxsorted);
	}
	e->sorted[e->nsorted++] = ks;
	e->needs_sort = true;
	if (e->grouped)
		ks->group = group_of(e, ks);
	return ks;
}

/* Copy a row's stored values into r (byref values into the key context). */
void
chronicle_engine_store_row(Engine *e, RowVals *r, TimestampTz ts,
						   Datum *v, bool *n)
{
	r->ts = ts;
	for (int i = 0; i < e->nstored; i++)
	{
		if (!e->storbyval[i] && !r->n[i] && r->v[i] != (Datum) 0)
			pfree(DatumGetPointer(r->v[i]));
		r->n[i] = n[i];
		if (n[i])
			r->v[i] = (Datum) 0;
		else if (e->storbyval[i])
			r->v[i] = v[i];
		else
		{
			MemoryContext old = MemoryContextSwitchTo(e->keycxt);

			r->v[i] = datumCopy(v[i], false, e->storlen[i]);
			MemoryContextSwitchTo(old);
		}
	}
}

/*
 * The key table, in a memory context of its own, once the description is
 * set (the key and stored types).
 */
void
chronicle_engine_start(Engine *e)
{
	HASHCTL		ctl;

	e->keycxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle deltas keys",
									  ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(Bucket);
	ctl.hcxt = e->keycxt;
	e->buckets = hash_create("chronicle deltas", 256, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	e->maxsorted = 64;
	e->sorted = palloc(sizeof(KeyState *) * e->maxsorted);
	/* a single-row table has its one key before any row: "unknown" rows */
	if (e->single)
		(void) chronicle_engine_key(e, NULL, NULL);
}

/* ----------------------------------------------------------------
 * Output
 * ----------------------------------------------------------------
 */

static inline Datum
value_zero(Oid type)
{
	return type == FLOAT8OID ? Float8GetDatum(0.0) : Int64GetDatum(0);
}

static inline double
value_double(Oid type, Datum d)
{
	return type == FLOAT8OID ? DatumGetFloat8(d) : (double) DatumGetInt64(d);
}

/*
 * The deltas of a key at a snapshot into e->delta / e->dnull, and whether
 * the interval is a reset.  mode: 'p' a pair (prev -> cur), 'z' unchanged
 * (values of prev), 'b' a key born in the interval (cur counts from zero),
 * 'f' first row of the key (cur, no baseline), 'u' unknown (single-row
 * tables before their first row).
 */
static bool
compute(Engine *e, KeyState *ks, char mode)
{
	RowVals    *cur = mode == 'z' ? &ks->prev : &ks->cur;
	RowVals    *prev = &ks->prev;
	bool		reset = false;
	bool		have = (mode == 'p' || mode == 'z' || mode == 'b');
	Datum	   *delta = e->delta;
	bool	   *dnull = e->dnull;

	if (mode == 'p')
	{
		if (e->has_reset)
		{
			int			r = e->nstored - 1;

			if (cur->n[r] != prev->n[r] ||
				(!cur->n[r] && !datumIsEqual(cur->v[r], prev->v[r],
											 e->storbyval[r], e->storlen[r])))
				reset = true;
		}
		for (int i = 0; i < e->nvals && !reset; i++)
		{
			if (e->kinds[i] == KIND_GAUGE || cur->n[i] || prev->n[i])
				continue;
			if (e->valtype[i] == FLOAT8OID ?
				DatumGetFloat8(cur->v[i]) < DatumGetFloat8(prev->v[i]) :
				DatumGetInt64(cur->v[i]) < DatumGetInt64(prev->v[i]))
				reset = true;
		}
	}

	for (int i = 0; i < e->nvals; i++)
	{
		dnull[i] = true;
		delta[i] = (Datum) 0;
		if (e->kinds[i] == KIND_GAUGE || !have || reset)
			continue;
		if (mode == 'z')
		{
			if (!cur->n[i])
			{
				delta[i] = value_zero(e->valtype[i]);
				dnull[i] = false;
			}
		}
		else if (mode == 'b')
		{
			/* a NULL cell (untracked) stays NULL */
			if (!cur->n[i])
			{
				delta[i] = cur->v[i];
				dnull[i] = false;
			}
		}
		else if (!cur->n[i] && !prev->n[i])
		{
			delta[i] = e->valtype[i] == FLOAT8OID ?
				Float8GetDatum(DatumGetFloat8(cur->v[i]) - DatumGetFloat8(prev->v[i])) :
				Int64GetDatum(DatumGetInt64(cur->v[i]) - DatumGetInt64(prev->v[i]));
			dnull[i] = false;
		}
	}
	/* bytes: the byte counter, or operations * op_bytes (before 18) */
	for (int i = 0; i < e->nvals; i++)
	{
		int			ops = e->bytes_ops[i];
		int			unit = e->nvals + e->bytes_unit;

		if (ops < 0 || !dnull[i] || !have || reset)
			continue;
		if (!dnull[ops] && !cur->n[unit])
		{
			delta[i] = Int64GetDatum(DatumGetInt64(delta[ops]) *
									 DatumGetInt64(cur->v[unit]));
			dnull[i] = false;
		}
	}
	return reset;
}

/*
 * The columns after the keys (or groups) and attributes: reset, per value
 * the delta and its rate (counters) or the value (gauges, from gv/gn),
 * the per-operation times.
 */
static int
put_values(Engine *e, int c, double seconds, bool reset, Datum *gv, bool *gn)
{
	Datum	   *o = e->outv;
	bool	   *on = e->outn;
	Datum	   *delta = e->delta;
	bool	   *dnull = e->dnull;

	if (e->has_reset_out)
	{
		o[c] = BoolGetDatum(reset);
		on[c++] = false;
	}
	for (int i = 0; i < e->nvals; i++)
	{
		if (e->kinds[i] == KIND_GAUGE)
		{
			o[c] = gn[i] ? (Datum) 0 : gv[i];
			on[c++] = gn[i];
			continue;
		}
		o[c] = delta[i];
		on[c++] = dnull[i];
		o[c] = dnull[i] ? (Datum) 0 :
			Float8GetDatum(value_double(e->valtype[i], delta[i]) / seconds);
		on[c++] = dnull[i];
	}
	for (int i = 0; i < e->nperop; i++)
	{
		int			t = e->perop_time[i];
		int			n = e->perop_ops[i];
		double		ops = dnull[n] ? 0 : value_double(e->valtype[n], delta[n]);

		on[c] = dnull[t] || ops == 0;
		o[c] = on[c] ? (Datum) 0 :
			Float8GetDatum(value_double(e->valtype[t], delta[t]) / ops);
		c++;
	}
	return c;
}

/* One row of a key (see compute() for the modes). */
static void
emit(Engine *e, Snap *s, KeyState *ks, char mode)
{
	Datum	   *o = e->outv;
	bool	   *on = e->outn;
	int			c = 0;
	RowVals    *cur = mode == 'z' ? &ks->prev : &ks->cur;
	bool		unknown = (mode == 'u');
	bool		reset = compute(e, ks, mode);

	o[c] = TimestampTzGetDatum(s->start);
	on[c++] = false;
	o[c] = TimestampTzGetDatum(s->ts);
	on[c++] = false;
	o[c] = Float8GetDatum((double) (s->ts - s->start) / USECS_PER_SEC);
	on[c++] = false;
	for (int i = 0; i < e->nkeys; i++)
	{
		o[c] = ks->key[i];
		on[c++] = ks->keynull[i];
	}
	for (int i = 0; i < e->nattrs; i++)
	{
		o[c] = unknown ? (Datum) 0 : cur->v[e->nvals + i];
		on[c++] = unknown || cur->n[e->nvals + i];
	}
	if (unknown)
	{
		/* gauges NULL too */
		for (int i = 0; i < e->nvals; i++)
			e->gnull[i] = true;
		c = put_values(e, c, (double) (s->ts - s->start) / USECS_PER_SEC, reset,
					   cur->v, e->gnull);
	}
	else
		c = put_values(e, c, (double) (s->ts - s->start) / USECS_PER_SEC, reset,
					   cur->v, cur->n);
	Assert(c == e->tupdesc->natts);	/* check_result_type() */
	tuplestore_putvalues(e->tupstore, e->tupdesc, o, on);
}

/*
 * Grouped mode: the changed keys' deltas summed per group (values of the
 * group_by key columns) and interval; a group is a reset when one of its
 * keys is.  Unchanged keys add nothing, so only groups with a changed key
 * give a row.
 */
static void
add_to_group(Engine *e, KeyState *ks, char mode)
{
	DeltaGroup *g = ks->group;
	bool		reset = compute(e, ks, mode);

	g->touched = true;
	if (reset)
		g->reset = true;
	for (int i = 0; i < e->nvals; i++)
	{
		if (e->dnull[i])
			continue;
		if (g->dnull[i])
		{
			g->dnull[i] = false;
			g->sum[i] = e->delta[i];
		}
		else if (e->valtype[i] == FLOAT8OID)
			g->sum[i] = Float8GetDatum(DatumGetFloat8(g->sum[i]) + DatumGetFloat8(e->delta[i]));
		else
			g->sum[i] = Int64GetDatum(DatumGetInt64(g->sum[i]) + DatumGetInt64(e->delta[i]));
	}
}

static void
emit_groups(Engine *e, Snap *s)
{
	double		seconds = (double) (s->ts - s->start) / USECS_PER_SEC;

	for (int k = 0; k < e->ngroups; k++)
	{
		DeltaGroup *g = e->groups[k];
		int			c = 0;

		if (!g->touched)
			continue;
		e->outv[c] = TimestampTzGetDatum(s->start);
		e->outn[c++] = false;
		e->outv[c] = TimestampTzGetDatum(s->ts);
		e->outn[c++] = false;
		e->outv[c] = Float8GetDatum(seconds);
		e->outn[c++] = false;
		for (int i = 0; i < e->ngroupcols; i++)
		{
			e->outv[c] = g->key[i];
			e->outn[c++] = g->keynull[i];
		}
		memcpy(e->delta, g->sum, sizeof(Datum) * e->nvals);
		memcpy(e->dnull, g->dnull, sizeof(bool) * e->nvals);
		c = put_values(e, c, seconds, g->reset, NULL, NULL);
		Assert(c == e->tupdesc->natts);	/* check_result_type() */
		tuplestore_putvalues(e->tupstore, e->tupdesc, e->outv, e->outn);
		g->touched = false;
		g->reset = false;
		for (int i = 0; i < e->nvals; i++)
			g->dnull[i] = true;
	}
}

/* ----------------------------------------------------------------
 * Ends mode: per key and segment of the window, the baseline row (the
 * latest at or before the segment's first interval start, else the key's
 * first row in the window) and the last row, for the totals' shortcut
 * (the deltas telescope when nothing was reset in between).  Output: the
 * keys, the last row's attributes, the segment, reset (the reset column
 * changed or a counter went down between the two rows), intervals (how
 * many of the segment's intervals in the window the key counts in, as the
 * per-interval mode gives it rows with changed_only false), per value the
 * baseline's (0 when born at zero) and the last row's.
 * ----------------------------------------------------------------
 */

static bool
segment_has_interval(Engine *e, TimestampTz seg)
{
	for (int i = 0; i < e->niseg; i++)
		if (e->iseg[i] == seg)
			return true;
	return false;
}

/*
 * The window, from its snapshots (in time order): the segment of the
 * baseline rows, the segments with an interval in the window and the ends
 * of their intervals.
 */
void
chronicle_engine_ends_window(Engine *e, Snap *snaps, int nsnaps)
{
	e->first_seg = nsnaps > 0 && snaps[0].ts <= e->from_ts ?
		snaps[0].segment : DT_NOBEGIN;
	e->iseg = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	for (int i = 0; i < nsnaps; i++)
		if (snaps[i].ends_interval && !segment_has_interval(e, snaps[i].segment))
			e->iseg[e->niseg++] = snaps[i].segment;
	/* each segment's interval ends, in time order as the snapshots */
	e->iend = palloc(sizeof(TimestampTz *) * Max(e->niseg, 1));
	e->niend = palloc0(sizeof(int) * Max(e->niseg, 1));
	for (int j = 0; j < e->niseg; j++)
	{
		int			n = 0;

		for (int i = 0; i < nsnaps; i++)
			if (snaps[i].ends_interval && snaps[i].segment == e->iseg[j])
				n++;
		e->iend[j] = palloc(sizeof(TimestampTz) * Max(n, 1));
	}
	for (int i = 0; i < nsnaps; i++)
	{
		if (!snaps[i].ends_interval)
			continue;
		for (int j = 0; j < e->niseg; j++)
			if (e->iseg[j] == snaps[i].segment)
			{
				e->iend[j][e->niend[j]++] = snaps[i].ts;
				break;
			}
	}
}

/*
 * The intervals of segment seg in the window that a key with this baseline
 * counts in: those ending after its baseline row, or, when it was born at
 * zero there, from the interval that row ends (its first, whose delta is
 * its whole value).  A key whose baseline lies before the window counts in
 * all of them; one first seen mid-segment (born, or a baseline only) in
 * those from its first row on.
 */
static int64
ends_intervals(Engine *e, TimestampTz seg, TimestampTz base_ts, bool born)
{
	for (int j = 0; j < e->niseg; j++)
	{
		TimestampTz *t = e->iend[j];
		int			lo = 0,
					hi = e->niend[j];

		if (e->iseg[j] != seg)
			continue;
		/* the first interval end after the baseline (at it when born) */
		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (born ? t[mid] < base_ts : t[mid] <= base_ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		return e->niend[j] - lo;
	}
	return 0;
}

static void
emit_ends(Engine *e, KeyState *ks, TimestampTz seg)
{
	RowVals    *b = &ks->base;
	RowVals    *l = &ks->prev;
	bool		reset = false;
	int			c = 0;

	if (!segment_has_interval(e, seg))
		return;
	for (int i = 0; i < e->nkeys; i++)
	{
		e->outv[c] = ks->key[i];
		e->outn[c++] = ks->keynull[i];
	}
	for (int i = 0; i < e->nattrs; i++)
	{
		e->outv[c] = l->v[e->nvals + i];
		e->outn[c++] = l->n[e->nvals + i];
	}
	e->outv[c] = TimestampTzGetDatum(seg);
	e->outn[c++] = false;
	if (e->has_reset)
	{
		int			r = e->nstored - 1;

		if (b->n[r] != l->n[r] ||
			(!b->n[r] && !datumIsEqual(b->v[r], l->v[r], e->storbyval[r], e->storlen[r])))
			reset = true;
	}
	for (int i = 0; i < e->nvals && !reset; i++)
	{
		if (b->n[i] || l->n[i])
			continue;
		if (e->valtype[i] == FLOAT8OID ?
			DatumGetFloat8(l->v[i]) < DatumGetFloat8(b->v[i]) :
			DatumGetInt64(l->v[i]) < DatumGetInt64(b->v[i]))
			reset = true;
	}
	e->outv[c] = BoolGetDatum(reset);
	e->outn[c++] = false;
	e->outv[c] = Int64GetDatum(ends_intervals(e, seg, b->ts, ks->base_born));
	e->outn[c++] = false;
	for (int i = 0; i < e->nvals; i++)
	{
		e->outn[c] = b->n[i];
		e->outv[c++] = b->n[i] ? (Datum) 0 :
			ks->base_born ? value_zero(e->valtype[i]) : b->v[i];
		e->outn[c] = l->n[i];
		e->outv[c++] = l->v[i];
	}
	Assert(c == e->tupdesc->natts);	/* check_result_type() */
	tuplestore_putvalues(e->tupstore, e->tupdesc, e->outv, e->outn);
}

static void
set_base(Engine *e, KeyState *ks, RowVals *r, TimestampTz seg, bool born)
{
	if (ks->base.v == NULL)
		alloc_row(e, &ks->base);
	chronicle_engine_store_row(e, &ks->base, r->ts, r->v, r->n);
	ks->base_seg = seg;
	ks->base_born = born;
	ks->has_base = true;
}

/*
 * The rows at or before from (read from the keyframe before it) are over:
 * each key's latest one is its baseline in the first segment.
 */
static void
ends_set_bases(Engine *e)
{
	e->bases_set = true;
	if (e->first_seg == DT_NOBEGIN)
		return;
	for (int k = 0; k < e->nsorted; k++)
	{
		KeyState   *ks = e->sorted[k];

		if (ks->known && ks->prev.ts >= e->first_seg)
			set_base(e, ks, &ks->prev, e->first_seg, false);
	}
}

static void
ends_snapshot(Engine *e, Snap *s)
{
	if (!e->bases_set && s->ts > e->from_ts)
		ends_set_bases(e);
	for (int k = 0; k < e->nsorted; k++)
	{
		KeyState   *ks = e->sorted[k];
		RowVals		tmp;

		if (!ks->pending)
			continue;
		/* the key's rows of an earlier segment are over */
		if (ks->has_base && ks->base_seg != s->segment)
		{
			emit_ends(e, ks, ks->base_seg);
			ks->has_base = false;
		}
		/*
		 * Its first row in the segment: the baseline, counting from zero
		 * when born after a keyframe that recorded the table (as
		 * chronicle_engine_finish_snapshot() decides).
		 */
		if (!ks->has_base)
			set_base(e, ks, &ks->cur, s->segment, s->born_after < s->ts);
		tmp = ks->prev;
		ks->prev = ks->cur;
		ks->cur = tmp;
		ks->known = true;
		ks->pending = false;
	}
}

/* Ends mode: the rows are over; each key's last segment is complete. */
void
chronicle_engine_ends_finish(Engine *e)
{
	if (!e->bases_set)
		ends_set_bases(e);
	for (int k = 0; k < e->nsorted; k++)
		if (e->sorted[k]->has_base)
			emit_ends(e, e->sorted[k], e->sorted[k]->base_seg);
}

/* The rows of one snapshot are in; emit its interval, then move cur to prev. */
void
chronicle_engine_finish_snapshot(Engine *e, Snap *s)
{
	if (e->needs_sort)
	{
		qsort_arg(e->sorted, e->nsorted, sizeof(KeyState *), key_cmp, e);
		e->needs_sort = false;
	}

	if (e->groups_need_sort)
	{
		qsort_arg(e->groups, e->ngroups, sizeof(DeltaGroup *), group_cmp, e);
		e->groups_need_sort = false;
	}

	if (e->ends)
	{
		ends_snapshot(e, s);
		return;
	}

	for (int k = 0; k < e->nsorted; k++)
	{
		KeyState   *ks = e->sorted[k];
		bool		paired = ks->known && ks->prev.ts >= s->segment;

		/*
		 * Not paired: no earlier row of the key in this segment.  Born if
		 * the table was recorded at a keyframe of the segment before this
		 * snapshot (it wrote every key then, and not this one).
		 */
		bool		born = !paired && ks->pending && s->born_after < s->ts;

		if (e->grouped)
		{
			if (s->ends_interval && ks->pending && (paired || born))
				add_to_group(e, ks, paired ? 'p' : 'b');
		}
		else if (s->ends_interval)
		{
			if (ks->pending)
			{
				if (paired)
					emit(e, s, ks, 'p');
				else if (born)
					emit(e, s, ks, 'b');
				else if (e->single)
					emit(e, s, ks, 'f');
			}
			else if (paired)
			{
				if (!e->changed_only)
					emit(e, s, ks, 'z');
			}
			else if (e->single)
				emit(e, s, ks, 'u');
		}
		if (ks->pending)
		{
			RowVals		tmp = ks->prev;

			ks->prev = ks->cur;
			ks->cur = tmp;
			ks->known = true;
			ks->pending = false;
		}
	}
	if (e->grouped && s->ends_interval)
		emit_groups(e, s);
}
