/*-------------------------------------------------------------------------
 *
 * pg_chronicle.h
 *		Shared interface of pg_chronicle: the statistics sources, the row
 *		emitter they write through, the collector's shared state.
 *
 * A source (src/source_*.c) knows how to read one kind of statistics
 * (pg_stat_io, pg_stat_wal, ...) and describes the columns of its history
 * table.  On every snapshot the collector calls the source's collect
 * callback, which emits one row per key with chronicle_emit_row().  The
 * collector keeps the previous reading of every key and writes a row only
 * when it changed (sparse storage); it knows nothing else about the source.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_CHRONICLE_H
#define PG_CHRONICLE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"

#define CHRONICLE_SCHEMA		"chronicle"
#define CHRONICLE_MAX_SOURCES	16
#define CHRONICLE_MAX_COLUMNS	48
#define CHRONICLE_KEY_LEN		256
#define CHRONICLE_ERRMSG_LEN	256
#define CHRONICLE_COST_SLOTS	1024

/* One column of a source's history table (after the leading ts column). */
typedef struct ChronicleColumn
{
	const char *name;
	Oid			type;			/* INT8OID, INT4OID, OIDOID, FLOAT8OID, TEXTOID,
								 * BOOLOID, TIMESTAMPTZOID */
} ChronicleColumn;

typedef struct ChronicleEmitter ChronicleEmitter;

typedef struct ChronicleSource
{
	const char *name;			/* "io": table chronicle.io_history, GUC
								 * chronicle.collect_io */
	const char *description;	/* for the GUC */
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
} ChronicleSource;

/* Every source, in the order they are collected (collector.c). */
extern const ChronicleSource *const chronicle_sources[];
extern const int chronicle_nsources;

/* Emit one row: values[] and nulls[] in the order of source->columns. */
extern void chronicle_emit_row(ChronicleEmitter *emitter,
							   const Datum *values, const bool *nulls);

/* Convenience for sources: a uint64 byte counter as an int8 Datum. */
#define ChronicleUInt64GetDatum(x) Int64GetDatum((int64) Min((x), (uint64) PG_INT64_MAX))

/*
 * Per-source state in shared memory, for chronicle.status().
 */
typedef struct ChronicleSourceStatus
{
	int64		snapshots;		/* successful collections */
	int64		rows;			/* rows written */
	int64		errors;			/* failed collections */
	int64		skipped;		/* snapshots skipped while backing off */
	TimestampTz last_error_time;
	char		last_error[CHRONICLE_ERRMSG_LEN];
} ChronicleSourceStatus;

/*
 * The collector's shared state.  Lives in the main shared memory segment
 * when pg_chronicle is preloaded and in a named DSM segment otherwise.
 * Protected by the spinlock: every field is a counter or a short string
 * written by the collector and read by chronicle.status().
 */
typedef struct ChronicleShared
{
	slock_t		mutex;
	pid_t		worker_pid;
	TimestampTz worker_started;
	bool		worker_waiting; /* running but not recording (no extension,
								 * recovery) */
	char		worker_state[64];
	bool		force_keyframe; /* a snapshot from SQL broke the worker's
								 * chain */
	TimestampTz last_snapshot;
	int64		snapshots;
	int64		snapshot_errors;
	int64		ticks_due;
	int64		ticks_missed;	/* snapshot ticks skipped: the previous one
								 * overran its interval */
	int64		rows;
	int64		wal_bytes;
	double		cost_us[CHRONICLE_COST_SLOTS];	/* worker time of recent
												 * snapshots */
	int64		cost_next;
	ChronicleSourceStatus sources[CHRONICLE_MAX_SOURCES];
} ChronicleShared;

/* pg_chronicle.c */
extern int	chronicle_snapshot_interval;
extern char *chronicle_database;
extern int	chronicle_retention;
extern bool chronicle_source_enabled[CHRONICLE_MAX_SOURCES];
extern char *chronicle_debug_fail_source;
extern bool chronicle_preloaded;
extern ChronicleShared *chronicle_shared(void);
extern bool chronicle_worker_should_record(void);

/* collector.c */
typedef enum ChronicleCollector
{
	CHRONICLE_BY_WORKER,
	CHRONICLE_BY_SQL,
} ChronicleCollector;

typedef struct ChronicleSnapshotResult
{
	TimestampTz ts;
	TimestampTz segment;
	int64		rows;
	int			errors;
	bool		keyframe;
} ChronicleSnapshotResult;

extern ChronicleSnapshotResult chronicle_take_snapshot(ChronicleCollector by,
													   TimestampTz segment,
													   bool keyframe);
extern void chronicle_forget_previous(void);
extern bool chronicle_extension_ready(void);

/* source_statements.c, os_proc.c: settings of those sources */
extern void chronicle_statements_define_settings(void);
extern void chronicle_os_define_settings(void);

/* worker.c */
extern PGDLLEXPORT void chronicle_worker_main(Datum main_arg);

#endif							/* PG_CHRONICLE_H */
