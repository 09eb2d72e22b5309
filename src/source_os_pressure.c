/*-------------------------------------------------------------------------
 *
 * source_os_pressure.c
 *		/proc/pressure/{cpu,io,memory}: cumulative stall time per resource.
 *
 * Each file has a "some" line and (memory, io, and cpu since Linux 5.13) a
 * "full" line: "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345".  Only
 * total= (microseconds, cumulative) is recorded: the averages are derived
 * by the kernel and can be recomputed from totals over any interval.
 * Resources whose file is missing (kernels without PSI, or PSI disabled)
 * are skipped; without /proc/pressure the source is not available.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include "os_proc.h"
#include "source.h"

#define PSI_COLUMNS(C) \
	C(PSI_RESOURCE, "resource", TEXTOID, KEY)	/* 'cpu', 'io', 'memory' */	\
	/* cumulative stall time, microseconds */								\
	C(PSI_SOME_TOTAL, "some_total", INT8OID, COUNTER)						\
	C(PSI_FULL_TOTAL, "full_total", INT8OID, COUNTER)

CHRONICLE_COLUMNS(PSI_COLUMNS, os_pressure_columns, PSI_NCOLUMNS, PSI_NKEYS);

static const char *const psi_resources[] = {"cpu", "io", "memory"};

static bool
os_pressure_available(void)
{
	return chronicle_proc_exists("pressure/cpu") ||
		chronicle_proc_exists("pressure/io") ||
		chronicle_proc_exists("pressure/memory");
}

static void
os_pressure_collect(ChronicleEmitter *emitter)
{
	for (int r = 0; r < lengthof(psi_resources); r++)
	{
		char		relpath[64];
		ChronicleProcText text;
		char	   *line;
		Datum		values[PSI_NCOLUMNS] = {0};
		bool		nulls[PSI_NCOLUMNS] = {false, true, true};

		snprintf(relpath, sizeof(relpath), "pressure/%s", psi_resources[r]);
		if (!chronicle_proc_read(relpath, &text))
			continue;
		while ((line = chronicle_proc_line(&text)) != NULL)
		{
			char	   *t = strstr(line, "total=");
			long long	total;
			int			col;

			if (strncmp(line, "some ", 5) == 0)
				col = PSI_SOME_TOTAL;
			else if (strncmp(line, "full ", 5) == 0)
				col = PSI_FULL_TOTAL;
			else
				continue;
			if (t == NULL || sscanf(t + 6, "%lld", &total) != 1)
				continue;
			values[col] = Int64GetDatum((int64) total);
			nulls[col] = false;
		}
		if (nulls[PSI_SOME_TOTAL] && nulls[PSI_FULL_TOTAL])
			continue;			/* unreadable (PSI disabled: EOPNOTSUPP) */
		values[PSI_RESOURCE] = CStringGetTextDatum(psi_resources[r]);
		chronicle_emit_row(emitter, values, nulls);
	}
}

static const ChronicleAnalysis os_pressure_analysis = {
	.prefix = "os_pressure",
	.filters = (const char *const[]) {"resource", NULL},
};

CHRONICLE_SOURCE(os_pressure, PSI,
				 "/proc/pressure cpu, io and memory stall totals (microseconds)",
				 .analysis = &os_pressure_analysis,
				 .available = os_pressure_available);
