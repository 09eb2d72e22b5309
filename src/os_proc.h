/*-------------------------------------------------------------------------
 *
 * os_proc.h
 *		Small helpers shared by the operating system sources: where /proc
 *		is, and reading "name value" files from it.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef CHRONICLE_OS_PROC_H
#define CHRONICLE_OS_PROC_H

#include <stdio.h>

/* chronicle.proc_root: "/proc" unless a test points it at captured files */
extern char *chronicle_proc_root;
/* chronicle.os_disks: "" = the devices of the data directory and pg_wal */
extern char *chronicle_os_disks;

extern void chronicle_os_define_settings(void);

/* Open <proc_root>/<relpath> for reading; NULL (errno set) if it can't. */
extern FILE *chronicle_proc_open(const char *relpath);
extern bool chronicle_proc_exists(const char *relpath);

/*
 * A file read whole by chronicle_proc_read(), NUL-terminated, valid until
 * the next read; chronicle_proc_line() cuts its next line off in place
 * (NULL at the end).  What the sources read once a snapshot (os_proc.c
 * says why).
 */
typedef struct ChronicleProcText
{
	char	   *next;
	char	   *end;
} ChronicleProcText;

extern bool chronicle_proc_read(const char *relpath, ChronicleProcText *text);
extern char *chronicle_proc_line(ChronicleProcText *text);

/*
 * chronicle_proc_read() for the files of other processes (<pid>/stat,
 * <pid>/io, ...) not kept by chronicle_proc_read_pid(): opened, read whole
 * and closed at every call, never kept open nor remembered (os_proc.c says
 * why).  The text stays valid until the
 * next call of this function.
 */
extern bool chronicle_proc_read_transient(const char *relpath,
										  ChronicleProcText *text);

/*
 * The files of a server process that os_process_cpu reads, by
 * chronicle_proc_read_pid(): as chronicle_proc_read_transient(), but the
 * collector keeps the files of up to a few dozen processes open (keep:
 * the caller reads this process at every snapshot) and reads them again;
 * chronicle_proc_pid_sweep() after every reading closes those of the
 * processes not read since the previous one (os_proc.c says why).
 */
typedef enum ChroniclePidFile
{
	CHRONICLE_PID_STAT,
	CHRONICLE_PID_SCHEDSTAT,
	CHRONICLE_PID_IO,
	CHRONICLE_PID_STATUS,
	CHRONICLE_PID_NFILES
} ChroniclePidFile;

extern bool chronicle_proc_read_pid(int pid, ChroniclePidFile file, bool keep,
									ChronicleProcText *text);
extern void chronicle_proc_pid_sweep(void);

/*
 * Read a file of "name: value" or "name value" lines and store the values
 * of the wanted names (in the order of names[]) into values[]; found[] says
 * which were present.  Returns false if the file could not be opened.
 */
extern bool chronicle_proc_read_keyed(const char *relpath,
									  const char *const *names, int nnames,
									  int64 *values, bool *found);

#endif							/* CHRONICLE_OS_PROC_H */
