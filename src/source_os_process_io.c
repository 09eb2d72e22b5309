/*-------------------------------------------------------------------------
 *
 * source_os_process_io.c
 *		/proc/<pid>/io of the checkpointer, the WAL writer and the
 *		background writer.
 *
 * read_bytes/write_bytes are what the process made the block layer do
 * (write_bytes counts pages dirtied for writeback, so it shows the
 * checkpointer's and bgwriter's writes even though the kernel flushes them
 * later); rchar/wchar are all read()/write() bytes, page cache included.
 * The pids come from the backend status array, which lists the auxiliary
 * processes too.  The file is readable by the process's own user, which
 * the collector shares with every server process.  Counters are per
 * process: a restarted process (new pid) is a new key and a new baseline.
 * A process that is not running (no WAL writer on a standby) or whose file
 * cannot be read is skipped.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"

#include "os_proc.h"
#include "source.h"

#define PIO_COLUMNS(C) \
	C(PIO_BACKEND_TYPE, "backend_type", TEXTOID, KEY)						\
	C(PIO_PID, "pid", INT4OID, KEY)	/* a new pid is a new baseline */		\
	C(PIO_RCHAR, "rchar", INT8OID, COUNTER)									\
	C(PIO_WCHAR, "wchar", INT8OID, COUNTER)									\
	C(PIO_SYSCR, "syscr", INT8OID, COUNTER)									\
	C(PIO_SYSCW, "syscw", INT8OID, COUNTER)									\
	C(PIO_READ_BYTES, "read_bytes", INT8OID, COUNTER)						\
	C(PIO_WRITE_BYTES, "write_bytes", INT8OID, COUNTER)						\
	C(PIO_CANCELLED_WRITE_BYTES, "cancelled_write_bytes", INT8OID, COUNTER)

CHRONICLE_COLUMNS(PIO_COLUMNS, os_process_io_columns, PIO_NCOLUMNS, PIO_NKEYS);

#define PIO_NSTATS (PIO_NCOLUMNS - PIO_RCHAR)

static const char *const pio_names[PIO_NSTATS] = {
	"rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes",
	"cancelled_write_bytes",
};

static bool
os_process_io_available(void)
{
	return chronicle_proc_exists("self/io");
}

static void
os_process_io_collect(ChronicleEmitter *emitter)
{
	int			n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);
		PgBackendStatus *be;
		char		relpath[64];
		int64		v[PIO_NSTATS];
		bool		found[PIO_NSTATS];
		Datum		values[PIO_NCOLUMNS] = {0};
		bool		nulls[PIO_NCOLUMNS];

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_procpid <= 0 ||
			(be->st_backendType != B_CHECKPOINTER &&
			 be->st_backendType != B_WAL_WRITER &&
			 be->st_backendType != B_BG_WRITER))
			continue;

		snprintf(relpath, sizeof(relpath), "%d/io", (int) be->st_procpid);
		if (!chronicle_proc_read_keyed(relpath, pio_names, PIO_NSTATS, v, found))
			continue;			/* exited meanwhile, or not readable */

		values[PIO_BACKEND_TYPE] =
			CStringGetTextDatum(GetBackendTypeDesc(be->st_backendType));
		values[PIO_PID] = Int32GetDatum((int32) be->st_procpid);
		nulls[PIO_BACKEND_TYPE] = nulls[PIO_PID] = false;
		for (int c = 0; c < PIO_NSTATS; c++)
		{
			nulls[PIO_RCHAR + c] = !found[c];
			values[PIO_RCHAR + c] = Int64GetDatum(v[c]);
		}
		chronicle_emit_row(emitter, values, nulls);
	}
}

CHRONICLE_SOURCE(os_process_io, PIO,
				 "/proc/<pid>/io of the checkpointer, WAL writer and background writer",
				 .available = os_process_io_available,
				 .page_columns = (const char *const[]) {"read_bytes", "write_bytes", "cancelled_write_bytes", NULL});
