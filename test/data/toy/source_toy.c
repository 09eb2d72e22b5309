/*-------------------------------------------------------------------------
 *
 * source_toy.c
 *		A toy source for test/t/050_toy_source.pl, which adds it to a copy
 *		of the tree as src/source_toy.c, following docs/development.md,
 *		"Adding a source", and checks that every layer picks it up.  Not
 *		part of the extension.
 *
 * Its numbers are a function of n, the collector process's count of the
 * snapshots its rows were written in, plus one (1 at the first one), so
 * that the test knows every value without reading the extension:
 *
 *	item	events	busy_ms		level	stats_reset
 *	'a'		10 n	2.5 n		2 n		2026-01-01 00:00 UTC while n < 16,
 *	'b'		 3 n	1.5 n		7		2026-01-02 00:00 UTC from n = 16
 *
 * Between two snapshots of the same process its counters grow by exactly
 * 10 and 2.5 ('a'), 3 and 1.5 ('b'); ms_per_event is 0.25 ('a') and 0.5
 * ('b').  At n = 16 only stats_reset changes (the counters go on growing):
 * that interval is a reset because of the RESET column alone.
 *
 * n moves on in the written callback, never in collect: a snapshot whose
 * rows were rolled back does not count (src/source.h).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "source.h"

#define TOY_COLUMNS(C) \
	C(TOY_ITEM, "item", TEXTOID, KEY)	/* 'a' or 'b' */				\
	/* events counted: 10 per snapshot ('a'), 3 ('b') */				\
	C(TOY_EVENTS, "events", INT8OID, COUNTER)							\
	/* time busy, ms: 2.5 per snapshot ('a'), 1.5 ('b') */				\
	C(TOY_BUSY_MS, "busy_ms", FLOAT8OID, TIME)							\
	C(TOY_LEVEL, "level", INT8OID, GAUGE)	/* 2 n ('a'), 7 ('b') */	\
	C(TOY_STATS_RESET, "stats_reset", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(TOY_COLUMNS, toy_columns, TOY_NCOLUMNS, TOY_NKEYS);

#define TOY_RESET_AT	16
/* 2026-01-01 00:00:00 UTC: 9497 days after PostgreSQL's epoch, 2000-01-01 */
#define TOY_EPOCH_DAYS	9497

/* Snapshots written by this process with the toy's rows. */
static int64 toy_written = 0;

static void
toy_collect(ChronicleEmitter *emitter)
{
	int64		n = toy_written + 1;
	TimestampTz reset = (TimestampTz) (TOY_EPOCH_DAYS + (n >= TOY_RESET_AT)) * USECS_PER_DAY;
	static const struct
	{
		const char *item;
		int64		events;
		double		busy_ms;
		int64		level_per_n;
		int64		level;
	}			items[] = {
		{"a", 10, 2.5, 2, 0},
		{"b", 3, 1.5, 0, 7},
	};

	for (int i = 0; i < lengthof(items); i++)
	{
		Datum		values[TOY_NCOLUMNS] = {0};
		bool		nulls[TOY_NCOLUMNS] = {0};

		values[TOY_ITEM] = CStringGetTextDatum(items[i].item);
		values[TOY_EVENTS] = Int64GetDatum(items[i].events * n);
		values[TOY_BUSY_MS] = Float8GetDatum(items[i].busy_ms * n);
		values[TOY_LEVEL] = Int64GetDatum(items[i].level_per_n * n + items[i].level);
		chronicle_set_timestamp(values, nulls, TOY_STATS_RESET, reset);
		chronicle_emit_row(emitter, values, nulls);
	}
}

static void
toy_written_callback(void)
{
	toy_written++;
}

static const ChronicleAnalysis toy_analysis = {
	.prefix = "toy",
	.filters = (const char *const[]) {"item", NULL},
	.per_op = (const ChroniclePerOp[]) {
		{"ms_per_event", "busy_ms", "events"},
		{NULL},
	},
	.gauge_unit = "items",
};

CHRONICLE_SOURCE(toy, TOY,
				 "a toy source of known numbers (test/t/050_toy_source.pl)",
				 .analysis = &toy_analysis,
				 .written = toy_written_callback);
