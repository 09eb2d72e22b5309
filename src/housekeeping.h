/*-------------------------------------------------------------------------
 *
 * housekeeping.h
 *		The housekeeping of the recorded data (housekeeping.c): the day
 *		partitions, checked by the snapshots, and the rollups, run by the
 *		housekeeper (housekeeper.h) or by the collector when none runs.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_HOUSEKEEPING_H
#define CHRONICLE_HOUSEKEEPING_H

#include "datatype/timestamp.h"

/*
 * chronicle._maintain() when it is due, in a subtransaction of its own
 * (made in cxt); from_sql: for a snapshot from SQL, which leaves it to
 * another session that ran it in this database lately.  SPI connected, in
 * a transaction.
 */
extern void chronicle_maintain_partitions(TimestampTz now, MemoryContext cxt,
										  bool from_sql);
/* The next snapshot checks the partitions at once. */
extern void chronicle_maintenance_due(void);

/*
 * chronicle._rollup() when it is due, in a subtransaction of its own;
 * catch_up: due again a second after a run that stopped at its most
 * minutes (the housekeeper: a backlog caught up).  SPI connected, in a
 * transaction.
 */
extern void chronicle_maintain_rollups(TimestampTz now, bool catch_up);
/* When chronicle_maintain_rollups() runs next in this process. */
extern TimestampTz chronicle_next_rollup(void);

#endif							/* CHRONICLE_HOUSEKEEPING_H */
