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
 * src/sql/10_history.sql), nowhere else.  On
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
#define CHRONICLE_MAX_SOURCES	16
#define CHRONICLE_MAX_COLUMNS	48
#define CHRONICLE_KEY_LEN		256

/*
 * One column of a source's history view (after the leading ts column).  What
 * a column means, when it is NULL and since which version it exists is said
 * in a comment beside it: this list is the column's only definition.
 */
typedef struct ChronicleColumn
{
	const char *name;
	Oid			type;			/* INT8OID, INT4OID, OIDOID, FLOAT8OID, TEXTOID,
								 * BOOLOID, TIMESTAMPTZOID */
} ChronicleColumn;

/*
 * How a source declares its columns: once, in a list macro of entries
 * C(ENUM_NAME, "column_name", TYPEOID), in column order, each with its
 * comment, then CHRONICLE_COLUMNS(list, array, NCOLUMNS), which makes of it
 * both the enum of column indexes (ENUM_NAME, ..., NCOLUMNS) that collect
 * indexes values[] and nulls[] with, and the array of ChronicleColumn the
 * ChronicleSource points to, so that the two cannot disagree:
 *
 *	#define BGW_COLUMNS(C) \
 *		C(BGW_BUFFERS_CLEAN, "buffers_clean", INT8OID) \
 *		C(BGW_STATS_RESET, "stats_reset", TIMESTAMPTZOID)
 *
 *	CHRONICLE_COLUMNS(BGW_COLUMNS, bgwriter_columns, BGW_NCOLUMNS);
 *
 * (the idiom of PostgreSQL's own lists, such as kwlist.h).  A column's
 * comment stands beside its entry or on lines of its own before it; every
 * line of the list but the last ends in a backslash, comment lines too.
 * tools/check_sources.py reads these lists as text, without a server: keep
 * the entries to this form.
 */
#define CHRONICLE_COLUMN_ENUM(sym, name, type)	sym,
#define CHRONICLE_COLUMN_DEF(sym, name, type)	[sym] = {name, type},
#define CHRONICLE_COLUMNS(list, array, ncolumns) \
	enum { list(CHRONICLE_COLUMN_ENUM) ncolumns }; \
	static const ChronicleColumn array[ncolumns] = { list(CHRONICLE_COLUMN_DEF) }

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
	int			nkeys;			/* the first nkeys columns identify a row */

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

/* Every source, in the order they are collected (sources.c). */
extern const ChronicleSource *const chronicle_sources[];
extern const int chronicle_nsources;

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
