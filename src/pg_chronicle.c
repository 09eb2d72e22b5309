/*-------------------------------------------------------------------------
 *
 * pg_chronicle.c
 *		Module entry point: settings, shared state, the collector worker's
 *		registration.
 *
 * _PG_init defines the settings (each source's own through its
 * define_settings callback), requests the shared state when preloaded and
 * registers the collector and the wait-event sampler.  The SQL functions
 * that talk to the collector are in functions.c.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif

#include "bgworker.h"
#include "pg_chronicle.h"
#include "sampler.h"
#include "shared.h"
#include "source.h"

PG_MODULE_MAGIC;

/* Settings */
int			chronicle_snapshot_interval = 1000; /* ms */
char	   *chronicle_database = NULL;
char	   *chronicle_server_name = NULL;
int			chronicle_retention = 7 * 24 * 60;	/* minutes */
int			chronicle_rollup_retention = 90 * 24 * 60;	/* minutes */
int			chronicle_keyframe_interval = 3600; /* seconds */
int			chronicle_origin = 0;	/* the origin the analysis reads; 0: local */
static int	chronicle_run_server = 0;	/* whose runs a label names (_server()) */
bool		chronicle_source_enabled[CHRONICLE_MAX_SOURCES];
char	   *chronicle_debug_fail_source = NULL;
int			chronicle_debug_housekeeping_ms = 0;
int			chronicle_standby_ring_kb = CHRONICLE_RING_KB_DEFAULT;
static bool chronicle_worker_enabled = true;

bool		chronicle_preloaded = false;

static ChronicleShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Bytes of ring to allocate after ChronicleShared (0: no ring). */
Size
chronicle_ring_bytes(void)
{
	if (!chronicle_preloaded)
		return (Size) CHRONICLE_RING_KB_DEFAULT * 1024;
	return (Size) chronicle_standby_ring_kb * 1024;
}

/* The shared state and the standby ring after it, in one allocation. */
static Size
shared_size(void)
{
	return add_size(MAXALIGN(sizeof(ChronicleShared)), chronicle_ring_bytes());
}

static void
shared_init(void *ptr)
{
	ChronicleShared *s = (ChronicleShared *) ptr;

	memset(s, 0, sizeof(ChronicleShared));
	SpinLockInit(&s->mutex);
	s->force_keyframe = true;
	/* The standby ring (standby.c) */
	s->ring_tranche = LWLockNewTrancheId();
	LWLockInitialize(&s->ring_lock, s->ring_tranche);
	s->ring_size = chronicle_ring_bytes();
	s->ring_head = s->ring_tail = 0;
}

static void
chronicle_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	/* The wait-event sampler's hash table and lock (sampler.c). */
	chronicle_sampler_shmem_request();
}

static void
chronicle_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("pg_chronicle", shared_size(), &found);
	if (!found)
		shared_init(shared);
	/* The wait-event sampler's hash table and lock (sampler.c). */
	chronicle_sampler_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * A collector started by chronicle.start() is a dynamic background worker:
 * a crash restart of the server ends it for good, and wipes the shared
 * state that would say so.  So chronicle.start() leaves a marker file
 * naming the postmaster by its start time (in pg_stat_tmp, which base
 * backups skip), and the collector removes it whenever it ends on its own
 * terms (chronicle.stop(), an error, the server's shutdown: its
 * before_shmem_exit callback runs; a crash restart ends it with SIGQUIT,
 * which runs none).  A marker of this same postmaster found when the
 * shared state is created again therefore means the collector was lost in
 * a crash restart: that is logged, and chronicle.status() says so until
 * chronicle.start() or chronicle.stop().
 */
#define DYNAMIC_MARKER	PG_STAT_TMP_DIR "/pg_chronicle.collector"

/* chronicle.start() or chronicle.stop() was called since: forget the loss. */
void
chronicle_dynamic_collector_lost_clear(void)
{
	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	shared->dynamic_lost = false;
	SpinLockRelease(&shared->mutex);
}

void
chronicle_dynamic_collector_remember(void)
{
	FILE	   *f;

	chronicle_dynamic_collector_lost_clear();
	f = AllocateFile(DYNAMIC_MARKER, "w");

	if (f != NULL)
	{
		fprintf(f, INT64_FORMAT "\n", (int64) PgStartTime);
		if (FreeFile(f) == 0)
			return;
	}
	ereport(WARNING,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", DYNAMIC_MARKER),
			 errdetail("If the server restarts after a crash, chronicle.status() will not say that the collector was lost.")));
}

void
chronicle_dynamic_collector_forget(void)
{
	if (unlink(DYNAMIC_MARKER) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", DYNAMIC_MARKER)));
}

/* Did a crash restart of this postmaster end a chronicle.start() collector? */
static bool
dynamic_collector_lost(void)
{
	FILE	   *f = AllocateFile(DYNAMIC_MARKER, "r");
	int64		started;
	bool		lost;

	if (f == NULL)
		return false;
	lost = (fscanf(f, INT64_FORMAT, &started) == 1 && started == (int64) PgStartTime);
	FreeFile(f);
	return lost;
}

/*
 * The collector's shared state.  When pg_chronicle is not preloaded it
 * lives in a named DSM segment (PostgreSQL 17 and later), created by the
 * first backend that asks; before 17 there is none, and NULL is returned.
 */
ChronicleShared *
chronicle_shared(void)
{
	static bool tranche_named = false;

	if (shared != NULL && tranche_named)
		return shared;
#if PG_VERSION_NUM >= 170000
	if (shared == NULL && !chronicle_preloaded && IsUnderPostmaster)
	{
		bool		found;

		shared = GetNamedDSMSegment("pg_chronicle", shared_size(),
									shared_init, &found);
		if (!found && dynamic_collector_lost())
		{
			SpinLockAcquire(&shared->mutex);
			shared->dynamic_lost = true;
			SpinLockRelease(&shared->mutex);
			ereport(LOG,
					(errmsg("pg_chronicle: the collector started by chronicle.start() ended in the server's crash restart"),
					 errhint("Call SELECT chronicle.start() again in the database it recorded into.")));
		}
	}
#endif
	/* Name the ring's lock in this process, for wait events. */
	if (shared != NULL)
	{
		LWLockRegisterTranche(shared->ring_tranche, "pg_chronicle_ring");
		tranche_named = true;
	}
	return shared;
}

/* Is this process the collector (the worker of shared memory)? */
bool
chronicle_is_collector(void)
{
	ChronicleShared *sh = chronicle_shared();
	bool		yes;

	if (sh == NULL)
		return false;
	SpinLockAcquire(&sh->mutex);
	yes = sh->worker_pid == MyProcPid;
	SpinLockRelease(&sh->mutex);
	return yes;
}

static bool
check_database(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || **newval == '\0')
	{
		GUC_check_errdetail("chronicle.database must name a database.");
		return false;
	}
	if (strlen(*newval) >= NAMEDATALEN)
	{
		GUC_check_errdetail("A database name is at most %d bytes.",
							NAMEDATALEN - 1);
		return false;
	}
	return true;
}

static void
register_worker(void)
{
	BackgroundWorker worker;

	/* On a hot standby too: it keeps its readings in memory there. */
	chronicle_worker_describe(&worker, "chronicle_worker_main",
							  "pg_chronicle collector",
							  BGWORKER_SHMEM_ACCESS |
							  BGWORKER_BACKEND_DATABASE_CONNECTION,
							  BgWorkerStart_ConsistentState, 10);
	RegisterBackgroundWorker(&worker);
}

/* The settings of the collector, of what it records and how long. */
static void
define_settings(void)
{
	DefineCustomIntVariable("chronicle.snapshot_interval",
							"Time between two snapshots of the statistics.",
							"Counters in pg_stat_io and friends advance at most once a second "
							"per backend, so less than 1s adds little but cost.",
							&chronicle_snapshot_interval,
							1000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomStringVariable("chronicle.database",
							   "Database the collector connects to and records into.",
							   "pg_chronicle must be installed there with CREATE EXTENSION.",
							   &chronicle_database,
							   "postgres",
							   PGC_SIGHUP, 0,
							   check_database, NULL, NULL);
	DefineCustomStringVariable("chronicle.server_name",
							   "Name of this server in the snapshots it records.",
							   "Empty: cluster_name, or the host name when cluster_name is "
							   "empty.  With the system identifier it tells apart the "
							   "history of servers kept in one database.",
							   &chronicle_server_name,
							   "",
							   PGC_SIGHUP, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("chronicle.origin",
							"The origin whose history the analysis functions read: 0 is this server.",
							"Imported runs (pg-chronicle import) keep the server they were "
							"recorded on, an id of chronicle.origin.  The functions that take "
							"a run read its origin whatever this says.",
							&chronicle_origin,
							0, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	/*
	 * Not chronicle.origin: every function of a run pins that one to 0 at
	 * its call (SET) and then sets it to its run's, after the label is
	 * read.  Read by chronicle._server() (05_origin.sql) only.
	 */
	DefineCustomIntVariable("chronicle.run_server",
							"The subscribed server whose runs a run label names: 0 is this server.",
							"On a central database chronicle.use_server() sets it with "
							"chronicle.origin: two servers may have runs of the same label.",
							&chronicle_run_server,
							0, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("chronicle.retention",
							"How long history is kept; older daily partitions are dropped.",
							"0 keeps history forever.",
							&chronicle_retention,
							7 * 24 * 60, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);
	DefineCustomIntVariable("chronicle.rollup_retention",
							"How long the per-minute and per-hour rollups are kept; older daily partitions are dropped.",
							"0 keeps them forever.  The raw rows follow chronicle.retention.",
							&chronicle_rollup_retention,
							90 * 24 * 60, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);
	DefineCustomIntVariable("chronicle.keyframe_interval",
							"Longest time between two keyframes of the collector.",
							"A keyframe records every key of every source, changed or not; "
							"reading a key's latest value goes back at most this far.  "
							"0 makes a keyframe only when a recording starts.",
							&chronicle_keyframe_interval,
							3600, 0, 7 * 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("chronicle.enabled",
							 "Whether the preloaded collector records snapshots.",
							 "When off the worker stays connected and idle.",
							 &chronicle_worker_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	/*
	 * The ring is sized once, with the shared memory.  A PGC_POSTMASTER
	 * setting cannot be defined by a library loaded after startup: without
	 * preload the setting exists (so postgresql.conf may name it) but the
	 * DSM segment always gets the default size (its size must be the same
	 * in every backend that attaches it).
	 */
	DefineCustomIntVariable("chronicle.standby_ring_size",
							"Memory for the snapshots the collector takes on a standby.",
							"During recovery nothing can be written; snapshots are kept in "
							"this ring of shared memory and written to the tables after "
							"promotion.  0 disables recording on standbys.  Used only "
							"when pg_chronicle is preloaded.",
							&chronicle_standby_ring_kb,
							CHRONICLE_RING_KB_DEFAULT, 0, 1024 * 1024,
							chronicle_preloaded ? PGC_POSTMASTER : PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* The settings for tests. */
static void
define_debug_settings(void)
{
	DefineCustomStringVariable("chronicle.debug_fail_source",
							   "Makes the named source fail on every snapshot (for tests).",
							   NULL,
							   &chronicle_debug_fail_source,
							   "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("chronicle.debug_housekeeping_interval",
							"Runs housekeeping and the rollup this often instead of on their schedule (for tests).",
							"0 keeps the schedule: partitions hourly (5 minutes after a skip), "
							"the rollup every 5 minutes.",
							&chronicle_debug_housekeeping_ms,
							0, 0, 3600 * 1000,
							PGC_SUSET, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/* Each source, checked, and its collect_ setting; then its own settings. */
static void
define_source_settings(void)
{
	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];

		chronicle_check_source(src);

		/*
		 * The GUC machinery keeps the description by pointer, for the life
		 * of the server: in TopMemoryContext, not in the postmaster's
		 * context, which every child process deletes when it starts.
		 */
		DefineCustomBoolVariable(psprintf("chronicle.collect_%s", src->name),
								 MemoryContextStrdup(TopMemoryContext,
													 psprintf("Whether snapshots record %s.",
															  src->description)),
								 NULL,
								 &chronicle_source_enabled[i],
								 true,
								 PGC_SIGHUP, 0,
								 NULL, NULL, NULL);
	}
	/* A source's own settings, after every collect_ setting. */
	for (int i = 0; i < chronicle_nsources; i++)
	{
		if (chronicle_sources[i]->define_settings)
			chronicle_sources[i]->define_settings();
	}
}

void
_PG_init(void)
{
	chronicle_preloaded = process_shared_preload_libraries_in_progress;

	define_settings();
	define_debug_settings();
	define_source_settings();

	/* The wait-event sampler's settings (sampler.c). */
	chronicle_sampler_define_settings();

	MarkGUCPrefixReserved("chronicle");

	if (!chronicle_preloaded)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = chronicle_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = chronicle_shmem_startup;

	/*
	 * pg_upgrade starts both servers in binary-upgrade mode: a collector
	 * connected to chronicle.database would keep pg_restore from recreating
	 * that database, and must not write into the old cluster while it is
	 * dumped nor into tables being restored.  No workers then.
	 */
	if (IsBinaryUpgrade)
		return;

	register_worker();
	/* The wait-event sampler, a worker of its own (sampler.c). */
	chronicle_sampler_register();
}

bool
chronicle_worker_should_record(void)
{
	return chronicle_worker_enabled;
}

/*
 * The name this server records in its snapshots: chronicle.server_name,
 * else cluster_name, else the host name.  In the caller's memory context.
 */
char *
chronicle_server_name_now(void)
{
	char		host[256];

	if (chronicle_server_name && chronicle_server_name[0] != '\0')
		return pstrdup(chronicle_server_name);
	if (cluster_name && cluster_name[0] != '\0')
		return pstrdup(cluster_name);
	if (gethostname(host, sizeof(host)) == 0)
	{
		host[sizeof(host) - 1] = '\0';
		return pstrdup(host);
	}
	return pstrdup("");
}
