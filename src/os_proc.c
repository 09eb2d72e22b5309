/*-------------------------------------------------------------------------
 *
 * os_proc.c
 *		Helpers shared by the operating system sources (source_os_*.c):
 *		the settings that say where /proc is and which disks to record, and
 *		a parser for the "name value" files of /proc.
 *
 * /proc files are small and read once a snapshot, whole, into one buffer
 * the process keeps (chronicle_proc_read()), then cut into lines in place:
 * nothing is allocated per file or line.
 *
 * The files of the real /proc are kept open from one snapshot to the next
 * and read again from offset 0: procfs makes a file's text anew at every
 * read from its start, and opening it (a path walk through procfs, a
 * struct file, security checks) cost more than reading it.  Likewise a file
 * of /proc found to exist is not looked for again.  Only under /proc
 * itself: captured files (chronicle.proc_root elsewhere, for tests) may be
 * replaced between two snapshots, so they are opened, read and closed each
 * time.  A kept file whose read fails (the process of a /proc/<pid> file
 * exited) is closed and opened again by its path once.
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "os_proc.h"
#include "shared.h"

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

/* Files of the real /proc kept open, and files of it known to exist. */
#define PROC_KEPT_MAX	16
typedef struct KeptFile
{
	char		relpath[64];
	int			fd;
} KeptFile;

static KeptFile kept[PROC_KEPT_MAX];
static int	nkept = 0;
static char *known[PROC_KEPT_MAX];
static int	nknown = 0;

static bool
under_real_proc(void)
{
	return chronicle_proc_root == NULL || strcmp(chronicle_proc_root, "/proc") == 0;
}

bool
chronicle_proc_exists(const char *relpath)
{
	char		path[MAXPGPATH];
	bool		real = under_real_proc();

	if (real)
		for (int i = 0; i < nknown; i++)
			if (strcmp(known[i], relpath) == 0)
				return true;
	snprintf(path, sizeof(path), "%s/%s",
			 chronicle_proc_root ? chronicle_proc_root : "/proc", relpath);
	if (access(path, R_OK) != 0)
		return false;
	if (real && nknown < PROC_KEPT_MAX)
		known[nknown++] = MemoryContextStrdup(TopMemoryContext, relpath);
	return true;
}

/*
 * Read fd from offset 0 to its end into buf.  False on a read error (errno
 * set), with what was read before it in buf.
 */
static bool
read_whole(int fd, StringInfo buf)
{
	resetStringInfo(buf);
	for (;;)
	{
		ssize_t		n;

		if (buf->maxlen - buf->len < 1024)
			enlargeStringInfo(buf, buf->maxlen);
		n = pread(fd, buf->data + buf->len, buf->maxlen - buf->len - 1, buf->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			buf->data[buf->len] = '\0';
			return false;
		}
		if (n == 0)
			break;
		buf->len += n;
	}
	buf->data[buf->len] = '\0';
	return true;
}

static void
kept_close(int i)
{
	close(kept[i].fd);
	ReleaseExternalFD();
	kept[i] = kept[--nkept];
}

/*
 * The path of <proc_root>/<relpath> into path (MAXPGPATH bytes), and the
 * caller's read buffer made on first use, in TopMemoryContext: it is kept
 * for the life of the process.
 */
static void
proc_path(const char *relpath, char *path, StringInfo buf)
{
	if (buf->data == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(buf);
		MemoryContextSwitchTo(oldcxt);
	}
	snprintf(path, MAXPGPATH, "%s/%s",
			 chronicle_proc_root ? chronicle_proc_root : "/proc", relpath);
}

/*
 * Read <proc_root>/<relpath> whole.  False (errno set) if it could not be
 * opened; a read error ends the text where it happened, as the end of the
 * file would.  The text stays valid until the next call.
 */
bool
chronicle_proc_read(const char *relpath, ChronicleProcText *text)
{
	static StringInfoData buf;
	char		path[MAXPGPATH];
	int			fd;
	int			i;

	proc_path(relpath, path, &buf);

	if (under_real_proc() && strlen(relpath) < sizeof(kept[0].relpath))
	{
		for (i = 0; i < nkept; i++)
		{
			if (strcmp(kept[i].relpath, relpath) != 0)
				continue;
			if (read_whole(kept[i].fd, &buf))
				goto done;
			kept_close(i);		/* and open it again below */
			break;
		}
		if (nkept < PROC_KEPT_MAX && AcquireExternalFD())
		{
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
			{
				int			save_errno = errno;

				ReleaseExternalFD();
				errno = save_errno;
				return false;
			}
			strlcpy(kept[nkept].relpath, relpath, sizeof(kept[nkept].relpath));
			kept[nkept].fd = fd;
			nkept++;
			(void) read_whole(fd, &buf);
			goto done;
		}
	}

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return false;
	(void) read_whole(fd, &buf);
	CloseTransientFile(fd);

done:
	text->next = buf.data;
	text->end = buf.data + buf.len;
	return true;
}

char *
chronicle_proc_line(ChronicleProcText *text)
{
	char	   *line = text->next;
	char	   *nl;

	if (line >= text->end)
		return NULL;
	nl = memchr(line, '\n', text->end - line);
	if (nl)
	{
		*nl = '\0';
		text->next = nl + 1;
	}
	else
		text->next = text->end;	/* the last line, NUL-terminated already */
	return line;
}

bool
chronicle_proc_read_keyed(const char *relpath, const char *const *names,
						  int nnames, int64 *values, bool *found)
{
	ChronicleProcText text;
	char	   *line;
	int			nfound = 0;

	for (int i = 0; i < nnames; i++)
	{
		found[i] = false;
		values[i] = 0;
	}
	if (!chronicle_proc_read(relpath, &text))
		return false;

	/* a name's first line counts: the rest need not be read once all are */
	while (nfound < nnames && (line = chronicle_proc_line(&text)) != NULL)
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
				nfound++;
				break;
			}
		}
	}
	return true;
}

/*
 * Read <proc_root>/<relpath> whole, as chronicle_proc_read() does, but
 * without keeping the file open: for the files of the server's processes
 * (<pid>/stat, <pid>/io, ...) that chronicle_proc_read_pid() does not keep.
 * There are many of them, and they come and go with their processes: kept
 * here, they would take the slots meant for the machine's few files
 * (meminfo, diskstats, ...) and hold the files of processes long gone.  False (errno set) if the file could not be opened
 * (the process exited); a read error ends the text where it happened.  Its
 * own buffer: the text stays valid until the next call of this function,
 * whatever chronicle_proc_read() does meanwhile.
 */
bool
chronicle_proc_read_transient(const char *relpath, ChronicleProcText *text)
{
	static StringInfoData buf;
	char		path[MAXPGPATH];
	int			fd;

	proc_path(relpath, path, &buf);
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return false;
	(void) read_whole(fd, &buf);
	CloseTransientFile(fd);

	text->next = buf.data;
	text->end = buf.data + buf.len;
	return true;
}

/*
 * The files of the server's processes that os_process_cpu reads at every
 * snapshot (<pid>/stat, schedstat, io, status), kept open from one snapshot
 * to the next in the collector and read again from offset 0, as the
 * machine's files above: opening them cost the collector more than reading
 * them (four path walks through procfs a process, 72 opens a snapshot on an
 * idle server).  An open file of /proc/<pid> holds its process's struct
 * pid, not the number: once the process has exited, a read of it fails
 * (ESRCH), even when a new process has the pid meanwhile, so a kept file
 * never reads another process.
 *
 * At most PID_KEPT_MAX processes, four descriptors each, are kept: every
 * one counts in fd.c's budget of external descriptors (AcquireExternalFD(),
 * a third of max_safe_fds, about 330 with max_files_per_process at 1000),
 * which the collector shares with its other kept files and whatever an
 * extension it loads needs.  32 processes hold the server's own (its
 * auxiliary processes, the wait sampler, the workers: 10 to 20) with room
 * for some busy sessions; a process beyond it, or when fd.c refuses, is read
 * by opening its files each time, as before.  Which processes are worth
 * keeping the caller says (keep): those read at every snapshot, not the idle
 * sessions that are read once a minute.  The files of a process not read
 * since the previous chronicle_proc_pid_sweep() are closed there: processes
 * that exited, or sessions gone idle.
 *
 * The table is static, in the collector's memory for its life; the kernel
 * closes the descriptors when the process exits (their fd.c accounting ends
 * with the process), so nothing closes them at exit.  Only the collector
 * keeps files (chronicle.snapshot() in a backend would hold them for the
 * backend's life, between snapshots that may never come), and only under
 * the real /proc.
 */
#define PID_KEPT_MAX	32

static const char *const pid_file_names[CHRONICLE_PID_NFILES] = {
	"stat", "schedstat", "io", "status"
};

typedef struct PidFiles
{
	int			pid;			/* 0: a free slot */
	uint32		used;			/* sweep generation of its last read */
	int			fd[CHRONICLE_PID_NFILES];	/* -1: not open */
} PidFiles;

static PidFiles pid_kept[PID_KEPT_MAX];
static uint32 pid_sweep_gen = 1;

/* Close the files of slot e and free it. */
static void
pid_drop(PidFiles *e)
{
	for (int f = 0; f < CHRONICLE_PID_NFILES; f++)
	{
		if (e->fd[f] >= 0)
		{
			close(e->fd[f]);
			ReleaseExternalFD();
		}
		e->fd[f] = -1;
	}
	e->pid = 0;
}

/*
 * Read fd from offset 0 to its end into buf, as read_whole(), sized so that
 * one read takes the whole text: a seq_file of procfs fills the reader's
 * buffer unless its text ends first, so a read shorter than the buffer is
 * the whole text, and the read that would find its end is saved.  False on
 * a read error, or when the text is empty (a file of a live process never
 * is).
 */
static bool
pid_read_whole(int fd, StringInfo buf)
{
	ssize_t		n;

	resetStringInfo(buf);
	if (buf->maxlen < 8192)
		enlargeStringInfo(buf, 8192);
	do
		n = pread(fd, buf->data, buf->maxlen - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	if (n < buf->maxlen - 1)
	{
		buf->len = n;
		buf->data[n] = '\0';
		return true;
	}
	return read_whole(fd, buf) && buf->len > 0;
}

/*
 * Read file of process pid whole (chronicle_proc_read_transient(), through
 * a kept descriptor when there is one or keep says to open one).  False when
 * it cannot be read: the process has exited.  A kept file whose read fails
 * has its process's files closed: the stat file is then opened again by its
 * path, so that a new process with the pid is read from there
 * on (and found to be another by its start time); any other file is not,
 * as it would read the new process where the caller has the old one's stat.
 */
bool
chronicle_proc_read_pid(int pid, ChroniclePidFile file, bool keep,
						ChronicleProcText *text)
{
	static StringInfoData buf;
	char		relpath[64];
	char		path[MAXPGPATH];
	PidFiles   *e = NULL;
	PidFiles   *free_slot = NULL;
	int			fd;

	snprintf(relpath, sizeof(relpath), "%d/%s", pid, pid_file_names[file]);
	if (!under_real_proc() || !chronicle_is_collector())
		return chronicle_proc_read_transient(relpath, text);

	for (int i = 0; i < PID_KEPT_MAX; i++)
	{
		if (pid_kept[i].pid == pid)
		{
			e = &pid_kept[i];
			break;
		}
		if (pid_kept[i].pid == 0 && free_slot == NULL)
			free_slot = &pid_kept[i];
	}
	proc_path(relpath, path, &buf);

	if (e != NULL && e->fd[file] >= 0)
	{
		if (pid_read_whole(e->fd[file], &buf))
		{
			e->used = pid_sweep_gen;
			goto done;
		}
		/* its process has exited: this slot is done */
		pid_drop(e);
		free_slot = e;
		e = NULL;
		if (file != CHRONICLE_PID_STAT)
			return false;
	}

	if (e == NULL)
	{
		if (!keep || free_slot == NULL)
			return chronicle_proc_read_transient(relpath, text);
		e = free_slot;
		e->pid = pid;
		for (int f = 0; f < CHRONICLE_PID_NFILES; f++)
			e->fd[f] = -1;
	}
	e->used = pid_sweep_gen;
	if (!AcquireExternalFD())
		return chronicle_proc_read_transient(relpath, text);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		int			save_errno = errno;

		ReleaseExternalFD();
		if (file == CHRONICLE_PID_STAT)
			pid_drop(e);		/* no such process (any more) */
		errno = save_errno;
		return false;
	}
	e->fd[file] = fd;
	if (!pid_read_whole(fd, &buf))
	{
		pid_drop(e);
		return false;
	}

done:
	text->next = buf.data;
	text->end = buf.data + buf.len;
	return true;
}

/*
 * Close the files of the processes not read since the last call: called
 * after each reading of every process.
 */
void
chronicle_proc_pid_sweep(void)
{
	for (int i = 0; i < PID_KEPT_MAX; i++)
		if (pid_kept[i].pid != 0 && pid_kept[i].used != pid_sweep_gen)
			pid_drop(&pid_kept[i]);
	pid_sweep_gen++;
}
