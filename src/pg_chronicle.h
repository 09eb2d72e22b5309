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
#define CHRONICLE_RING_KB_DEFAULT	4096

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

	/*
	 * Optional: called once the rows collect emitted are part of the
	 * snapshot (the source's subtransaction committed), still in the
	 * snapshot's memory context.  State that must follow only what was
	 * written moves on here, never in collect: a failure after collect
	 * (the INSERT, a cancel) rolls the rows back and this is not called.
	 */
	void		(*written) (void);
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
	TimestampTz last_ts_given;	/* the latest ts any snapshot took */
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

	/*
	 * The shared state was created after a crash restart that ended a
	 * collector started by chronicle.start() (pg_chronicle.c).
	 */
	bool		dynamic_lost;

	/*
	 * Housekeeping by the collector (chronicle._maintain(), collector.c):
	 * partitions created, dropped, and skipped (not created or dropped this
	 * time: a lock not granted within lock_timeout, a view on a partition,
	 * ...), runs that failed as a whole, and the latest reason.
	 */
	TimestampTz maint_last;
	Oid			maint_db;		/* the database of the latest run, */
	TimestampTz maint_next;		/* and when it wants the next one */
	int64		maint_created;
	int64		maint_dropped;
	int64		maint_skipped;
	int64		maint_errors;
	char		maint_last_error[CHRONICLE_ERRMSG_LEN];

	/*
	 * The preloaded worker's failed attempts to connect to
	 * chronicle.database in a row (a missing database): it waits longer
	 * before each new attempt.
	 */
	int			connect_failures;

	/*
	 * The standby ring (standby.c): snapshots taken during recovery, kept
	 * here until promotion.  ring_lock protects the ring_* fields and the
	 * ring's bytes, which follow this struct (ring_size of them).  The
	 * positions are logical byte offsets that only grow; the byte of
	 * position p is at p % ring_size.
	 */
	LWLock		ring_lock;
	int			ring_tranche;
	uint64		ring_size;
	uint64		ring_head;		/* where the next record goes */
	uint64		ring_tail;		/* the oldest record */
	int64		ring_records;	/* snapshots in the ring */
	int64		ring_evicted;	/* snapshots dropped to make room */
	int64		ring_written;	/* snapshots written to the tables after
								 * promotion */
	TimestampTz ring_oldest;
	TimestampTz ring_newest;
} ChronicleShared;

/* The ring's bytes follow the struct. */
#define ChronicleRingData(s) \
	((char *) (s) + MAXALIGN(sizeof(ChronicleShared)))

/* pg_chronicle.c */
extern int	chronicle_snapshot_interval;
extern char *chronicle_database;
extern char *chronicle_server_name;
extern char *chronicle_server_name_now(void);
extern int	chronicle_retention;
extern bool chronicle_source_enabled[CHRONICLE_MAX_SOURCES];
extern char *chronicle_debug_fail_source;
extern int	chronicle_standby_ring_kb;
extern bool chronicle_preloaded;
extern ChronicleShared *chronicle_shared(void);
extern bool chronicle_worker_should_record(void);
extern void chronicle_dynamic_collector_forget(void);

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
extern char *chronicle_extension_version(void);
extern int64 chronicle_write_ring(uint64 *upto);

/* standby.c: the ring of snapshots taken during recovery */
extern Size chronicle_ring_bytes(void);
extern void chronicle_ring_init(ChronicleShared *s);
extern bool chronicle_ring_append(const char *data, uint32 len,
								  TimestampTz ts);
extern char *chronicle_ring_copy(uint64 *tail, uint64 *head);
extern void chronicle_ring_consume(uint64 upto, int64 written);
extern bool chronicle_ring_pending(void);

/*
 * Layout of one ring record (one snapshot), all little pieces copied with
 * memcpy (no alignment): a header, then rows, each a uint16 source index
 * followed by, for every column of the source, an int32 length (-1 for
 * NULL) and that many bytes of the value's text output.
 */
typedef struct ChronicleRingRecord
{
	uint32		len;			/* of the whole record, header included */
	uint32		nrows;
	TimestampTz ts;
	double		duration_ms;
	int32		errors;
	bool		keyframe;
	bool		newsegment;		/* first snapshot of a recording */
} ChronicleRingRecord;

/* source_statements.c (os_proc.h: chronicle_os_define_settings) */
extern void chronicle_statements_define_settings(void);

/*
 * How long a failing source (collector.c), or the loop after a failed
 * snapshot (worker.c), is left alone at most, in snapshots: 1, 2, 4 .. 64.
 */
#define CHRONICLE_MAX_BACKOFF	64

/* worker.c */
extern PGDLLEXPORT void chronicle_worker_main(Datum main_arg);

#endif							/* PG_CHRONICLE_H */
