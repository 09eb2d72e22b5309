/*-------------------------------------------------------------------------
 *
 * databases.c
 *		The list of databases that the database and relations sources
 *		share, read from pg_database only when it changed.
 *
 * Scanning pg_database is itself counted in the shared-objects row of
 * pg_stat_database (blks_hit, tup_returned of datid 0), so a scan at every
 * snapshot made the collector write that row every second, on an idle
 * server too.  The list is kept and read again only when a syscache
 * invalidation says pg_database changed (CREATE/DROP/ALTER DATABASE),
 * which a process receives at the start of each snapshot's transaction.
 *
 * The list becomes valid only once a scan finished without an
 * invalidation arriving meanwhile: a scan that fails (a cancel, an error)
 * leaves it invalid, so the next call reads it again rather than trusting
 * an old or empty list until pg_database changes next.  The scan builds
 * the new list in the caller's memory context (the snapshot's), so a scan
 * that fails leaves nothing behind; only a finished one replaces the kept
 * list, in databases_cxt.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_database.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "databases.h"

/*
 * The list last read, in databases_cxt: a child of TopMemoryContext made
 * at the first call, for the life of the process (it is kept across
 * snapshots).
 */
static MemoryContext databases_cxt = NULL;
static ChronicleDatabase *databases = NULL;
static int	ndatabases = 0;
static uint64 generation = 0;
static bool databases_valid = false;

/* Bumped by every invalidation of pg_database, whenever it arrives. */
static uint64 invalidations = 0;

static void
databases_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	databases_valid = false;
	invalidations++;
}

static void
databases_read(void)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	int			max = 16;
	int			n = 0;
	ChronicleDatabase *list;
	uint64		before = invalidations;

	list = palloc(sizeof(ChronicleDatabase) * max);
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (n == max)
		{
			max *= 2;
			list = repalloc(list, sizeof(ChronicleDatabase) * max);
		}
		list[n].oid = db->oid;
		list[n].name = db->datname;
		list[n].connectable = db->datallowconn && !db->datistemplate &&
			db->datconnlimit != DATCONNLIMIT_INVALID_DB;
		n++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	/* the scan is over: only now is the kept list replaced */
	if (databases != NULL)
		pfree(databases);
	databases = MemoryContextAlloc(databases_cxt, sizeof(ChronicleDatabase) * Max(n, 1));
	memcpy(databases, list, sizeof(ChronicleDatabase) * n);
	ndatabases = n;
	pfree(list);
	generation++;
	databases_valid = (invalidations == before);
}

const ChronicleDatabase *
chronicle_databases(int *n, uint64 *gen)
{
	if (databases_cxt == NULL)
	{
		databases_cxt = AllocSetContextCreate(TopMemoryContext,
											  "pg_chronicle databases",
											  ALLOCSET_SMALL_SIZES);
		CacheRegisterSyscacheCallback(DATABASEOID, databases_invalidate, (Datum) 0);
	}
	if (!databases_valid)
		databases_read();
	*n = ndatabases;
	if (gen != NULL)
		*gen = generation;
	return databases;
}
