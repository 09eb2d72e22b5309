/*-------------------------------------------------------------------------
 *
 * os_proc.c
 *		Helpers shared by the operating system sources (source_os_*.c):
 *		the settings that say where /proc is and which disks to record, and
 *		a parser for the "name value" files of /proc.
 *
 * /proc files are small and read once a snapshot with fgets() into a stack
 * buffer: nothing is allocated per line.  Files are opened with
 * AllocateFile() so an error in the middle closes them.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "storage/fd.h"
#include "utils/guc.h"

#include "os_proc.h"

char	   *chronicle_proc_root = NULL;
char	   *chronicle_os_disks = NULL;

void
chronicle_os_define_settings(void)
{
	DefineCustomStringVariable("chronicle.proc_root",
							   "Directory the operating system sources read instead of /proc.",
							   "For tests that parse captured /proc files; leave it at /proc.",
							   &chronicle_proc_root,
							   "/proc",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("chronicle.os_disks",
							   "Disks recorded from /proc/diskstats, as a comma-separated list of device[=role].",
							   "Empty (the default) records the devices holding the data directory and pg_wal.",
							   &chronicle_os_disks,
							   "",
							   PGC_SUSET, 0,
							   NULL, NULL, NULL);
}

FILE *
chronicle_proc_open(const char *relpath)
{
	char		path[MAXPGPATH];

	snprintf(path, sizeof(path), "%s/%s",
			 chronicle_proc_root ? chronicle_proc_root : "/proc", relpath);
	return AllocateFile(path, "r");
}

bool
chronicle_proc_exists(const char *relpath)
{
	char		path[MAXPGPATH];

	snprintf(path, sizeof(path), "%s/%s",
			 chronicle_proc_root ? chronicle_proc_root : "/proc", relpath);
	return access(path, R_OK) == 0;
}

bool
chronicle_proc_read_keyed(const char *relpath, const char *const *names,
						  int nnames, int64 *values, bool *found)
{
	FILE	   *f = chronicle_proc_open(relpath);
	char		line[512];

	for (int i = 0; i < nnames; i++)
	{
		found[i] = false;
		values[i] = 0;
	}
	if (f == NULL)
		return false;

	while (fgets(line, sizeof(line), f) != NULL)
	{
		char	   *p = line;
		char	   *name = line;
		size_t		namelen;
		long long	v;
		char	   *end;

		/* the name runs up to ':' or blank */
		while (*p && *p != ':' && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		namelen = p - name;
		if (namelen == 0)
			continue;
		if (*p == ':')
			p++;
		errno = 0;
		v = strtoll(p, &end, 10);
		if (end == p || errno != 0)
			continue;			/* not a number: not a line we know */

		for (int i = 0; i < nnames; i++)
		{
			if (!found[i] && strlen(names[i]) == namelen &&
				strncmp(names[i], name, namelen) == 0)
			{
				values[i] = (int64) v;
				found[i] = true;
				break;
			}
		}
	}
	FreeFile(f);
	return true;
}
