/*-------------------------------------------------------------------------
 *
 * collector.h
 *		One snapshot of every source (collector.c), taken by the worker or
 *		by chronicle.snapshot(), and the standby ring's write after
 *		promotion.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_COLLECTOR_H
#define CHRONICLE_COLLECTOR_H

#include "datatype/timestamp.h"

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

/*
 * How long a failing source (collector.c), or the loop after a failed
 * snapshot (worker.c), is left alone at most, in snapshots: 1, 2, 4 .. 64.
 */
#define CHRONICLE_MAX_BACKOFF	64

extern ChronicleSnapshotResult chronicle_take_snapshot(ChronicleCollector by,
													   TimestampTz segment,
													   bool keyframe);
extern void chronicle_forget_previous(void);
extern char *chronicle_extension_lock(Oid *extoid);
extern int64 chronicle_write_ring(uint64 *upto);
extern void chronicle_maintain_rollups(TimestampTz now);
extern TimestampTz chronicle_next_rollup(void);

/* The housekeeper (housekeeper.c), which runs the rollups. */
extern bool chronicle_housekeeper_running(void);
extern void chronicle_housekeeper_ensure(void);
extern PGDLLEXPORT void chronicle_housekeeper_main(Datum main_arg);

/* The settings of the recorder's own sessions (worker.c). */
extern void chronicle_recorder_session(const char *appname);

#endif							/* CHRONICLE_COLLECTOR_H */
