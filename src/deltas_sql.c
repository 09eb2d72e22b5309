/*-------------------------------------------------------------------------
 *
 * deltas_sql.c
 *		The SQL entry points of the analysis engine, chronicle._deltas() and
 *		chronicle._ends(): the source's description, made from its C
 *		declaration, and the checks of the description, the arguments and
 *		the caller's result type, all before a row is read.
 *
 * The analysis functions of every source (chronicle.<prefix>_deltas(),
 * _values(), _totals() and the rest) are made from the source's C
 * declaration at install and upgrade (src/sql/31_analysis_layout.sql):
 * they check their arguments and call chronicle._deltas() or _ends() with
 * the source's name.  The description of the source's table (key columns,
 * value columns and their kinds, attributes, the reset column) is made
 * here from the same declaration, so the engine (deltas.c) knows no source
 * by name, and checked against the relation the rows are read from: every
 * later step trusts what is checked here.
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
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "deltas_int.h"
#include "source.h"

/*
 * The elements of a text[] argument as C strings; a NULL element is an
 * error unless allowed (then a NULL pointer).
 */
static char **
text_array_strings(ArrayType *arr, int *n, bool allow_nulls, const char *argname)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	if (arr == NULL)
	{
		*n = 0;
		return NULL;
	}
	deconstruct_array_builtin(arr, TEXTOID, &elems, &nulls, n);
	out = palloc0(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
		{
			if (!allow_nulls)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("chronicle._deltas: %s must not contain NULL", argname)));
			out[i] = NULL;
		}
		else
			out[i] = TextDatumGetCString(elems[i]);
	}
	return out;
}

/* The position of name in one list of the description (what: its role). */
static int
name_index(char **names, int n, const char *name, const char *what, const char *list)
{
	for (int i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("chronicle._deltas: %s \"%s\" is not one of %s", what, name, list)));
	return -1;					/* keep compiler quiet */
}

/*
 * The caller's column definition list must be what emit() and
 * emit_groups() produce, column for column: they write that many values of
 * those types whether or not a row of the table was read.
 */
static void
check_result_type(Engine *e, TupleDesc d)
{
	int			n = 3 + (e->grouped ? e->ngroupcols : e->nkeys + e->nattrs) +
		(e->has_reset_out ? 1 : 0) + e->nperop;
	Oid		   *want;

	if (e->ends)
		n = e->nkeys + e->nattrs + 3 + 2 * e->nvals;
	else
		for (int i = 0; i < e->nvals; i++)
			n += e->kinds[i] == KIND_GAUGE ? 1 : 2;
	if (n != d->natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("chronicle._deltas: the result has %d columns, the table description gives %d",
						d->natts, n),
				 errhint("The column definition list is interval_start, interval_end, seconds, "
						 "the keys (or group_by columns) and attributes, reset, per value its "
						 "delta and rate (or a gauge's value), per per_op pair a ratio.")));

	want = palloc(sizeof(Oid) * n);
	n = 0;
	if (e->ends)
	{
		for (int i = 0; i < e->nkeys; i++)
			want[n++] = e->keytype[i];
		for (int i = 0; i < e->nattrs; i++)
			want[n++] = e->stortype[e->nvals + i];
		want[n++] = TIMESTAMPTZOID;
		want[n++] = BOOLOID;
		want[n++] = INT8OID;
		for (int i = 0; i < e->nvals; i++)
		{
			want[n++] = e->valtype[i];
			want[n++] = e->valtype[i];
		}
		goto compare;
	}
	want[n++] = TIMESTAMPTZOID;
	want[n++] = TIMESTAMPTZOID;
	want[n++] = FLOAT8OID;
	if (e->grouped)
	{
		for (int i = 0; i < e->ngroupcols; i++)
			want[n++] = e->keytype[e->groupcol[i]];
	}
	else
	{
		for (int i = 0; i < e->nkeys; i++)
			want[n++] = e->keytype[i];
		for (int i = 0; i < e->nattrs; i++)
			want[n++] = e->stortype[e->nvals + i];
	}
	if (e->has_reset_out)
		want[n++] = BOOLOID;
	for (int i = 0; i < e->nvals; i++)
	{
		want[n++] = e->valtype[i];
		if (e->kinds[i] != KIND_GAUGE)
			want[n++] = FLOAT8OID;
	}
	for (int i = 0; i < e->nperop; i++)
		want[n++] = FLOAT8OID;
compare:
	for (int i = 0; i < n; i++)
		if (TupleDescAttr(d, i)->atttypid != want[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._deltas: result column %d is of type %s, not %s",
							i + 1, format_type_be(TupleDescAttr(d, i)->atttypid),
							format_type_be(want[i]))));
	pfree(want);
}

/* Exclusions are a few values of a key or two; more is a mistake. */
#define MAX_EXCLUSIONS	1000

/*
 * The table's column called name, named in the description's list (for
 * the message): its type and collation.  seen: the columns named so far,
 * when a column may have one role only.
 */
static Oid
table_column(Oid tbl, const char *relname, const char *list, const char *name,
			 Bitmapset **seen, Oid *coll)
{
	AttrNumber	att = get_attnum(tbl, name);
	Oid			type;
	int32		typmod;
	Oid			collid;

	/* (system columns have negative numbers: not history) */
	if (att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("chronicle._deltas: %s names \"%s\", not a column of %s",
						list, name, relname)));
	if (seen != NULL)
	{
		if (bms_is_member(att, *seen))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("chronicle._deltas: column \"%s\" is named twice in the table description",
							name),
					 errhint("Each column is ts, a key, a value, an attribute or the reset column, once.")));
		*seen = bms_add_member(*seen, att);
	}
	get_atttypetypmodcoll(tbl, att, &type, &typmod, &collid);
	if (coll != NULL)
		*coll = collid;
	return type;
}

/*
 * The description's lists agree with one another: a kind letter per
 * value, a bytes_ops element per value, per_op in pairs.
 */
static void
describe_kinds(Engine *e, char **vals, int nbytes_ops, int nperop2)
{
	if ((int) strlen(e->kinds) != e->nvals)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: kinds has %d letters for %d values",
						(int) strlen(e->kinds), e->nvals)));
	for (int i = 0; i < e->nvals; i++)
		if (e->kinds[i] != KIND_COUNTER && e->kinds[i] != KIND_TIME && e->kinds[i] != KIND_GAUGE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chronicle._deltas: kind of value \"%s\" is not c, t or g", vals[i])));
	if (nbytes_ops != e->nvals)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: bytes_ops has %d elements for %d values",
						nbytes_ops, e->nvals)));
	if (nperop2 % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: per_op is a list of (time, operations) pairs, not %d names",
						nperop2)));
}

/* keys: hashed, compared and sorted */
static void
describe_keys(Engine *e, Oid tbl, const char *relname, char **keys,
			  Bitmapset **seen)
{
	e->keytype = palloc(sizeof(Oid) * Max(e->nkeys, 1));
	e->keylen = palloc(sizeof(int16) * Max(e->nkeys, 1));
	e->keybyval = palloc(sizeof(bool) * Max(e->nkeys, 1));
	e->keycmp = palloc0(sizeof(FmgrInfo) * Max(e->nkeys, 1));
	e->keycoll = palloc(sizeof(Oid) * Max(e->nkeys, 1));
	for (int i = 0; i < e->nkeys; i++)
	{
		TypeCacheEntry *tc;

		e->keytype[i] = table_column(tbl, relname, "keys", keys[i], seen, &e->keycoll[i]);
		tc = lookup_type_cache(e->keytype[i], TYPECACHE_CMP_PROC_FINFO);
		if (!OidIsValid(tc->cmp_proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("chronicle._deltas: key column \"%s\" is of type %s, which has no ordering",
							keys[i], format_type_be(e->keytype[i]))));
		fmgr_info_copy(&e->keycmp[i], &tc->cmp_proc_finfo, CurrentMemoryContext);
		get_typlenbyval(e->keytype[i], &e->keylen[i], &e->keybyval[i]);
	}
}

/* values, attributes, reset: copied as they are; counters subtracted */
static void
describe_stored(Engine *e, Oid tbl, const char *relname, char **vals,
				char **attrs, const char *reset_col, Bitmapset **seen)
{
	e->stortype = palloc(sizeof(Oid) * Max(e->nstored, 1));
	e->storlen = palloc(sizeof(int16) * Max(e->nstored, 1));
	e->storbyval = palloc(sizeof(bool) * Max(e->nstored, 1));
	for (int i = 0; i < e->nvals; i++)
	{
		e->stortype[i] = table_column(tbl, relname, "vals", vals[i], seen, NULL);
		if (e->kinds[i] != KIND_GAUGE &&
			e->stortype[i] != INT8OID && e->stortype[i] != FLOAT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._deltas: counter \"%s\" is of type %s, neither bigint nor double precision",
							vals[i], format_type_be(e->stortype[i]))));
	}
	for (int i = 0; i < e->nattrs; i++)
		e->stortype[e->nvals + i] = table_column(tbl, relname, "attrs", attrs[i], seen, NULL);
	if (e->has_reset)
		e->stortype[e->nstored - 1] = table_column(tbl, relname, "reset_col", reset_col, seen, NULL);
	for (int i = 0; i < e->nstored; i++)
		get_typlenbyval(e->stortype[i], &e->storlen[i], &e->storbyval[i]);
	e->valtype = e->stortype;
}

/* bytes: an operation counter times a unit attribute, all bigint */
static void
describe_bytes(Engine *e, char **vals, char **attrs, char **bytes_ops,
			   const char *bytes_unit)
{
	e->bytes_unit = bytes_unit ? name_index(attrs, e->nattrs, bytes_unit, "bytes_unit", "attrs") : -1;
	e->bytes_ops = palloc(sizeof(int) * Max(e->nvals, 1));
	for (int i = 0; i < e->nvals; i++)
	{
		int			ops;

		e->bytes_ops[i] = -1;
		if (bytes_ops[i] == NULL)
			continue;
		ops = name_index(vals, e->nvals, bytes_ops[i], "bytes_ops", "vals");
		if (e->bytes_unit < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chronicle._deltas: bytes_ops without a bytes_unit column")));
		if (e->kinds[i] == KIND_GAUGE || e->kinds[ops] == KIND_GAUGE ||
			e->valtype[i] != INT8OID || e->valtype[ops] != INT8OID ||
			e->stortype[e->nvals + e->bytes_unit] != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._deltas: the bytes fallback of \"%s\" needs bigint counters and a bigint unit",
							vals[i])));
		e->bytes_ops[i] = ops;
	}
}

/* per_op: time counter / operation counter */
static void
describe_per_op(Engine *e, char **vals, char **per_op, int nperop2)
{
	e->nperop = nperop2 / 2;
	e->perop_time = palloc(sizeof(int) * Max(e->nperop, 1));
	e->perop_ops = palloc(sizeof(int) * Max(e->nperop, 1));
	for (int i = 0; i < e->nperop; i++)
	{
		e->perop_time[i] = name_index(vals, e->nvals, per_op[2 * i], "per_op", "vals");
		e->perop_ops[i] = name_index(vals, e->nvals, per_op[2 * i + 1], "per_op", "vals");
		if (e->kinds[e->perop_time[i]] == KIND_GAUGE || e->kinds[e->perop_ops[i]] == KIND_GAUGE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chronicle._deltas: per_op pairs are counters, \"%s\" or \"%s\" is a gauge",
							per_op[2 * i], per_op[2 * i + 1])));
	}
}

/*
 * group_by: distinct key columns, so never more than the keys (the
 * output row has a column for each).
 */
static void
describe_groups(Engine *e, char **keys, char **gcols)
{
	bool	   *grouping;

	if (e->single || strchr(e->kinds, KIND_GAUGE) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: group_by needs a keyed table of counters")));
	grouping = palloc0(sizeof(bool) * e->nkeys);
	e->groupcol = palloc(sizeof(int) * Max(Min(e->ngroupcols, e->nkeys), 1));
	for (int i = 0; i < e->ngroupcols; i++)
	{
		int			k = name_index(keys, e->nkeys, gcols[i], "group_by column", "the keys");

		if (grouping[k])
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("chronicle._deltas: group_by names \"%s\" twice", gcols[i])));
		grouping[k] = true;
		e->groupcol[i] = k;
	}
	pfree(grouping);
}

/* filters and exclusions compare a text column with a text value */
static void
describe_filters(Oid tbl, const char *relname, char **fcols, int nfcols,
				 char **xcols, int nxcols)
{
	for (int i = 0; i < nfcols; i++)
		if (table_column(tbl, relname, "filter_cols", fcols[i], NULL, NULL) != TEXTOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._deltas: filter column \"%s\" is not of type text", fcols[i])));
	if (nxcols > MAX_EXCLUSIONS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("chronicle._deltas: %d exclusions, more than %d", nxcols, MAX_EXCLUSIONS)));
	for (int i = 0; i < nxcols; i++)
		if (table_column(tbl, relname, "exclude_cols", xcols[i], NULL, NULL) != TEXTOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("chronicle._deltas: exclusion column \"%s\" is not of type text", xcols[i])));
}

/*
 * Check the whole description against the table and record the column
 * types, before a row is read: every later step (the row layout, the
 * arithmetic, the output row) trusts what is checked here.  The row layout
 * of the queries is ts, keys, values, attributes, reset.
 */
static void
describe(Engine *e, Oid tbl, const char *relname,
		 char **keys, char **vals, char **attrs, const char *reset_col,
		 char **bytes_ops, int nbytes_ops, const char *bytes_unit,
		 char **per_op, int nperop2, char **gcols,
		 char **fcols, int nfcols, char **xcols, int nxcols)
{
	AttrNumber	ts = get_attnum(tbl, "ts");
	Bitmapset  *seen;

	if (ts <= 0 || get_atttype(tbl, ts) != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("chronicle._deltas: %s has no column \"ts\" of type timestamp with time zone",
						relname)));
	seen = bms_make_singleton(ts);

	describe_kinds(e, vals, nbytes_ops, nperop2);
	describe_keys(e, tbl, relname, keys, &seen);
	describe_stored(e, tbl, relname, vals, attrs, reset_col, &seen);
	describe_bytes(e, vals, attrs, bytes_ops, bytes_unit);
	describe_per_op(e, vals, per_op, nperop2);
	if (e->grouped)
		describe_groups(e, keys, gcols);
	describe_filters(tbl, relname, fcols, nfcols, xcols, nxcols);
	bms_free(seen);
}

/*
 * The description of a source the engine works from, made from the
 * source's columns and their kinds (source.h): keys, values (counters, time
 * counters, gauges) and their kind letters, attributes, the reset column,
 * the bytes fallback, the per-operation pairs and the filter columns.
 * counters_only (the ends, and group sums: a level is not summed over
 * keys) leaves the gauges out; the ends also the ratios and filters.
 */
typedef struct Description
{
	char	  **keys;
	int			nkeys;
	char	  **vals;
	int			nvals;
	char	   *kinds;
	char	  **attrs;
	int			nattrs;
	char	   *reset_col;
	char	  **bytes_ops;		/* per value: its operations counter, or NULL */
	char	   *bytes_unit;
	char	  **per_op;			/* (time, operations) pairs */
	int			nperop2;
	char	  **fcols;
	int			nfcols;
} Description;

static void
describe_source(const ChronicleSource *src, bool ends, bool counters_only, Description *d)
{
	const ChronicleAnalysis *a = src->analysis;

	d->keys = palloc(sizeof(char *) * src->ncolumns);
	d->vals = palloc(sizeof(char *) * src->ncolumns);
	d->kinds = palloc0(src->ncolumns + 1);
	d->attrs = palloc(sizeof(char *) * src->ncolumns);
	d->bytes_ops = palloc0(sizeof(char *) * src->ncolumns);
	d->nkeys = d->nvals = d->nattrs = d->nperop2 = d->nfcols = 0;
	d->reset_col = d->bytes_unit = NULL;
	for (int c = 0; c < src->ncolumns; c++)
	{
		const ChronicleColumn *col = &src->columns[c];
		char		kind;

		switch (col->kind)
		{
			case CHRONICLE_KEY:
				d->keys[d->nkeys++] = unconstify(char *, col->name);
				continue;
			case CHRONICLE_ATTRIBUTE:
				d->attrs[d->nattrs++] = unconstify(char *, col->name);
				continue;
			case CHRONICLE_RESET:
				if (d->reset_col != NULL)
					elog(ERROR, "chronicle._deltas: source \"%s\" has two reset columns", src->name);
				d->reset_col = unconstify(char *, col->name);
				continue;
			case CHRONICLE_RECORDED:
				continue;
			case CHRONICLE_COUNTER:
				kind = KIND_COUNTER;
				break;
			case CHRONICLE_TIME:
				kind = KIND_TIME;
				break;
			case CHRONICLE_GAUGE:
				if (counters_only)
					continue;
				kind = KIND_GAUGE;
				break;
			default:
				elog(ERROR, "unexpected column kind %d", (int) col->kind);
		}
		for (int b = 0; a->bytes && a->bytes[b]; b += 2)
			if (strcmp(a->bytes[b], col->name) == 0)
				d->bytes_ops[d->nvals] = unconstify(char *, a->bytes[b + 1]);
		d->kinds[d->nvals] = kind;
		d->vals[d->nvals++] = unconstify(char *, col->name);
	}
	if (a->bytes && a->bytes[0])
		d->bytes_unit = unconstify(char *, a->bytes_unit);
	if (ends)
	{
		d->per_op = NULL;
		d->fcols = NULL;
		return;
	}
	d->per_op = palloc(sizeof(char *) * (2 * src->ncolumns + 1));
	for (int p = 0; a->per_op && a->per_op[p].name; p++)
	{
		d->per_op[d->nperop2++] = unconstify(char *, a->per_op[p].time);
		d->per_op[d->nperop2++] = unconstify(char *, a->per_op[p].ops);
	}
	d->fcols = palloc(sizeof(char *) * (src->ncolumns + 1));
	for (int f = 0; a->filters && a->filters[f]; f++)
		d->fcols[d->nfcols++] = unconstify(char *, a->filters[f]);
}

PG_FUNCTION_INFO_V1(chronicle_deltas);

/*
 * chronicle._deltas(source text, from_ts, to_ts, filter_vals text[],
 *     changed_only boolean, group_by text[], exclude_cols text[],
 *     exclude_vals text[], tbl regclass) RETURNS SETOF record
 *
 * The source's description is made from its C column list and analysis
 * (describe_source()); its rows are read from chronicle.<source>_history,
 * or from tbl when given (a table of the same columns: the tests compare
 * the two ways of reading).  filter_vals: a value per filter column of the
 * source, in order (NULL: no filter); exclude_cols <> exclude_vals restrict
 * the rows read.
 *
 * Output columns: interval_start, interval_end, seconds, keys, attributes,
 * reset (when there are counters), per value: delta and per-second rate
 * (counters) or the value (gauges), per per_op pair: time / operations.
 *
 * With group_by (key columns, possibly none): interval_start, interval_end,
 * seconds, the group_by columns, reset, per counter the sum of the changed
 * keys' deltas and its rate, per per_op pair: summed time / summed
 * operations; a row per group with a changed key in the interval.
 *
 *
 * chronicle._ends(source, from_ts, to_ts, tbl) (keyed sources): per key and
 * segment of the window, the keys, the last row's attributes, the segment,
 * reset, intervals, per counter the baseline row's value and the last
 * row's (see emit_ends()): what the totals' shortcut subtracts.  A
 * function of its own, not an argument of _deltas(), because the callers
 * of each are told apart (sql/analysis_errors.sql lists who calls
 * _deltas()).
 */
static Datum run_engine(FunctionCallInfo fcinfo, bool ends);

Datum
chronicle_deltas(PG_FUNCTION_ARGS)
{
	return run_engine(fcinfo, false);
}

PG_FUNCTION_INFO_V1(chronicle_ends);

Datum
chronicle_ends(PG_FUNCTION_ARGS)
{
	return run_engine(fcinfo, true);
}

/* The relation the rows of a source are read from: tbl, or its view. */
static Oid
source_relation(const ChronicleSource *src, FunctionCallInfo fcinfo, int tblarg)
{
	Oid			tbl;

	if (PG_NARGS() > tblarg && !PG_ARGISNULL(tblarg))
		return PG_GETARG_OID(tblarg);
	tbl = get_relname_relid(psprintf("%s_history", src->name),
							get_namespace_oid(CHRONICLE_SCHEMA, false));
	if (!OidIsValid(tbl))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("chronicle._deltas: no view %s.%s_history", CHRONICLE_SCHEMA, src->name),
				 errhint("ALTER EXTENSION pg_chronicle UPDATE makes the views of the library's sources.")));
	return tbl;
}

/* The names of the arguments of chronicle._deltas(), for the messages. */
static const char *const argnames[] = {
	"source", "from_ts", "to_ts", "filter_vals", "changed_only", "group_by",
	"exclude_cols", "exclude_vals", "tbl"
};

/*
 * The source the call names, once the arguments that must not be NULL are
 * checked.
 */
static const ChronicleSource *
analysed_source(FunctionCallInfo fcinfo, bool ends)
{
	const ChronicleSource *src;
	char	   *srcname;
	int			nrequired = ends ? 3 : 5;

	if (PG_NARGS() != (ends ? 4 : lengthof(argnames)))
		elog(ERROR, "chronicle._deltas: called with %d arguments", PG_NARGS());
	for (int i = 0; i < nrequired; i++)
		if (i != 3 && PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("chronicle._deltas: %s must not be NULL", argnames[i])));

	srcname = text_to_cstring(PG_GETARG_TEXT_PP(0));
	src = chronicle_source_by_name(srcname);
	if (src == NULL || src->analysis == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: \"%s\" is not an analysed source", srcname),
				 errhint("SELECT source FROM chronicle._source_analysis() lists them.")));
	return src;
}

/* The relation of rs->tbl: its name, schema and quoted name. */
static void
read_relation(ReadSpec *rs)
{
	char		relkind;

	/*
	 * The rows are read from the relation the OID names, the one the
	 * description is checked against.
	 */
	rs->relname = get_rel_name(rs->tbl);
	relkind = get_rel_relkind(rs->tbl);
	if (rs->relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("chronicle._deltas: no relation with OID %u", rs->tbl)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_VIEW && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("chronicle._deltas: \"%s\" is not a table", rs->relname)));
	rs->nspname = get_namespace_name(get_rel_namespace(rs->tbl));
	rs->tq = quote_qualified_identifier(rs->nspname, rs->relname);
}

/*
 * The arguments after the window (chronicle._deltas() only): the filter
 * values, changed_only, group_by (the columns returned) and the
 * exclusions.
 */
static char **
engine_arguments(FunctionCallInfo fcinfo, bool ends, const ChronicleSource *src,
				 Engine *e, ReadSpec *rs)
{
	char	  **gcols = NULL;
	int			nfvals;
	int			nxvals = 0;

	rs->fvals = NULL;
	rs->xcols = NULL;
	rs->xvals = NULL;
	rs->nxcols = 0;
	nfvals = rs->nfcols;
	if (!ends && !PG_ARGISNULL(3))
	{
		rs->fvals = text_array_strings(PG_GETARG_ARRAYTYPE_P(3), &nfvals,
									   true, "filter_vals");
		if (nfvals != rs->nfcols)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("chronicle._deltas: %d filter_vals for the %d filter columns of source \"%s\"",
							nfvals, rs->nfcols, src->name)));
	}
	e->changed_only = ends || PG_GETARG_BOOL(4);
	if (!ends && !PG_ARGISNULL(5))
	{
		gcols = text_array_strings(PG_GETARG_ARRAYTYPE_P(5), &e->ngroupcols, false, "group_by");
		e->grouped = true;
		e->changed_only = true;
	}
	if (!ends)
	{
		for (int i = 6; i <= 7; i++)
			if (PG_ARGISNULL(i))
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("chronicle._deltas: %s must not be NULL", argnames[i])));
		rs->xcols = text_array_strings(PG_GETARG_ARRAYTYPE_P(6), &rs->nxcols,
									   false, "exclude_cols");
		rs->xvals = text_array_strings(PG_GETARG_ARRAYTYPE_P(7), &nxvals,
									   false, "exclude_vals");
	}
	if (rs->nxcols != nxvals)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: %d exclude_vals for %d exclude_cols",
						nxvals, rs->nxcols)));
	return gcols;
}

/*
 * The engine's description of the table: the source's, checked against
 * the relation (describe()), and the scratch space of the output.
 */
static void
engine_describe(Engine *e, const ChronicleSource *src, const Description *d,
				const ReadSpec *rs, char **gcols, bool ends)
{
	e->nkeys = d->nkeys;
	e->nvals = d->nvals;
	e->kinds = d->kinds;
	e->nattrs = d->nattrs;
	e->born_at_zero = src->analysis->born_at_zero;
	e->ends = ends;
	if (e->ends && (e->grouped || e->nkeys == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chronicle._deltas: ends needs keys and no group_by")));
	e->from_ts = rs->from_ts;
	e->single = e->nkeys == 0;
	e->has_reset = d->reset_col != NULL;
	e->nstored = e->nvals + e->nattrs + (e->has_reset ? 1 : 0);
	describe(e, rs->tbl, rs->relname, d->keys, d->vals, d->attrs, d->reset_col,
			 d->bytes_ops, d->nvals, d->bytes_unit, d->per_op, d->nperop2, gcols,
			 d->fcols, d->nfcols, rs->xcols, rs->nxcols);
	e->has_reset_out = e->has_reset;
	for (int i = 0; i < e->nvals; i++)
		if (e->kinds[i] != KIND_GAUGE)
			e->has_reset_out = true;
	e->delta = palloc(sizeof(Datum) * Max(e->nvals, 1));
	e->dnull = palloc(sizeof(bool) * Max(e->nvals, 1));
	e->gnull = palloc(sizeof(bool) * Max(e->nvals, 1));
}

/* The result: the caller's row type, checked, and its tuplestore. */
static void
engine_output(FunctionCallInfo fcinfo, Engine *e)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	e->tupstore = rsinfo->setResult;
	e->tupdesc = rsinfo->setDesc;
	check_result_type(e, e->tupdesc);
	e->outv = palloc(sizeof(Datum) * e->tupdesc->natts);
	e->outn = palloc(sizeof(bool) * e->tupdesc->natts);
}

/*
 * The source, its description and the arguments, checked before a row is
 * read; then the engine reads the window's rows and emits the result.
 */
static Datum
run_engine(FunctionCallInfo fcinfo, bool ends)
{
	const ChronicleSource *src;
	Description d;
	ReadSpec	rs;
	char	  **gcols;
	Engine	   *e;

	src = analysed_source(fcinfo, ends);
	rs.from_ts = PG_GETARG_TIMESTAMPTZ(1);
	rs.to_ts = PG_GETARG_TIMESTAMPTZ(2);
	rs.tbl = source_relation(src, fcinfo, ends ? 3 : 8);
	describe_source(src, ends, ends || !PG_ARGISNULL(5), &d);
	rs.keys = d.keys;
	rs.vals = d.vals;
	rs.attrs = d.attrs;
	rs.reset_col = d.reset_col;
	rs.fcols = d.fcols;
	rs.nfcols = d.nfcols;
	read_relation(&rs);

	e = palloc0(sizeof(Engine));
	gcols = engine_arguments(fcinfo, ends, src, e, &rs);
	engine_describe(e, src, &d, &rs, gcols, ends);
	engine_output(fcinfo, e);
	chronicle_engine_start(e);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	chronicle_engine_read(e, &rs);
	if (e->ends)
		chronicle_engine_ends_finish(e);

	SPI_finish();
	return (Datum) 0;
}
