/*-------------------------------------------------------------------------
 *
 * collector.h
 *		One snapshot of every source (collector.c), taken by the worker or
 *		by chronicle.snapshot(), and the standby ring's write after
 *		promotion.
 *
 * A snapshot's caller locks the extension first: chronicle_extension_lock()
 * (recorder.h) comes with this header.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_COLLECTOR_H
#define CHRONICLE_COLLECTOR_H

#include "datatype/timestamp.h"

#include "recorder.h"

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
extern int64 chronicle_write_ring(uint64 *upto);

#endif							/* CHRONICLE_COLLECTOR_H */
