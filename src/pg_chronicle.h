/*-------------------------------------------------------------------------
 *
 * pg_chronicle.h
 *		The module (pg_chronicle.c): its settings, its workers' description
 *		and registration, and the crash-restart marker of chronicle.start().
 *
 * The source interface is in source.h, the shared state in shared.h, the
 * standby ring in standby.h, the snapshot in collector.h.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_CHRONICLE_H
#define PG_CHRONICLE_H


#include "source.h"

/* Settings (pg_chronicle.c) */
extern int	chronicle_snapshot_interval;
extern char *chronicle_database;
extern char *chronicle_server_name;
extern int	chronicle_retention;
extern int	chronicle_rollup_retention;
extern int	chronicle_keyframe_interval;
extern int	chronicle_origin;
extern bool chronicle_source_enabled[CHRONICLE_MAX_SOURCES];
extern char *chronicle_debug_fail_source;
extern int	chronicle_debug_housekeeping_ms;
extern int	chronicle_standby_ring_kb;
extern bool chronicle_preloaded;

extern char *chronicle_server_name_now(void);
extern bool chronicle_worker_should_record(void);
extern Size chronicle_ring_bytes(void);

/* The marker of a collector started by chronicle.start() */
extern void chronicle_dynamic_collector_remember(void);
extern void chronicle_dynamic_collector_lost_clear(void);
extern void chronicle_dynamic_collector_forget(void);

/* worker.c */
extern PGDLLEXPORT void chronicle_worker_main(Datum main_arg);

#endif							/* PG_CHRONICLE_H */
