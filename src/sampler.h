/*-------------------------------------------------------------------------
 *
 * sampler.h
 *		The wait-event sampler: a background worker of its own that reads
 *		every process's wait event every chronicle.wait_sample_interval and
 *		counts the samples in a bounded shared-memory hash table.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_SAMPLER_H
#define CHRONICLE_SAMPLER_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"
#include "utils/backend_status.h"

/*
 * What one sample is counted under.  Raw numbers only: the sampler does no
 * string work; the reader (source_waits.c) turns them into names.
 * wait_event_info 0 means the process ran (CPU).
 */
typedef struct ChronicleSampleKey
{
	int32		backend_type;	/* BackendType, B_INVALID when unknown, or
								 * CHRONICLE_B_PARALLEL_WORKER */
	int32		state;			/* BackendState */
	uint32		wait_event_info;
	uint32		pad;			/* always 0: keys are hashed and compared as
								 * bytes */
	int64		queryid;
} ChronicleSampleKey;

/*
 * A session idle in a transaction block (or in a failed one) that is not
 * in a wait event is between two statements of its client: it has
 * reported the state before it sends its reply and reads the next
 * command, and it is in none of ClientRead's wait while it gets there or
 * back.  On a saturated machine that is most of the round trip to the
 * client: the reply wakes the client, which takes the CPU from the backend,
 * and when the backend runs again the next command is already there, so
 * it never waits in ClientRead.  Such a sample is named wait_event_type
 * 'Client', wait_event 'IdleInTransaction' (not CPU/CPU, which it is as a
 * raw sample) and counts in class Client: PostgreSQL counts the same time
 * in idle_in_transaction_time, not active_time (test/t/046_session_time.pl).
 */
static inline bool
chronicle_state_between_statements(int state)
{
	return state == STATE_IDLEINTRANSACTION ||
		state == STATE_IDLEINTRANSACTION_ABORTED;
}

#define CHRONICLE_IDLE_IN_XACT_EVENT	"IdleInTransaction"

typedef struct ChronicleSampleEntry
{
	ChronicleSampleKey key;
	uint64		samples;
} ChronicleSampleEntry;

/*
 * A background worker in the lock group of another process: a parallel
 * worker (pg_stat_activity's backend_type "parallel worker").  Told apart
 * from other background workers because it works for a session.
 */
#define CHRONICLE_B_PARALLEL_WORKER		1000

/*
 * Samples of active processes, counted by the sampler as it samples
 * (independent of the keyed counts: never dropped, never reset by
 * chronicle.wait_samples_reset()): those in database time (client backends
 * and the processes working for them: walsenders, autovacuum workers,
 * parallel workers) by wait class, so the sum over classes / ticks taken is
 * the average number of active sessions; and those of background processes
 * at work, in one count.  Not active: idle sessions, main-loop waits (class
 * Activity, and an extension's background worker waiting in class
 * Extension), throttle sleeps (sampler.c, wait_activity()).
 */
typedef enum ChronicleWaitClass
{
	WAIT_CLASS_CPU,
	WAIT_CLASS_IO,
	WAIT_CLASS_LWLOCK,
	WAIT_CLASS_LOCK,
	WAIT_CLASS_IPC,
	WAIT_CLASS_CLIENT,
	WAIT_CLASS_TIMEOUT,
	WAIT_CLASS_OTHER,			/* BufferPin, Extension, InjectionPoint */
	WAIT_CLASS_COUNT
} ChronicleWaitClass;

/* The sampler's counters, as read by chronicle_sampler_read(). */
typedef struct ChronicleSamplerCounters
{
	pid_t		pid;			/* 0 when the sampler is not running */
	TimestampTz started;		/* when the running (or last) sampler started */
	int64		ticks_due;
	int64		ticks_taken;
	int64		samples_dropped;
	int64		cpu_us;			/* the sampler's own user + system CPU time */
	TimestampTz reset_time;		/* last chronicle.wait_samples_reset(), or 0 */
	int64		active[WAIT_CLASS_COUNT];	/* samples of active sessions */
	int64		background_active;	/* samples of background processes at work */
	int			entries;
	int			max_entries;
} ChronicleSamplerCounters;

extern int	chronicle_wait_sample_interval;
extern int	chronicle_wait_max_entries;
extern bool chronicle_wait_queryid;

/* Hooks called from pg_chronicle.c. */
extern void chronicle_sampler_define_settings(void);
extern void chronicle_sampler_shmem_request(void);
extern void chronicle_sampler_shmem_startup(void);
extern void chronicle_sampler_register(void);
extern Size chronicle_sampler_shmem_size(void);

/* Is the sampler's shared memory there (pg_chronicle preloaded)? */
extern bool chronicle_sampler_available(void);

/*
 * Copy the counters and, when entries is not NULL, every entry (palloc'd,
 * *nentries of them).  Up to 8192 entries are copied under one acquisition
 * of the lock, with the counters, so that the samples and the ticks belong
 * to the same instant; a larger table is copied in slices of 8192, the
 * lock released in between, and the counters read with the last slice
 * (each count copied is at most what they say; they differ by the ticks
 * of the copy at most).  Returns false when the sampler's shared memory
 * does not exist.
 */
extern bool chronicle_sampler_read(ChronicleSamplerCounters *counters,
								   ChronicleSampleEntry **entries,
								   int *nentries);

extern void chronicle_sampler_reset(void);

extern const char *chronicle_backend_state_name(int state);
extern const char *chronicle_backend_type_name(int backend_type);

extern PGDLLEXPORT void chronicle_sampler_main(Datum main_arg);

#endif							/* CHRONICLE_SAMPLER_H */
