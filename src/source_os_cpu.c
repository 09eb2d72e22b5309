/*-------------------------------------------------------------------------
 *
 * source_os_cpu.c
 *		/proc/stat: the CPU time of the whole system by mode, context
 *		switches, processes created, running and blocked.  One row per
 *		snapshot.
 *
 * The aggregate "cpu" line is the time every CPU spent in each mode since
 * boot, in USER_HZ ticks (sysconf(_SC_CLK_TCK), 100 on every common
 * architecture); it is recorded in milliseconds, ticks * 1000 / USER_HZ,
 * so that it is a TIME column like every other time of pg_chronicle.  The
 * modes add up to the CPUs' time: over an interval of s seconds their
 * deltas sum to about cpus * 1000 * s ms (less what a busy virtual CPU
 * lost while its host ran something else and no tick was accounted; the
 * kernel samples busy time at its timer tick), so a mode's share of an
 * interval is its delta over the sum of the modes' deltas, as top, mpstat
 * and sar compute it.  guest and guest_nice (the time a virtual machine
 * ran on this host's CPUs) are included in user and nice by the kernel:
 * they must not be added to the others.
 *
 * Fields a kernel does not show stay NULL: steal before Linux 2.6.11,
 * guest before 2.6.24, guest_nice before 2.6.33; a line of ctxt,
 * processes, procs_running or procs_blocked that is missing or not a
 * number likewise.  A file without an aggregate "cpu" line of at least
 * user, nice, system and idle, or with one whose fields are not unsigned
 * decimal numbers, is an error (the collector counts it and backs off);
 * fields after the tenth (a later kernel's) are not read.  Without
 * /proc/stat the source is not available and records nothing.
 *
 * The kernel documents that iowait "will decrease in certain conditions"
 * (Documentation/filesystems/proc.rst): the idle time of a CPU reads as
 * iowait while a task that last ran on it waits for I/O, but if the task
 * is woken before the CPU leaves idle, the whole idle period is accounted
 * as idle when it does, and the iowait read meanwhile is taken back.
 * Recorded as read: an interval in which it went backwards is a reset for
 * the analysis, with NULL deltas, like any counter that goes back.
 *
 * The boot time (btime) is recorded but is not the reset column: a reboot
 * restarts the server, which starts a new segment anyway, whereas btime is
 * the wall clock minus the time since boot and moves whenever the wall
 * clock is stepped, which would make an interval a reset for nothing.
 *
 * The file is read once per snapshot, whole (os_proc.c): every column of a
 * row comes from the same reading.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "utils/timestamp.h"

#include "os_proc.h"
#include "source.h"

#define CPU_COLUMNS(C) \
	/* the "cpu" line: milliseconds of all CPUs since boot, per mode */			\
	C(CPU_USER_MS, "user_ms", FLOAT8OID, TIME)	/* guest_ms included */			\
	C(CPU_NICE_MS, "nice_ms", FLOAT8OID, TIME)	/* guest_nice_ms included */	\
	C(CPU_SYSTEM_MS, "system_ms", FLOAT8OID, TIME)								\
	C(CPU_IDLE_MS, "idle_ms", FLOAT8OID, TIME)									\
	/* idle while a task waits for I/O; may decrease (see the top) */			\
	C(CPU_IOWAIT_MS, "iowait_ms", FLOAT8OID, TIME)								\
	C(CPU_IRQ_MS, "irq_ms", FLOAT8OID, TIME)									\
	C(CPU_SOFTIRQ_MS, "softirq_ms", FLOAT8OID, TIME)							\
	/* a virtual machine's CPUs ready to run while the host ran another */		\
	C(CPU_STEAL_MS, "steal_ms", FLOAT8OID, TIME)								\
	/* virtual CPUs of guests run by this host: part of user_ms, nice_ms */		\
	C(CPU_GUEST_MS, "guest_ms", FLOAT8OID, TIME)								\
	C(CPU_GUEST_NICE_MS, "guest_nice_ms", FLOAT8OID, TIME)						\
	/* context switches and processes (and threads) created since boot */		\
	C(CPU_CTXT, "ctxt", INT8OID, COUNTER)										\
	C(CPU_PROCESSES, "processes", INT8OID, COUNTER)								\
	/*																			\
	 * runnable tasks (running or waiting for a CPU; the collector itself		\
	 * is one) and tasks in uninterruptible sleep waiting for I/O, at the		\
	 * snapshot																	\
	 */																			\
	C(CPU_PROCS_RUNNING, "procs_running", INT8OID, GAUGE)						\
	C(CPU_PROCS_BLOCKED, "procs_blocked", INT8OID, GAUGE)						\
	/* online CPUs: the "cpuN" lines (the kernel prints one per online CPU) */	\
	C(CPU_CPUS, "cpus", INT8OID, GAUGE)											\
	/* btime, the time of boot (see the top: not the reset column) */			\
	C(CPU_BOOT_TIME, "boot_time", TIMESTAMPTZOID, RECORDED)

CHRONICLE_COLUMNS(CPU_COLUMNS, os_cpu_columns, CPU_NCOLUMNS, CPU_NKEYS);

/* the modes of the "cpu" line, in its order: user_ms .. guest_nice_ms */
#define CPU_NMODES (CPU_GUEST_NICE_MS - CPU_USER_MS + 1)
/* user, nice, system and idle: what every kernel shows */
#define CPU_MIN_MODES 4

/* The "name value" lines, in the order of the columns from ctxt on. */
static const char *const stat_names[] = {
	"ctxt", "processes", "procs_running", "procs_blocked",
};

StaticAssertDecl(lengthof(stat_names) == CPU_PROCS_BLOCKED - CPU_CTXT + 1,
				 "a /proc/stat name per counter and gauge column");

/* 9999-12-31 23:59:59 UTC: a larger btime is not a time (a damaged file) */
#define BTIME_MAX INT64CONST(253402300799)

static bool
os_cpu_available(void)
{
	return chronicle_proc_exists("stat");
}

/*
 * The unsigned decimal number at *p, after blanks, into *v, and *p moved
 * past it.  False if there is none (the end of the line, a sign, a
 * letter), it does not end at a blank or the end, or it overflows.
 */
static bool
next_number(char **p, uint64 *v)
{
	char	   *s = *p;
	char	   *end;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!isdigit((unsigned char) *s))
		return false;
	errno = 0;
	*v = strtou64(s, &end, 10);
	if (errno != 0 || (*end != '\0' && *end != ' ' && *end != '\t'))
		return false;
	*p = end;
	return true;
}

/* Whether only blanks are left of the line at p. */
static bool
at_end(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return *p == '\0';
}

/*
 * The fields of the aggregate "cpu" line (p points after "cpu") into
 * values[] and nulls[] of the mode columns, in milliseconds.
 */
static void
parse_cpu_line(char *p, Datum *values, bool *nulls)
{
	static long user_hz = 0;
	int			n;

	if (user_hz <= 0)
	{
		user_hz = sysconf(_SC_CLK_TCK);
		if (user_hz <= 0)
			ereport(ERROR,
					(errmsg("could not determine the clock ticks per second (USER_HZ): %m")));
	}

	for (n = 0; n < CPU_NMODES && !at_end(p); n++)
	{
		uint64		ticks;

		if (!next_number(&p, &ticks))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("could not parse the \"cpu\" line of \"%s/stat\": field %d is not an unsigned number",
							chronicle_proc_root, n + 1)));
		values[CPU_USER_MS + n] = Float8GetDatum((double) ticks * 1000.0 / user_hz);
		nulls[CPU_USER_MS + n] = false;
	}
	if (n < CPU_MIN_MODES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("could not parse the \"cpu\" line of \"%s/stat\": %d fields, fewer than %d",
						chronicle_proc_root, n, CPU_MIN_MODES)));
}

static void
os_cpu_collect(ChronicleEmitter *emitter)
{
	ChronicleProcText text;
	char	   *line;
	Datum		values[CPU_NCOLUMNS] = {0};
	bool		nulls[CPU_NCOLUMNS];
	bool		have_cpu = false;
	int64		cpus = 0;

	for (int c = 0; c < CPU_NCOLUMNS; c++)
		nulls[c] = true;

	if (!chronicle_proc_read("stat", &text))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read \"%s/stat\": %m", chronicle_proc_root)));

	while ((line = chronicle_proc_line(&text)) != NULL)
	{
		char	   *p = line;
		size_t		namelen;
		uint64		v;

		if (strncmp(line, "cpu", 3) == 0)
		{
			if (isdigit((unsigned char) line[3]))
				cpus++;
			else if ((line[3] == ' ' || line[3] == '\t') && !have_cpu)
			{
				parse_cpu_line(line + 3, values, nulls);
				have_cpu = true;
			}
			continue;
		}

		/* "name value": the first line of a name counts */
		while (*p && *p != ' ' && *p != '\t')
			p++;
		namelen = p - line;
		if (!next_number(&p, &v))
			continue;			/* not a number: NULL, as a missing line */
		if (namelen == 5 && strncmp(line, "btime", 5) == 0)
		{
			if (nulls[CPU_BOOT_TIME] && v <= (uint64) BTIME_MAX)
			{
				values[CPU_BOOT_TIME] = TimestampTzGetDatum(time_t_to_timestamptz((pg_time_t) v));
				nulls[CPU_BOOT_TIME] = false;
			}
			continue;
		}
		for (int i = 0; i < lengthof(stat_names); i++)
		{
			if (nulls[CPU_CTXT + i] && strlen(stat_names[i]) == namelen &&
				strncmp(stat_names[i], line, namelen) == 0)
			{
				values[CPU_CTXT + i] = ChronicleUInt64GetDatum(v);
				nulls[CPU_CTXT + i] = false;
				break;
			}
		}
	}

	if (!have_cpu)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("could not parse \"%s/stat\": no \"cpu\" line",
						chronicle_proc_root)));
	values[CPU_CPUS] = Int64GetDatum(cpus);
	nulls[CPU_CPUS] = (cpus == 0);
	chronicle_emit_row(emitter, values, nulls);
}

/*
 * No filters (one row), no per-operation ratio: CPU time per context
 * switch or per process created says nothing one can act on.
 */
static const ChronicleAnalysis os_cpu_analysis = {
	.prefix = "os_cpu",
	.gauge_unit = "count",		/* processes (procs_*), CPUs (cpus) */
};

CHRONICLE_SOURCE(os_cpu, CPU,
				 "/proc/stat CPU time by mode (ms), context switches and processes created, running and blocked",
				 .analysis = &os_cpu_analysis,
				 .available = os_cpu_available);
