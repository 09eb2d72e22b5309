/*-------------------------------------------------------------------------
 *
 * source_maintenance.c
 *		VACUUM and ANALYZE in progress, manual or autovacuum, on every
 *		database: which relation, which phase, when each run started and
 *		ended (pg_stat_progress_vacuum and pg_stat_progress_analyze as a
 *		timeline).
 *
 * Read from the backend status array (the copy pgstat makes once per
 * transaction, which other sources share), without SPI: a status entry
 * whose st_progress_command is VACUUM or ANALYZE is a run in progress on
 * relation st_progress_command_target, its st_progress_param[] decoded as
 * the two views decode them (the same on 17 and 18, which only adds the
 * cost delay time at the end).  One row per run and snapshot while it
 * changes (sparse storage: a run whose counters stand still writes no
 * row), and a final row, with ended set, at the first snapshot written
 * that no longer sees it.
 *
 * A run is identified by the process (pid), its activity's start
 * (st_activity_start_timestamp: the statement's start for a manual
 * VACUUM; autovacuum reports an activity per table, so the table's start),
 * the relation and the command: one activity may run several, one after
 * the other (VACUUM of a database, of a table then of its TOAST table,
 * autovacuum's VACUUM then ANALYZE of one table), each a run of its own.
 *
 * started is
 * - the activity's start when the previous reading did not see that
 *   activity (it began since, or the collector just started): exact for
 *   an activity's first run, the common case (an autovacuum's VACUUM or
 *   ANALYZE-only of a table, a manual VACUUM of one table); when an
 *   activity's first runs were all shorter than an interval and missed,
 *   the first run seen gets the activity's start, too early;
 * - the time of the reading that first saw the run when the previous
 *   reading saw the activity running another one (it began in between,
 *   and the run before ends at that same time): at most an interval late;
 * - the previous reading's time when that reading saw the activity not
 *   running any (yet: a VACUUM waiting for its lock, or caught between
 *   autovacuum's report of its table and the start of the command): at
 *   most an interval early.
 * (Without track_activities there is no activity start: the time of the
 * reading that first saw the run.)  The final row says between which two readings the run
 * ended: last_seen, the last that saw it, and ended, the first that did
 * not; those of two consecutive snapshots, unless the source skipped some
 * (turned off, or backing off after an error).
 *
 * What is missed: a run that starts and ends between two snapshots (the
 * relations source's vacuum counts see it); runs while the collector is
 * not running (a run in progress when it starts is taken up; one that
 * ended while it was down has no final row).  VACUUM FULL and CLUSTER are
 * pg_stat_progress_cluster's command, not recorded here.
 *
 * The relation's name, "schema.name" as pg_stat_activity shows it (not
 * quoted): from the catalog for a relation of the recording database;
 * for an autovacuum worker elsewhere (or a relation dropped meanwhile),
 * from its activity text, "autovacuum: VACUUM ANALYZE public.t" (the
 * format of autovac_report_activity(), which also says "(to prevent
 * wraparound)"); otherwise NULL, relid kept.  Names are looked up once,
 * when the run is first seen; a database or relation dropped leaves a
 * NULL, never an error.
 *
 * chronicle.snapshot() run in another backend reads with that backend's
 * memory: a run it sees first gets its own started (by the rule above),
 * and it writes its own final row for a run it saw end.  The marks take a
 * run's earliest start and end (chronicle.marks()).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "utils/backend_progress.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "source.h"

#define MAINT_COLUMNS(C) \
	/* the process running it (pg_stat_activity's pid) */						\
	C(MAINT_PID, "pid", INT4OID, KEY)											\
	/* its activity's start: the statement's, or autovacuum's table's; */		\
	/* NULL without track_activities */											\
	C(MAINT_ACTIVITY_START, "activity_start", TIMESTAMPTZOID, KEY)				\
	/* the relation processed (the views' relid) */								\
	C(MAINT_RELID, "relid", OIDOID, KEY)										\
	/* 'VACUUM' or 'ANALYZE' */													\
	C(MAINT_COMMAND, "command", TEXTOID, KEY)									\
	/* the database; NULL once it is dropped */									\
	C(MAINT_DATNAME, "datname", TEXTOID, ATTRIBUTE)								\
	/* "schema.name", not quoted; NULL when unknown (see the file's head) */	\
	C(MAINT_RELATION, "relation", TEXTOID, ATTRIBUTE)							\
	/* run by an autovacuum worker */											\
	C(MAINT_AUTOVACUUM, "autovacuum", BOOLOID, ATTRIBUTE)						\
	/* an autovacuum to prevent wraparound (its activity text says so) */		\
	C(MAINT_WRAPAROUND, "wraparound", BOOLOID, ATTRIBUTE)						\
	/* when the run started (exact, or up to an interval late: the head) */		\
	C(MAINT_STARTED, "started", TIMESTAMPTZOID, ATTRIBUTE)						\
	/* the phase as the progress views name it */								\
	C(MAINT_PHASE, "phase", TEXTOID, ATTRIBUTE)									\
	/* pg_stat_progress_vacuum's; NULL for ANALYZE */							\
	C(MAINT_HEAP_BLKS_TOTAL, "heap_blks_total", INT8OID, GAUGE)					\
	C(MAINT_HEAP_BLKS_SCANNED, "heap_blks_scanned", INT8OID, GAUGE)				\
	C(MAINT_HEAP_BLKS_VACUUMED, "heap_blks_vacuumed", INT8OID, GAUGE)			\
	C(MAINT_INDEX_VACUUM_COUNT, "index_vacuum_count", INT8OID, GAUGE)			\
	C(MAINT_INDEXES_TOTAL, "indexes_total", INT8OID, GAUGE)						\
	C(MAINT_INDEXES_PROCESSED, "indexes_processed", INT8OID, GAUGE)				\
	/* pg_stat_progress_analyze's; NULL for VACUUM */							\
	C(MAINT_SAMPLE_BLKS_TOTAL, "sample_blks_total", INT8OID, GAUGE)				\
	C(MAINT_SAMPLE_BLKS_SCANNED, "sample_blks_scanned", INT8OID, GAUGE)			\
	/* time slept in cost-based delays, ms (the views' delay_time, 18 with */	\
	/* track_cost_delay_timing); NULL before 18 */								\
	C(MAINT_DELAY_MS, "delay_ms", FLOAT8OID, RECORDED)							\
	/* NULL while running; in the final row, the last reading that saw it */	\
	/* running: it ended after that */											\
	C(MAINT_LAST_SEEN, "last_seen", TIMESTAMPTZOID, RECORDED)					\
	/* NULL while running; in the final row, the first reading that no */		\
	/* longer saw it: it ended before that */									\
	C(MAINT_ENDED, "ended", TIMESTAMPTZOID, RECORDED)

CHRONICLE_COLUMNS(MAINT_COLUMNS, maintenance_columns, MAINT_NCOLUMNS, MAINT_NKEYS);

/* the progress parameters kept: the views' param1 .. param11 */
#define MAINT_NPARAMS	11
StaticAssertDecl(MAINT_NPARAMS <= PGSTAT_NUM_PROGRESS_PARAM,
				 "more progress parameters kept than a status entry has");

/* A run in progress, as the latest reading saw it. */
typedef struct MaintRun
{
	/* the key */
	int			pid;
	TimestampTz activity_start; /* 0: none (track_activities off) */
	Oid			relid;
	ProgressCommandType command;
	/* looked up once, when first seen */
	char	   *datname;		/* NULL: unknown */
	char	   *relation;		/* NULL: unknown */
	bool		autovacuum;
	bool		wraparound;
	TimestampTz started;
	/* as last read */
	int64		param[MAINT_NPARAMS];
} MaintRun;

/* An activity (a process's statement, or autovacuum's table) a reading saw. */
typedef struct MaintActivity
{
	int			pid;
	TimestampTz activity_start;
	bool		running;		/* running a VACUUM or ANALYZE then */
} MaintActivity;

/* One reading: the runs in progress and every activity of the array. */
typedef struct MaintState
{
	TimestampTz taken;			/* 0: no reading yet */
	int			nruns;
	MaintRun   *runs;
	int			nacts;
	MaintActivity *acts;
} MaintState;

/*
 * The state outlives snapshots: two readings, each in a memory context
 * under TopMemoryContext for the life of the collecting process.
 * state[current] is the reading whose rows were written; collect builds
 * the next one in the other context and written() makes it current.  A
 * snapshot rolled back leaves the current one as it was, so a run's end
 * seen by that snapshot is seen again, and written, by the next.
 */
static MaintState state[2];
static MemoryContext state_cxt[2];
static int	current = 0;
static bool next_pending = false;

static const char *const vacuum_phases[] = {
	"initializing",
	"scanning heap",
	"vacuuming indexes",
	"vacuuming heap",
	"cleaning up indexes",
	"truncating heap",
	"performing final cleanup",
};

static const char *const analyze_phases[] = {
	"initializing",
	"acquiring sample rows",
	"acquiring inherited sample rows",
	"computing statistics",
	"computing extended statistics",
	"finalizing analyze",
};

/* The phase's name, as the views' CASE; NULL for a number they do not know. */
static const char *
phase_name(ProgressCommandType command, int64 phase)
{
	if (command == PROGRESS_COMMAND_VACUUM)
		return phase >= 0 && phase < lengthof(vacuum_phases) ? vacuum_phases[phase] : NULL;
	return phase >= 0 && phase < lengthof(analyze_phases) ? analyze_phases[phase] : NULL;
}

static MaintRun *
find_run(MaintState *st, int pid, TimestampTz activity_start, Oid relid,
		 ProgressCommandType command)
{
	for (int i = 0; i < st->nruns; i++)
	{
		MaintRun   *r = &st->runs[i];

		if (r->pid == pid && r->activity_start == activity_start &&
			r->relid == relid && r->command == command)
			return r;
	}
	return NULL;
}

static MaintActivity *
find_activity(MaintState *st, int pid, TimestampTz activity_start)
{
	for (int i = 0; i < st->nacts; i++)
		if (st->acts[i].pid == pid && st->acts[i].activity_start == activity_start)
			return &st->acts[i];
	return NULL;
}

/*
 * An autovacuum worker's activity text, "autovacuum: VACUUM ANALYZE
 * public.t (to prevent wraparound)" (autovac_report_activity()): the
 * relation's name into *relation (palloc'd, NULL when the text is not of
 * that form) and whether it prevents wraparound.
 */
static void
parse_autovacuum_activity(const char *raw, char **relation, bool *wraparound)
{
	static const char *const prefixes[] = {
		"autovacuum: VACUUM ANALYZE ",
		"autovacuum: VACUUM ",
		"autovacuum: ANALYZE ",
	};
	static const char suffix[] = " (to prevent wraparound)";
	char	   *text;
	const char *name = NULL;
	size_t		len;

	*relation = NULL;
	*wraparound = false;
	if (raw == NULL || raw[0] == '\0')
		return;
	/* the raw text may end in the middle of a character: clip it */
	text = pgstat_clip_activity(raw);
	for (int i = 0; i < lengthof(prefixes) && name == NULL; i++)
		if (strncmp(text, prefixes[i], strlen(prefixes[i])) == 0)
			name = text + strlen(prefixes[i]);
	if (name == NULL)
		return;
	len = strlen(name);
	if (len > sizeof(suffix) - 1 &&
		strcmp(name + len - (sizeof(suffix) - 1), suffix) == 0)
	{
		*wraparound = true;
		len -= sizeof(suffix) - 1;
	}
	if (len > 0)
		*relation = pnstrdup(name, len);
}

/* "schema.name" of a relation of this database, or NULL (dropped). */
static char *
catalog_relation(Oid relid)
{
	char	   *rel = get_rel_name(relid);
	char	   *nsp;

	if (rel == NULL)
		return NULL;
	nsp = get_namespace_name(get_rel_namespace(relid));
	if (nsp == NULL)
		return NULL;
	return psprintf("%s.%s", nsp, rel);
}

/*
 * A run seen for the first time: what it is, looked up once.  Called in
 * the next reading's memory context, where its names are kept.
 */
static void
new_run(MaintRun *r, const PgBackendStatus *be, MaintState *cur,
		TimestampTz now)
{
	char	   *activity_relation = NULL;
	MaintActivity *act;

	r->autovacuum = (be->st_backendType == B_AUTOVAC_WORKER);
	r->wraparound = false;
	if (r->autovacuum)
		parse_autovacuum_activity(be->st_activity_raw, &activity_relation,
								  &r->wraparound);
	r->datname = OidIsValid(be->st_databaseid) ?
		get_database_name(be->st_databaseid) : NULL;
	r->relation = NULL;
	if (be->st_databaseid == MyDatabaseId)
		r->relation = catalog_relation(r->relid);
	if (r->relation == NULL)
		r->relation = activity_relation;

	/* see the head of the file */
	act = r->activity_start != 0 ?
		find_activity(cur, r->pid, r->activity_start) : NULL;
	if (r->activity_start == 0)
		r->started = now;
	else if (act == NULL)
		r->started = r->activity_start;
	else if (act->running)
		r->started = now;
	else
		r->started = Max(cur->taken, r->activity_start);
}

/*
 * A row of run r; a final one when ended is set (last_seen: the reading
 * before, which saw it running).
 */
static void
emit_run(ChronicleEmitter *emitter, const MaintRun *r, TimestampTz last_seen,
		 TimestampTz ended)
{
	Datum		values[MAINT_NCOLUMNS] = {0};
	bool		nulls[MAINT_NCOLUMNS] = {0};
	const char *phase;
	bool		vacuum = (r->command == PROGRESS_COMMAND_VACUUM);

	values[MAINT_PID] = Int32GetDatum(r->pid);
	chronicle_set_timestamp(values, nulls, MAINT_ACTIVITY_START, r->activity_start);
	values[MAINT_RELID] = ObjectIdGetDatum(r->relid);
	values[MAINT_COMMAND] = CStringGetTextDatum(vacuum ? "VACUUM" : "ANALYZE");
	values[MAINT_DATNAME] = r->datname ? CStringGetTextDatum(r->datname) : (Datum) 0;
	nulls[MAINT_DATNAME] = (r->datname == NULL);
	values[MAINT_RELATION] = r->relation ? CStringGetTextDatum(r->relation) : (Datum) 0;
	nulls[MAINT_RELATION] = (r->relation == NULL);
	values[MAINT_AUTOVACUUM] = BoolGetDatum(r->autovacuum);
	values[MAINT_WRAPAROUND] = BoolGetDatum(r->wraparound);
	values[MAINT_STARTED] = TimestampTzGetDatum(r->started);

	phase = phase_name(r->command, r->param[0]);
	values[MAINT_PHASE] = phase ? CStringGetTextDatum(phase) : (Datum) 0;
	nulls[MAINT_PHASE] = (phase == NULL);

	values[MAINT_HEAP_BLKS_TOTAL] = Int64GetDatum(r->param[PROGRESS_VACUUM_TOTAL_HEAP_BLKS]);
	values[MAINT_HEAP_BLKS_SCANNED] = Int64GetDatum(r->param[PROGRESS_VACUUM_HEAP_BLKS_SCANNED]);
	values[MAINT_HEAP_BLKS_VACUUMED] = Int64GetDatum(r->param[PROGRESS_VACUUM_HEAP_BLKS_VACUUMED]);
	values[MAINT_INDEX_VACUUM_COUNT] = Int64GetDatum(r->param[PROGRESS_VACUUM_NUM_INDEX_VACUUMS]);
	values[MAINT_INDEXES_TOTAL] = Int64GetDatum(r->param[PROGRESS_VACUUM_INDEXES_TOTAL]);
	values[MAINT_INDEXES_PROCESSED] = Int64GetDatum(r->param[PROGRESS_VACUUM_INDEXES_PROCESSED]);
	for (int c = MAINT_HEAP_BLKS_TOTAL; c <= MAINT_INDEXES_PROCESSED; c++)
		nulls[c] = !vacuum;
	values[MAINT_SAMPLE_BLKS_TOTAL] = Int64GetDatum(r->param[PROGRESS_ANALYZE_BLOCKS_TOTAL]);
	values[MAINT_SAMPLE_BLKS_SCANNED] = Int64GetDatum(r->param[PROGRESS_ANALYZE_BLOCKS_DONE]);
	nulls[MAINT_SAMPLE_BLKS_TOTAL] = nulls[MAINT_SAMPLE_BLKS_SCANNED] = vacuum;

#if PG_VERSION_NUM >= 180000
	{
		/* ns: the views divide by 1000000 for ms */
		int			delay = vacuum ? PROGRESS_VACUUM_DELAY_TIME : PROGRESS_ANALYZE_DELAY_TIME;

		values[MAINT_DELAY_MS] = Float8GetDatum((double) r->param[delay] / 1000000.0);
	}
#else
	nulls[MAINT_DELAY_MS] = true;
#endif
	chronicle_set_timestamp(values, nulls, MAINT_LAST_SEEN, last_seen);
	chronicle_set_timestamp(values, nulls, MAINT_ENDED, ended);
	chronicle_emit_row(emitter, values, nulls);
}

static void
maintenance_collect(ChronicleEmitter *emitter)
{
	int			nentries = pgstat_fetch_stat_numbackends();
	MaintState *cur = &state[current];
	MaintState *next = &state[1 - current];
	MemoryContext next_cxt;
	MemoryContext oldcxt;
	TimestampTz now = GetCurrentTimestamp();
	bool	   *matched;

	if (state_cxt[0] == NULL)
		for (int i = 0; i < 2; i++)
			state_cxt[i] = AllocSetContextCreate(TopMemoryContext,
												 "pg_chronicle maintenance",
												 ALLOCSET_SMALL_SIZES);
	next_pending = false;
	next_cxt = state_cxt[1 - current];
	MemoryContextReset(next_cxt);
	next->taken = now;
	next->nruns = next->nacts = 0;
	/* at most one run and one activity a status entry */
	next->runs = MemoryContextAlloc(next_cxt, sizeof(MaintRun) * Max(nentries, 1));
	next->acts = MemoryContextAlloc(next_cxt, sizeof(MaintActivity) * Max(nentries, 1));
	matched = palloc0(sizeof(bool) * Max(cur->nruns, 1));

	for (int i = 1; i <= nentries; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);
		PgBackendStatus *be;
		ProgressCommandType command;
		MaintRun   *old;
		MaintRun   *r;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_procpid <= 0)
			continue;
		command = be->st_progress_command;
		if (be->st_activity_start_timestamp != 0)
		{
			MaintActivity *act = &next->acts[next->nacts++];

			act->pid = be->st_procpid;
			act->activity_start = be->st_activity_start_timestamp;
			act->running = (command == PROGRESS_COMMAND_VACUUM ||
							command == PROGRESS_COMMAND_ANALYZE);
		}
		if (command != PROGRESS_COMMAND_VACUUM && command != PROGRESS_COMMAND_ANALYZE)
			continue;

		r = &next->runs[next->nruns];
		old = find_run(cur, be->st_procpid, be->st_activity_start_timestamp,
					   be->st_progress_command_target, command);
		if (old != NULL)
		{
			if (matched[old - cur->runs])
				continue;		/* cannot happen: a pid has one entry */
			matched[old - cur->runs] = true;
			*r = *old;
			r->datname = old->datname ? MemoryContextStrdup(next_cxt, old->datname) : NULL;
			r->relation = old->relation ? MemoryContextStrdup(next_cxt, old->relation) : NULL;
		}
		else
		{
			r->pid = be->st_procpid;
			r->activity_start = be->st_activity_start_timestamp;
			r->relid = be->st_progress_command_target;
			r->command = command;
			oldcxt = MemoryContextSwitchTo(next_cxt);
			new_run(r, be, cur, now);
			MemoryContextSwitchTo(oldcxt);
		}
		memcpy(r->param, be->st_progress_param, sizeof(r->param));
		next->nruns++;
		emit_run(emitter, r, 0, 0);
	}

	/*
	 * The runs of the current reading not seen again have ended, since that
	 * reading: the one of the previous snapshot, or older if this source
	 * did not read in between (turned off, or backing off after an error),
	 * which last_seen says.
	 */
	for (int i = 0; i < cur->nruns; i++)
		if (!matched[i])
			emit_run(emitter, &cur->runs[i], cur->taken, now);

	next_pending = true;
}

/* The rows are written: the next reading becomes the current one. */
static void
maintenance_written(void)
{
	if (!next_pending)
		return;
	current = 1 - current;
	next_pending = false;
}

CHRONICLE_SOURCE(maintenance, MAINT,
				 "VACUUM and ANALYZE in progress, manual and autovacuum, with their start and end "
				 "(the backend status array: pg_stat_progress_vacuum, pg_stat_progress_analyze)",
				 .analysis = NULL,
				 .written = maintenance_written);
