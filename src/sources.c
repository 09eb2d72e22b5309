/*-------------------------------------------------------------------------
 *
 * sources.c
 *		The list of statistics sources, and their description as SQL reads
 *		it.
 *
 * Adding a source is one C file with a ChronicleSource and two lines in the
 * list below (docs/development.md, "Adding a source").  Everything in SQL
 * is made from what the sources declare, when the extension is installed
 * or updated: the packed column of chronicle.history and the view
 * chronicle.<source>_history from chronicle._source_columns()
 * (chronicle._history_layout(), src/sql/10_history.sql); the analysis
 * functions chronicle.<prefix>_deltas(), _totals(), _run_totals() and their
 * rows of chronicle.metric from the same columns' kinds and
 * chronicle._source_analysis() (chronicle._analysis_layout(),
 * src/sql/31_analysis_layout.sql); the engine behind them (src/deltas.c)
 * reads a source's description through chronicle_source_by_name().
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "source.h"

extern const ChronicleSource chronicle_source_io;
extern const ChronicleSource chronicle_source_wal;
extern const ChronicleSource chronicle_source_checkpointer;
extern const ChronicleSource chronicle_source_bgwriter;
extern const ChronicleSource chronicle_source_database;
extern const ChronicleSource chronicle_source_statements;
extern const ChronicleSource chronicle_source_os_memory;
extern const ChronicleSource chronicle_source_os_disk;
extern const ChronicleSource chronicle_source_os_pressure;
extern const ChronicleSource chronicle_source_os_process_io;
extern const ChronicleSource chronicle_source_waits;
extern const ChronicleSource chronicle_source_wait_sampler;
extern const ChronicleSource chronicle_source_buffers;
extern const ChronicleSource chronicle_source_os_cpu;
extern const ChronicleSource chronicle_source_os_process_cpu;
extern const ChronicleSource chronicle_source_maintenance;
extern const ChronicleSource chronicle_source_relations;

const ChronicleSource *const chronicle_sources[] = {
	&chronicle_source_io,
	&chronicle_source_wal,
	&chronicle_source_checkpointer,
	&chronicle_source_bgwriter,
	&chronicle_source_database,
	&chronicle_source_statements,
	&chronicle_source_os_memory,
	&chronicle_source_os_disk,
	&chronicle_source_os_pressure,
	&chronicle_source_os_process_io,
	/* waits before wait_sampler: it reuses the counters waits read */
	&chronicle_source_waits,
	&chronicle_source_wait_sampler,
	&chronicle_source_buffers,
	&chronicle_source_os_cpu,
	&chronicle_source_os_process_cpu,
	&chronicle_source_maintenance,
	&chronicle_source_relations,
};

const int	chronicle_nsources = lengthof(chronicle_sources);

StaticAssertDecl(lengthof(chronicle_sources) <= CHRONICLE_MAX_SOURCES,
				 "too many sources for CHRONICLE_MAX_SOURCES");

/* The names SQL sees of ChronicleKind, in its order. */
static const char *const kind_names[] = {
	[CHRONICLE_KEY] = "key",
	[CHRONICLE_COUNTER] = "counter",
	[CHRONICLE_TIME] = "time",
	[CHRONICLE_GAUGE] = "gauge",
	[CHRONICLE_ATTRIBUTE] = "attribute",
	[CHRONICLE_RESET] = "reset",
	[CHRONICLE_RECORDED] = "recorded",
};

StaticAssertDecl(lengthof(kind_names) == CHRONICLE_RECORDED + 1,
				 "a name for every ChronicleKind");

const ChronicleSource *
chronicle_source_by_name(const char *name)
{
	for (int i = 0; i < chronicle_nsources; i++)
		if (strcmp(chronicle_sources[i]->name, name) == 0)
			return chronicle_sources[i];
	return NULL;
}

int
chronicle_source_column(const ChronicleSource *src, const char *name)
{
	for (int c = 0; c < src->ncolumns; c++)
		if (strcmp(src->columns[c].name, name) == 0)
			return c;
	return -1;
}

/*
 * A column the source's analysis names: it must be one of the source's
 * columns, of one of the kinds given.  A mistake in a source's C file,
 * found when the library is loaded rather than when someone reads it.
 */
static void
check_named(const ChronicleSource *src, const char *name, const char *role,
			uint32 kinds)
{
	int			c = chronicle_source_column(src, name);

	if (c < 0 || (kinds & (1 << src->columns[c].kind)) == 0)
		elog(ERROR, "pg_chronicle: source \"%s\" names \"%s\" as %s, which is not a column of a fitting kind",
			 src->name, name, role);
}

/*
 * Every column of names (NULL-terminated; NULL: none), as check_named(),
 * and of type type (typname).
 */
static void
check_named_list(const ChronicleSource *src, const char *const *names,
				 const char *role, uint32 kinds, Oid type, const char *typname)
{
	for (int i = 0; names && names[i]; i++)
	{
		check_named(src, names[i], role, kinds);
		if (src->columns[chronicle_source_column(src, names[i])].type != type)
			elog(ERROR, "pg_chronicle: source \"%s\" names \"%s\" as %s, which is not %s",
				 src->name, names[i], role, typname);
	}
}

/*
 * Check what a source declares that the compiler cannot: the key columns
 * come first, and what its analysis names exists with the kind it needs.
 * Called by _PG_init for every source.
 */
void
chronicle_check_source(const ChronicleSource *src)
{
	const ChronicleAnalysis *a = src->analysis;

	for (int c = 0; c < src->ncolumns; c++)
		if ((c < src->nkeys) != (src->columns[c].kind == CHRONICLE_KEY))
			elog(ERROR, "pg_chronicle: the key columns of source \"%s\" are not the first %d",
				 src->name, src->nkeys);
	check_named_list(src, src->page_columns, "a column of pages",
					 (1 << CHRONICLE_COUNTER) | (1 << CHRONICLE_GAUGE),
					 INT8OID, "bigint");
	if (a == NULL)
		return;
	check_named_list(src, a->filters, "a filter",
					 (1 << CHRONICLE_KEY) | (1 << CHRONICLE_ATTRIBUTE),
					 TEXTOID, "text");
	for (int i = 0; a->per_op && a->per_op[i].name; i++)
	{
		check_named(src, a->per_op[i].time, "a per-operation time",
					(1 << CHRONICLE_TIME) | (1 << CHRONICLE_COUNTER));
		check_named(src, a->per_op[i].ops, "a per-operation count", 1 << CHRONICLE_COUNTER);
	}
	for (int i = 0; a->bytes && a->bytes[i]; i += 2)
	{
		check_named(src, a->bytes[i], "a bytes counter", 1 << CHRONICLE_COUNTER);
		if (a->bytes[i + 1] == NULL)
			elog(ERROR, "pg_chronicle: source \"%s\": bytes is a list of pairs", src->name);
		check_named(src, a->bytes[i + 1], "an operations counter", 1 << CHRONICLE_COUNTER);
	}
	if (a->bytes && a->bytes[0])
		check_named(src, a->bytes_unit ? a->bytes_unit : "", "the bytes unit",
					1 << CHRONICLE_ATTRIBUTE);
	for (int c = 0; c < src->ncolumns; c++)
		if (src->columns[c].kind == CHRONICLE_GAUGE && a->gauge_unit == NULL)
			elog(ERROR, "pg_chronicle: source \"%s\" has gauges and no gauge_unit",
				 src->name);
}

PG_FUNCTION_INFO_V1(chronicle_source_columns);

/*
 * chronicle._source_columns(): the columns every source writes, after ts,
 * in the order it emits them, as the C source declares them: name, type,
 * whether it identifies a row, its kind, and the source's description.
 */
Datum
chronicle_source_columns(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];

		for (int c = 0; c < src->ncolumns; c++)
		{
			Datum		values[7];
			bool		nulls[7] = {0};

			values[0] = CStringGetTextDatum(src->name);
			values[1] = Int32GetDatum(c + 1);
			values[2] = CStringGetTextDatum(src->columns[c].name);
			values[3] = ObjectIdGetDatum(src->columns[c].type);
			values[4] = BoolGetDatum(c < src->nkeys);
			values[5] = CStringGetTextDatum(src->description);
			values[6] = CStringGetTextDatum(kind_names[src->columns[c].kind]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/*
 * A text[] of the strings list[first], list[first + step], ... of a
 * NULL-terminated list (whose terminator is at a multiple of step); an
 * empty array for a NULL list.
 */
static Datum
text_array(const char *const *list, int first, int step)
{
	Datum	   *elems;
	int			n = 0;

	while (list != NULL && list[n * step] != NULL)
		n++;
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(list[i * step + first]);
	return PointerGetDatum(construct_array_builtin(elems, n, TEXTOID));
}

PG_FUNCTION_INFO_V1(chronicle_source_analysis);

/*
 * chronicle._source_analysis(): per analysed source, what its
 * ChronicleAnalysis says: the functions' prefix, the filters, the
 * per-operation ratios (name, time column, operations column), the bytes
 * fallback (bytes column, operations column, unit column), whether its
 * keys are born at zero, and the unit of its gauges.
 */
Datum
chronicle_source_analysis(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];
		const ChronicleAnalysis *a = src->analysis;
		int			nperop = 0;
		const char **names;
		const char **times;
		const char **ops;
		Datum		values[11];
		bool		nulls[11] = {0};

		if (a == NULL)
			continue;
		while (a->per_op && a->per_op[nperop].name)
			nperop++;
		names = palloc(sizeof(char *) * (nperop + 1));
		times = palloc(sizeof(char *) * (nperop + 1));
		ops = palloc(sizeof(char *) * (nperop + 1));
		for (int p = 0; p < nperop; p++)
		{
			names[p] = a->per_op[p].name;
			times[p] = a->per_op[p].time;
			ops[p] = a->per_op[p].ops;
		}
		names[nperop] = times[nperop] = ops[nperop] = NULL;

		values[0] = CStringGetTextDatum(src->name);
		values[1] = CStringGetTextDatum(a->prefix);
		values[2] = text_array(a->filters, 0, 1);
		values[3] = text_array(names, 0, 1);
		values[4] = text_array(times, 0, 1);
		values[5] = text_array(ops, 0, 1);
		values[6] = text_array(a->bytes, 0, 2);
		values[7] = text_array(a->bytes, 1, 2);
		values[8] = a->bytes_unit ? CStringGetTextDatum(a->bytes_unit) : (Datum) 0;
		nulls[8] = a->bytes_unit == NULL;
		values[9] = BoolGetDatum(a->born_at_zero);
		values[10] = a->gauge_unit ? CStringGetTextDatum(a->gauge_unit) : (Datum) 0;
		nulls[10] = a->gauge_unit == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
