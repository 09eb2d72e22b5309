/*-------------------------------------------------------------------------
 *
 * source_os_disk.c
 *		/proc/diskstats of the devices holding the data directory and WAL.
 *
 * Every column iostat derives r/s, w/s, rkB/s, wkB/s, r_await, w_await,
 * aqu-sz and %util from is recorded as the kernel shows it: cumulative
 * counters since boot, except in_flight (a gauge).  Kernels before 4.18
 * have no discard columns and before 5.5 no flush columns: those stay NULL.
 *
 * Which devices: by default the ones whose device number (major:minor) is
 * the st_dev of the data directory and of pg_wal (stat() follows the
 * pg_wal symlink), with role 'data', 'wal', or 'data,wal' when both live on
 * the same device.  That row is the partition or the device-mapper volume
 * (dm-N) the file system sits on, whichever diskstats lists under that
 * number.  File systems without a block device of their own (overlayfs in
 * containers, tmpfs, btrfs subvolumes, NFS) report an anonymous device
 * (major 0) that diskstats does not list: nothing is recorded for them
 * unless chronicle.os_disks names the devices, as "device[=role],...",
 * e.g. 'nvme0n1=data,nvme1n1=wal' or 'vda=data+wal' (stored as 'data,wal';
 * role 'disk' when not given).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#ifdef __linux__
#include <sys/sysmacros.h>
#endif

#include "access/xlog_internal.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include "os_proc.h"
#include "source.h"

#define DISK_COLUMNS(C) \
	C(DISK_DEVICE, "device", TEXTOID, KEY)									\
	C(DISK_ROLE, "role", TEXTOID, KEY)	/* 'data', 'wal' or 'data,wal' */	\
	C(DISK_READS_COMPLETED, "reads_completed", INT8OID, COUNTER)			\
	C(DISK_READS_MERGED, "reads_merged", INT8OID, COUNTER)					\
	C(DISK_SECTORS_READ, "sectors_read", INT8OID, COUNTER)					\
	C(DISK_READ_TIME_MS, "read_time_ms", INT8OID, COUNTER)					\
	C(DISK_WRITES_COMPLETED, "writes_completed", INT8OID, COUNTER)			\
	C(DISK_WRITES_MERGED, "writes_merged", INT8OID, COUNTER)				\
	C(DISK_SECTORS_WRITTEN, "sectors_written", INT8OID, COUNTER)			\
	C(DISK_WRITE_TIME_MS, "write_time_ms", INT8OID, COUNTER)				\
	C(DISK_IN_FLIGHT, "in_flight", INT8OID, RECORDED)	/* a gauge */		\
	C(DISK_IO_TIME_MS, "io_time_ms", INT8OID, COUNTER)						\
	C(DISK_WEIGHTED_IO_TIME_MS, "weighted_io_time_ms", INT8OID, COUNTER)	\
	C(DISK_DISCARDS_COMPLETED, "discards_completed", INT8OID, COUNTER)		\
	C(DISK_DISCARDS_MERGED, "discards_merged", INT8OID, COUNTER)			\
	C(DISK_SECTORS_DISCARDED, "sectors_discarded", INT8OID, COUNTER)		\
	C(DISK_DISCARD_TIME_MS, "discard_time_ms", INT8OID, COUNTER)			\
	C(DISK_FLUSHES_COMPLETED, "flushes_completed", INT8OID, COUNTER)		\
	C(DISK_FLUSH_TIME_MS, "flush_time_ms", INT8OID, COUNTER)

CHRONICLE_COLUMNS(DISK_COLUMNS, os_disk_columns, DISK_NCOLUMNS, DISK_NKEYS);

#define DISK_NSTATS (DISK_NCOLUMNS - DISK_READS_COMPLETED)

#define MAX_WANTED 16

typedef struct WantedDisk
{
	bool		by_name;
	unsigned int major;
	unsigned int minor;
	char		name[64];
	char		role[64];
} WantedDisk;

static bool
os_disk_available(void)
{
	return chronicle_proc_exists("diskstats");
}

/* The devices of the data directory and pg_wal; returns how many. */
static int
wanted_auto(WantedDisk *w)
{
	struct stat data_st;
	struct stat wal_st;
	int			n = 0;
	bool		have_wal;

	if (stat(DataDir, &data_st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat data directory \"%s\": %m", DataDir)));
	have_wal = stat(XLOGDIR, &wal_st) == 0;	/* relative to DataDir, the cwd */

#ifdef __linux__
	if (major(data_st.st_dev) != 0)
	{
		w[n].by_name = false;
		w[n].major = major(data_st.st_dev);
		w[n].minor = minor(data_st.st_dev);
		strlcpy(w[n].role,
				have_wal && wal_st.st_dev == data_st.st_dev ? "data,wal" : "data",
				sizeof(w[n].role));
		n++;
	}
	if (have_wal && wal_st.st_dev != data_st.st_dev && major(wal_st.st_dev) != 0)
	{
		w[n].by_name = false;
		w[n].major = major(wal_st.st_dev);
		w[n].minor = minor(wal_st.st_dev);
		strlcpy(w[n].role, "wal", sizeof(w[n].role));
		n++;
	}
#endif
	return n;
}

/* chronicle.os_disks: "device[=role], ..." */
static int
wanted_listed(WantedDisk *w)
{
	const char *p = chronicle_os_disks;
	int			n = 0;

	while (*p && n < MAX_WANTED)
	{
		char		item[130];
		int			len = 0;
		char	   *eq;
		char	   *s;
		char	   *e;

		while (*p == ',' || *p == ' ')
			p++;
		while (*p && *p != ',' && len < (int) sizeof(item) - 1)
			item[len++] = *p++;
		item[len] = '\0';
		/* trim */
		s = item;
		e = item + len;
		while (e > s && e[-1] == ' ')
			*--e = '\0';
		if (*s == '\0')
			continue;
		eq = strchr(s, '=');
		if (eq)
		{
			*eq = '\0';
			strlcpy(w[n].role, eq + 1, sizeof(w[n].role));
			/* "data+wal" is the role the automatic choice calls "data,wal" */
			for (char *r = w[n].role; *r; r++)
				if (*r == '+')
					*r = ',';
		}
		else
			strlcpy(w[n].role, "disk", sizeof(w[n].role));
		w[n].by_name = true;
		strlcpy(w[n].name, s, sizeof(w[n].name));
		n++;
	}
	return n;
}

/*
 * The row of a wanted device: name as the line has it, counters the rest of
 * its line (11 to 17 of them, by kernel version: those it lacks are NULL).
 * A line with fewer than 11 is not one we understand, and is passed over.
 */
static void
emit_disk(ChronicleEmitter *emitter, const WantedDisk *w, const char *name,
		  const char *counters)
{
	Datum		values[DISK_NCOLUMNS] = {0};
	bool		nulls[DISK_NCOLUMNS];
	const char *p = counters;
	int			n = 0;

	for (int c = 0; c < DISK_NSTATS; c++)
	{
		char	   *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(p, &end, 10);
		nulls[DISK_READS_COMPLETED + c] = (end == p || errno != 0 || n < c);
		if (nulls[DISK_READS_COMPLETED + c])
			continue;
		values[DISK_READS_COMPLETED + c] = ChronicleUInt64GetDatum((uint64) v);
		n++;
		p = end;
	}
	if (n < 11)
		return;
	values[DISK_DEVICE] = CStringGetTextDatum(name);
	values[DISK_ROLE] = CStringGetTextDatum(w->role);
	nulls[DISK_DEVICE] = nulls[DISK_ROLE] = false;
	chronicle_emit_row(emitter, values, nulls);
}

static void
os_disk_collect(ChronicleEmitter *emitter)
{
	WantedDisk	wanted[MAX_WANTED];
	int			nwanted;
	ChronicleProcText text;
	char	   *line;

	if (chronicle_os_disks && chronicle_os_disks[0] != '\0')
		nwanted = wanted_listed(wanted);
	else
		nwanted = wanted_auto(wanted);
	if (nwanted == 0)
		return;

	if (!chronicle_proc_read("diskstats", &text))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read \"%s/diskstats\": %m", chronicle_proc_root)));

	while ((line = chronicle_proc_line(&text)) != NULL)
	{
		unsigned int maj,
					min;
		char		name[64];
		int			pos;

		/* the device first: most lines are of devices not wanted */
		if (sscanf(line, "%u %u %63s%n", &maj, &min, name, &pos) < 3)
			continue;			/* not a device line we understand */
		for (int i = 0; i < nwanted; i++)
		{
			if (wanted[i].by_name ? strcmp(wanted[i].name, name) == 0 :
				(wanted[i].major == maj && wanted[i].minor == min))
				emit_disk(emitter, &wanted[i], name, line + pos);
		}
	}
}

static const ChronicleAnalysis os_disk_analysis = {
	.prefix = "os_disk",
	.filters = (const char *const[]) {"device", NULL},
	.per_op = (const ChroniclePerOp[]) {
		{"ms_per_read", "read_time_ms", "reads_completed"},
		{"ms_per_write", "write_time_ms", "writes_completed"},
		{NULL}
	},
};

CHRONICLE_SOURCE(os_disk, DISK,
				 "/proc/diskstats of the devices under the data directory and pg_wal",
				 .analysis = &os_disk_analysis,
				 .available = os_disk_available);
