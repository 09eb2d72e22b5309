/*-------------------------------------------------------------------------
 *
 * housekeeper.h
 *		The housekeeper (housekeeper.c): the process that runs the rollups
 *		beside the collector that launched it.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_HOUSEKEEPER_H
#define CHRONICLE_HOUSEKEEPER_H

#include "fmgr.h"

/* Is a housekeeper running for the collector of this process? */
extern bool chronicle_housekeeper_running(void);
/* Launch one when none runs for the collector of this process. */
extern void chronicle_housekeeper_ensure(void);
extern PGDLLEXPORT void chronicle_housekeeper_main(Datum main_arg);

#endif							/* CHRONICLE_HOUSEKEEPER_H */
