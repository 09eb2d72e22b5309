/*-------------------------------------------------------------------------
 *
 * environment.h
 *		The environment of a run (environment.c), read by run_begin.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_ENVIRONMENT_H
#define CHRONICLE_ENVIRONMENT_H

/* The server's environment as the text of a JSON object (palloc'd). */
extern char *chronicle_environment_json(void);

#endif							/* CHRONICLE_ENVIRONMENT_H */
