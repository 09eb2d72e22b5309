/*-------------------------------------------------------------------------
 *
 * databases.h
 *		The databases of pg_database as the sources see them, read again
 *		only when pg_database changed (databases.c says why).
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_DATABASES_H
#define CHRONICLE_DATABASES_H

typedef struct ChronicleDatabase
{
	Oid			oid;
	NameData	name;
	/* allows connections, not a template, not half-dropped */
	bool		connectable;
} ChronicleDatabase;

/*
 * The databases, in pg_database's order, *n of them.  *generation (when
 * not NULL) changes each time the list is read again, so that a caller
 * keeping state per database knows when to match it up again.  The list
 * is valid until the next call.
 */
extern const ChronicleDatabase *chronicle_databases(int *n, uint64 *generation);

#endif							/* CHRONICLE_DATABASES_H */
