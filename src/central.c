/*-------------------------------------------------------------------------
 *
 * central.c
 *		The central repository's side of logical replication
 *		(docs/central.md): the trigger that stores what a subscription of
 *		chronicle.subscribe() applies under that server's origin.  The
 *		publisher's side of chronicle.subscribe() (the slot, the keys, the
 *		backfill) is central_publisher.c.
 *
 * A recording server publishes chronicle.snapshot, chronicle.history,
 * chronicle.history_key, chronicle.statements_text and its runs (run,
 * run_change, mark, app_*) (chronicle.publish()).
 * The central database subscribes to them under the same names, and the
 * apply worker would write them into the central server's own tables,
 * mixed with its own recording.  The trigger chronicle._central_apply(),
 * a BEFORE INSERT row trigger on each of them enabled as a REPLICA trigger
 * (so it fires only in sessions with session_replication_role = replica,
 * the apply workers: the collector never pays for it), sends the row to
 * the archive tables under the subscription's origin (05_origin.sql) and
 * skips it.  The packed history holds the source's key ids: each value is
 * packed again with this database's ids, through the origin's map of
 * remote id -> local id (chronicle.archive_key), which the source's
 * history_key rows fill: the collector adds a key in the transaction of
 * the snapshot that first has it, before the history row (it needs the id
 * to pack the row), and logical replication applies a transaction's
 * changes in order, and transactions in commit order.  The keys the
 * source held before the slot existed are read by chronicle.subscribe()
 * with the slot's snapshot (central_publisher.c): every key either
 * committed before the slot or is decoded from it.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "central.h"
#include "history_int.h"
#include "pg_chronicle.h"

/* set while the trigger writes: its own writes are local ones */
static bool central_writing = false;

/* The index of the source named name, or -1. */
static int
source_named(const char *name)
{
	for (int i = 0; i < chronicle_nsources; i++)
		if (strcmp(chronicle_sources[i]->name, name) == 0)
			return i;
	return -1;
}

/*
 * The origin of the subscription this session applies, 0 when it applies
 * none of chronicle.subscribe()'s.  SPI connected.
 */
static int32
session_origin(void)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	int			ret;
	bool		isnull;

	/*
	 * An apply worker's replication origin is named pg_<subscription oid>
	 * (ReplicationOriginNameForLogicalRep()).
	 */
	args[0] = Int32GetDatum((int32) replorigin_session_origin);
	ret = SPI_execute_with_args("SELECT o.origin_id FROM chronicle.origin o"
								" JOIN pg_catalog.pg_subscription s ON s.subname = o.subscription"
								"  AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d"
								"                    WHERE d.datname = pg_catalog.current_database())"
								" JOIN pg_catalog.pg_replication_origin r ON r.roname = 'pg_' || s.oid"
								" WHERE r.roident = $1 AND o.kind = 'subscription'",
								1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read chronicle.origin: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * session_origin(), read once a process: an apply worker applies one
 * subscription, under one replication origin, for as long as it lives.
 */
static int32
session_origin_cached(void)
{
	static RepOriginId cached_for = InvalidRepOriginId;
	static int32 cached = 0;

	if (cached_for != replorigin_session_origin || cached == 0)
	{
		cached = session_origin();
		cached_for = replorigin_session_origin;
	}
	return cached;
}

/*
 * A source's history_key row: its local id in the origin's map.  An id the
 * map has already is mapped again: a server gives an id once, but a
 * standby promoted after its primary was lost (docs/central.md
 * "Failover") may give again an id that the primary gave after the
 * standby's last replay, and that the central side received.
 */
static void
store_key(int32 origin, HeapTuple tup, TupleDesc desc)
{
	Oid			argtypes[3] = {INT4OID, INT4OID, INT4OID};
	Datum		args[3];
	bool		isnull[3];
	Datum		source;
	Datum		key;
	int			ret;

	args[0] = Int32GetDatum(origin);
	args[1] = heap_getattr(tup, SPI_fnumber(desc, "key_id"), desc, &isnull[0]);
	source = heap_getattr(tup, SPI_fnumber(desc, "source"), desc, &isnull[1]);
	key = heap_getattr(tup, SPI_fnumber(desc, "key"), desc, &isnull[2]);
	if (isnull[0] || isnull[1] || isnull[2])
		elog(ERROR, "a history_key row without its id, source or key");
	args[2] = Int32GetDatum(chronicle_key_add(source, key));
	ret = SPI_execute_with_args("INSERT INTO chronicle.archive_key (origin, remote_id, key_id)"
								" VALUES ($1, $2, $3) ON CONFLICT (origin, remote_id)"
								" DO UPDATE SET key_id = excluded.key_id",
								3, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not add to chronicle.archive_key: %s",
			 SPI_result_code_string(ret));
}

/* remote key id -> local key id, of one origin */
typedef struct KeyMapEntry
{
	int32		remote;
	int32		local;
} KeyMapEntry;

/*
 * The packed values of a history row (sources[a] >= 0 for a packed
 * column a), their key ids mapped to this database's.  A key without an
 * id here is an error, or with skip_unknown, false returned (nothing
 * changed).
 */
static bool
repack(int32 origin, TimestampTz ts, TupleDesc desc, const int *sources,
	   Datum *values, const bool *nulls, bool skip_unknown)
{
	ChronicleRows *decoded = palloc0(sizeof(ChronicleRows) * desc->natts);
	int			nremote = 0;
	Datum	   *remote;
	HTAB	   *map;
	HASHCTL		ctl;
	Oid			argtypes[2] = {INT4OID, INT4ARRAYOID};
	Datum		args[2];
	int			ret;

	for (int a = 0; a < desc->natts; a++)
	{
		if (sources[a] < 0 || nulls[a])
			continue;
		decoded[a].source_index = sources[a];
		chronicle_history_unpack(&decoded[a], ts, DatumGetByteaPP(values[a]), NULL);
		if (chronicle_sources[sources[a]]->nkeys > 0)
			nremote += decoded[a].nrows;
	}
	if (nremote == 0)
		return true;

	/* the map of the ids of this row, read once */
	remote = palloc(sizeof(Datum) * nremote);
	nremote = 0;
	for (int a = 0; a < desc->natts; a++)
		if (sources[a] >= 0 && !nulls[a] && chronicle_sources[sources[a]]->nkeys > 0)
			for (int r = 0; r < decoded[a].nrows; r++)
				remote[nremote++] = Int32GetDatum(decoded[a].key_ids[r]);
	args[0] = Int32GetDatum(origin);
	args[1] = PointerGetDatum(construct_array_builtin(remote, nremote, INT4OID));
	ret = SPI_execute_with_args("SELECT remote_id, key_id FROM chronicle.archive_key"
								" WHERE origin = $1 AND remote_id = ANY ($2)",
								2, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read chronicle.archive_key: %s",
			 SPI_result_code_string(ret));
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(KeyMapEntry);
	ctl.hcxt = CurrentMemoryContext;
	map = hash_create("chronicle key map", Max(SPI_processed, 16), &ctl,
					  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		null;
		int32		r = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &null));
		KeyMapEntry *e = hash_search(map, &r, HASH_ENTER, NULL);

		e->local = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &null));
	}
	/* a backfill stores many rows in one SPI connection */
	SPI_freetuptable(SPI_tuptable);

	for (int a = 0; a < desc->natts; a++)
	{
		const ChronicleSource *src;

		if (sources[a] < 0 || nulls[a])
			continue;
		src = chronicle_sources[sources[a]];
		for (int r = 0; r < decoded[a].nrows && src->nkeys > 0; r++)
		{
			KeyMapEntry *e = hash_search(map, &decoded[a].key_ids[r], HASH_FIND, NULL);

			if (e == NULL && skip_unknown)
				return false;

			/*
			 * Never stored with a wrong key: the apply worker stops here and
			 * retries, until the origin is subscribed again.
			 */
			if (e == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
						 errmsg("chronicle: key id %d of source \"%s\" of origin %d has no key here",
								decoded[a].key_ids[r], src->name, origin),
						 errdetail("The history row at %s names a key the publisher's chronicle.history_key never sent.",
								   timestamptz_to_str(ts)),
						 errhint("Subscribe to the server again (docs/central.md).")));
			decoded[a].key_ids[r] = e->local;
		}
	}
	for (int a = 0; a < desc->natts; a++)
		if (sources[a] >= 0 && !nulls[a])
			values[a] = PointerGetDatum(chronicle_pack(&decoded[a], ts));
	return true;
}

/*
 * A row of the table the trigger fired on into chronicle.<archive>, under
 * origin: the columns the archive table has too, by name; the packed
 * history's values packed again (history).  A row there already (the
 * same ts sent twice: a day partition filled from the default partition
 * republishes its rows) is left as it is.
 */
bool
chronicle_central_store_row(int32 origin, const char *archive, HeapTuple tup,
							TupleDesc desc, bool history, bool skip_unknown)
{
	Oid			relid = get_relname_relid(archive, get_namespace_oid("chronicle", false));
	StringInfoData sql;
	StringInfoData vals;
	Oid		   *argtypes = palloc(sizeof(Oid) * (desc->natts + 1));
	Datum	   *args = palloc(sizeof(Datum) * (desc->natts + 1));
	char	   *argnulls = palloc(desc->natts + 1);
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	int		   *sources = palloc(sizeof(int) * desc->natts);
	int			nargs = 1;
	int			ts_att = -1;
	int			ret;

	if (!OidIsValid(relid))
		elog(ERROR, "no table chronicle.%s", archive);
	heap_deform_tuple(tup, desc, values, nulls);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		sources[a] = -1;
		if (att->attisdropped)
			continue;
		if (strcmp(NameStr(att->attname), "ts") == 0)
			ts_att = a;
		if (history && att->atttypid == BYTEAOID)
			sources[a] = source_named(NameStr(att->attname));
	}
	if (history)
	{
		if (ts_att < 0 || nulls[ts_att])
			elog(ERROR, "a history row without ts");
		if (!repack(origin, DatumGetTimestampTz(values[ts_att]), desc, sources, values, nulls,
					skip_unknown))
			return false;
	}

	initStringInfo(&sql);
	initStringInfo(&vals);
	appendStringInfo(&sql, "INSERT INTO chronicle.%s (origin", quote_identifier(archive));
	appendStringInfoString(&vals, "$1");
	argtypes[0] = INT4OID;
	args[0] = Int32GetDatum(origin);
	argnulls[0] = ' ';
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped || get_attnum(relid, NameStr(att->attname)) == InvalidAttrNumber)
			continue;
		appendStringInfo(&sql, ", %s", quote_identifier(NameStr(att->attname)));
		appendStringInfo(&vals, ", $%d", nargs + 1);
		argtypes[nargs] = att->atttypid;
		args[nargs] = values[a];
		argnulls[nargs] = nulls[a] ? 'n' : ' ';
		nargs++;
	}
	appendStringInfo(&sql, ") VALUES (%s) ON CONFLICT DO NOTHING", vals.data);
	ret = SPI_execute_with_args(sql.data, nargs, argtypes, args, argnulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not write chronicle.%s: %s", archive,
			 SPI_result_code_string(ret));
	return SPI_processed > 0;
}

/*
 * The run here of the server's run remote_id (chronicle.archive_run), or
 * 0 when it has none (a run begun before the subscription).  One saved
 * plan: it runs once a pgbench transaction.  SPI connected.
 */
int32
chronicle_central_local_run(int32 origin, Datum remote_id)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2];
	bool		isnull;
	int			ret;

	if (plan == NULL)
	{
		Oid			types[2] = {INT4OID, INT4OID};
		SPIPlanPtr	p = SPI_prepare("SELECT run_id FROM chronicle.archive_run"
									" WHERE origin = $1 AND remote_id = $2", 2, types);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare the read of chronicle.archive_run: %s",
				 SPI_result_code_string(SPI_result));
		plan = p;
	}
	args[0] = Int32GetDatum(origin);
	args[1] = remote_id;
	ret = SPI_execute_plan(plan, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read chronicle.archive_run: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * A row of a run's pgbench log or metrics (app_transaction, app_interval,
 * app_metric): the same table here, only its run_id is the server's.  The
 * run here (0: none, the row is skipped), which the trigger writes into
 * the row it returns: the apply worker inserts it itself, one row a
 * pgbench transaction with no statement of ours.
 */
static int32
app_row_run(int32 origin, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	Datum		remote = heap_getattr(tup, SPI_fnumber(desc, "run_id"), desc, &isnull);

	/* an app_metric row tied to no run would read as the central's own */
	if (isnull)
		return 0;
	return chronicle_central_local_run(origin, remote);
}

/*
 * The kept results' epoch moved on (50_app.sql, "Kept results"), once a
 * transaction: its statement triggers (app_epoch_next) do not fire for
 * the rows an apply worker applies, which fires row triggers only, so a
 * result kept before a run's pgbench rows or its end arrived would be
 * read back.  SPI connected.
 */
static void
epoch_next(void)
{
	static TransactionId done_in = InvalidTransactionId;
	TransactionId xid = GetCurrentTransactionId();
	int			ret;

	if (xid == done_in)
		return;
	ret = SPI_execute("INSERT INTO chronicle.app_epoch AS e (epoch) VALUES (1)"
					  " ON CONFLICT (one) DO UPDATE SET epoch = e.epoch + 1", false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not move chronicle.app_epoch on: %s", SPI_result_code_string(ret));
	done_in = xid;
}

/*
 * A pgbench row of run (here) arrived: the server's rollups
 * (60_rollups.sql) of the minutes it falls in are rolled up again, as the
 * statement trigger of app_transaction has them for a load here (the apply
 * fires row triggers only).  The run's whole window is queued, once a
 * transaction and run: the rollup reads only the minutes that have rows.
 * SPI connected.
 */
static void
rollup_dirty(int32 run)
{
	static TransactionId done_in = InvalidTransactionId;
	static int32 done_run = 0;
	TransactionId xid = GetCurrentTransactionId();
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(run)};
	int			ret;

	if (xid == done_in && run == done_run)
		return;
	ret = SPI_execute_with_args("INSERT INTO chronicle.rollup_dirty (lo, hi, origin)"
								" SELECT r.started, 'infinity', r.origin FROM chronicle.run r"
								" WHERE r.run_id = $1",
								1, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not queue a rollup of run %d: %s", run, SPI_result_code_string(ret));
	done_in = xid;
	done_run = run;
}

/*
 * A row of the server's runs (chronicle.run, run_change, run_deleted,
 * mark): stored by chronicle._central_store_run() (42_central.sql), which
 * maps its run_id.  A few rows a run: kept in SQL, as jsonb.
 */
static void
store_run_row(int32 origin, const char *kind, HeapTuple tup, TupleDesc desc)
{
	Oid			argtypes[3] = {INT4OID, TEXTOID, desc->tdtypeid};
	Datum		args[3];
	int			ret;

	args[0] = Int32GetDatum(origin);
	args[1] = CStringGetTextDatum(kind);
	args[2] = heap_copy_tuple_as_datum(tup, desc);
	ret = SPI_execute_with_args("SELECT chronicle._central_store_run($1, $2, pg_catalog.to_jsonb($3))",
								3, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not store a row of chronicle.%s: %s", kind,
			 SPI_result_code_string(ret));
}

PG_FUNCTION_INFO_V1(chronicle_central_apply);

Datum
chronicle_central_apply(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const char *kind;
	int32		origin;
	bool		app;
	int32		app_run = 0;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		trigdata->tg_trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("chronicle._central_apply() must be a BEFORE INSERT row trigger with the table's kind")));

	/*
	 * Not an apply worker's (a session of its own with
	 * session_replication_role = replica, pg_restore's), or the trigger's
	 * own write to history_key: a local row, as it is.
	 */
	if (central_writing || replorigin_session_origin == InvalidRepOriginId ||
		replorigin_session_origin == DoNotReplicateId)
		return PointerGetDatum(trigdata->tg_trigtuple);

	kind = trigdata->tg_trigger->tgargs[0];
	app = strncmp(kind, "app_", 4) == 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	origin = session_origin_cached();
	if (origin == 0)
	{
		/* another subscription's: not ours to redirect */
		SPI_finish();
		return PointerGetDatum(trigdata->tg_trigtuple);
	}
	central_writing = true;
	PG_TRY();
	{
		HeapTuple	tup = trigdata->tg_trigtuple;
		TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);

		if (strcmp(kind, "history_key") == 0)
			store_key(origin, tup, desc);
		else if (strcmp(kind, "history") == 0)
			chronicle_central_store_row(origin, "archive_history", tup, desc, true, false);
		else if (strcmp(kind, "snapshot") == 0)
			chronicle_central_store_row(origin, "archive_snapshot", tup, desc, false, false);
		else if (strcmp(kind, "statements_text") == 0)
			chronicle_central_store_row(origin, "archive_statements_text", tup, desc, false, false);
		else if (app)
			app_run = app_row_run(origin, tup, desc);
		else
			store_run_row(origin, kind, tup, desc);
		if (app_run != 0 || strcmp(kind, "run_change") == 0 ||
			strcmp(kind, "run_deleted") == 0)
			epoch_next();
		if (app_run != 0 && strcmp(kind, "app_transaction") == 0)
			rollup_dirty(app_run);
	}
	PG_FINALLY();
	{
		central_writing = false;
	}
	PG_END_TRY();
	SPI_finish();
	if (app && app_run != 0)
	{
		/* the row as it came, with the run here: allocated after SPI_finish() */
		TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
		int			att = SPI_fnumber(desc, "run_id");
		Datum		value = Int32GetDatum(app_run);
		bool		null = false;

		return PointerGetDatum(heap_modify_tuple_by_cols(trigdata->tg_trigtuple, desc,
														 1, &att, &value, &null));
	}
	/* stored under its origin (or skipped): not in this server's tables */
	return PointerGetDatum(NULL);
}
