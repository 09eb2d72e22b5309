/*-------------------------------------------------------------------------
 *
 * sources.c
 *		The list of statistics sources.  Adding a source is one C file with
 *		a ChronicleSource and one line here: its history view and packed
 *		column are made from it at CREATE EXTENSION and at every upgrade
 *		(chronicle._history_layout()).  Its analysis is described in
 *		tools/gen_deltas.py, or it is listed as not analysed
 *		(tools/check_sources.py).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "source.h"

extern const ChronicleSource chronicle_source_io;
extern const ChronicleSource chronicle_source_wal;
extern const ChronicleSource chronicle_source_checkpointer;
extern const ChronicleSource chronicle_source_bgwriter;
extern const ChronicleSource chronicle_source_database;
extern const ChronicleSource chronicle_source_statements;
extern const ChronicleSource chronicle_source_os_memory;
extern const ChronicleSource chronicle_source_os_disk;
extern const ChronicleSource chronicle_source_os_pressure;
extern const ChronicleSource chronicle_source_os_process_io;
extern const ChronicleSource chronicle_source_waits;
extern const ChronicleSource chronicle_source_wait_sampler;
extern const ChronicleSource chronicle_source_buffers;

const ChronicleSource *const chronicle_sources[] = {
	&chronicle_source_io,
	&chronicle_source_wal,
	&chronicle_source_checkpointer,
	&chronicle_source_bgwriter,
	&chronicle_source_database,
	&chronicle_source_statements,
	&chronicle_source_os_memory,
	&chronicle_source_os_disk,
	&chronicle_source_os_pressure,
	&chronicle_source_os_process_io,
	/* waits before wait_sampler: it reuses the counters waits read */
	&chronicle_source_waits,
	&chronicle_source_wait_sampler,
	&chronicle_source_buffers,
};

const int	chronicle_nsources = lengthof(chronicle_sources);

StaticAssertDecl(lengthof(chronicle_sources) <= CHRONICLE_MAX_SOURCES,
				 "too many sources for CHRONICLE_MAX_SOURCES");
