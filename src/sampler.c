/*-------------------------------------------------------------------------
 *
 * sampler.c
 *		The wait-event sampler: a background worker ("pg_chronicle sampler")
 *		that reads the wait event of every process every
 *		chronicle.wait_sample_interval and counts the samples, cumulatively,
 *		in a bounded hash table in shared memory.
 *
 * Design, and the faults of pg_wait_sampling it avoids:
 *
 * - The sampler is its own process, not the collector.  Writing a snapshot
 *   (a transaction, WAL, maybe an fsync) never delays a sample; the
 *   collector only copies the counters (source_waits.c).  Readers never
 *   wait on the sampler through a message queue: they read shared memory
 *   under a shared LWLock held for one memcpy of at most 256 kB (a larger
 *   table is copied in slices, the lock released in between).
 * - Memory is bounded: chronicle.wait_max_entries keys at most, sized at
 *   server start.  A sample whose key does not fit is counted in
 *   samples_dropped and otherwise ignored; nothing fails.
 * - No ProcArrayLock.  The scan reads PGPROC->pid and ->wait_event_info
 *   with plain reads, as pgstat_get_wait_event_type() callers do, and the
 *   backend type, state and query id from the shared PgBackendStatus array
 *   (indexed by proc number on 17 and 18) without the changecount protocol:
 *   each is one aligned word, and a sample being off by one state change
 *   is the nature of sampling.  The keys of one tick go to a private,
 *   preallocated array first; only then is the hash lock taken, once per
 *   tick, for the few microseconds it takes to bump the counters.
 * - No allocation in the loop: the key array is allocated once.
 *
 * Tick k (k = 1, 2, ...) is due in the interval [start + (k - 1) *
 * interval, start + k * interval) of the monotonic clock, and its sample
 * is taken at a random instant within it, uniformly (stratified random
 * sampling).  The sampler counts every tick due (whose instant has
 * passed) and every tick it took; a wake-up so late that the instants of
 * later ticks passed too takes one sample and counts the others as due
 * but not taken, so ticks_taken / ticks_due is the honest coverage.
 *
 * Where a sample is taken matters as much as how often.  A sample
 * describes the instant the sampler runs, and two things tie that instant
 * to the workload, so that the samples see sessions idle more often (or
 * less) than they are; on 2 saturated cores under pgbench -S, against a
 * kernel trace of every state change (uprobes on pgstat_report_activity)
 * and against PostgreSQL's active_time, which agree within 1 %:
 *
 * - The scheduler.  A woken process of the default slice waits for a
 *   running one to block or use up its slice, and processes block at the
 *   workload's turning points (a backend that has just gone idle and
 *   written to its client).  The sampler so counted 16-27 % less active
 *   time than there was.  It asks the kernel for the shortest scheduler
 *   slice, 0.1 ms (sched_setattr(), Linux 6.12+ EEVDF, unprivileged; its
 *   nice value stays): a woken task of a shorter slice preempts the
 *   running one, so the sample is taken when its timer fires.  A tick
 *   costs it a few tens of microseconds.  On other kernels it cannot, and
 *   says so in the log.
 * - The scheduler tick.  With other processes competing for the CPUs the
 *   sessions' activity follows the kernel's timer tick (at HZ=250 the
 *   active sessions were 0.8 to 1.3 times their mean depending on the
 *   phase within its 4 ms), and instants on a fixed 10 ms grid fall on two
 *   phases of it only: 9-13 % too little even with the sampler at a
 *   real-time priority.  Random instants have no phase.
 *
 * test/t/046_session_time.pl compares the sampler's session time with
 * PostgreSQL's.
 *
 * The counters live as long as the shared memory: a restarted sampler
 * (sampler_started changes) goes on counting; a server restart starts from
 * zero, which the history shows as counters going backwards.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>
#ifdef __linux__
#include <sched.h>
#include <sys/syscall.h>
#endif

#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "bgworker.h"
#include "pg_chronicle.h"
#include "sampler.h"

#define SAMPLER_TRANCHE		"pg_chronicle sampler"
#define SAMPLER_SHMEM_NAME	"pg_chronicle sampler"
#define SLOT_EMPTY			(-1)

/* Settings */
int			chronicle_wait_sample_interval = 10;	/* ms, 0 = off */
int			chronicle_wait_max_entries = 10000;
bool		chronicle_wait_queryid = true;

/*
 * Shared state.  Everything below the lock pointer is protected by it:
 * the sampler takes it exclusively once per tick, readers in shared mode.
 * entries[] is dense (0..nentries-1) so a reader copies it with one memcpy;
 * slots[] is an open-addressing index into it (linear probing, at most
 * half full).
 */
typedef struct ChronicleSamplerShared
{
	LWLock	   *lock;
	pid_t		pid;
	TimestampTz started;
	int64		ticks_due;
	int64		ticks_taken;
	int64		samples_dropped;
	int64		cpu_us;
	TimestampTz reset_time;		/* last chronicle.wait_samples_reset() */
	uint64		resets;			/* how many resets: readers copying in
								 * slices start over when it changes */
	bool		status_array_missing;	/* find_status_array() */
	int64		active[WAIT_CLASS_COUNT];
	int64		background_active;
	int			max_entries;
	int			nentries;
	uint32		slot_mask;
	int32	   *slots;			/* slot_mask + 1 of them */
	ChronicleSampleEntry entries[FLEXIBLE_ARRAY_MEMBER];
} ChronicleSamplerShared;

static ChronicleSamplerShared *sampler = NULL;

static uint32
slot_count(int max_entries)
{
	uint32		n = 1;

	while (n < (uint32) max_entries * 2)
		n <<= 1;
	return n;
}

Size
chronicle_sampler_shmem_size(void)
{
	Size		size;

	size = MAXALIGN(add_size(offsetof(ChronicleSamplerShared, entries),
							 mul_size(sizeof(ChronicleSampleEntry),
									  chronicle_wait_max_entries)));
	size = add_size(size, mul_size(sizeof(int32),
								   slot_count(chronicle_wait_max_entries)));
	return size;
}

void
chronicle_sampler_shmem_request(void)
{
	RequestAddinShmemSpace(chronicle_sampler_shmem_size());
	RequestNamedLWLockTranche(SAMPLER_TRANCHE, 1);
}

/* Called from the shmem startup hook, with AddinShmemInitLock held. */
void
chronicle_sampler_shmem_startup(void)
{
	bool		found;

	sampler = ShmemInitStruct(SAMPLER_SHMEM_NAME,
							  chronicle_sampler_shmem_size(), &found);
	if (!found)
	{
		uint32		nslots = slot_count(chronicle_wait_max_entries);

		memset(sampler, 0, offsetof(ChronicleSamplerShared, entries));
		sampler->lock = &(GetNamedLWLockTranche(SAMPLER_TRANCHE))->lock;
		sampler->max_entries = chronicle_wait_max_entries;
		sampler->slot_mask = nslots - 1;
		sampler->slots = (int32 *)
			((char *) sampler +
			 MAXALIGN(offsetof(ChronicleSamplerShared, entries) +
					  sizeof(ChronicleSampleEntry) * chronicle_wait_max_entries));
		for (uint32 i = 0; i < nslots; i++)
			sampler->slots[i] = SLOT_EMPTY;
	}
}

bool
chronicle_sampler_available(void)
{
	return sampler != NULL;
}

void
chronicle_sampler_define_settings(void)
{
	DefineCustomIntVariable("chronicle.wait_sample_interval",
							"Time between two samples of every process's wait event.",
							"0 stops sampling.  Below 1ms the scan of every process "
							"would cost a noticeable share of a core with many connections "
							"and the sleep granularity is 1ms; above 1s too few samples "
							"fall into a snapshot interval to be meaningful.",
							&chronicle_wait_sample_interval,
							10, 0, 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("chronicle.wait_queryid",
							 "Whether wait samples are counted per query id.",
							 "Off counts every sample under query id 0: fewer keys, fewer rows "
							 "written per snapshot.",
							 &chronicle_wait_queryid,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	/*
	 * Sized at server start; a PGC_POSTMASTER setting cannot be defined by
	 * a library loaded later, and without preload there is no sampler.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("chronicle.wait_max_entries",
							"Maximum number of distinct (backend type, state, wait event, query id) "
							"keys the wait sampler counts.",
							"Samples of further keys are counted as dropped.  Each key takes "
							"about 45 bytes of shared memory.",
							&chronicle_wait_max_entries,
							10000, 100, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

void
chronicle_sampler_register(void)
{
	BackgroundWorker worker;

	/*
	 * No database: it reads shared memory only.  From the start, so that
	 * recovery and standbys are sampled too.
	 */
	chronicle_worker_describe(&worker, "chronicle_sampler_main",
							  "pg_chronicle sampler", BGWORKER_SHMEM_ACCESS,
							  BgWorkerStart_PostmasterStart, 10);
	RegisterBackgroundWorker(&worker);
}

const char *
chronicle_backend_state_name(int state)
{
	switch ((BackendState) state)
	{
		case STATE_UNDEFINED:
			return "";
#if PG_VERSION_NUM >= 180000
		case STATE_STARTING:
			return "starting";
#endif
		case STATE_IDLE:
			return "idle";
		case STATE_RUNNING:
			return "active";
		case STATE_IDLEINTRANSACTION:
			return "idle in transaction";
		case STATE_FASTPATH:
			return "fastpath function call";
		case STATE_IDLEINTRANSACTION_ABORTED:
			return "idle in transaction (aborted)";
		case STATE_DISABLED:
			return "disabled";
	}
	return "unknown";
}

const char *
chronicle_backend_type_name(int backend_type)
{
	if (backend_type == CHRONICLE_B_PARALLEL_WORKER)
		return "parallel worker";
	return GetBackendTypeDesc((BackendType) backend_type);
}

/*
 * The entries are copied in slices of this many (256 kB), the lock
 * released in between: the sampler takes it exclusively every tick, and a
 * reader copying a full table (up to 32 MB) at once, in a loop, would make
 * it miss ticks.
 */
#define READ_SLICE	8192

bool
chronicle_sampler_read(ChronicleSamplerCounters *counters,
					   ChronicleSampleEntry **entries, int *nentries)
{
	ChronicleSampleEntry *copy = NULL;
	int			room = 0;
	int			done = 0;
	uint64		resets = 0;

	memset(counters, 0, sizeof(*counters));
	if (entries)
	{
		*entries = NULL;
		*nentries = 0;
	}
	if (sampler == NULL)
		return false;

	/*
	 * Allocate outside the lock.  Entries are only ever added (but for a
	 * reset), so a few spare slots are almost always enough; if not, grow
	 * the copy and go on.  A reset between two slices starts over.  The
	 * counters are read with the last slice: every count copied before is
	 * at most what they say, and the two differ by the ticks that passed
	 * during the copy at most (none when one slice holds everything).
	 */
	for (;;)
	{
		int			n;

		if (entries && copy == NULL)
		{
			room = Min(sampler->max_entries,
					   (int) *((volatile int *) &sampler->nentries) + 64);
			copy = palloc(sizeof(ChronicleSampleEntry) * Max(room, 1));
		}

		LWLockAcquire(sampler->lock, LW_SHARED);
		if (done > 0 && sampler->resets != resets)
		{
			LWLockRelease(sampler->lock);
			done = 0;			/* reset meanwhile: start over */
			continue;
		}
		resets = sampler->resets;
		n = entries ? sampler->nentries : 0;
		if (n > room)
		{
			LWLockRelease(sampler->lock);
			room = Min(sampler->max_entries, n + 64);
			copy = repalloc(copy, sizeof(ChronicleSampleEntry) * room);
			continue;
		}
		if (n - done > READ_SLICE)
		{
			memcpy(copy + done, sampler->entries + done,
				   sizeof(ChronicleSampleEntry) * READ_SLICE);
			done += READ_SLICE;
			LWLockRelease(sampler->lock);
			continue;
		}
		if (n > done)
			memcpy(copy + done, sampler->entries + done,
				   sizeof(ChronicleSampleEntry) * (n - done));
		counters->pid = sampler->pid;
		counters->started = sampler->started;
		counters->ticks_due = sampler->ticks_due;
		counters->ticks_taken = sampler->ticks_taken;
		counters->samples_dropped = sampler->samples_dropped;
		counters->cpu_us = sampler->cpu_us;
		counters->reset_time = sampler->reset_time;
		memcpy(counters->active, sampler->active, sizeof(sampler->active));
		counters->background_active = sampler->background_active;
		counters->entries = sampler->nentries;
		counters->max_entries = sampler->max_entries;
		LWLockRelease(sampler->lock);
		if (entries)
		{
			*entries = copy;
			*nentries = n;
		}
		return true;
	}
}

/*
 * Forget every key and its count, and the dropped samples; the ticks go
 * on.  The way out when the table filled up with keys of the past (query
 * ids, mostly): the history sees the counts go backwards, a new baseline.
 */
void
chronicle_sampler_reset(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (sampler == NULL)
		return;
	LWLockAcquire(sampler->lock, LW_EXCLUSIVE);
	for (uint32 i = 0; i <= sampler->slot_mask; i++)
		sampler->slots[i] = SLOT_EMPTY;
	sampler->nentries = 0;
	sampler->samples_dropped = 0;
	sampler->reset_time = now;
	sampler->resets++;
	LWLockRelease(sampler->lock);
}

/* ----------------------------------------------------------------
 * The sampler process
 * ----------------------------------------------------------------
 */

static PgBackendStatus *status_array = NULL;
static int	nstatus = 0;
static ChronicleSampleKey *tick_keys = NULL;
static int64 tick_active[WAIT_CLASS_COUNT];
static int64 tick_background;

/*
 * The shared PgBackendStatus array is static in backend_status.c, and
 * pgstat_get_beentry_by_proc_number() reads a local copy of all of it
 * (allocating).  Look the array up by its shared memory name instead.  Its
 * name, size (NumBackendStatSlots = MaxBackends + NUM_AUXILIARY_PROCS) and
 * index (the proc number) are those of PostgreSQL 17 and 18: a new major
 * version must be checked against backend_status.c before it is added
 * here.
 */
#if PG_VERSION_NUM >= 170000 && PG_VERSION_NUM < 190000
#define STATUS_ARRAY_NAME	"Backend Status Array"
#define STATUS_ARRAY_SLOTS	(MaxBackends + NUM_AUXILIARY_PROCS)
#else
#error "the wait sampler reads PostgreSQL's Backend Status Array as laid out in 17 and 18: check backend_status.c of this version and extend the test above"
#endif

/*
 * ShmemInitStruct() finds the array, or fails on a size that differs, but
 * when the name is unknown it allocates a new array of zeros and reports
 * it as not found.  That must never be sampled as if it were the real
 * one: the sampler stops with a FATAL error, and remembers in its own
 * shared state that the array it would find on a restart is its own.
 */
static void
find_status_array(void)
{
	bool		found;
	void	   *ptr;

	if (!sampler->status_array_missing)
	{
		ptr = ShmemInitStruct(STATUS_ARRAY_NAME,
							  mul_size(sizeof(PgBackendStatus), STATUS_ARRAY_SLOTS),
							  &found);
		if (found)
		{
			status_array = (PgBackendStatus *) ptr;
			nstatus = STATUS_ARRAY_SLOTS;
			return;
		}
		sampler->status_array_missing = true;
	}
	ereport(FATAL,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("pg_chronicle sampler: PostgreSQL's shared memory has no \"%s\"",
					STATUS_ARRAY_NAME),
			 errdetail("The wait sampler reads backend types and states from it as laid out in PostgreSQL 17 and 18; this server (%s) differs.",
					   PG_VERSION),
			 errhint("Set chronicle.wait_sample_interval = 0 and report this to the pg_chronicle developers.")));
}

static inline uint32
key_hash(const ChronicleSampleKey *key)
{
	return hash_bytes((const unsigned char *) key, sizeof(ChronicleSampleKey));
}

/*
 * Count one sample; the caller holds the lock exclusively.  Returns the
 * entry counted in, -1 when the sample was dropped.
 */
static inline int
count_sample(const ChronicleSampleKey *key)
{
	uint32		slot = key_hash(key) & sampler->slot_mask;

	for (;;)
	{
		int32		idx = sampler->slots[slot];
		ChronicleSampleEntry *e;

		if (idx == SLOT_EMPTY)
		{
			if (sampler->nentries >= sampler->max_entries)
			{
				sampler->samples_dropped++;
				return -1;
			}
			idx = sampler->nentries;
			e = &sampler->entries[idx];
			e->key = *key;
			e->samples = 1;
			sampler->slots[slot] = idx;
			sampler->nentries++;
			return idx;
		}
		e = &sampler->entries[idx];
		if (memcmp(&e->key, key, sizeof(ChronicleSampleKey)) == 0)
		{
			e->samples++;
			return idx;
		}
		slot = (slot + 1) & sampler->slot_mask;
	}
}

/*
 * Database time: client backends and the processes working for them
 * (walsenders, autovacuum workers, parallel workers).  A process caught
 * before it reported its type is most likely a connection starting.
 * Everything else (checkpointer, background writer, walwriter, startup,
 * other background workers, ...) does the server's own work.
 */
static inline bool
database_time(int backend_type)
{
	switch (backend_type)
	{
		case B_INVALID:
		case B_BACKEND:
		case B_STANDALONE_BACKEND:
		case B_WAL_SENDER:
		case B_AUTOVAC_WORKER:
		case CHRONICLE_B_PARALLEL_WORKER:
			return true;
		default:
			return false;
	}
}

/*
 * The wait class a sample of an active process counts under, or -1 for a
 * process that is not active: an idle session, a process in its main-loop
 * wait (class Activity; a walsender with nothing to send; an extension's
 * background worker waiting in class Extension), or one sleeping to
 * throttle itself or between retries (the checkpointer spreading its
 * writes, autovacuum's cost delay, recovery_min_apply_delay, the startup
 * process and the WAL summarizer waiting to retry).  The SQL function
 * chronicle._wait_activity() says the same of a recorded key;
 * test/t/010_waits.pl checks that they agree.
 */
static inline int
wait_activity(const ChronicleSampleKey *k, bool database)
{
	if (k->state == STATE_IDLE)
		return -1;
	/* Client/IdleInTransaction (sampler.h) */
	if (k->wait_event_info == 0 && chronicle_state_between_statements(k->state))
		return WAIT_CLASS_CLIENT;
	switch (k->wait_event_info)
	{
		case WAIT_EVENT_CHECKPOINT_WRITE_DELAY:
		case WAIT_EVENT_RECOVERY_APPLY_DELAY:
		case WAIT_EVENT_RECOVERY_RETRIEVE_RETRY_INTERVAL:
		case WAIT_EVENT_WAL_SUMMARIZER_ERROR:
		case WAIT_EVENT_WAL_SENDER_WAIT_FOR_WAL:
			return -1;
		case WAIT_EVENT_VACUUM_DELAY:
			/* a session's VACUUM is waited for, autovacuum is not */
			if (!database || k->backend_type == B_AUTOVAC_WORKER)
				return -1;
			break;
		default:
			break;
	}
	switch (k->wait_event_info & 0xFF000000)
	{
		case 0:
			return WAIT_CLASS_CPU;
		case PG_WAIT_ACTIVITY:
			return -1;
		case PG_WAIT_IO:
			return WAIT_CLASS_IO;
		case PG_WAIT_LWLOCK:
			return WAIT_CLASS_LWLOCK;
		case PG_WAIT_LOCK:
			return WAIT_CLASS_LOCK;
		case PG_WAIT_IPC:
			return WAIT_CLASS_IPC;
		case PG_WAIT_CLIENT:
			return WAIT_CLASS_CLIENT;
		case PG_WAIT_TIMEOUT:
			return WAIT_CLASS_TIMEOUT;
		case PG_WAIT_EXTENSION:
			return database ? WAIT_CLASS_OTHER : -1;
		default:
			return WAIT_CLASS_OTHER;
	}
}

/* Is this lock group leader a background worker (by its status slot)? */
static bool
leader_is_background(volatile PGPROC *leader)
{
	int			i = GetNumberFromPGProc(leader);

	return i >= 0 && i < nstatus &&
		status_array[i].st_procpid == leader->pid &&
		status_array[i].st_backendType == B_BG_WORKER;
}

/*
 * Read every process once into tick_keys, and count the active ones: in
 * database time by wait class into tick_active, background processes into
 * tick_background; returns how many processes.
 */
static int
scan_processes(void)
{
	int			n = 0;
	uint32		nprocs = ProcGlobal->allProcCount;

	memset(tick_active, 0, sizeof(tick_active));
	tick_background = 0;

	for (uint32 i = 0; i < nprocs; i++)
	{
		volatile PGPROC *proc = &ProcGlobal->allProcs[i];
		int			pid = proc->pid;
		ChronicleSampleKey *k;
		int			class;
		bool		database;

		if (pid == 0 || proc == (volatile PGPROC *) MyProc)
			continue;

		k = &tick_keys[n++];
		k->wait_event_info = proc->wait_event_info;	/* volatile: one plain read */
		k->pad = 0;
		k->backend_type = B_INVALID;
		k->state = STATE_UNDEFINED;
		k->queryid = 0;
		if (i < (uint32) nstatus)
		{
			volatile PgBackendStatus *be = &status_array[i];

			/* The slot belongs to this process only if the pids match. */
			if (be->st_procpid == pid)
			{
				k->backend_type = be->st_backendType;
				k->state = be->st_state;

				/*
				 * A parallel worker has joined its leader's lock group.  It
				 * is database time when its leader is: the parallel workers
				 * of a background worker (a maintenance job, an
				 * extension's) stay background.
				 */
				if (k->backend_type == B_BG_WORKER)
				{
					volatile PGPROC *leader = proc->lockGroupLeader;

					if (leader != NULL && leader != proc &&
						!leader_is_background(leader))
						k->backend_type = CHRONICLE_B_PARALLEL_WORKER;
				}
				/* An idle session's last query id says nothing. */
				if (chronicle_wait_queryid && k->state != STATE_IDLE)
					k->queryid = be->st_query_id;
			}
		}
		database = database_time(k->backend_type);
		class = wait_activity(k, database);
		if (class < 0)
			continue;
		if (database)
			tick_active[class]++;
		else
			tick_background++;
	}
	return n;
}

/*
 * Ask for the shortest scheduler slice (see the head of this file).  The
 * kernel's struct sched_attr, as of its first version (48 bytes; later
 * versions only append).  Linux before 6.12 takes sched_runtime of a
 * SCHED_OTHER task and ignores it: reading it back tells.  Returns the
 * slice in effect in microseconds, or -1 (with errno when a call failed).
 */
#define SAMPLER_SLICE_NS	100000	/* the kernel's minimum, 0.1 ms */

#if defined(__linux__) && defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
typedef struct SamplerSchedAttr
{
	uint32		size;
	uint32		sched_policy;
	uint64		sched_flags;
	int32		sched_nice;
	uint32		sched_priority;
	uint64		sched_runtime;
	uint64		sched_deadline;
	uint64		sched_period;
} SamplerSchedAttr;

static int64
request_short_slice(void)
{
	SamplerSchedAttr attr;

	memset(&attr, 0, sizeof(attr));
	if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0)
		return -1;
	/* only the fair policies have slices; an administrator's choice stays */
	if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH)
		return -1;
	attr.size = sizeof(attr);
	attr.sched_flags = 0;
	attr.sched_runtime = SAMPLER_SLICE_NS;	/* nice and policy as they were */
	if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0)
		return -1;
	errno = 0;
	return attr.sched_runtime == SAMPLER_SLICE_NS ? SAMPLER_SLICE_NS / 1000 : -1;
}
#else
static int64
request_short_slice(void)
{
	errno = 0;
	return -1;
}
#endif

static int64
own_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (int64) ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
		(int64) ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

static void
sampler_exit(int code, Datum arg)
{
	if (sampler)
	{
		/* Never held across an error, but never wait on ourselves either. */
		LWLockReleaseAll();
		LWLockAcquire(sampler->lock, LW_EXCLUSIVE);
		sampler->pid = 0;
		LWLockRelease(sampler->lock);
	}
}

/*
 * Ask for the short scheduler slice (request_short_slice()), and say in
 * the log when it cannot be had.
 */
static void
use_short_slice(void)
{
	if (request_short_slice() >= 0)
		ereport(DEBUG1,
				(errmsg("pg_chronicle sampler: scheduler slice %d us", SAMPLER_SLICE_NS / 1000)));
	else if (errno != 0)
		ereport(LOG,
				(errmsg("pg_chronicle sampler: could not request a short scheduler slice: %m"),
				 errdetail("On a machine whose CPUs are saturated its samples may then see sessions idle more often than they are.")));
	else
		ereport(LOG,
				(errmsg("pg_chronicle sampler: this kernel gives no short scheduler slice (Linux 6.12 or later does)"),
				 errdetail("On a machine whose CPUs are saturated its samples may then see sessions idle more often than they are.")));
}

/*
 * Take the sampler's place in shared memory, and the counters a previous
 * sampler left (they go on from there): the ticks due and its CPU time.
 * tick_keys lives as long as the process (TopMemoryContext).
 */
static void
claim_sampler(int64 *due_base, int64 *cpu_base)
{
	tick_keys = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(ChronicleSampleKey) *
									   Max(ProcGlobal->allProcCount, 1));

	before_shmem_exit(sampler_exit, (Datum) 0);

	LWLockAcquire(sampler->lock, LW_EXCLUSIVE);
	sampler->pid = MyProcPid;
	sampler->started = GetCurrentTimestamp();
	*due_base = sampler->ticks_due;
	*cpu_base = sampler->cpu_us;
	LWLockRelease(sampler->lock);
}

/*
 * Add one tick's samples (the n keys scan_processes() left in tick_keys,
 * and its per-class counts) to the shared counters, with the ticks due so
 * far and the sampler's own CPU time (cpu_us, -1: not read this tick).
 */
static void
record_tick(int n, int64 cpu_us, int64 ticks_due)
{
	int			last_entry = -1;

	LWLockAcquire(sampler->lock, LW_EXCLUSIVE);
	if (cpu_us >= 0)
		sampler->cpu_us = cpu_us;
	for (int i = 0; i < n; i++)
	{
		/*
		 * Many processes share a key (idle sessions, sleepers): the same
		 * key as the previous sample skips the hash.
		 */
		if (i > 0 && last_entry >= 0 && last_entry < sampler->nentries &&
			memcmp(&tick_keys[i], &tick_keys[i - 1],
				   sizeof(ChronicleSampleKey)) == 0)
		{
			sampler->entries[last_entry].samples++;
			continue;
		}
		last_entry = count_sample(&tick_keys[i]);
	}
	for (int c = 0; c < WAIT_CLASS_COUNT; c++)
		sampler->active[c] += tick_active[c];
	sampler->background_active += tick_background;
	sampler->ticks_due = ticks_due;
	sampler->ticks_taken++;
	LWLockRelease(sampler->lock);
}

/*
 * Sleep until the instant target_us of the monotonic clock: on the latch
 * for the whole milliseconds (WaitLatch() counts in them), then the rest,
 * less than one, without it.
 */
static void
sleep_until(int64 target_us, uint32 wait_event)
{
	instr_time	now;
	int64		remaining_us;

	INSTR_TIME_SET_CURRENT(now);
	remaining_us = target_us - INSTR_TIME_GET_MICROSEC(now);
	if (remaining_us <= 0)
		return;
	if (remaining_us >= 1000)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) (remaining_us / 1000), wait_event);
		ResetLatch(MyLatch);
	}
	else
	{
		pgstat_report_wait_start(wait_event);
		pg_usleep((long) remaining_us);
		pgstat_report_wait_end();
	}
}


/*
 * The instant of the tick after tick last_k: uniform in its interval,
 * [epoch + last_k * interval, epoch + (last_k + 1) * interval).
 */
static int64
next_instant(pg_prng_state *prng, int64 epoch_us, int64 last_k, int interval_ms)
{
	int64		len = (int64) interval_ms * 1000;

	return epoch_us + last_k * len + (int64) pg_prng_uint64_range(prng, 0, len - 1);
}

/*
 * The sampler process.  (One function of about 100 lines: the clock state
 * of the tick arithmetic, epoch, the ticks due and the next instant, stays
 * in its locals, read in one place.)
 */
void
chronicle_sampler_main(Datum main_arg)
{
	uint32		wait_event;
	int			interval_ms;
	instr_time	now;
	int64		epoch_us;		/* tick k is due from epoch + (k - 1) * interval */
	int64		due_base;		/* ticks due before the current epoch */
	int64		last_k = 0;		/* the last tick taken */
	int64		target_us;		/* the instant of the next tick's sample */
	pg_prng_state prng;
	int64		cpu_base;
	int64		next_cpu_us = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (sampler == NULL)
		ereport(ERROR,
				(errmsg("pg_chronicle sampler started without its shared memory")));

#if PG_VERSION_NUM >= 170000
	wait_event = WaitEventExtensionNew("ChronicleSampler");
#else
	wait_event = PG_WAIT_EXTENSION;
#endif

	find_status_array();
	use_short_slice();
	claim_sampler(&due_base, &cpu_base);

	interval_ms = chronicle_wait_sample_interval;
	INSTR_TIME_SET_CURRENT(now);
	epoch_us = INSTR_TIME_GET_MICROSEC(now);
	pg_prng_seed(&prng, ((uint64) MyProcPid << 32) ^ (uint64) epoch_us);
	target_us = interval_ms > 0 ? next_instant(&prng, epoch_us, last_k, interval_ms) : 0;

	for (;;)
	{
		int64		now_us;
		int64		k;

		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (chronicle_wait_sample_interval != interval_ms)
			{
				/* A new cadence: the ticks due so far stay, count anew. */
				due_base += last_k;
				last_k = 0;
				interval_ms = chronicle_wait_sample_interval;
				INSTR_TIME_SET_CURRENT(now);
				epoch_us = INSTR_TIME_GET_MICROSEC(now);
				if (interval_ms > 0)
					target_us = next_instant(&prng, epoch_us, last_k, interval_ms);
			}
		}

		if (interval_ms <= 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH,
							 -1L, wait_event);
			ResetLatch(MyLatch);
			continue;
		}

		INSTR_TIME_SET_CURRENT(now);
		now_us = INSTR_TIME_GET_MICROSEC(now);

		if (now_us >= target_us)
		{
			int			n = scan_processes();
			int64		cpu = -1;
			int64		next_us;

			/*
			 * This sample is tick last_k + 1's.  Ticks whose instants
			 * passed too while the sampler was late are due, not taken:
			 * every tick of an interval that ended, and the next ones as
			 * long as their instants (drawn in turn) are not ahead.
			 */
			k = Max(last_k + 1, (now_us - epoch_us) / ((int64) interval_ms * 1000));
			next_us = next_instant(&prng, epoch_us, k, interval_ms);
			while (next_us <= now_us)
				next_us = next_instant(&prng, epoch_us, ++k, interval_ms);

			/* The sampler's own cost, now and then (a system call). */
			if (now_us >= next_cpu_us)
			{
				cpu = own_cpu_us();
				next_cpu_us = now_us + USECS_PER_SEC;
			}

			record_tick(n, cpu >= 0 ? cpu_base + cpu : -1, due_base + k);
			last_k = k;
			target_us = next_us;
		}

		sleep_until(target_us, wait_event);
	}
}
