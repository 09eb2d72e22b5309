/*-------------------------------------------------------------------------
 *
 * source_os_process_cpu.c
 *		CPU, scheduler delay, block I/O and context switches of every
 *		PostgreSQL process, summed by backend type (pidstat's -u, -d and -w
 *		in one, by process type).
 *
 * The processes are those of the backend status array (client backends,
 * walsenders, autovacuum workers, background and parallel workers, io
 * workers on 18, the auxiliary processes, and the collector itself), plus
 * the wait sampler, which has no status entry (a background worker without
 * a database).  The postmaster and the logger have none either and are not
 * counted.  For each, from /proc/<pid>/:
 *
 *	stat		utime, stime (fields 14 and 15, clock ticks of the whole
 *				process); starttime (field 22) tells a reused pid
 *	schedstat	run_delay (second field, ns): time spent runnable, waiting
 *				for a CPU (main thread; Linux with CONFIG_SCHED_INFO)
 *	io			read_bytes, write_bytes: what the process made the block
 *				layer read, and the pages it dirtied for writeback
 *	status		voluntary_ctxt_switches (it blocked),
 *				nonvoluntary_ctxt_switches (it was preempted)
 *
 * Four small files per process (about 35 us of the kernel's CPU a
 * process when opened, read and closed each time); no SPI.  The collector
 * keeps the files of the processes it reads at every snapshot open and
 * reads them again, which saves most of that: every process but the
 * sessions waiting for their client (chronicle_proc_read_pid(): at most a
 * few dozen processes; what it keeps, and when it closes them, os_proc.c
 * says); of a process that has not run since the last snapshot, only
 * schedstat is read (read_process()), or schedstat, stat and io when it
 * has other threads (read_counts()).  A process whose stat file cannot be
 * read (it exited meanwhile) is skipped, never an error.
 *
 * Sessions waiting for their client are not read again while they wait: a
 * client backend idle (or idle in transaction) since a reading taken at
 * least IDLE_SETTLE after it went idle, and less than IDLE_REREAD ago, is
 * carried as that reading (its status entry says it has not run a
 * statement since: the same backend start and the same state start).  So
 * a pool of idle sessions costs nothing but a re-read a minute each, at
 * most IDLE_REREADS of them a snapshot (sessions that went idle together
 * would all be due together; more wait for the next snapshots).  What
 * a session does without leaving idle (its pending statistics flushed 10 s
 * after it went idle, a NOTIFY relayed to its client, a cache invalidation
 * catch-up: milliseconds) shows when it is read again.  Without
 * track_activities every process is read every time.
 *
 * What a counter of a backend type means, across processes that come and
 * go: the sum, over every process of that type seen since this collector
 * process started counting (collector_started), of what the process used
 * from its start to the last snapshot that saw it.  So:
 *
 * - A process seen for the first time counts from zero: its whole CPU
 *   since it started is in the interval that first sees it.  It started
 *   after the snapshot before (which would have seen it: a process is in
 *   the status array from soon after its fork), so that CPU belongs to
 *   this interval or, for a process that started just before the previous
 *   snapshot but entered the status array only after it (a connection
 *   authenticating), to the one before.  The processes found at the
 *   collector's first snapshot count their whole life too, but that
 *   snapshot is a baseline (collector_started changed, or the segment
 *   started), not an interval.
 *
 * - A process gone (no longer in the status array, or its stat file gone)
 *   leaves its last reading in its type's total: the total never drops,
 *   and the interval it exits in has no negative delta.  What it used
 *   after the last snapshot that saw it is not counted (at most one
 *   interval of its time: a backend that works and exits between two
 *   snapshots is counted up to the first of them), nor is a process that
 *   started and exited between two snapshots (a short connection, the
 *   parallel workers of a short query); exited counts the processes gone
 *   after a snapshot saw them.
 *
 * - A pid seen again with another start time is another process: the old
 *   one is gone (its last reading stays in the total), the new one counts
 *   from zero.
 *
 * - A process whose type changes (a background worker seen before it
 *   joined its leader's lock group, then as a parallel worker) leaves what
 *   it used so far in the first type and counts from there in the second.
 *
 * - Every value of one process is kept from going backwards (a read that
 *   failed carries the previous value), so a type's sums only grow, until
 *   the collector restarts: the counts are in this process's memory and
 *   start again from zero with it, with a new collector_started (the
 *   RESET column: that interval is a reset, no delta).  chronicle.snapshot()
 *   run in another backend counts in that backend's memory, with its own
 *   collector_started: the intervals around it are resets, never wrong.
 *
 * Every backend type a process of the status array can have gets a row
 * at every keyframe, with processes 0 while it has none (a walreceiver on
 * a primary; autovacuum workers between two runs): a type's total lives on
 * after its last process has gone, and a keyframe that lacked the type
 * would make its next row count from zero, the predecessors' total with
 * it.  A keyframe of chronicle.snapshot() in another backend lists the
 * same types.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "os_proc.h"
#include "sampler.h"
#include "source.h"

#define PCPU_COLUMNS(C) \
	/* pg_stat_activity's backend_type ('parallel worker' too) */				\
	C(PCPU_BACKEND_TYPE, "backend_type", TEXTOID, KEY)							\
	/* CPU time in user and kernel mode, ms (stat's ticks: 10 ms steps) */		\
	C(PCPU_USER_MS, "user_ms", FLOAT8OID, TIME)									\
	C(PCPU_SYSTEM_MS, "system_ms", FLOAT8OID, TIME)								\
	/*																			\
	 * time runnable but waiting for a CPU, ms, to the microsecond (which		\
	 * the packed history keeps in 5 bytes where nanoseconds take 8); NULL		\
	 * without schedstat														\
	 */																			\
	C(PCPU_RUN_DELAY_MS, "run_delay_ms", FLOAT8OID, TIME)						\
	/* bytes read from and dirtied for the block layer; NULL without io */		\
	C(PCPU_READ_BYTES, "read_bytes", INT8OID, COUNTER)							\
	C(PCPU_WRITE_BYTES, "write_bytes", INT8OID, COUNTER)						\
	/* context switches: the process blocked; it was preempted */				\
	C(PCPU_VOLUNTARY, "voluntary_ctxt_switches", INT8OID, COUNTER)				\
	C(PCPU_NONVOLUNTARY, "nonvoluntary_ctxt_switches", INT8OID, COUNTER)		\
	/* processes of the type gone since collector_started */					\
	C(PCPU_EXITED, "exited", INT8OID, COUNTER)									\
	/* processes of the type at this snapshot (idle sessions carried too) */	\
	C(PCPU_PROCESSES, "processes", INT8OID, GAUGE)								\
	/* when this collector process started counting: the counts start there */	\
	C(PCPU_COLLECTOR_STARTED, "collector_started", TIMESTAMPTZOID, RESET)

CHRONICLE_COLUMNS(PCPU_COLUMNS, os_process_cpu_columns, PCPU_NCOLUMNS, PCPU_NKEYS);

/* What is kept of a process, in the units of /proc. */
enum
{
	STAT_UTIME,					/* ticks */
	STAT_STIME,					/* ticks */
	STAT_RUN_DELAY,				/* ns */
	STAT_READ_BYTES,
	STAT_WRITE_BYTES,
	STAT_VOLUNTARY,
	STAT_NONVOLUNTARY,
	NSTATS
};

/* Backend types: PostgreSQL's, and parallel workers apart (as pg_stat_activity) */
#define TYPE_PARALLEL_WORKER	BACKEND_NUM_TYPES
#define NTYPES					(BACKEND_NUM_TYPES + 1)

typedef struct PcpuProc
{
	int			pid;
	int			type;
	bool		counted;		/* in processes: read, or carried while idle */
	uint64		starttime;		/* stat's field 22: tells a reused pid */
	TimestampTz read_at;		/* when last read */
	TimestampTz proc_start;		/* its status entry's backend start */
	TimestampTz idle_since;		/* when last read waiting for its client: its
								 * state start; 0 when not */
	int64		base[NSTATS];	/* where it counts from: 0, or what it had
								 * when it changed type */
	int64		last[NSTATS];	/* its latest reading */
	int64		sched_oncpu;	/* schedstat's time on a CPU (ns) and */
	int64		sched_slices;	/* timeslices at that reading; -1 unknown */
	int			threads;		/* stat's num_threads when stat was read */
} PcpuProc;

/* A reading of /proc/<pid>/schedstat: "<on cpu ns> <run_delay ns> <timeslices>" */
typedef struct SchedRead
{
	bool		ok;				/* read and whole */
	int64		oncpu;
	int64		delay;
	int64		slices;
} SchedRead;

/*
 * The counts of one reading: every live process (sorted by pid) and, per
 * type, what the processes gone had used.
 */
typedef struct PcpuState
{
	TimestampTz started;		/* collector_started; 0 before any reading */
	int			nprocs;
	PcpuProc   *procs;
	bool		seen[NTYPES];	/* the types emitted (listed or seen) */
	int64		gone[NTYPES][NSTATS];
	int64		exited[NTYPES];
} PcpuState;

/*
 * An idle session is read again once it settled, then once a minute, at
 * most IDLE_REREADS a snapshot.
 */
#define IDLE_SETTLE		(1 * USECS_PER_SEC)
#define IDLE_REREAD		(60 * USECS_PER_SEC)
#define IDLE_REREADS	8

/* idle sessions re-read at this snapshot so far */
static int	idle_rereads = 0;

/*
 * The state outlives snapshots: it is the memory of every process seen,
 * kept in two memory contexts under TopMemoryContext for the life of the
 * collecting process.  state[current] is the reading whose rows were
 * written; collect builds the next one in the other, and written() makes
 * it current: a snapshot rolled back (its rows not written) leaves the
 * counts where the history has them.
 */
static PcpuState state[2];
static MemoryContext state_cxt[2];
static int	current = 0;
static bool next_pending = false;
static long clock_ticks = 0;

/*
 * The types listed from the first reading on: those the status array can
 * hold (not the standalone backend, nor the logger, which has no entry).
 * Another type, should one appear, is listed from when it is seen.
 */
static bool
type_listed(int type)
{
	switch (type)
	{
		case B_INVALID:
		case B_STANDALONE_BACKEND:
		case B_LOGGER:
#if PG_VERSION_NUM >= 180000
		case B_DEAD_END_BACKEND:
#endif
			return false;
		default:
			return true;
	}
}

static const char *
type_name(int type)
{
	return type == TYPE_PARALLEL_WORKER ? "parallel worker" :
		GetBackendTypeDesc((BackendType) type);
}

static int
proc_cmp(const void *a, const void *b)
{
	int			pa = ((const PcpuProc *) a)->pid;
	int			pb = ((const PcpuProc *) b)->pid;

	return (pa > pb) - (pa < pb);
}

/* proc_cmp() for an array of pointers to entries */
static int
proc_ptr_cmp(const void *a, const void *b)
{
	return proc_cmp(*(const PcpuProc *const *) a, *(const PcpuProc *const *) b);
}

static bool
os_process_cpu_available(void)
{
	return chronicle_proc_exists("self/stat");
}

/*
 * stat's utime, stime, num_threads and starttime.  The command name (field
 * 2) is in parentheses and may hold blanks and parentheses: the fields
 * after it start after the last ')'.
 */
static bool
parse_stat(char *text, int64 *utime, int64 *stime, int *threads,
		   uint64 *starttime)
{
	char	   *p = strrchr(text, ')');

	if (p == NULL)
		return false;
	p++;
	for (int field = 3; field <= 22; field++)
	{
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			return false;
		if (field == 14 || field == 15 || field == 20 || field == 22)
		{
			char	   *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(p, &end, 10);
			if (end == p || errno != 0)
				return false;
			if (field == 14)
				*utime = (int64) Min(v, (unsigned long long) PG_INT64_MAX);
			else if (field == 15)
				*stime = (int64) Min(v, (unsigned long long) PG_INT64_MAX);
			else if (field == 20)
				*threads = (int) Min(v, (unsigned long long) INT_MAX);
			else
				*starttime = (uint64) v;
			p = end;
		}
		else
			while (*p && *p != ' ')
				p++;
	}
	return true;
}

/*
 * The number on the line "<label> N" of text (label with its colon, if the
 * file has one), into *value; false when there is no such line.
 */
static bool
labelled(const char *text, const char *label, int64 *value)
{
	size_t		len = strlen(label);
	const char *p = text;
	char	   *end;
	long long	v;

	for (;;)
	{
		p = strstr(p, label);
		if (p == NULL)
			return false;
		if (p == text || p[-1] == '\n')
			break;
		p += len;
	}
	p += len;
	errno = 0;
	v = strtoll(p, &end, 10);
	if (end == p || errno != 0 || v < 0)
		return false;
	*value = (int64) v;
	return true;
}

/* The entry of pid in the reading st, or NULL. */
static PcpuProc *
find_proc(PcpuState *st, int pid)
{
	PcpuProc	key;

	key.pid = pid;
	if (st->nprocs == 0)
		return NULL;
	return bsearch(&key, st->procs, st->nprocs, sizeof(PcpuProc), proc_cmp);
}

/* Is this session waiting for its client (the states of pg_stat_activity)? */
static bool
waiting_for_client(const PgBackendStatus *be)
{
	return be->st_state == STATE_IDLE ||
		be->st_state == STATE_IDLEINTRANSACTION ||
		be->st_state == STATE_IDLEINTRANSACTION_ABORTED;
}

/*
 * Carry process old of the current reading into the next one as it was
 * (matched[] marks it taken); counted: whether it counts as live.
 */
static void
carry(PcpuState *cur, bool *matched, PcpuState *next, const PcpuProc *old,
	  bool counted)
{
	PcpuProc   *p = &next->procs[next->nprocs++];

	matched[old - cur->procs] = true;
	*p = *old;
	p->counted = counted;
}

/*
 * Read the schedstat of process pid into *sched (sched->ok false when it
 * cannot be read or is not whole).
 */
static void
read_schedstat(int pid, bool keep, SchedRead *sched)
{
	ChronicleProcText text;
	char	   *end;
	long long	oncpu,
				ns,
				slices;

	sched->ok = false;
	if (!chronicle_proc_read_pid(pid, CHRONICLE_PID_SCHEDSTAT, keep, &text))
		return;
	errno = 0;
	oncpu = strtoll(text.next, &end, 10);
	ns = strtoll(end, &end, 10);
	slices = strtoll(end, &end, 10);
	if (errno != 0 || oncpu < 0 || ns < 0 || slices <= 0)
		return;
	sched->ok = true;
	sched->oncpu = oncpu;
	sched->delay = ns;
	sched->slices = slices;
}

/*
 * Has the main thread of process same (its entry of the current reading,
 * NULL if new) not run since then, as sched (its schedstat now) says?
 */
static bool
not_run(const PcpuProc *same, const SchedRead *sched)
{
	return same != NULL && sched->ok && same->sched_slices == sched->slices &&
		same->sched_oncpu == sched->oncpu &&
		same->last[STAT_RUN_DELAY] == sched->delay;
}

/*
 * The counts of process pid besides its CPU time, into v (a file that
 * cannot be read leaves its counts as they are): the run delay (sched, its
 * schedstat read by the caller), the bytes read and written (io), the
 * context switches (status).  keep: as chronicle_proc_read_pid()'s.  p is
 * the process's entry of the next reading, same its entry of the current
 * one if it is the same process (NULL if new).
 *
 * status is not read when schedstat says the process's main thread has not
 * run since the last reading (its time on a CPU, run delay and timeslices
 * all as they were): its context switches, counted in status for that
 * thread alone, cannot have changed either (a switch out adds the time run
 * since the last one, a switch in counts a timeslice), and status, which
 * the kernel renders from all of the process's state, is the costliest of
 * the four files.  The auxiliary processes sleep most of the time: at a
 * snapshot a second, most of them have not woken since the last one.  Not
 * so for io (all the process's threads, io_uring's workers too) nor stat.
 */
static void
read_counts(int pid, int64 *v, PcpuProc *p, const PcpuProc *same,
			const SchedRead *sched, bool have_io, bool keep)
{
	ChronicleProcText text;
	bool		ran = true;

	p->sched_oncpu = p->sched_slices = -1;
	if (sched->ok)
	{
		v[STAT_RUN_DELAY] = sched->delay;
		p->sched_oncpu = sched->oncpu;
		p->sched_slices = sched->slices;
		ran = !not_run(same, sched);
	}
	if (have_io && chronicle_proc_read_pid(pid, CHRONICLE_PID_IO, keep, &text))
	{
		(void) labelled(text.next, "read_bytes:", &v[STAT_READ_BYTES]);
		(void) labelled(text.next, "write_bytes:", &v[STAT_WRITE_BYTES]);
	}
	if (ran && chronicle_proc_read_pid(pid, CHRONICLE_PID_STATUS, keep, &text))
	{
		(void) labelled(text.next, "voluntary_ctxt_switches:", &v[STAT_VOLUNTARY]);
		(void) labelled(text.next, "nonvoluntary_ctxt_switches:", &v[STAT_NONVOLUNTARY]);
	}
}

/*
 * Read process pid, of backend type type, into the next reading: its
 * previous entry in cur (matched[] marks it taken) says where it counts
 * from, or it is new and counts from zero.  be is its status entry (NULL
 * for the sampler), now the time of the reading.  (About 120 lines in one:
 * the ways a process is carried without reading its files, an idle
 * session, a process that has not run, one unreadable for a moment, are
 * decided in this order on the same locals, old, keep and sched, before
 * and around the first file read.)
 */
static void
read_process(PcpuState *cur, bool *matched, PcpuState *next, int pid,
			 int type, const PgBackendStatus *be, TimestampTz now,
			 bool have_schedstat, bool have_io)
{
	ChronicleProcText text;
	PcpuProc   *old = find_proc(cur, pid);
	PcpuProc   *p;
	int64		utime = 0,
				stime = 0;
	uint64		starttime = 0;
	int			threads = 0;
	int64		prev[NSTATS] = {0};
	int64		v[NSTATS];
	SchedRead	sched = {0};

	/*
	 * Its files are kept open unless it is a session waiting for its client,
	 * carried from the next snapshot on and read once a minute.
	 */
	bool		keep = be == NULL || !waiting_for_client(be);

	if (old != NULL && matched[old - cur->procs])
		return;					/* listed twice */

	/*
	 * The same session, still waiting for its client since a reading that
	 * saw it settled there: carried (see the head of the file).
	 */
	if (old != NULL && be != NULL && old->type == type &&
		old->proc_start == be->st_proc_start_timestamp &&
		waiting_for_client(be) &&
		old->idle_since == be->st_state_start_timestamp &&
		old->read_at - old->idle_since >= IDLE_SETTLE)
	{
		if (now - old->read_at < IDLE_REREAD || idle_rereads >= IDLE_REREADS)
		{
			carry(cur, matched, next, old, true);
			return;
		}
		idle_rereads++;
	}

	/*
	 * A process whose main thread has not run since the last reading, and
	 * which had no other thread then: none of its counts can have changed,
	 * neither stat's nor io's (which count all its threads) nor status's
	 * (see read_counts), and it is carried as it was.  The auxiliary
	 * processes sleep through most snapshots: one file read of them, not
	 * three.  A process with other threads (io_uring's workers count in its
	 * stat and io) is read whole; its status entry's start tells a reused
	 * pid.
	 */
	if (have_schedstat)
		read_schedstat(pid, keep, &sched);
	if (old != NULL && be != NULL && old->type == type &&
		old->proc_start == be->st_proc_start_timestamp && old->threads == 1 &&
		not_run(old, &sched))
	{
		carry(cur, matched, next, old, true);
		/* as good as a reading now: a session may settle on it */
		p = &next->procs[next->nprocs - 1];
		p->read_at = now;
		p->idle_since = waiting_for_client(be) ? be->st_state_start_timestamp : 0;
		next->seen[type] = true;
		return;
	}

	if (!chronicle_proc_read_pid(pid, CHRONICLE_PID_STAT, keep, &text) ||
		!parse_stat(text.next, &utime, &stime, &threads, &starttime))
	{
		/*
		 * Gone meanwhile, most likely: it is not in the next reading of
		 * the status array, and goes then.  Until then its entry is carried
		 * as it was, so that it is not counted a second time, from zero, if
		 * it was only unreadable for a moment.
		 */
		if (old != NULL)
			carry(cur, matched, next, old, false);
		return;
	}

	p = &next->procs[next->nprocs++];
	p->pid = pid;
	p->type = type;
	p->counted = true;
	p->starttime = starttime;
	p->read_at = now;
	p->proc_start = be ? be->st_proc_start_timestamp : 0;
	p->idle_since = be && waiting_for_client(be) ? be->st_state_start_timestamp : 0;
	p->threads = threads;
	memset(p->base, 0, sizeof(p->base));

	if (old != NULL && old->starttime == starttime)
	{
		/* The same process: it goes on from its last reading. */
		matched[old - cur->procs] = true;
		memcpy(prev, old->last, sizeof(prev));
		if (old->type == type)
			memcpy(p->base, old->base, sizeof(p->base));
		else
		{
			/* what it used so far stays with its first type */
			for (int s = 0; s < NSTATS; s++)
				next->gone[old->type][s] += old->last[s] - old->base[s];
			memcpy(p->base, old->last, sizeof(p->base));
		}
	}
	/* else new, or a reused pid (the old entry, unmatched, is gone) */

	memcpy(v, prev, sizeof(v));
	v[STAT_UTIME] = utime;
	v[STAT_STIME] = stime;
	read_counts(pid, v, p,
				old != NULL && old->starttime == starttime ? old : NULL,
				&sched, have_io, keep);

	/* a process's counts never go back (a file missing carries them) */
	for (int s = 0; s < NSTATS; s++)
		p->last[s] = Max(v[s], prev[s]);
	next->seen[type] = true;
}

/*
 * The next reading (next) starts from the current one's totals; its
 * memory context is emptied, its process list sized for nentries status
 * entries and the sampler.  Both contexts are children of TopMemoryContext:
 * the readings outlive the snapshots.
 */
static void
start_reading(PcpuState *cur, PcpuState *next, int nentries, TimestampTz now)
{
	if (state_cxt[0] == NULL)
	{
		for (int i = 0; i < 2; i++)
			state_cxt[i] = AllocSetContextCreate(TopMemoryContext,
												 "pg_chronicle os_process_cpu",
												 ALLOCSET_SMALL_SIZES);
		clock_ticks = sysconf(_SC_CLK_TCK);
		if (clock_ticks <= 0)
			clock_ticks = 100;
	}

	idle_rereads = 0;
	MemoryContextReset(state_cxt[1 - current]);
	next_pending = false;
	next->started = cur->started;
	memcpy(next->seen, cur->seen, sizeof(next->seen));
	if (next->started == 0)
	{
		/* the first reading of this process: the counts start here */
		next->started = now;
		for (int t = 0; t < NTYPES; t++)
			next->seen[t] = type_listed(t);
	}
	memcpy(next->gone, cur->gone, sizeof(next->gone));
	memcpy(next->exited, cur->exited, sizeof(next->exited));
	next->nprocs = 0;
	/* at most one entry a status entry, and the sampler's */
	next->procs = MemoryContextAlloc(state_cxt[1 - current],
									 sizeof(PcpuProc) * (nentries + 1));
}

/*
 * Processes of the current reading not seen again are gone: what they
 * counted moves to their type's total, so that the total never drops.
 */
static void
count_gone(PcpuState *cur, PcpuState *next, const bool *matched)
{
	for (int i = 0; i < cur->nprocs; i++)
	{
		PcpuProc   *old = &cur->procs[i];

		if (matched[i])
			continue;
		for (int s = 0; s < NSTATS; s++)
			next->gone[old->type][s] += old->last[s] - old->base[s];
		next->exited[old->type]++;
	}
}

/*
 * Sorted by pid for the next lookup; a pid listed twice counts once.  The
 * pointers are sorted and the entries copied once, in order, into a new
 * array of the same context: sorting the entries themselves moved every
 * one of them many times over (3 % of the collector's CPU).
 */
static void
sort_procs(PcpuState *next)
{
	PcpuProc  **order;
	PcpuProc   *sorted;
	int			n = 0;

	if (next->nprocs <= 1)
		return;
	order = palloc(sizeof(PcpuProc *) * next->nprocs);
	for (int i = 0; i < next->nprocs; i++)
		order[i] = &next->procs[i];
	qsort(order, next->nprocs, sizeof(PcpuProc *), proc_ptr_cmp);
	sorted = MemoryContextAlloc(state_cxt[1 - current], sizeof(PcpuProc) * next->nprocs);
	for (int i = 0; i < next->nprocs; i++)
		if (n == 0 || order[i]->pid != sorted[n - 1].pid)
			sorted[n++] = *order[i];
	pfree(order);
	pfree(next->procs);
	next->procs = sorted;
	next->nprocs = n;
}

/*
 * A row per backend type seen: the totals of the gone processes and of the
 * live ones' counts since they were first seen, and how many are live.
 */
static void
emit_types(ChronicleEmitter *emitter, PcpuState *next, bool have_schedstat, bool have_io)
{
	int64		live[NTYPES][NSTATS];
	int64		nlive[NTYPES];

	memcpy(live, next->gone, sizeof(live));
	memset(nlive, 0, sizeof(nlive));
	for (int i = 0; i < next->nprocs; i++)
	{
		PcpuProc   *p = &next->procs[i];

		for (int s = 0; s < NSTATS; s++)
			live[p->type][s] += p->last[s] - p->base[s];
		if (p->counted)
			nlive[p->type]++;
	}

	for (int t = 0; t < NTYPES; t++)
	{
		Datum		values[PCPU_NCOLUMNS] = {0};
		bool		nulls[PCPU_NCOLUMNS] = {0};
		int64	   *c = live[t];

		if (!next->seen[t])
			continue;
		values[PCPU_BACKEND_TYPE] = CStringGetTextDatum(type_name(t));
		values[PCPU_USER_MS] = Float8GetDatum((double) c[STAT_UTIME] * 1000.0 / clock_ticks);
		values[PCPU_SYSTEM_MS] = Float8GetDatum((double) c[STAT_STIME] * 1000.0 / clock_ticks);
		values[PCPU_RUN_DELAY_MS] = Float8GetDatum((double) (c[STAT_RUN_DELAY] / 1000) / 1000.0);
		nulls[PCPU_RUN_DELAY_MS] = !have_schedstat;
		values[PCPU_READ_BYTES] = Int64GetDatum(c[STAT_READ_BYTES]);
		values[PCPU_WRITE_BYTES] = Int64GetDatum(c[STAT_WRITE_BYTES]);
		nulls[PCPU_READ_BYTES] = nulls[PCPU_WRITE_BYTES] = !have_io;
		values[PCPU_VOLUNTARY] = Int64GetDatum(c[STAT_VOLUNTARY]);
		values[PCPU_NONVOLUNTARY] = Int64GetDatum(c[STAT_NONVOLUNTARY]);
		values[PCPU_EXITED] = Int64GetDatum(next->exited[t]);
		values[PCPU_PROCESSES] = Int64GetDatum(nlive[t]);
		values[PCPU_COLLECTOR_STARTED] = TimestampTzGetDatum(next->started);
		chronicle_emit_row(emitter, values, nulls);
	}
}

/*
 * The backend type of a status entry: pg_stat_activity's, a background
 * worker in a lock group led by another process being a parallel worker.
 * -1 for an entry without a type.
 */
static int
entry_type(LocalPgBackendStatus *local)
{
	PgBackendStatus *be = &local->backendStatus;

	if (be->st_backendType == B_INVALID || be->st_backendType >= BACKEND_NUM_TYPES)
		return -1;
	if (be->st_backendType == B_BG_WORKER &&
		local->proc_number >= 0 &&
		local->proc_number < (int) ProcGlobal->allProcCount)
	{
		volatile PGPROC *proc = GetPGProcByNumber(local->proc_number);
		PGPROC	   *leader = proc->lockGroupLeader;

		if (proc->pid == be->st_procpid && leader != NULL &&
			leader != (PGPROC *) proc)
			return TYPE_PARALLEL_WORKER;
	}
	return (int) be->st_backendType;
}

static void
os_process_cpu_collect(ChronicleEmitter *emitter)
{
	int			nentries = pgstat_fetch_stat_numbackends();
	PcpuState  *cur = &state[current];
	PcpuState  *next = &state[1 - current];
	bool	   *matched;
	bool		have_schedstat = chronicle_proc_exists("self/schedstat");
	bool		have_io = chronicle_proc_exists("self/io");
	TimestampTz now = GetCurrentTimestamp();
	ChronicleSamplerCounters sc;

	start_reading(cur, next, nentries, now);
	matched = palloc0(sizeof(bool) * Max(cur->nprocs, 1));

	for (int i = 1; i <= nentries; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);
		int			type;

		if (local == NULL || local->backendStatus.st_procpid <= 0)
			continue;
		type = entry_type(local);
		if (type < 0)
			continue;
		read_process(cur, matched, next, (int) local->backendStatus.st_procpid,
					 type, &local->backendStatus, now, have_schedstat, have_io);
	}
	/* the wait sampler: a background worker without a status entry */
	if (chronicle_sampler_available() && chronicle_sampler_read(&sc, NULL, NULL) &&
		sc.pid > 0)
		read_process(cur, matched, next, (int) sc.pid, B_BG_WORKER, NULL, now,
					 have_schedstat, have_io);

	/* the files of processes not read this time are closed */
	chronicle_proc_pid_sweep();
	count_gone(cur, next, matched);
	sort_procs(next);
	emit_types(emitter, next, have_schedstat, have_io);
	next_pending = true;
}

/* The rows are written: the next reading becomes the current one. */
static void
os_process_cpu_written(void)
{
	if (!next_pending)
		return;
	current = 1 - current;
	next_pending = false;
}

static const ChronicleAnalysis os_process_cpu_analysis = {
	.prefix = "os_process_cpu",
	.filters = (const char *const[]) {"backend_type", NULL},

	/*
	 * A type's counts start at zero with the collector (and with a type's
	 * first process), so a backend type first seen within a segment counts
	 * from its first row.
	 */
	.born_at_zero = true,
	.gauge_unit = "processes",
};

CHRONICLE_SOURCE(os_process_cpu, PCPU,
				 "CPU, run delay, block I/O and context switches of the server's processes "
				 "by backend type (/proc/<pid>/stat, schedstat, io, status)",
				 .analysis = &os_process_cpu_analysis,
				 .available = os_process_cpu_available,
				 .page_columns = (const char *const[]) {"read_bytes", "write_bytes", NULL},
				 .written = os_process_cpu_written);
