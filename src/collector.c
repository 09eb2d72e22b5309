/*-------------------------------------------------------------------------
 *
 * collector.c
 *		One snapshot: every source read, changed rows written, the snapshot
 *		row with its own cost written last.
 *
 * The collector is source-agnostic.  For each source it keeps the previous
 * reading of every key (in a hash table, in the source's own memory
 * context; chronicle_emit_row() in emitter.c compares with it) and writes
 * only the rows that changed since then; a keyframe writes every row.  Each
 * source's rows are packed into one value (history.h), and the snapshot's
 * values of every source go into one row of chronicle.history: one tuple,
 * one index entry and one WAL record a snapshot, whatever the number of
 * rows.  The worker makes a keyframe at least every
 * chronicle.keyframe_interval, so that reading a key's latest value never
 * goes back further than that (docs/storage.md).
 *
 * Each source runs inside its own subtransaction: an error in one source
 * is caught, counted, logged once and retried with exponential backoff,
 * while the other sources go on recording.  The reading of a source only
 * replaces the previous one after its rows were written, so a failed
 * insert never leaves the sparse chain with a hole.  A cancel, a timeout or
 * a shutdown is not a source's error but the whole snapshot's: it is
 * re-thrown, and the snapshot (its transaction) ends with it.
 *
 * Time: ts is the wall clock, but it never goes backwards.  Within a
 * segment the worker measures the time between two snapshots on the
 * monotonic clock; when the wall clock advanced by less than half of that
 * (it was stepped back), ts advances by the time that really passed
 * instead, so ts stays increasing and every interval keeps its true
 * length; ts then runs ahead of the wall clock by the step, until the
 * clock is stepped forward again or the segment ends.  A new segment (and
 * every snapshot from SQL) never starts at or before the latest snapshot
 * recorded: if the wall clock is behind it, ts is that snapshot's plus one
 * microsecond, and a snapshot from SQL then starts a segment of its own
 * rather than make an interval of a microsecond.
 *
 * During recovery (a standby) nothing can be written: the same rows are
 * serialized into one record of the standby ring in shared memory instead
 * (standby.c, which owns the record format), and written to the tables after promotion by
 * chronicle_write_ring(), in the order they were taken.
 *
 * Before its sources a snapshot runs the housekeeping that is due: the
 * partitions, and the rollups when no housekeeper runs them; that is
 * housekeeping.c's, as the lock on the extension that the caller takes
 * first is recorder.c's.  This file is the snapshot itself.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/instrument.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "collector.h"
#include "emitter.h"
#include "history.h"
#include "housekeeper.h"
#include "housekeeping.h"
#include "pg_chronicle.h"
#include "shared.h"
#include "source.h"
#include "standby.h"

static ChronicleSourceState source_state[CHRONICLE_MAX_SOURCES];
static SPIPlanPtr snapshot_plan = NULL;
static bool keyframe_pending = true;	/* no previous reading to trust */
static TimestampTz last_keyframe = 0;	/* the worker's latest keyframe */
static int	ring_since_keyframe = 0;	/* ring snapshots since a keyframe */

/* The worker's previous snapshot, for its clock (see the header). */
static TimestampTz clock_segment = 0;
static TimestampTz clock_ts = 0;
static instr_time clock_taken;

/*
 * In the standby ring every this many snapshots is a keyframe, so that the
 * ring stays readable (and writable after promotion) from a keyframe on
 * when its oldest snapshots are evicted.
 */
#define CHRONICLE_RING_KEYFRAME_EVERY	60

/* A repeated identical error is logged again after this long. */
#define CHRONICLE_RELOG_USECS	(10 * 60 * USECS_PER_SEC)

static void
source_state_init(int i)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];

	if (st->initialized)
		return;
	if (src->ncolumns > CHRONICLE_MAX_COLUMNS)
		elog(ERROR, "source \"%s\" has too many columns", src->name);

	for (int c = 0; c < src->ncolumns; c++)
	{
		Oid			func;
		bool		isvarlena;

		get_typlenbyvalalign(src->columns[c].type, &st->typlen[c],
							 &st->typbyval[c], &st->typalign[c]);
		getTypeOutputInfo(src->columns[c].type, &func, &isvarlena);
		fmgr_info_cxt(func, &st->outfunc[c], TopMemoryContext);
		getTypeInputInfo(src->columns[c].type, &func, &st->typioparam[c]);
		fmgr_info_cxt(func, &st->infunc[c], TopMemoryContext);
	}
	st->cxt[0] = AllocSetContextCreate(TopMemoryContext, "chronicle source",
									   ALLOCSET_SMALL_SIZES);
	st->cxt[1] = AllocSetContextCreate(TopMemoryContext, "chronicle source",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextSetIdentifier(st->cxt[0], src->name);
	MemoryContextSetIdentifier(st->cxt[1], src->name);
	st->cur = 0;
	st->prev = NULL;
	st->initialized = true;
}

/*
 * Forget every previous reading and every prepared statement, so that the
 * next snapshot is a keyframe planned afresh.  Used when the extension was
 * dropped, after an error that aborted a whole snapshot, and at start.
 */
void
chronicle_forget_previous(void)
{
	for (int i = 0; i < chronicle_nsources; i++)
	{
		ChronicleSourceState *st = &source_state[i];

		if (!st->initialized)
			continue;
		MemoryContextReset(st->cxt[0]);
		MemoryContextReset(st->cxt[1]);
		st->prev = NULL;
	}
	/* and every key id: the dictionary may be another one now */
	chronicle_history_forget(-1);
	if (snapshot_plan)
		SPI_freeplan(snapshot_plan);
	snapshot_plan = NULL;
	keyframe_pending = true;
	/* A new recording in this database checks its partitions at once. */
	chronicle_maintenance_due();
}

/*
 * Write the queued rows of a source: into the standby ring during
 * recovery, else packed (with their keys' dictionary ids) into em->packed,
 * for the snapshot's history row.
 */
static void
flush_rows(ChronicleEmitter *em, TimestampTz ts)
{
	const ChronicleSource *src = em->source;
	ChronicleSourceState *st = em->state;
	ChronicleRows rows;

	if (em->nrows == 0)
		return;

	if (em->ring)
	{
		/* Recovery: serialize the rows into the ring record. */
		for (int r = 0; r < em->nrows; r++)
		{
			char	   *out[CHRONICLE_MAX_COLUMNS];

			for (int c = 0; c < src->ncolumns; c++)
				out[c] = em->nulls[c][r] ? NULL :
					OutputFunctionCall(&st->outfunc[c], em->values[c][r]);
			chronicle_ring_put_row(em->ring, em->source_index,
								   src->ncolumns, out);
			for (int c = 0; c < src->ncolumns; c++)
				if (out[c])
					pfree(out[c]);
		}
		return;
	}

	memset(&rows, 0, sizeof(rows));
	rows.source_index = em->source_index;
	rows.complete = em->keyframe;
	rows.nrows = rows.maxrows = em->nrows;
	for (int c = 0; c < src->ncolumns; c++)
	{
		rows.values[c] = em->values[c];
		rows.nulls[c] = em->nulls[c];
	}
	if (src->nkeys > 0)
	{
		rows.key_ids = palloc(sizeof(int32) * em->nrows);
		chronicle_rows_key_ids(&rows);
	}
	em->packed = chronicle_pack(&rows, ts);
}

/*
 * Report a source's failure: once per distinct message, and again only
 * every ten minutes while it keeps failing the same way.
 */
static void
report_source_error(const ChronicleSource *src, ChronicleSourceState *st,
					ErrorData *edata, ChronicleCollector by, TimestampTz now)
{
	bool		same = strncmp(st->last_error, edata->message,
							   CHRONICLE_ERRMSG_LEN - 1) == 0;

	if (by == CHRONICLE_BY_SQL ||
		!same || now - st->last_logged >= CHRONICLE_RELOG_USECS)
	{
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_chronicle: source \"%s\" failed: %s",
						src->name, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 by == CHRONICLE_BY_WORKER ?
				 errhint("The other sources go on recording; \"%s\" is retried with backoff "
						 "(%d consecutive failures) and this message is repeated at most every ten minutes.",
						 src->name, st->failures) : 0));
		st->last_logged = now;
	}
	strlcpy(st->last_error, edata->message, CHRONICLE_ERRMSG_LEN);
}

/*
 * The latest snapshot recorded: its ts and segment, and whether the server
 * took it since it started (only such a segment can be continued).  False
 * when there is none.
 */
static bool
latest_snapshot(TimestampTz *ts, TimestampTz *segment, bool *since_start)
{
	int			ret;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	ret = SPI_execute("SELECT ts, segment, ts > pg_catalog.pg_postmaster_start_time()"
					  " FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1", true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the latest snapshot: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*ts = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
	*segment = DatumGetTimestampTz(SPI_getbinval(tup, desc, 2, &isnull));
	*since_start = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	return true;
}

/*
 * Two snapshots never share a ts.  The worker and chronicle.snapshot() in
 * other sessions may read the clock in the same microsecond, and none of
 * them sees the others' rows before they commit (a unique violation then
 * would fail one of them after it waited for the other's transaction):
 * every ts handed out is later than the one before it, which costs a
 * microsecond at most.
 */
static TimestampTz
unique_ts(TimestampTz ts, ChronicleCollector by)
{
	ChronicleShared *s = chronicle_shared();

	if (s == NULL)
		return ts;
	SpinLockAcquire(&s->mutex);
	if (ts <= s->last_ts_given)
		ts = s->last_ts_given + 1;
	s->last_ts_given = ts;
	if (by == CHRONICLE_BY_SQL)
		s->last_sql_ts = ts;
	SpinLockRelease(&s->mutex);
	return ts;
}

static void
insert_snapshot_row(TimestampTz ts, TimestampTz segment, bool keyframe,
					ChronicleCollector by, double duration_ms, int64 rows,
					int64 wal_bytes, int errors)
{
	Datum		args[10];
	Oid			argtypes[10] = {TIMESTAMPTZOID, TIMESTAMPTZOID, BOOLOID, TEXTOID,
	FLOAT8OID, INT8OID, INT8OID, INT4OID, INT8OID, TEXTOID};
	int			ret;

	if (snapshot_plan == NULL)
	{
		snapshot_plan = SPI_prepare("INSERT INTO chronicle.snapshot"
									" (ts, segment, keyframe, collector, duration_ms,"
									" rows_written, wal_bytes, errors,"
									" system_identifier, server_name)"
									" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
									10, argtypes);
		if (snapshot_plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(snapshot_plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
	}
	args[0] = TimestampTzGetDatum(ts);
	args[1] = TimestampTzGetDatum(segment);
	args[2] = BoolGetDatum(keyframe);
	args[3] = CStringGetTextDatum(by == CHRONICLE_BY_WORKER ? "worker" : "sql");
	args[4] = Float8GetDatum(duration_ms);
	args[5] = Int64GetDatum(rows);
	args[6] = Int64GetDatum(wal_bytes);
	args[7] = Int32GetDatum(errors);
	/* who recorded it (chronicle.server()): see docs/storage.md */
	args[8] = Int64GetDatum((int64) GetSystemIdentifier());
	args[9] = CStringGetTextDatum(chronicle_server_name_now());
	ret = SPI_execute_plan(snapshot_plan, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "insert into chronicle.snapshot failed: %s",
			 SPI_result_code_string(ret));
}

/*
 * chronicle.debug_fail_source, for tests: "<source>" makes the source fail
 * before it reads anything, "<source>:write" after it wrote its rows, just
 * before its subtransaction commits (what a failed INSERT looks like to a
 * source that keeps state of its own).
 */
static void
debug_fail(const ChronicleSource *src, const char *point)
{
	const char *v = chronicle_debug_fail_source;
	size_t		len = strlen(src->name);

	if (v == NULL || strncmp(v, src->name, len) != 0)
		return;
	if (point == NULL ? v[len] != '\0' :
		(v[len] != ':' || strcmp(v + len + 1, point) != 0))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("injected failure (chronicle.debug_fail_source = '%s')", v)));
}

/*
 * Set up em for a reading of source i: the reading's table in the source's
 * other memory context, sized for as many keys as the previous reading;
 * the queued rows' arrays in snapcxt, which is the current context after.
 */
static void
emitter_begin(ChronicleEmitter *em, int i, MemoryContext snapcxt,
			  bool keyframe, StringInfo ring)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];
	HASHCTL		ctl;

	/* Start the next reading in the other memory context. */
	MemoryContextReset(st->cxt[1 - st->cur]);
	memset(em, 0, sizeof(*em));
	em->source = src;
	em->state = st;
	em->ring = ring;
	em->source_index = i;
	em->keyframe = keyframe || st->prev == NULL;
	ctl.keysize = CHRONICLE_KEY_LEN;
	ctl.entrysize = sizeof(ChronicleRow);
	ctl.hcxt = st->cxt[1 - st->cur];
	/* sized for as many keys as the previous reading: it will not grow */
	em->next = hash_create("chronicle reading",
						   st->prev ? Max(hash_get_num_entries(st->prev), 64) : 64,
						   &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	em->maxrows = 64;
	MemoryContextSwitchTo(snapcxt);
	for (int c = 0; c < src->ncolumns; c++)
	{
		em->values[c] = palloc(sizeof(Datum) * em->maxrows);
		em->nulls[c] = palloc(sizeof(bool) * em->maxrows);
	}
	initStringInfo(&em->keybuf);
}

/*
 * Source i's rows were written: its reading becomes the previous one, and
 * a source that had failed records again.
 */
static void
source_written(int i, ChronicleEmitter *em, ChronicleCollector by)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];

	/* The new reading becomes the previous one. */
	MemoryContextReset(st->cxt[st->cur]);
	st->cur = 1 - st->cur;
	st->prev = em->next;

	if (st->failures > 0 && by == CHRONICLE_BY_WORKER)
		ereport(LOG,
				(errmsg("pg_chronicle: source \"%s\" recording again after %d failures",
						src->name, st->failures)));
	st->failures = 0;
	st->last_error[0] = '\0';
}

/*
 * Source i failed at now with edata, its subtransaction rolled back and
 * its reading dropped: counted, backed off from and reported.
 */
static void
source_failed(int i, ErrorData *edata, ChronicleCollector by, TimestampTz now)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];
	ChronicleShared *shared = chronicle_shared();

	/* Key ids it added to the dictionary were rolled back with it. */
	chronicle_history_forget(i);

	st->failures++;
	st->skip = Min(1 << Min(st->failures - 1, 6), CHRONICLE_MAX_BACKOFF) - 1;
	report_source_error(src, st, edata, by, now);

	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->sources[i].errors++;
		shared->sources[i].last_error_time = now;
		strlcpy(shared->sources[i].last_error, edata->message,
				CHRONICLE_ERRMSG_LEN);
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * Collect one source, inside a subtransaction: its changed rows packed
 * into *packed (NULL when none), or serialized into the ring.  Returns the
 * number of rows, or -1 on failure.  An error that ends the snapshot
 * (chronicle_error_ends_snapshot()) is re-thrown once the subtransaction
 * is rolled back.
 */
static int64
collect_source(int i, MemoryContext snapcxt, TimestampTz ts, bool keyframe,
			   ChronicleCollector by, StringInfo ring, bytea **packed)
{
	const ChronicleSource *src = chronicle_sources[i];
	ChronicleSourceState *st = &source_state[i];
	ChronicleShared *shared = chronicle_shared();
	ResourceOwner oldowner = CurrentResourceOwner;
	ChronicleEmitter em;
	int			ringlen;
	volatile int64 rows = -1;

	source_state_init(i);
	emitter_begin(&em, i, snapcxt, keyframe, ring);

	ringlen = ring ? ring->len : 0;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(snapcxt);

	PG_TRY();
	{
		debug_fail(src, NULL);
		src->collect(&em);
		flush_rows(&em, ts);
		debug_fail(src, "write");

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(snapcxt);
		CurrentResourceOwner = oldowner;

		source_written(i, &em, by);
		rows = em.nrows;
		*packed = em.packed;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		TimestampTz now = GetCurrentTimestamp();

		MemoryContextSwitchTo(snapcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(snapcxt);
		CurrentResourceOwner = oldowner;

		/* This reading was not written: keep the previous one. */
		MemoryContextReset(st->cxt[1 - st->cur]);

		/* A cancel, a timeout, a shutdown: the whole snapshot ends here. */
		if (chronicle_error_ends_snapshot(edata->sqlerrcode))
			ReThrowError(edata);

		/* nor half of it serialized into the ring record */
		if (ring)
			ring->len = ringlen;
		source_failed(i, edata, by, now);
		FreeErrorData(edata);
	}
	PG_END_TRY();

	if (rows >= 0 && shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->sources[i].snapshots++;
		shared->sources[i].rows += rows;
		SpinLockRelease(&shared->mutex);
	}
	return rows;
}

/*
 * The snapshot's ts, and the segment it belongs to when the caller did not
 * say (*segment 0): the wall clock, kept increasing (see the header).
 * *taken is when, on the monotonic clock.
 */
static TimestampTz
snapshot_time(ChronicleCollector by, bool in_ring, bool newsegment,
			  TimestampTz *segment, instr_time *taken)
{
	TimestampTz ts = GetCurrentTimestamp();

	INSTR_TIME_SET_CURRENT(*taken);

	/*
	 * The worker's next snapshot in its segment: if the wall clock advanced
	 * by less than half of the time that passed, it was stepped back; ts
	 * advances by the time that passed instead (see the header).
	 */
	if (by == CHRONICLE_BY_WORKER && !newsegment && *segment == clock_segment)
	{
		instr_time	elapsed = *taken;
		int64		elapsed_us;

		INSTR_TIME_SUBTRACT(elapsed, clock_taken);
		elapsed_us = Max(INSTR_TIME_GET_MICROSEC(elapsed), 1);
		if (ts < clock_ts + elapsed_us / 2)
			ts = clock_ts + elapsed_us;
	}

	/*
	 * A new segment, or a snapshot from SQL, never starts at or before the
	 * latest snapshot recorded; a snapshot from SQL continues the latest
	 * segment when the server took it and the clock has moved on since.
	 */
	if (!in_ring && *segment == 0)
	{
		TimestampTz latest_ts,
					latest_segment;
		bool		since_start;

		if (latest_snapshot(&latest_ts, &latest_segment, &since_start))
		{
			if (ts <= latest_ts)
				ts = latest_ts + 1;
			else if (by == CHRONICLE_BY_SQL && since_start)
				*segment = latest_segment;
		}
	}
	return unique_ts(ts, by);
}

/* Is the snapshot at ts a keyframe?  keyframe: the caller asks for one. */
static bool
snapshot_keyframe(ChronicleCollector by, bool keyframe, bool in_ring,
				  bool newsegment, TimestampTz ts)
{
	ChronicleShared *shared = chronicle_shared();

	/*
	 * A new recording starts with a keyframe: its sparse rows could not be
	 * read against anything earlier.
	 */
	if (newsegment && by == CHRONICLE_BY_WORKER)
		keyframe = true;

	if (shared && by == CHRONICLE_BY_WORKER)
	{
		SpinLockAcquire(&shared->mutex);
		if (shared->force_keyframe)
			keyframe = true;
		shared->force_keyframe = false;

		/*
		 * A snapshot from SQL between the worker's previous one and this
		 * one broke the worker's chain: the rows this one leaves out as
		 * unchanged would be read against that snapshot's.  force_keyframe
		 * says so only once the SQL snapshot is over, too late for a worker
		 * snapshot that began meanwhile; the ts say it at once (both are
		 * handed out in order under this lock, unique_ts()).
		 */
		if (!in_ring && shared->last_sql_ts > clock_ts)
			keyframe = true;
		SpinLockRelease(&shared->mutex);
	}
	keyframe |= keyframe_pending;

	/* The worker's periodic keyframe bounds every look back (the header). */
	if (by == CHRONICLE_BY_WORKER && !in_ring &&
		chronicle_keyframe_interval > 0 &&
		ts - last_keyframe >= (int64) chronicle_keyframe_interval * USECS_PER_SEC)
		keyframe = true;
	return keyframe;
}

/*
 * Collect every enabled source that is not backing off, into packed[i]
 * (or the ring); collected[i] when source i's rows were written.  The
 * rows and errors are counted in *result.  Returns whether any source
 * has rows to write.
 */
static bool
collect_sources(ChronicleCollector by, MemoryContext snapcxt, StringInfo ring,
				ChronicleSnapshotResult *result, bytea **packed,
				bool *collected)
{
	ChronicleShared *shared = chronicle_shared();
	bool		any_rows = false;

	for (int i = 0; i < chronicle_nsources; i++)
	{
		const ChronicleSource *src = chronicle_sources[i];
		ChronicleSourceState *st = &source_state[i];
		int64		rows;

		packed[i] = NULL;
		collected[i] = false;

		if (!chronicle_source_enabled[i])
		{
			/*
			 * Forget the source's last reading: when it is enabled again,
			 * its first rows are a full set, not changes against a reading
			 * that is long out of date.
			 */
			if (st->initialized && st->prev != NULL)
			{
				MemoryContextReset(st->cxt[0]);
				MemoryContextReset(st->cxt[1]);
				st->prev = NULL;
			}
			continue;
		}
		if (src->available && !src->available())
			continue;
		if (by == CHRONICLE_BY_WORKER && st->skip > 0)
		{
			st->skip--;
			if (shared)
			{
				SpinLockAcquire(&shared->mutex);
				shared->sources[i].skipped++;
				SpinLockRelease(&shared->mutex);
			}
			result->errors++;
			continue;
		}
		rows = collect_source(i, snapcxt, result->ts, result->keyframe, by,
							  ring, &packed[i]);
		if (rows < 0)
			result->errors++;
		else
		{
			result->rows += rows;
			collected[i] = true;
			any_rows |= (packed[i] != NULL);
		}
	}
	return any_rows;
}

/*
 * A snapshot in recovery: its ring record closed and appended to the
 * standby ring.  False when the ring could not take it.
 */
static bool
ring_record_end(StringInfo ring, const ChronicleSnapshotResult *result,
				double duration_ms, bool newsegment)
{
	ChronicleRingRecord rec;

	memset(&rec, 0, sizeof(rec));
	rec.nrows = (uint32) result->rows;
	rec.ts = result->ts;
	rec.duration_ms = duration_ms;
	rec.errors = result->errors;
	rec.keyframe = result->keyframe;
	rec.newsegment = newsegment;
	chronicle_ring_record_end(ring, &rec);
	if (!chronicle_ring_append(ring->data, ring->len, result->ts))
		return false;			/* too large: the next one must be full */
	if (result->keyframe)
		ring_since_keyframe = 0;
	return true;
}

/* The snapshot counted in the shared state, for chronicle.status(). */
static void
snapshot_count(const ChronicleSnapshotResult *result, double duration_ms,
			   int64 wal_start)
{
	ChronicleShared *shared = chronicle_shared();

	if (shared)
	{
		SpinLockAcquire(&shared->mutex);
		shared->last_snapshot = result->ts;
		shared->snapshots++;
		shared->rows += result->rows;
		shared->wal_bytes += (int64) (pgWalUsage.wal_bytes - wal_start);
		shared->cost_us[shared->cost_next % CHRONICLE_COST_SLOTS] = duration_ms * 1000.0;
		shared->cost_next++;
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * What comes before the sources are read.  In recovery, the worker's
 * snapshots go to the standby ring: the record begun (returned), and every
 * CHRONICLE_RING_KEYFRAME_EVERY one a keyframe (*keyframe).  Else the
 * housekeeping that is due runs (in snapcxt), and NULL is returned.
 */
static StringInfo
snapshot_begin(ChronicleCollector by, MemoryContext snapcxt, bool *keyframe)
{
	StringInfo	ring = NULL;

	/* In recovery, the worker's snapshots go to the standby ring. */
	if (by == CHRONICLE_BY_WORKER && RecoveryInProgress())
	{
		ring = makeStringInfo();
		chronicle_ring_record_begin(ring);
		if (++ring_since_keyframe >= CHRONICLE_RING_KEYFRAME_EVERY)
			*keyframe = true;
	}
	else
	{
		chronicle_maintain_partitions(GetCurrentTimestamp(), snapcxt,
									  by == CHRONICLE_BY_SQL);
		if (by == CHRONICLE_BY_WORKER && !chronicle_housekeeper_running())
			chronicle_maintain_rollups(GetCurrentTimestamp(), false);
	}
	return ring;
}

/*
 * Take one snapshot of every enabled source.  The caller provides the
 * transaction and the SPI connection.  segment is the start of the
 * recording this snapshot continues, 0 to let the collector decide.
 */
ChronicleSnapshotResult
chronicle_take_snapshot(ChronicleCollector by, TimestampTz segment,
						bool keyframe)
{
	ChronicleSnapshotResult result = {0};
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext snapcxt;
	instr_time	start,
				taken,
				duration;
	int64		wal_start = pgWalUsage.wal_bytes;
	double		duration_ms;
	TimestampTz ts;
	StringInfo	ring;
	bool		newsegment = (segment == 0);
	bool		lost = false;
	bytea	   *packed[CHRONICLE_MAX_SOURCES];
	bool		collected[CHRONICLE_MAX_SOURCES];
	bool		any_rows;

	INSTR_TIME_SET_CURRENT(start);

	/*
	 * From SQL, the key ids this backend cached may have been rolled back
	 * with an earlier caller's transaction: read them again.
	 */
	if (by == CHRONICLE_BY_SQL)
		chronicle_history_forget(-1);

	snapcxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle snapshot",
									ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(snapcxt);

	ring = snapshot_begin(by, snapcxt, &keyframe);

	/*
	 * The snapshot's time is taken after the housekeeping (its cost is still
	 * counted in duration_ms), right before the sources are read.
	 */
	ts = snapshot_time(by, ring != NULL, newsegment, &segment, &taken);

	/* A worker outside this transaction must see fresh numbers. */
	pgstat_clear_snapshot();

	if (segment == 0)
		segment = ts;
	result.ts = ts;
	result.segment = segment;
	keyframe = snapshot_keyframe(by, keyframe, ring != NULL, newsegment, ts);
	result.keyframe = keyframe;

	any_rows = collect_sources(by, snapcxt, ring, &result, packed, collected);

	/* Every source's rows in one row: nothing at all when nothing changed. */
	if (ring == NULL && any_rows)
		chronicle_history_insert(ts, packed);

	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	duration_ms = INSTR_TIME_GET_MILLISEC(duration);
	if (ring)
		lost = !ring_record_end(ring, &result, duration_ms, newsegment);
	else
		insert_snapshot_row(ts, segment, keyframe, by, duration_ms, result.rows,
							(int64) (pgWalUsage.wal_bytes - wal_start),
							result.errors);

	/*
	 * Sources that keep state of their own move it on now that their rows
	 * are written (an error from here on is no longer a source's).
	 */
	for (int i = 0; i < chronicle_nsources; i++)
		if (collected[i] && chronicle_sources[i]->written)
			chronicle_sources[i]->written();

	keyframe_pending = lost;
	if (keyframe && ring == NULL && by == CHRONICLE_BY_WORKER)
		last_keyframe = ts;
	if (by == CHRONICLE_BY_WORKER)
	{
		clock_segment = segment;
		clock_ts = ts;
		clock_taken = taken;
	}
	snapshot_count(&result, duration_ms, wal_start);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(snapcxt);
	return result;
}

/*
 * A row of a ring record (its values as text, as flush_rows() serialized
 * them) queued in the emitter of its source, which is set up at the
 * source's first row for the record's nrows.
 */
static void
ring_row_queue(ChronicleEmitter *ems, const ChronicleRingRow *row,
			   uint32 nrows)
{
	int			si = row->source_index;
	ChronicleEmitter *em;
	const ChronicleSource *src;

	source_state_init(si);
	em = &ems[si];
	src = chronicle_sources[si];
	if (em->source == NULL)
	{
		em->source = src;
		em->state = &source_state[si];
		em->maxrows = nrows;
		for (int c = 0; c < src->ncolumns; c++)
		{
			em->values[c] = palloc(sizeof(Datum) * nrows);
			em->nulls[c] = palloc(sizeof(bool) * nrows);
		}
	}
	for (int c = 0; c < src->ncolumns; c++)
	{
		em->nulls[c][em->nrows] = (row->values[c] == NULL);
		if (row->values[c] == NULL)
			em->values[c][em->nrows] = (Datum) 0;
		else
		{
			char	   *str = pnstrdup(row->values[c], row->lens[c]);

			em->values[c][em->nrows] =
				InputFunctionCall(&em->state->infunc[c], str,
								  em->state->typioparam[c], -1);
		}
	}
	em->nrows++;
}

/*
 * The rows of a ring record, queued in ems, packed source by source and
 * written as the record's history row (none when no source has rows).
 */
static void
ring_record_write(ChronicleEmitter *ems, const ChronicleRingRecord *rec)
{
	bytea	   *packed[CHRONICLE_MAX_SOURCES];
	bool		any = false;

	for (int i = 0; i < chronicle_nsources; i++)
	{
		packed[i] = NULL;
		if (ems[i].source)
		{
			ems[i].source_index = i;
			ems[i].keyframe = rec->keyframe;
			flush_rows(&ems[i], rec->ts);
			packed[i] = ems[i].packed;
			any |= (packed[i] != NULL);
		}
	}
	if (any)
		chronicle_history_insert(rec->ts, packed);
}

/*
 * After promotion: write the snapshots of the standby ring into the tables,
 * oldest first, and empty the ring.  The caller provides the transaction
 * and the SPI connection, and has checked that the extension exists.
 * Snapshots before the ring's first keyframe (their predecessors were
 * evicted) cannot be read as sparse rows and are dropped.  Returns the
 * number of snapshots written; *upto is the ring position to consume with
 * chronicle_ring_consume() once the transaction committed.
 */
int64
chronicle_write_ring(uint64 *upto)
{
	uint64		tail,
				head;
	char	   *copy = chronicle_ring_copy(&tail, &head);
	MemoryContext oldcxt = CurrentMemoryContext;
	MemoryContext cxt;
	TimestampTz segment = 0;
	int64		written = 0;
	ChronicleRingReader reader;
	ChronicleRingRecord rec;
	ChronicleRingRow row;

	*upto = head;
	if (copy == NULL)
		return 0;

	/*
	 * No partitions are created here (that could wait for a lock): rows of a
	 * day without its partition land in the default partition, and the
	 * housekeeping of the next snapshot, due at once after promotion
	 * (chronicle_forget_previous()), moves them into their day.
	 */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "chronicle ring write",
								ALLOCSET_DEFAULT_SIZES);
	chronicle_ring_reader_init(&reader, copy, head - tail);
	while (chronicle_ring_next_record(&reader, &rec))
	{
		ChronicleEmitter ems[CHRONICLE_MAX_SOURCES];

		if (rec.newsegment || (segment == 0 && rec.keyframe))
			segment = rec.ts;
		if (segment == 0)
			continue;			/* before the first keyframe */

		MemoryContextSwitchTo(cxt);
		memset(ems, 0, sizeof(ems));
		while (chronicle_ring_next_row(&reader, &row))
			ring_row_queue(ems, &row, rec.nrows);
		ring_record_write(ems, &rec);
		insert_snapshot_row(rec.ts, segment, rec.keyframe, CHRONICLE_BY_WORKER,
							rec.duration_ms, rec.nrows, 0, rec.errors);
		written++;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(cxt);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	pfree(copy);
	return written;
}
