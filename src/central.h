/*-------------------------------------------------------------------------
 *
 * central.h
 *		What the publisher's side of chronicle.subscribe()
 *		(central_publisher.c) shares with the trigger that stores a
 *		subscribed server's rows (central.c): a backfilled row is stored
 *		as one that comes through the slot.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_CENTRAL_H
#define CHRONICLE_CENTRAL_H

#include "access/htup.h"
#include "access/tupdesc.h"

/*
 * A server's row into chronicle.<archive> under origin (history: its
 * packed values with this database's key ids; skip_unknown: false, and
 * nothing stored, for a key without an id here).  False when not stored.
 */
extern bool chronicle_central_store_row(int32 origin, const char *archive,
										HeapTuple tup, TupleDesc desc,
										bool history, bool skip_unknown);

/* The run here of the server's run remote_id, 0 when none.  SPI connected. */
extern int32 chronicle_central_local_run(int32 origin, Datum remote_id);

#endif							/* CHRONICLE_CENTRAL_H */
