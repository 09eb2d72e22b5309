/*-------------------------------------------------------------------------
 *
 * deltas_int.h
 *		What the pieces of the analysis engine tell each other and nobody
 *		else: the engine proper (deltas.c), its reading through SPI
 *		(deltas_read.c) and its SQL entry points (deltas_sql.c).
 *
 * The engine's state is one Engine: the table's description, checked by
 * deltas_sql.c before a row is read, the state of every key, and the
 * output.  The reader hands it the rows in time order and tells it when a
 * snapshot's rows are in; the engine emits the rows of the result.  SQL
 * sees only chronicle._deltas() and chronicle._ends().
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_DELTAS_INT_H
#define CHRONICLE_DELTAS_INT_H

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"

/* One snapshot of the window, and the interval it ends (if any). */
typedef struct Snap
{
	TimestampTz ts;
	TimestampTz segment;
	TimestampTz start;			/* previous snapshot of the segment */
	bool		ends_interval;	/* start known and ts > from */
	TimestampTz born_after;		/* born_at_zero: the first keyframe of the
								 * segment with rows of the table (a key's
								 * first row after it is new), else DT_NOEND */
} Snap;

/* Kinds of value column. */
#define KIND_COUNTER	'c'		/* integer counter */
#define KIND_TIME		't'		/* float counter (milliseconds) */
#define KIND_GAUGE		'g'

/* A row's values: the value columns, then the attributes, then reset. */
typedef struct RowVals
{
	TimestampTz ts;
	Datum	   *v;
	bool	   *n;
} RowVals;

/* Grouped mode: the sums of one group's changed keys at a snapshot. */
typedef struct DeltaGroup
{
	Datum	   *key;			/* ngroupcols, the keys' own copies */
	bool	   *keynull;
	bool		touched;		/* a key of the group changed */
	bool		reset;
	Datum	   *sum;			/* per value */
	bool	   *dnull;
} DeltaGroup;

/* One key: its previous row, and the row at the current snapshot. */
typedef struct KeyState
{
	uint32		hash;
	struct KeyState *next;		/* same hash bucket */
	Datum	   *key;			/* nkeys, copied */
	bool	   *keynull;
	bool		known;			/* prev holds a row */
	RowVals		prev;
	bool		pending;		/* cur holds a row of the current snapshot */
	RowVals		cur;
	DeltaGroup *group;			/* grouped mode */
	/* ends mode: the key's baseline row in its current segment */
	bool		has_base;
	bool		base_born;		/* born at zero: the baseline counts as 0 */
	TimestampTz base_seg;
	RowVals		base;
	bool	   *present;		/* ends mode: has a row at each keyframe read */
} KeyState;

typedef struct Engine
{
	/* the table's description */
	int			nkeys;
	int			nvals;
	int			nattrs;
	bool		has_reset;
	int			nstored;		/* nvals + nattrs + has_reset */
	char	   *kinds;			/* per value */
	Oid		   *valtype;		/* per value (the start of stortype) */
	int		   *bytes_ops;		/* per value: value index of the op count, or
								 * -1 */
	int			bytes_unit;		/* attribute index of op_bytes, or -1 */
	int			nperop;
	int		   *perop_time;
	int		   *perop_ops;
	bool		single;			/* no keys: a row for every interval */
	bool		born_at_zero;	/* keys new in a segment count from zero */
	bool		changed_only;
	bool		grouped;		/* sums per group_by values and interval */
	int			ngroupcols;
	int		   *groupcol;		/* key index of each group_by column */
	DeltaGroup **groups;		/* in output order */
	int			ngroups;
	int			maxgroups;
	bool		groups_need_sort;
	bool		ends;			/* per key and segment: baseline and last row */
	TimestampTz from_ts;
	TimestampTz first_seg;		/* segment of the baseline rows, or DT_NOBEGIN */
	bool		bases_set;		/* the baseline rows became the bases */
	TimestampTz *iseg;			/* the segments with an interval in the window */
	int			niseg;
	TimestampTz **iend;			/* per iseg: the ends of its intervals in the
								 * window, in time order */
	int		   *niend;
	int			nkf;			/* keyframes whose keys are read first */

	/* key types */
	Oid		   *keytype;
	int16	   *keylen;
	bool	   *keybyval;
	FmgrInfo   *keycmp;
	Oid		   *keycoll;

	/* stored types of values, attributes, reset (nstored) */
	Oid		   *stortype;
	int16	   *storlen;
	bool	   *storbyval;

	/* keys */
	MemoryContext keycxt;
	HTAB	   *buckets;
	KeyState  **sorted;
	int			nsorted;
	int			maxsorted;
	bool		needs_sort;

	/* output */
	bool		has_reset_out;	/* a reset column (there are counters) */
	Datum	   *delta;			/* per value, scratch */
	bool	   *dnull;
	bool	   *gnull;			/* per value, all true */
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	Datum	   *outv;
	bool	   *outn;
} Engine;

/*
 * What the engine reads (deltas_read.c): the relation, by OID, name and
 * schema, and its name quoted for a query; its columns by role, in the
 * row layout of the queries (ts, keys, values, attributes, reset); the
 * filters (a value per filter column, NULL: none) and the exclusions
 * (column <> value); the window (from_ts, to_ts].
 */
typedef struct ReadSpec
{
	Oid			tbl;
	char	   *relname;
	char	   *nspname;
	const char *tq;
	char	  **keys;
	char	  **vals;
	char	  **attrs;
	char	   *reset_col;
	char	  **fcols;
	char	  **fvals;
	int			nfcols;
	char	  **xcols;
	char	  **xvals;
	int			nxcols;
	TimestampTz from_ts;
	TimestampTz to_ts;
} ReadSpec;

/* ---------------------------------------------------------------------
 * The engine proper (deltas.c)
 * ---------------------------------------------------------------------
 */

/* The key table, once the description is set; a single-row table's key. */
extern void chronicle_engine_start(Engine *e);
/* The state of a key, made at its first row. */
extern KeyState *chronicle_engine_key(Engine *e, Datum *key, bool *keynull);
/* A row's stored values (values, attributes, reset) copied into r. */
extern void chronicle_engine_store_row(Engine *e, RowVals *r, TimestampTz ts,
									   Datum *v, bool *n);
/* The rows of snapshot s are in: its interval's rows are emitted. */
extern void chronicle_engine_finish_snapshot(Engine *e, Snap *s);
/* Ends mode: the segments and interval ends of the window, before a row. */
extern void chronicle_engine_ends_window(Engine *e, Snap *snaps, int nsnaps);
/* Ends mode: after the last row, each key's last segment is emitted. */
extern void chronicle_engine_ends_finish(Engine *e);

/* ---------------------------------------------------------------------
 * The reading (deltas_read.c)
 * ---------------------------------------------------------------------
 */

/*
 * The window's rows read into the engine, in time order, every snapshot
 * finished.  SPI connected.
 */
extern void chronicle_engine_read(Engine *e, const ReadSpec *rs);

#endif							/* CHRONICLE_DELTAS_INT_H */
