/*-------------------------------------------------------------------------
 *
 * bgworker.h
 *		How pg_chronicle describes its background workers (the collector,
 *		the wait sampler, the collector of chronicle.start()).
 *
 * A header of its own, not a function of pg_chronicle.c: the module
 * registers the sampler (sampler.c), and the sampler would otherwise call
 * back into the module.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_BGWORKER_H
#define CHRONICLE_BGWORKER_H

#include "postmaster/bgworker.h"

/*
 * A pg_chronicle background worker: FUNCTION of this library, of type TYPE
 * (its name too), with FLAGS, started at START and restarted RESTART
 * seconds after it exits (BGW_NEVER_RESTART: never).  The rest is zero;
 * the caller sets what else it needs before registering it.
 */
static inline void
chronicle_worker_describe(BackgroundWorker *worker, const char *function,
						  const char *type, int flags,
						  BgWorkerStartTime start, int restart)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = flags;
	worker->bgw_start_time = start;
	worker->bgw_restart_time = restart;
	strlcpy(worker->bgw_library_name, "pg_chronicle", BGW_MAXLEN);
	strlcpy(worker->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker->bgw_name, type, BGW_MAXLEN);
	strlcpy(worker->bgw_type, type, BGW_MAXLEN);
}

#endif							/* CHRONICLE_BGWORKER_H */
