/*-------------------------------------------------------------------------
 *
 * deltas_read.c
 *		The analysis engine's reading, all of it through SPI: the snapshots
 *		of the window, the keyframes, the time ranges to read, and the rows
 *		of the history in time order, through SQL or from the packed
 *		history.
 *
 * The engine (deltas.c) is handed the rows one at a time, in time order,
 * and told when the rows of a snapshot are in; what it is handed is the
 * same whether the rows come from a query of the table's columns or are
 * decoded here from the source's column of chronicle.history.  Which rows
 * to read is decided here too: from the keyframe before the window (every
 * key's baseline), or, for the ends, only the time ranges in which a key's
 * baseline or last row can lie.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "deltas_int.h"
#include "history.h"
#include "pg_chronicle.h"
#include "source.h"

#define ROWS_PER_FETCH	10000

/* ----------------------------------------------------------------
 * Rows: the query of the table's columns, the packed history, and the
 * rows handed to the engine
 * ----------------------------------------------------------------
 */

static void
append_columns(StringInfo q, const char *alias, char **names, int n)
{
	for (int i = 0; i < n; i++)
		appendStringInfo(q, ", %s.%s", alias, quote_identifier(names[i]));
}

/* ", h.<key>..., h.<value>..., h.<attribute>..., h.<reset>": take_rows' layout after ts */
static void
append_row_columns(StringInfo q, Engine *e, char **keys, char **vals, char **attrs,
				   const char *reset_col)
{
	append_columns(q, "h", keys, e->nkeys);
	append_columns(q, "h", vals, e->nvals);
	append_columns(q, "h", attrs, e->nattrs);
	if (reset_col)
		appendStringInfo(q, ", h.%s", quote_identifier(reset_col));
}

static void
append_filters(StringInfo q, const char *alias, char **cols, int n,
			   char **xcols, int nx, int firstparam)
{
	for (int i = 0; i < n; i++)
		appendStringInfo(q, " AND ($%d::text IS NULL OR %s.%s = $%d::text)",
						 firstparam + i, alias, quote_identifier(cols[i]), firstparam + i);
	for (int i = 0; i < nx; i++)
		appendStringInfo(q, " AND %s.%s <> $%d::text",
						 alias, quote_identifier(xcols[i]), firstparam + n + i);
}

/*
 * Process the rows of the last SPI result: row layout ts, keys, values,
 * attributes, reset.  Rows at or before from_ts are baselines only: a
 * key's latest one is what its first row in the window is paired with.
 */
static void
take_row(Engine *e, TimestampTz ts, Datum *v, bool *n, Snap *snaps, int nsnaps,
		 int *sp, TimestampTz from_ts)
{
	KeyState   *ks;
	bool		baseline = ts <= from_ts;

	if (!baseline)
	{
		/* close the snapshots before this row */
		while (*sp < nsnaps && snaps[*sp].ts < ts)
			chronicle_engine_finish_snapshot(e, &snaps[(*sp)++]);
	}
	ks = chronicle_engine_key(e, v, n);
	if (baseline)
	{
		chronicle_engine_store_row(e, &ks->prev, ts, v + e->nkeys, n + e->nkeys);
		ks->known = true;
	}
	else if (*sp < nsnaps && snaps[*sp].ts == ts)
	{
		chronicle_engine_store_row(e, &ks->cur, ts, v + e->nkeys, n + e->nkeys);
		ks->pending = true;
	}
	else
	{
		/* not at a snapshot: a later row's predecessor, never output */
		chronicle_engine_store_row(e, &ks->prev, ts, v + e->nkeys, n + e->nkeys);
		ks->known = true;
	}
}

static void
take_rows(Engine *e, SPITupleTable *tt, uint64 ntuples, Snap *snaps, int nsnaps,
		  int *sp, TimestampTz from_ts)
{
	TupleDesc	desc = tt->tupdesc;
	int			natts = desc->natts;
	Datum	   *v = palloc(sizeof(Datum) * natts);
	bool	   *n = palloc(sizeof(bool) * natts);

	for (uint64 r = 0; r < ntuples; r++)
	{
		CHECK_FOR_INTERRUPTS();
		heap_deform_tuple(tt->vals[r], desc, v, n);
		if (n[0])
			continue;
		take_row(e, DatumGetTimestampTz(v[0]), v + 1, n + 1, snaps, nsnaps, sp, from_ts);
	}
	pfree(v);
	pfree(n);
}

/*
 * The packed history of a source, read without its view: when the table
 * is the view chronicle.<source>_history that chronicle._history_layout()
 * made, and the caller may read chronicle.history itself, the engine reads
 * the source's column of chronicle.history and decodes it here (the
 * history reader of history.c).  That is the same rows in the same order
 * without the view's function scan per snapshot (a tuple store, a
 * descriptor check and a tuple per row): a day's read costs a third of the
 * time (docs/storage.md).  The view stays the definition: the rows, the
 * filters (a text column = or <> a text value, byte for byte as the
 * default collation compares) and the checks of describe() are the same,
 * and any other table is read through SQL.
 */
typedef struct PackedRead
{
	const ChronicleSource *src;
	ChronicleReader *reader;
	int			ncols;			/* keys, values, attributes, reset */
	int		   *col;			/* their columns in the source */
	int			nfilters;
	int		   *fcol;			/* filter and exclusion columns */
	char	  **fval;			/* filter value (NULL: none) */
	bool	   *exclude;		/* an exclusion: <> rather than = */
	Datum	   *v;				/* the row layout of take_row() */
	bool	   *n;
} PackedRead;

static PackedRead *
packed_read(Engine *e, const ReadSpec *rs)
{
	Oid			nsp = get_rel_namespace(rs->tbl);
	const ChronicleSource *src = NULL;
	int			si;
	Oid			history;
	PackedRead *pk;
	char	   *nspname = get_namespace_name(nsp);

	if (get_rel_relkind(rs->tbl) != RELKIND_VIEW || nspname == NULL ||
		strcmp(nspname, CHRONICLE_SCHEMA) != 0)
		return NULL;
	for (si = 0; si < chronicle_nsources; si++)
	{
		size_t		len = strlen(chronicle_sources[si]->name);

		if (strncmp(rs->relname, chronicle_sources[si]->name, len) == 0 &&
			strcmp(rs->relname + len, "_history") == 0)
		{
			src = chronicle_sources[si];
			break;
		}
	}
	if (src == NULL)
		return NULL;
	/* an imported origin's history is archive_history's (05_origin.sql) */
	history = get_relname_relid(chronicle_origin == 0 ? "history" : "archive_history", nsp);
	if (!OidIsValid(history) ||
		pg_class_aclcheck(history, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return NULL;

	pk = palloc0(sizeof(PackedRead));
	pk->src = src;
	pk->ncols = e->nkeys + e->nstored;
	pk->col = palloc(sizeof(int) * Max(pk->ncols, 1));
	for (int i = 0; i < pk->ncols; i++)
	{
		int			j = i - e->nkeys;	/* index of a stored column */
		const char *name;
		Oid			type;

		if (j < 0)
			name = rs->keys[i];
		else if (j < e->nvals)
			name = rs->vals[j];
		else if (j < e->nvals + e->nattrs)
			name = rs->attrs[j - e->nvals];
		else
			name = rs->reset_col;
		type = j < 0 ? e->keytype[i] : e->stortype[j];
		pk->col[i] = chronicle_source_column(src, name);
		/* a view that is not the source's layout: read through SQL */
		if (pk->col[i] < 0 || src->columns[pk->col[i]].type != type)
			return NULL;
	}
	pk->nfilters = rs->nfcols + rs->nxcols;
	pk->fcol = palloc(sizeof(int) * Max(pk->nfilters, 1));
	pk->fval = palloc(sizeof(char *) * Max(pk->nfilters, 1));
	pk->exclude = palloc(sizeof(bool) * Max(pk->nfilters, 1));
	for (int i = 0; i < pk->nfilters; i++)
	{
		bool		x = i >= rs->nfcols;

		pk->fcol[i] = chronicle_source_column(src, x ? rs->xcols[i - rs->nfcols] :
											  rs->fcols[i]);
		if (pk->fcol[i] < 0 || src->columns[pk->fcol[i]].type != TEXTOID)
			return NULL;
		pk->fval[i] = x ? rs->xvals[i - rs->nfcols] :
			(rs->fvals ? rs->fvals[i] : NULL);
		pk->exclude[i] = x;
	}
	pk->v = palloc(sizeof(Datum) * Max(pk->ncols, 1));
	pk->n = palloc(sizeof(bool) * Max(pk->ncols, 1));
	pk->reader = chronicle_reader_create(si);
	return pk;
}

/* A text value equal to a string, byte for byte. */
static bool
text_equals(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		len = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* Rows of the last SPI result (ts, the source's packed value), decoded. */
static void
take_packed(Engine *e, PackedRead *pk, SPITupleTable *tt, uint64 ntuples,
			Snap *snaps, int nsnaps, int *sp, TimestampTz from_ts)
{
	for (uint64 t = 0; t < ntuples; t++)
	{
		bool		isnull;
		TimestampTz ts;
		Datum		data;
		const ChronicleRows *rows;

		CHECK_FOR_INTERRUPTS();
		ts = DatumGetTimestampTz(SPI_getbinval(tt->vals[t], tt->tupdesc, 1, &isnull));
		if (isnull)
			continue;
		data = SPI_getbinval(tt->vals[t], tt->tupdesc, 2, &isnull);
		if (isnull)
			continue;
		rows = chronicle_reader_unpack(pk->reader, ts, data);
		for (int r = 0; r < rows->nrows; r++)
		{
			bool		take = true;

			for (int f = 0; f < pk->nfilters && take; f++)
			{
				int			c = pk->fcol[f];

				if (pk->fval[f] == NULL)
					continue;	/* a NULL filter value: no filter */
				/* NULL = x and NULL <> x are not true: the row goes */
				take = !rows->nulls[c][r] &&
					text_equals(rows->values[c][r], pk->fval[f]) != pk->exclude[f];
			}
			if (!take)
				continue;
			for (int i = 0; i < pk->ncols; i++)
			{
				pk->v[i] = rows->values[pk->col[i]][r];
				pk->n[i] = rows->nulls[pk->col[i]][r];
			}
			take_row(e, ts, pk->v, pk->n, snaps, nsnaps, sp, from_ts);
		}
	}
}

/* ----------------------------------------------------------------
 * The window: its snapshots, the keyframes, the time ranges to read
 * ----------------------------------------------------------------
 */

/*
 * The snapshots of the window, from the last one at or before from, in time
 * order, each with the previous snapshot of its segment (the interval it
 * ends, if it ends one), as chronicle.intervals() defines them.
 */
static Snap *
read_snapshots(TimestampTz from_ts, TimestampTz to_ts, int *nsnaps)
{
	Oid			types[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[2] = {TimestampTzGetDatum(from_ts), TimestampTzGetDatum(to_ts)};
	int			nseg = 0;
	TimestampTz seg_ts[64];
	TimestampTz seg_last[64];
	Snap	   *snaps;
	int			ret;

	ret = SPI_execute_with_args("SELECT sn.ts, sn.segment FROM chronicle._snapshot sn"
								" WHERE sn.ts <= $2 AND sn.ts >= coalesce("
								"   (SELECT max(s2.ts) FROM chronicle._snapshot s2 WHERE s2.ts <= $1), $1)"
								" ORDER BY sn.ts",
								2, types, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "chronicle._deltas: reading the snapshots failed: %d", ret);
	snaps = palloc(sizeof(Snap) * Max(SPI_processed, 1));
	*nsnaps = 0;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Snap	   *s = &snaps[(*nsnaps)++];
		int			j;

		s->ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 1, &isnull));
		s->segment = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
													   SPI_tuptable->tupdesc, 2, &isnull));
		s->ends_interval = false;
		s->born_after = DT_NOEND;
		for (j = 0; j < nseg; j++)
			if (seg_ts[j] == s->segment)
				break;
		if (j < nseg)
		{
			s->start = seg_last[j];
			s->ends_interval = s->ts > from_ts;
			seg_last[j] = s->ts;
		}
		else
		{
			/*
			 * A new segment.  Segments follow one another, so only the latest
			 * few can continue; the oldest is forgotten when many.
			 */
			if (nseg == lengthof(seg_ts))
			{
				memmove(seg_ts, seg_ts + 1, sizeof(TimestampTz) * (nseg - 1));
				memmove(seg_last, seg_last + 1, sizeof(TimestampTz) * (nseg - 1));
				nseg--;
			}
			seg_ts[nseg] = s->segment;
			seg_last[nseg++] = s->ts;
		}
	}
	SPI_freetuptable(SPI_tuptable);
	return snaps;
}

/*
 * born_at_zero: per segment of the window, the first keyframe at or before
 * to_ts at which the table has a row (any row: filters do not apply).  A
 * keyframe writes every key the source has, and a source that failed or was
 * off then wrote none, so a key whose first row in the segment comes after
 * that keyframe did not exist at it.  Segments without such a keyframe keep
 * DT_NOEND: their keys' first rows stay baselines.
 */
static void
find_born_after(Snap *snaps, int nsnaps, const char *tq, TimestampTz to_ts)
{
	StringInfoData q;
	Oid			types[2] = {TIMESTAMPTZOID, TIMESTAMPTZOID};
	SPIPlanPtr	plan;
	TimestampTz *seen = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	TimestampTz *seen_born = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	int			nseen = 0;

	initStringInfo(&q);
	appendStringInfo(&q,
					 "SELECT sn.ts FROM chronicle._snapshot sn"
					 " WHERE sn.segment = $1 AND sn.ts >= $1 AND sn.ts <= $2 AND sn.keyframe"
					 " AND EXISTS (SELECT FROM %s h WHERE h.ts = sn.ts)"
					 " ORDER BY sn.ts LIMIT 1", tq);
	plan = SPI_prepare(q.data, 2, types);
	if (plan == NULL)
		elog(ERROR, "chronicle._deltas: preparing the keyframe query failed: %d", SPI_result);

	for (int i = 0; i < nsnaps; i++)
	{
		Datum		args[2];
		int			j;
		int			ret;

		/*
		 * A segment seen already: mostly the previous snapshot's, but
		 * segments may interleave (a promoted standby's ring).
		 */
		if (i > 0 && snaps[i - 1].segment == snaps[i].segment)
		{
			snaps[i].born_after = snaps[i - 1].born_after;
			continue;
		}
		for (j = 0; j < nseen; j++)
			if (seen[j] == snaps[i].segment)
				break;
		if (j < nseen)
		{
			snaps[i].born_after = seen_born[j];
			continue;
		}
		args[0] = TimestampTzGetDatum(snaps[i].segment);
		args[1] = TimestampTzGetDatum(to_ts);
		ret = SPI_execute_plan(plan, args, NULL, true, 1);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "chronicle._deltas: reading the keyframes failed: %d", ret);
		if (SPI_processed > 0)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										  1, &isnull);

			if (!isnull)
				snaps[i].born_after = DatumGetTimestampTz(d);
		}
		SPI_freetuptable(SPI_tuptable);
		seen[nseen] = snaps[i].segment;
		seen_born[nseen++] = snaps[i].born_after;
	}
	SPI_freeplan(plan);
	pfree(seen);
	pfree(seen_born);
}

/*
 * chronicle._keyframe(tbl, segment, t): reading tbl's rows from there up to
 * t gives every key's latest row in the segment at or before t.
 */
static TimestampTz
keyframe_of(Oid tbl, TimestampTz segment, TimestampTz t)
{
	Oid			types[3] = {REGCLASSOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		args[3];
	TimestampTz kf = segment;
	Datum		d;
	bool		isnull;
	int			ret;

	args[0] = ObjectIdGetDatum(tbl);
	args[1] = TimestampTzGetDatum(segment);
	args[2] = TimestampTzGetDatum(t);
	ret = SPI_execute_with_args("SELECT chronicle._keyframe($1, $2, $3)",
								3, types, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "chronicle._deltas: finding the keyframe failed: %d", ret);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		kf = DatumGetTimestampTz(d);
	SPI_freetuptable(SPI_tuptable);
	return kf;
}

/* A time range [lo, hi] to read. */
typedef struct Range
{
	TimestampTz lo;
	TimestampTz hi;
} Range;

static void
add_range(Range *r, int *n, TimestampTz lo, TimestampTz hi)
{
	if (*n > 0 && lo <= r[*n - 1].hi)
	{
		/* ranges come in time order: extend the last one */
		if (hi > r[*n - 1].hi)
			r[*n - 1].hi = hi;
		return;
	}
	r[*n].lo = lo;
	r[*n].hi = hi;
	(*n)++;
}

/*
 * Ends mode: the segments with an interval in the window, each with its
 * first interval start F and last snapshot L, and the keyframes that
 * decide what to read of each (see ends_ranges()).
 */
typedef struct EndsWindow
{
	int			nseg;
	TimestampTz *seg;
	TimestampTz *first;			/* per segment: F */
	TimestampTz *last;			/* per segment: L */
	TimestampTz *k0;			/* per segment: K0, the keyframe before F */
	int			nk;
	TimestampTz *kts;			/* the candidate keyframes, in time order */
	int		   *kseg;			/* per keyframe: its segment */
	bool	   *krows;			/* per keyframe: the table has rows at it */
} EndsWindow;

/* The segments of the window's intervals, with F and L. */
static void
ends_segments(EndsWindow *w, Snap *snaps, int nsnaps)
{
	w->seg = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	w->first = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	w->last = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	w->k0 = palloc(sizeof(TimestampTz) * Max(nsnaps, 1));
	w->nseg = 0;
	for (int i = 0; i < nsnaps; i++)
	{
		int			j;

		if (!snaps[i].ends_interval)
			continue;
		for (j = 0; j < w->nseg; j++)
			if (w->seg[j] == snaps[i].segment)
				break;
		if (j == w->nseg)
		{
			w->seg[w->nseg] = snaps[i].segment;
			w->first[w->nseg++] = snaps[i].start;
		}
		w->last[j] = snaps[i].ts;
	}
}

/* The candidate keyframes of each segment: K0 and those in (F, L]. */
static void
ends_keyframes(EndsWindow *w, Oid tbl)
{
	int			maxk = 16;
	SPIPlanPtr	plan;
	Oid			types[3] = {TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID};

	w->nk = 0;
	w->kts = palloc(sizeof(TimestampTz) * maxk);
	w->kseg = palloc(sizeof(int) * maxk);
	plan = SPI_prepare("SELECT sn.ts FROM chronicle._snapshot sn"
					   " WHERE sn.segment = $1 AND sn.keyframe AND sn.ts >= $2 AND sn.ts <= $3"
					   " ORDER BY sn.ts", 3, types);
	if (plan == NULL)
		elog(ERROR, "chronicle._ends: preparing the keyframe query failed: %d", SPI_result);
	for (int j = 0; j < w->nseg; j++)
	{
		Datum		args[3];
		int			ret;

		w->k0[j] = keyframe_of(tbl, w->seg[j], w->first[j]);
		args[0] = TimestampTzGetDatum(w->seg[j]);
		args[1] = TimestampTzGetDatum(w->k0[j]);
		args[2] = TimestampTzGetDatum(w->last[j]);
		ret = SPI_execute_plan(plan, args, NULL, true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "chronicle._ends: reading the keyframes failed: %d", ret);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;

			if (w->nk == maxk)
			{
				maxk *= 2;
				w->kts = repalloc(w->kts, sizeof(TimestampTz) * maxk);
				w->kseg = repalloc(w->kseg, sizeof(int) * maxk);
			}
			w->kts[w->nk] =
				DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 1, &isnull));
			w->kseg[w->nk++] = j;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_freeplan(plan);
}

/* The keys at each keyframe (none: the source did not record there). */
static void
ends_keyframe_keys(Engine *e, EndsWindow *w, const ReadSpec *rs)
{
	StringInfoData q;
	SPIPlanPtr	plan;
	Oid			types[1] = {TIMESTAMPTZOID};
	Datum	   *v;
	bool	   *n;

	e->nkf = w->nk;
	w->krows = palloc0(sizeof(bool) * Max(w->nk, 1));
	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT h.ts");
	append_columns(&q, "h", rs->keys, e->nkeys);
	appendStringInfo(&q, " FROM %s h WHERE h.ts = $1", rs->tq);
	plan = SPI_prepare(q.data, 1, types);
	if (plan == NULL)
		elog(ERROR, "chronicle._ends: preparing the keyframe rows query failed: %d", SPI_result);
	v = palloc(sizeof(Datum) * (e->nkeys + 1));
	n = palloc(sizeof(bool) * (e->nkeys + 1));
	for (int k = 0; k < w->nk; k++)
	{
		Datum		arg = TimestampTzGetDatum(w->kts[k]);
		int			ret = SPI_execute_plan(plan, &arg, NULL, true, 0);

		if (ret != SPI_OK_SELECT)
			elog(ERROR, "chronicle._ends: reading a keyframe failed: %d", ret);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			CHECK_FOR_INTERRUPTS();
			heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, v, n);
			chronicle_engine_key(e, v + 1, n + 1)->present[k] = true;
			w->krows[k] = true;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_freeplan(plan);
}

/* The ranges of each segment, from its keyframes and their keys. */
static Range *
ends_range_list(Engine *e, EndsWindow *w, int *nranges)
{
	Range	   *ranges = palloc(sizeof(Range) * (2 * w->nseg + w->nk + 1));

	*nranges = 0;
	for (int j = 0; j < w->nseg; j++)
	{
		int			prev = -1;

		for (int k = 0; k < w->nk; k++)
		{
			if (w->kseg[k] != j || !w->krows[k])
				continue;
			if (prev < 0)
			{
				/* K0 must be a keyframe with rows, else read it all */
				if (w->kts[k] != w->k0[j])
					break;
				add_range(ranges, nranges, w->k0[j], w->first[j]);
			}
			else
			{
				/*
				 * The first interval is read whole: a key with a row in
				 * [K0, F] but at neither K0 nor K1 has its last row in it.
				 */
				bool		changed = w->kts[prev] == w->k0[j];

				for (int i = 0; i < e->nsorted && !changed; i++)
					changed = e->sorted[i]->present[prev] != e->sorted[i]->present[k];
				if (changed)
					add_range(ranges, nranges, w->kts[prev], w->kts[k]);
			}
			prev = k;
		}
		add_range(ranges, nranges, prev < 0 ? w->k0[j] : w->kts[prev], w->last[j]);
	}
	return ranges;
}

/*
 * Ends mode: which time ranges to read.  Per segment of the window (first
 * interval start F, last snapshot L), the baselines come from [K0, K1] (K0
 * the keyframe before F, which holds every key, K1 the next one) and the
 * last rows from [Km, L] (Km the last keyframe of the window).  A keyframe
 * writes every key, so a key with a row at two consecutive keyframes has
 * its baseline and last row outside the keyframe interval between them:
 * only the intervals in which some key appears or disappears (absent at
 * one of its two keyframes) are read too.  The keyframes' keys are read first, one
 * snapshot each.  A key that appears and disappears between two keyframes
 * is not seen (see docs/analysis.md).  Without keyframes in the window this
 * is one range, [K0, L], as for the deltas.
 */
static Range *
ends_ranges(Engine *e, const ReadSpec *rs, Snap *snaps, int nsnaps, int *nranges)
{
	EndsWindow	w;

	ends_segments(&w, snaps, nsnaps);
	ends_keyframes(&w, rs->tbl);
	ends_keyframe_keys(e, &w, rs);
	return ends_range_list(e, &w, nranges);
}

/*
 * The time ranges to read, in time order: for the ends, ends_ranges();
 * else one read in time order.  When the first snapshot is at or before from,
 * the rows at or before from only set the baselines: the latest row of
 * each key at or before from in that snapshot's segment.  They are read
 * from the keyframe before from (chronicle._keyframe()), which holds
 * every key, so no key is looked up by itself: the history needs no
 * per-key index, and a view over a compact format can answer the
 * query.
 */
static Range *
read_ranges(Engine *e, const ReadSpec *rs, Snap *snaps, int nsnaps, int *nranges)
{
	Range	   *ranges;

	if (e->ends)
		return ends_ranges(e, rs, snaps, nsnaps, nranges);
	ranges = palloc(sizeof(Range));
	ranges[0].lo = rs->from_ts;
	if (nsnaps > 0 && snaps[0].ts <= rs->from_ts)
		ranges[0].lo = keyframe_of(rs->tbl, snaps[0].segment, rs->from_ts);
	ranges[0].hi = rs->to_ts;
	*nranges = 1;
	return ranges;
}

/* ----------------------------------------------------------------
 * The read
 * ----------------------------------------------------------------
 */

/* The parameters of the rows query, for SPI_cursor_open_with_args(). */
typedef struct QueryArgs
{
	int			nargs;
	Oid		   *types;
	Datum	   *values;
	char	   *nulls;
} QueryArgs;

/*
 * The range ($1, $2: set per range), filter parameters ($3...), then
 * exclusions.
 */
static void
query_args(const ReadSpec *rs, QueryArgs *qa)
{
	int			nargs = 2 + rs->nfcols + rs->nxcols;
	Oid		   *argtypes = palloc(sizeof(Oid) * nargs);
	Datum	   *args = palloc(sizeof(Datum) * nargs);
	char	   *argnulls = palloc(sizeof(char) * (nargs + 1));

	argtypes[0] = argtypes[1] = TIMESTAMPTZOID;
	argnulls[0] = argnulls[1] = ' ';
	for (int i = 0; i < rs->nfcols; i++)
	{
		argtypes[2 + i] = TEXTOID;
		if (rs->fvals == NULL || rs->fvals[i] == NULL)
		{
			args[2 + i] = (Datum) 0;
			argnulls[2 + i] = 'n';
		}
		else
		{
			args[2 + i] = CStringGetTextDatum(rs->fvals[i]);
			argnulls[2 + i] = ' ';
		}
	}
	for (int i = 0; i < rs->nxcols; i++)
	{
		argtypes[2 + rs->nfcols + i] = TEXTOID;
		args[2 + rs->nfcols + i] = CStringGetTextDatum(rs->xvals[i]);
		argnulls[2 + rs->nfcols + i] = ' ';
	}
	argnulls[nargs] = '\0';
	qa->nargs = nargs;
	qa->types = argtypes;
	qa->values = args;
	qa->nulls = argnulls;
}

/*
 * The query of the rows of a range: the source's column of
 * chronicle.history (pk), or the table's columns in the row layout with
 * the filters.
 */
static void
rows_query(StringInfo q, Engine *e, const ReadSpec *rs, PackedRead *pk,
		   QueryArgs *qa)
{
	if (pk)
	{
		const char *col = quote_identifier(pk->src->name);

		/*
		 * The origin read (05_origin.sql): this server's partitioned history
		 * by its primary key on ts, or an imported origin's by (origin, ts).
		 */
		if (chronicle_origin == 0)
			appendStringInfo(q, "SELECT h.ts, h.%s FROM %s.history h"
							 " WHERE h.ts >= $1 AND h.ts <= $2 AND h.%s IS NOT NULL ORDER BY h.ts",
							 col, quote_identifier(rs->nspname), col);
		else
			appendStringInfo(q, "SELECT h.ts, h.%s FROM %s.archive_history h"
							 " WHERE h.origin = %d AND h.ts >= $1 AND h.ts <= $2 AND h.%s IS NOT NULL"
							 " ORDER BY h.ts",
							 col, quote_identifier(rs->nspname), chronicle_origin, col);
		qa->nargs = 2;			/* the filters are applied to decoded rows */
		qa->nulls[qa->nargs] = '\0';
	}
	else
	{
		appendStringInfoString(q, "SELECT h.ts");
		append_row_columns(q, e, rs->keys, rs->vals, rs->attrs, rs->reset_col);
		appendStringInfo(q, " FROM %s h WHERE h.ts >= $1 AND h.ts <= $2", rs->tq);
		append_filters(q, "h", rs->fcols, rs->nfcols, rs->xcols, rs->nxcols, 3);
		appendStringInfoString(q, " ORDER BY h.ts");
	}
}

/*
 * Read the window's rows into the engine, SPI connected: the snapshots of
 * the window (and, born at zero, the keyframes after which a key is new),
 * the time ranges to read, then the rows of each range in time order, each
 * snapshot finished when its rows are in, the rest after the last row.
 */
void
chronicle_engine_read(Engine *e, const ReadSpec *rs)
{
	Snap	   *snaps;
	int			nsnaps = 0;
	int			sp = 0;
	QueryArgs	qa;
	Range	   *ranges;
	int			nranges;
	PackedRead *pk;
	StringInfoData q;
	Portal		portal;

	snaps = read_snapshots(rs->from_ts, rs->to_ts, &nsnaps);
	if (e->born_at_zero)
		find_born_after(snaps, nsnaps, rs->tq, rs->to_ts);
	if (e->ends)
		chronicle_engine_ends_window(e, snaps, nsnaps);

	query_args(rs, &qa);
	ranges = read_ranges(e, rs, snaps, nsnaps, &nranges);
	pk = packed_read(e, rs);
	initStringInfo(&q);
	rows_query(&q, e, rs, pk, &qa);
	for (int r = 0; r < nranges; r++)
	{
		qa.values[0] = TimestampTzGetDatum(ranges[r].lo);
		qa.values[1] = TimestampTzGetDatum(ranges[r].hi);
		portal = SPI_cursor_open_with_args(NULL, q.data, qa.nargs, qa.types,
										   qa.values, qa.nulls, true,
										   CURSOR_OPT_NO_SCROLL);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, ROWS_PER_FETCH);
			if (SPI_processed == 0)
				break;
			if (pk)
				take_packed(e, pk, SPI_tuptable, SPI_processed, snaps, nsnaps,
							&sp, rs->from_ts);
			else
				take_rows(e, SPI_tuptable, SPI_processed, snaps, nsnaps,
						  &sp, rs->from_ts);
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
	}
	while (sp < nsnaps)
		chronicle_engine_finish_snapshot(e, &snaps[sp++]);
}
