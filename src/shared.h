/*-------------------------------------------------------------------------
 *
 * shared.h
 *		The collector's state in shared memory, read by chronicle.status()
 *		and the other SQL functions.
 *
 * It lives in the main shared memory segment when pg_chronicle is
 * preloaded and in a named DSM segment otherwise; pg_chronicle.c creates
 * it and hands it out with chronicle_shared().  The standby ring's bytes
 * (standby.c) follow the struct in the same allocation.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_SHARED_H
#define CHRONICLE_SHARED_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "source.h"

#define CHRONICLE_ERRMSG_LEN	256
#define CHRONICLE_COST_SLOTS	1024
/* chronicle.standby_ring_size's default; the ring's size without preload */
#define CHRONICLE_RING_KB_DEFAULT	4096

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
 * The collector's shared state.  Protected by the spinlock: every field is
 * a counter or a short string written by the collector and read by
 * chronicle.status().
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
	TimestampTz last_sql_ts;	/* the latest ts a snapshot from SQL took */
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
	 * Housekeeping by the collector (chronicle._maintain(), housekeeping.c):
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
	 * The housekeeper (housekeeper.c), which runs the rollups beside the
	 * collector that launched it: its PID while it runs, and the
	 * collector's.
	 */
	pid_t		housekeeper_pid;
	pid_t		housekeeper_collector;

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

/*
 * The shared state (pg_chronicle.c); NULL when there is none (not
 * preloaded, before PostgreSQL 17).
 */
extern ChronicleShared *chronicle_shared(void);

/* Is this process the collector (the worker of the shared state)? */
extern bool chronicle_is_collector(void);

#endif							/* CHRONICLE_SHARED_H */
