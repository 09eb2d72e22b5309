/*-------------------------------------------------------------------------
 *
 * source_os_memory.c
 *		/proc/meminfo and /proc/vmstat: one row per snapshot.
 *
 * The meminfo columns are gauges in kB, as the file shows them (free
 * memory falling to zero while Dirty builds up is what explains many
 * latency dips); the vmstat columns are cumulative page and swap counters
 * since boot.  A field the kernel does not show stays NULL.  Linux only:
 * without /proc/meminfo the source is not available and records nothing.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "os_proc.h"
#include "source.h"

#define MEM_COLUMNS(C) \
	/* /proc/meminfo: gauges, kB */						\
	C(MEM_TOTAL, "mem_total", INT8OID, GAUGE)			\
	C(MEM_FREE, "mem_free", INT8OID, GAUGE)				\
	C(MEM_AVAILABLE, "mem_available", INT8OID, GAUGE)	\
	C(MEM_BUFFERS, "buffers", INT8OID, GAUGE)			\
	C(MEM_CACHED, "cached", INT8OID, GAUGE)				\
	C(MEM_DIRTY, "dirty", INT8OID, GAUGE)				\
	C(MEM_WRITEBACK, "writeback", INT8OID, GAUGE)		\
	C(MEM_SHMEM, "shmem", INT8OID, GAUGE)				\
	C(MEM_SWAP_TOTAL, "swap_total", INT8OID, GAUGE)		\
	C(MEM_SWAP_FREE, "swap_free", INT8OID, GAUGE)		\
	/* /proc/vmstat: cumulative counters */				\
	C(MEM_PGPGIN, "pgpgin", INT8OID, COUNTER)			\
	C(MEM_PGPGOUT, "pgpgout", INT8OID, COUNTER)			\
	C(MEM_PSWPIN, "pswpin", INT8OID, COUNTER)			\
	C(MEM_PSWPOUT, "pswpout", INT8OID, COUNTER)

CHRONICLE_COLUMNS(MEM_COLUMNS, os_memory_columns, MEM_NCOLUMNS, MEM_NKEYS);

/* the meminfo columns, then the vmstat ones */
#define MEM_NMEMINFO MEM_PGPGIN

static const char *const meminfo_names[MEM_NMEMINFO] = {
	"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "Dirty",
	"Writeback", "Shmem", "SwapTotal", "SwapFree",
};

static const char *const vmstat_names[MEM_NCOLUMNS - MEM_NMEMINFO] = {
	"pgpgin", "pgpgout", "pswpin", "pswpout",
};

static bool
os_memory_available(void)
{
	return chronicle_proc_exists("meminfo");
}

static void
os_memory_collect(ChronicleEmitter *emitter)
{
	Datum		values[MEM_NCOLUMNS] = {0};
	bool		nulls[MEM_NCOLUMNS];
	int64		v[MEM_NCOLUMNS];
	bool		found[MEM_NCOLUMNS];

	if (!chronicle_proc_read_keyed("meminfo", meminfo_names, MEM_NMEMINFO,
								   v, found))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read \"%s/meminfo\": %m", chronicle_proc_root)));
	/* vmstat may be absent (some containers): its columns stay NULL */
	(void) chronicle_proc_read_keyed("vmstat", vmstat_names,
									 MEM_NCOLUMNS - MEM_NMEMINFO,
									 v + MEM_NMEMINFO, found + MEM_NMEMINFO);

	for (int c = 0; c < MEM_NCOLUMNS; c++)
	{
		nulls[c] = !found[c];
		values[c] = Int64GetDatum(v[c]);
	}
	chronicle_emit_row(emitter, values, nulls);
}

static const ChronicleAnalysis os_memory_analysis = {
	.prefix = "os_memory",
	.gauge_unit = "kB",
};

CHRONICLE_SOURCE(os_memory, MEM,
				 "/proc/meminfo (kB, gauges) and /proc/vmstat page and swap counters",
				 .analysis = &os_memory_analysis,
				 .available = os_memory_available,
				 /* chronicle.proc_root and .os_disks, used by every OS source */
				 .define_settings = chronicle_os_define_settings);
