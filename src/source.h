/*-------------------------------------------------------------------------
 *
 * source.h
 *		The source interface: what a statistics source (src/source_*.c)
 *		declares, and the row emitter it writes through.
 *
 * A source knows how to read one kind of statistics (pg_stat_io,
 * pg_stat_wal, ...) and describes the columns of its history: the view
 * chronicle.<name>_history and the packed column chronicle.history.<name>
 * are made from this description (chronicle._history_layout(),
 * src/sql/10_history.sql), and so are the analysis functions
 * chronicle.<prefix>_deltas(), _totals() and the rest
 * (chronicle._analysis_layout(), src/sql/31_analysis_layout.sql), nowhere
 * else.  On
 * every snapshot the collector calls the source's collect callback, which
 * emits one row per key with chronicle_emit_row().  The collector keeps the
 * previous reading of every key and writes a row only when it changed
 * (sparse storage, emitter.c); it knows nothing else about the source.
 * Every source is listed in src/sources.c.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_SOURCE_H
#define CHRONICLE_SOURCE_H

#include "utils/timestamp.h"

#define CHRONICLE_SCHEMA		"chronicle"
#define CHRONICLE_MAX_SOURCES	32
#define CHRONICLE_MAX_COLUMNS	48
#define CHRONICLE_KEY_LEN		256

/*
 * What a column is, which decides how the analysis reads it (src/deltas.c
 * and the functions made from the description at install,
 * src/sql/31_analysis_layout.sql):
 *
 *	KEY			identifies a row; the first columns of the list, and only they
 *	COUNTER		a cumulative count (bigint): deltas and rates per second
 *	TIME		a cumulative time in milliseconds (double precision): deltas
 *				and milliseconds per second
 *	GAUGE		a level: the value at the end of an interval
 *	ATTRIBUTE	describes the key (a database's name, pg_stat_io's op_bytes):
 *				carried, never subtracted
 *	RESET		changes when the counters restart (stats_reset): the interval
 *				it changes in is a reset, its deltas NULL
 *	RECORDED	recorded and shown in the view, not analysed by the engine
 *				(a source's own state, or read by hand: statements_top())
 */
typedef enum ChronicleKind
{
	CHRONICLE_KEY,
	CHRONICLE_COUNTER,
	CHRONICLE_TIME,
	CHRONICLE_GAUGE,
	CHRONICLE_ATTRIBUTE,
	CHRONICLE_RESET,
	CHRONICLE_RECORDED,
} ChronicleKind;

/*
 * One column of a source's history view (after the leading ts column).  What
 * a column means, when it is NULL and since which version it exists is said
 * in a comment beside it: this list is the column's only definition.
 */
typedef struct ChronicleColumn
{
	const char *name;
	Oid			type;			/* INT8OID, INT4OID, OIDOID, FLOAT8OID, TEXTOID,
								 * BOOLOID, TIMESTAMPTZOID (all of them but
								 * FLOAT8OID for a key) */
	ChronicleKind kind;
} ChronicleColumn;

/*
 * How a source declares its columns: once, in a list macro of entries
 * C(ENUM_NAME, "column_name", TYPEOID, KIND), in column order, each with its
 * comment, then CHRONICLE_COLUMNS(list, array, NCOLUMNS, NKEYS), which makes
 * of it the enum of column indexes (ENUM_NAME, ..., NCOLUMNS) that collect
 * indexes values[] and nulls[] with, NKEYS (the number of KEY columns), and
 * the array of ChronicleColumn the ChronicleSource points to, so that none
 * of them can disagree:
 *
 *	#define BGW_COLUMNS(C) \
 *		C(BGW_BUFFERS_CLEAN, "buffers_clean", INT8OID, COUNTER) \
 *		C(BGW_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)
 *
 *	CHRONICLE_COLUMNS(BGW_COLUMNS, bgwriter_columns, BGW_NCOLUMNS, BGW_NKEYS);
 *
 * (the idiom of PostgreSQL's own lists, such as kwlist.h).  KIND is a
 * ChronicleKind without its prefix.  A column's comment stands beside its
 * entry or on lines of its own before it; every line of the list but the
 * last ends in a backslash, comment lines too.
 */
#define CHRONICLE_COLUMN_ENUM(sym, name, type, kind)	sym,
#define CHRONICLE_COLUMN_DEF(sym, name, type, kind)		[sym] = {name, type, CHRONICLE_##kind},
#define CHRONICLE_COLUMN_KEYS(sym, name, type, kind)	+ (CHRONICLE_##kind == CHRONICLE_KEY)
#define CHRONICLE_COLUMNS(list, array, ncolumns, nkeys) \
	enum { list(CHRONICLE_COLUMN_ENUM) ncolumns, nkeys = 0 list(CHRONICLE_COLUMN_KEYS) }; \
	static const ChronicleColumn array[ncolumns] = { list(CHRONICLE_COLUMN_DEF) }

/*
 * A time counter divided by an operation counter, both of the source:
 * chronicle.io_deltas()'s ms_per_read is read_time / reads.
 */
typedef struct ChroniclePerOp
{
	const char *name;			/* the result column */
	const char *time;			/* a TIME (or COUNTER) column */
	const char *ops;			/* a COUNTER column */
} ChroniclePerOp;

/*
 * What the analysis needs of a source beyond its columns' kinds.  A source
 * with one gets chronicle.<prefix>_deltas() (or _values(), when all its
 * values are gauges), <prefix>_totals() and <prefix>_run_totals(), its
 * rows of chronicle.metric, and is read by rollups and the timeline by
 * those functions; a source without one is recorded and shown in its view
 * only (docs/development.md, "Adding a source").
 */
typedef struct ChronicleAnalysis
{
	const char *prefix;			/* "wait": chronicle.wait_deltas() */

	/*
	 * Text columns (keys or attributes) the functions filter by, in
	 * parameter order (for_<column>), NULL-terminated.  backend_type,
	 * object, context and wait_event_type are checked against PostgreSQL's
	 * names, datname against the recorded databases.
	 */
	const char *const *filters;
	const ChroniclePerOp *per_op;	/* terminated by {NULL} */

	/*
	 * Pairs of COUNTER columns (bytes, operations), NULL-terminated: where
	 * the bytes counter is NULL (before 18) its delta is the operations'
	 * delta times the ATTRIBUTE column bytes_unit.
	 */
	const char *const *bytes;
	const char *bytes_unit;

	/*
	 * Whether a key first seen within a segment started counting from zero
	 * then (a database created, a wait key first sampled), so that its first
	 * row counts whole; otherwise (a pg_stat_io cell, a disk) it carries its
	 * count since the server started and is only a baseline (src/deltas.c).
	 */
	bool		born_at_zero;
	const char *gauge_unit;		/* chronicle.metric's unit of the gauges */
} ChronicleAnalysis;

/* Opaque to sources (emitter.h). */
typedef struct ChronicleEmitter ChronicleEmitter;

typedef struct ChronicleSource
{
	const char *name;			/* "io": view chronicle.io_history, GUC
								 * chronicle.collect_io */
	const char *description;	/* the GUC's ("Whether snapshots record
								 * <description>.") and the view's COMMENT */
	const ChronicleColumn *columns;
	int			ncolumns;
	int			nkeys;			/* the first nkeys columns identify a row: the
								 * NKEYS of CHRONICLE_COLUMNS() */
	const ChronicleAnalysis *analysis;	/* NULL: not analysed */

	/*
	 * Optional, NULL-terminated: bigint columns of bytes that are mostly
	 * whole 4 kB pages (block I/O, relation sizes), which the packed format
	 * stores as pages and a remainder (history_pack.c, version 3): exact
	 * for any value, two bytes shorter for most.  A value is read with the
	 * list of the version that wrote it: a released column never leaves or
	 * joins its source's list (a new column may start in it).
	 */
	const char *const *page_columns;

	/*
	 * Read the source and emit every row with chronicle_emit_row().  Runs
	 * inside a transaction (and a subtransaction), with SPI connected.
	 * Errors are fine: the collector catches them, counts them and backs
	 * off, and the other sources go on.
	 */
	void		(*collect) (ChronicleEmitter *emitter);

	/* Optional: is the source readable on this server at all? */
	bool		(*available) (void);

	/*
	 * Optional: called once the rows collect emitted are part of the
	 * snapshot (the source's subtransaction committed), still in the
	 * snapshot's memory context.  State that must follow only what was
	 * written moves on here, never in collect: a failure after collect
	 * (the INSERT, a cancel) rolls the rows back and this is not called.
	 */
	void		(*written) (void);

	/*
	 * Optional: define the source's own settings (DefineCustom*Variable).
	 * Called once by _PG_init (pg_chronicle.c), after the
	 * chronicle.collect_<name> setting every source has.
	 */
	void		(*define_settings) (void);
} ChronicleSource;

/*
 * A source file ends with its ChronicleSource, made by
 *
 *	CHRONICLE_SOURCE(bgwriter, BGW, "pg_stat_bgwriter",
 *					 .analysis = &bgwriter_analysis);
 *
 * which defines chronicle_source_bgwriter (the global src/sources.c lists),
 * named "bgwriter", with the columns CHRONICLE_COLUMNS() made as
 * bgwriter_columns with BGW_NCOLUMNS and BGW_NKEYS, and bgwriter_collect
 * as its collect.  What follows the description are the other fields, as
 * designated initializers (at least one, as C99 wants of a variadic
 * macro).  The name is written once, so that the global, the name, the
 * columns and the callback cannot disagree.
 */
#define CHRONICLE_SOURCE(name_, prefix_, description_, ...) \
	const ChronicleSource chronicle_source_##name_ = { \
		.name = #name_, \
		.description = description_, \
		.columns = name_##_columns, \
		.ncolumns = prefix_##_NCOLUMNS, \
		.nkeys = prefix_##_NKEYS, \
		.collect = name_##_collect, \
		__VA_ARGS__ \
	}

/* Every source, in the order they are collected (sources.c). */
extern const ChronicleSource *const chronicle_sources[];
extern const int chronicle_nsources;

/* The source of that name, or NULL; the index of its column, or -1. */
extern const ChronicleSource *chronicle_source_by_name(const char *name);
extern int	chronicle_source_column(const ChronicleSource *src, const char *name);

/* Errors out on what a source declares wrong (keys first, analysis names). */
extern void chronicle_check_source(const ChronicleSource *src);

/*
 * Before a source writes rows that other writers may write too (a table of
 * its own beside the history, as the statements' texts): the lock every
 * writer of a dictionary takes first (history_keys.c).
 */
extern void chronicle_dictionary_lock(void);

/* Emit one row: values[] and nulls[] in the order of source->columns. */
extern void chronicle_emit_row(ChronicleEmitter *emitter,
							   const Datum *values, const bool *nulls);

/*
 * Convenience for sources: a timestamp the statistics keep at 0 until it
 * happens (stats_reset before the first reset, ...) is NULL until then, as
 * the views show it.
 */
static inline void
chronicle_set_timestamp(Datum *values, bool *nulls, int column, TimestampTz ts)
{
	values[column] = TimestampTzGetDatum(ts);
	nulls[column] = (ts == 0);
}

/* Convenience for sources: a uint64 byte counter as an int8 Datum. */
#define ChronicleUInt64GetDatum(x) Int64GetDatum((int64) Min((x), (uint64) PG_INT64_MAX))

#endif							/* CHRONICLE_SOURCE_H */
