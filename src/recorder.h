/*-------------------------------------------------------------------------
 *
 * recorder.h
 *		What the recorder's processes and work share (recorder.c): the
 *		settings of its sessions, the lock on the extension, and the errors
 *		that end a snapshot's transaction.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_RECORDER_H
#define CHRONICLE_RECORDER_H

/* The settings of the recorder's own sessions, and its application_name. */
extern void chronicle_recorder_session(const char *appname);

/*
 * The version of pg_chronicle installed in this database (palloc'd) and
 * its oid, the extension locked against DROP until the end of the
 * transaction; NULL and InvalidOid when it is not installed.
 */
extern char *chronicle_extension_lock(Oid *extoid);

/* Does this error end the snapshot, rather than the part that raised it? */
extern bool chronicle_error_ends_snapshot(int sqlerrcode);

#endif							/* CHRONICLE_RECORDER_H */
