/*-------------------------------------------------------------------------
 *
 * environment.c
 *		What a run's server ran on, read at run_begin: the build, the
 *		kernel, the CPU, memory, cpufreq, transparent huge pages and the
 *		block devices and filesystems of the data directory and pg_wal.
 *
 * Two runs can differ in something no setting shows (a cassert build, a
 * disk scheduler, a governor); chronicle.compare_environment() shows it.
 * Everything here is read from files any local user may read (/proc,
 * /sys), and every piece is optional: a file that is missing or says
 * something unexpected leaves its key out (a container without /sys, a
 * filesystem on no block device), never an error.  The result is a nested
 * JSON object; an object left empty is left out too.
 *
 * The build's configure options are pg_config()'s, which PostgreSQL keeps
 * from PUBLIC: they are kept only when the caller may execute pg_config(),
 * as the settings are kept only when the caller may read them (runs.c).
 * Paths are never kept (the data directory's location is a superuser-only
 * setting): the devices are named by their kernel names, mount options
 * whose value is a path (overlayfs' lowerdir, ...) or a secret are left
 * out, and the build options have their paths replaced by "<path>".
 *
 * Copyright (c) 2026, pg_chronicle developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "catalog/pg_proc.h"
#include "common/config_info.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/json.h"

#include "os_proc.h"
#include "environment.h"

#define ENV_MAX_DEPTH 4

/*
 * A small JSON object writer: members are added as they are found, and an
 * object that got none is taken back out when it is closed.
 */
typedef struct EnvJson
{
	StringInfoData buf;
	int			depth;
	bool		empty[ENV_MAX_DEPTH];	/* no member yet at this level */
	int			start[ENV_MAX_DEPTH];	/* where the object's key began */
	bool		parent_empty[ENV_MAX_DEPTH];	/* the parent's empty before */
} EnvJson;

static void
env_key(EnvJson *j, const char *key)
{
	if (!j->empty[j->depth])
		appendStringInfoChar(&j->buf, ',');
	j->empty[j->depth] = false;
	escape_json(&j->buf, key);
	appendStringInfoChar(&j->buf, ':');
}

static void
env_open(EnvJson *j, const char *key)
{
	int			start = j->buf.len;
	bool		parent_empty = j->empty[j->depth];

	Assert(j->depth + 1 < ENV_MAX_DEPTH);
	env_key(j, key);
	j->depth++;
	j->start[j->depth] = start;
	j->parent_empty[j->depth] = parent_empty;
	j->empty[j->depth] = true;
	appendStringInfoChar(&j->buf, '{');
}

static void
env_close(EnvJson *j)
{
	if (j->empty[j->depth])
	{
		/* nothing in it: take ,"key":{ back out, the parent as it was */
		j->buf.len = j->start[j->depth];
		j->buf.data[j->buf.len] = '\0';
		j->empty[j->depth - 1] = j->parent_empty[j->depth];
	}
	else
		appendStringInfoChar(&j->buf, '}');
	j->depth--;
}

static void
env_str(EnvJson *j, const char *key, const char *value)
{
	if (value == NULL || value[0] == '\0')
		return;
	env_key(j, key);
	escape_json(&j->buf, value);
}

/*
 * A build option (configure's arguments, CC, CFLAGS) without the paths in
 * it: each run of characters from a '/' to the next blank or quote is
 * replaced by "<path>" ('--prefix=/usr/local/pgsql' becomes
 * '--prefix=<path>', -I/opt/include -I<path>), so the options stay
 * comparable and no directory of the build machine is kept.
 */
static void
env_str_nopaths(EnvJson *j, const char *key, const char *value)
{
	StringInfoData out;

	if (value == NULL)
		return;
	initStringInfo(&out);
	for (const char *p = value; *p;)
	{
		if (*p != '/')
		{
			appendStringInfoChar(&out, *p++);
			continue;
		}
		appendStringInfoString(&out, "<path>");
		while (*p && *p != ' ' && *p != '\t' && *p != '\'' && *p != '"')
			p++;
	}
	env_str(j, key, out.data);
	pfree(out.data);
}

static void
env_int(EnvJson *j, const char *key, int64 value)
{
	env_key(j, key);
	appendStringInfo(&j->buf, INT64_FORMAT, value);
}

/* The first line of a file, without its newline; false if unreadable. */
static bool
read_first_line(const char *path, char *line, int size)
{
	FILE	   *f = AllocateFile(path, "r");
	bool		ok;

	if (f == NULL)
		return false;
	ok = fgets(line, size, f) != NULL;
	FreeFile(f);
	if (!ok)
		return false;
	line[strcspn(line, "\n")] = '\0';
	return true;
}

/* A file holding one integer (sysfs attributes). */
static void
env_int_file(EnvJson *j, const char *key, const char *path)
{
	char		line[64];
	char	   *end;
	long long	v;

	if (!read_first_line(path, line, sizeof(line)))
		return;
	errno = 0;
	v = strtoll(line, &end, 10);
	if (end == line || errno != 0)
		return;
	env_int(j, key, (int64) v);
}

/*
 * A sysfs choice file ("always [madvise] never"): the bracketed word, the
 * one in force; the whole line if nothing is bracketed ("none").
 */
static void
env_choice_file(EnvJson *j, const char *key, const char *path)
{
	char		line[256];
	char	   *open;
	char	   *close;

	if (!read_first_line(path, line, sizeof(line)))
		return;
	open = strchr(line, '[');
	close = open ? strchr(open, ']') : NULL;
	if (open && close)
	{
		*close = '\0';
		env_str(j, key, open + 1);
	}
	else
		env_str(j, key, line);
}

/* One whole line of a file into buf (lines of mountinfo can be long). */
static bool
read_line(FILE *f, StringInfo buf)
{
	char		chunk[1024];

	resetStringInfo(buf);
	while (fgets(chunk, sizeof(chunk), f) != NULL)
	{
		appendStringInfoString(buf, chunk);
		if (buf->len > 0 && buf->data[buf->len - 1] == '\n')
		{
			buf->data[--buf->len] = '\0';
			return true;
		}
	}
	return buf->len > 0;
}

/* mountinfo escapes blanks and backslashes as \ooo: decoded in place. */
static void
unescape_octal(char *s)
{
	char	   *w = s;

	for (char *r = s; *r; r++)
	{
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
			r[3] >= '0' && r[3] <= '7')
		{
			*w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		}
		else
			*w++ = *r;
	}
	*w = '\0';
}

/*
 * Mount options without those that name a path or may hold a secret: they
 * say where, not how, and a run is readable by every monitoring role.
 */
static char *
filter_options(const char *options)
{
	StringInfoData out;
	char	   *copy = pstrdup(options);
	char	   *save = NULL;

	initStringInfo(&out);
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save))
	{
		char	   *eq = strchr(opt, '=');

		if (eq && eq[1] == '/')
			continue;
		if (strstr(opt, "pass") || strstr(opt, "cred") || strstr(opt, "secret") ||
			strstr(opt, "key"))
			continue;
		if (out.len > 0)
			appendStringInfoChar(&out, ',');
		appendStringInfoString(&out, opt);
	}
	pfree(copy);
	return out.data;
}

/* Is mount point m the path p or a directory above it? */
static bool
mount_covers(const char *m, const char *p)
{
	size_t		len = strlen(m);

	if (strcmp(m, "/") == 0)
		return true;
	return strncmp(m, p, len) == 0 && (p[len] == '\0' || p[len] == '/');
}

/*
 * The filesystem of path (device dev) from /proc/self/mountinfo: of the
 * mounts of that device, the one with the longest mount point above the
 * path (bind mounts of one device are several lines); its type, its
 * per-mount options and its filesystem (super block) options.
 */
static void
env_mount(EnvJson *j, const char *path, dev_t dev)
{
	FILE	   *f = AllocateFile("/proc/self/mountinfo", "r");
	StringInfoData line;
	char		want[32];
	size_t		best_len = 0;
	bool		found = false;
	char	   *fstype = NULL;
	char	   *mount_opts = NULL;
	char	   *fs_opts = NULL;

	if (f == NULL)
		return;
	snprintf(want, sizeof(want), "%u:%u", major(dev), minor(dev));
	initStringInfo(&line);
	while (read_line(f, &line))
	{
		char	   *field[6];
		char	   *save = NULL;
		char	   *tok;
		char	   *sep;
		char	   *after[3];
		int			n = 0;
		size_t		len;

		/* id parent maj:min root mount_point options [optional...] - type source super */
		for (tok = strtok_r(line.data, " ", &save); tok && n < 6; tok = strtok_r(NULL, " ", &save))
			field[n++] = tok;
		if (n < 6 || strcmp(field[2], want) != 0)
			continue;
		sep = tok;
		while (sep && strcmp(sep, "-") != 0)
			sep = strtok_r(NULL, " ", &save);
		if (sep == NULL)
			continue;
		for (n = 0; n < 3 && (tok = strtok_r(NULL, " ", &save)) != NULL;)
			after[n++] = tok;
		if (n < 3)
			continue;
		unescape_octal(field[4]);
		len = strlen(field[4]);
		if (found && !(mount_covers(field[4], path) && len > best_len))
			continue;
		if (!mount_covers(field[4], path))
			len = 0;			/* of this device, but not above the path */
		found = true;
		best_len = len;
		fstype = pstrdup(after[0]);
		mount_opts = filter_options(field[5]);
		fs_opts = filter_options(after[2]);
	}
	FreeFile(f);
	pfree(line.data);
	if (!found)
		return;
	env_str(j, "fstype", fstype);
	env_str(j, "mount_options", mount_opts);
	env_str(j, "fs_options", fs_opts);
}

/*
 * The device holding path: its filesystem, and for a block device its
 * queue settings, which a partition takes from its disk (sysfs lists a
 * partition in its disk's directory, with a "partition" attribute).  A
 * filesystem on no block device (tmpfs, overlay: major 0) has only the
 * filesystem keys.
 */
static void
env_device(EnvJson *j, const char *key, const char *path)
{
	struct stat st;
	char		real[PATH_MAX];

	if (stat(path, &st) != 0)
		return;
	env_open(j, key);
	if (realpath(path, real) != NULL)
		env_mount(j, real, st.st_dev);
	if (major(st.st_dev) != 0)
	{
		char		sys[MAXPGPATH];
		char		dev[PATH_MAX];
		char		disk[PATH_MAX];
		char		attr[PATH_MAX + 32];
		char	   *name;

		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
		if (realpath(sys, dev) != NULL)
		{
			name = strrchr(dev, '/');
			env_str(j, "name", name ? name + 1 : dev);
			strlcpy(disk, dev, sizeof(disk));
			snprintf(attr, sizeof(attr), "%s/partition", dev);
			if (access(attr, F_OK) == 0 && (name = strrchr(disk, '/')) != NULL)
				*name = '\0';
			name = strrchr(disk, '/');
			env_str(j, "disk", name ? name + 1 : disk);
			snprintf(attr, sizeof(attr), "%s/queue/scheduler", disk);
			env_choice_file(j, "scheduler", attr);
			snprintf(attr, sizeof(attr), "%s/queue/read_ahead_kb", disk);
			env_int_file(j, "read_ahead_kb", attr);
			snprintf(attr, sizeof(attr), "%s/queue/nr_requests", disk);
			env_int_file(j, "nr_requests", attr);
			snprintf(attr, sizeof(attr), "%s/queue/rotational", disk);
			env_int_file(j, "rotational", attr);
		}
	}
	env_close(j);
}

/* The CPU: its model (x86 "model name", else ARM's "Hardware") and count. */
static void
env_cpu(EnvJson *j)
{
	FILE	   *f = chronicle_proc_open("cpuinfo");
	char		line[512];
	char		model[256] = "";
	int			count = 0;

	env_open(j, "cpu");
	if (f != NULL)
	{
		while (fgets(line, sizeof(line), f) != NULL)
		{
			char	   *colon = strchr(line, ':');
			char	   *v;

			if (colon == NULL)
				continue;
			v = colon + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			if (strncmp(line, "processor", 9) == 0 && (line[9] == ' ' || line[9] == '\t' || line[9] == ':'))
				count++;
			else if (model[0] == '\0' &&
					 (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0))
				strlcpy(model, v, sizeof(model));
		}
		FreeFile(f);
	}
	env_str(j, "model", model);
	if (count > 0)
		env_int(j, "count", count);
	env_close(j);
}

/*
 * The cpufreq governors of the CPUs that have one: the distinct values,
 * sorted, comma-separated (one word when all agree, as they usually do).
 */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
env_cpufreq(EnvJson *j)
{
	const char *base = "/sys/devices/system/cpu";
	DIR		   *dir = AllocateDir(base);
	struct dirent *de;
	char	  **govs = NULL;
	int			n = 0;
	int			cap = 0;
	StringInfoData out;

	if (dir == NULL)
		return;
	while ((de = ReadDirExtended(dir, base, DEBUG1)) != NULL)
	{
		char		path[MAXPGPATH];
		char		line[64];

		if (strncmp(de->d_name, "cpu", 3) != 0 ||
			strspn(de->d_name + 3, "0123456789") != strlen(de->d_name + 3) ||
			de->d_name[3] == '\0')
			continue;
		snprintf(path, sizeof(path), "%s/%s/cpufreq/scaling_governor", base, de->d_name);
		if (!read_first_line(path, line, sizeof(line)) || line[0] == '\0')
			continue;
		if (n == cap)
		{
			cap = cap ? cap * 2 : 16;
			govs = govs ? repalloc(govs, cap * sizeof(char *)) : palloc(cap * sizeof(char *));
		}
		govs[n++] = pstrdup(line);
	}
	FreeDir(dir);
	if (n == 0)
		return;
	qsort(govs, n, sizeof(char *), cmp_str);
	initStringInfo(&out);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && strcmp(govs[i], govs[i - 1]) == 0)
			continue;
		if (out.len > 0)
			appendStringInfoChar(&out, ',');
		appendStringInfoString(&out, govs[i]);
	}
	env_open(j, "cpufreq");
	env_str(j, "governor", out.data);
	env_close(j);
}

/*
 * The environment as a JSON object (text).  The caller's rights decide
 * whether the configure options are in it (see the top of the file).
 */
char *
chronicle_environment_json(void)
{
	EnvJson		j;
	struct utsname u;
	char		path[MAXPGPATH];

	memset(&j, 0, sizeof(j));
	initStringInfo(&j.buf);
	j.empty[0] = true;
	appendStringInfoChar(&j.buf, '{');

	env_open(&j, "server");
	env_str(&j, "version", PG_VERSION);
	env_int(&j, "version_num", PG_VERSION_NUM);
	env_str(&j, "version_string", PG_VERSION_STR);
	if (object_aclcheck(ProcedureRelationId, F_PG_CONFIG, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK)
	{
		size_t		n;
		ConfigData *cd = get_configdata(my_exec_path, &n);

		for (size_t i = 0; i < n; i++)
		{
			if (strcmp(cd[i].name, "CONFIGURE") == 0)
				env_str_nopaths(&j, "configure", cd[i].setting);
			else if (strcmp(cd[i].name, "CC") == 0)
				env_str_nopaths(&j, "cc", cd[i].setting);
			else if (strcmp(cd[i].name, "CFLAGS") == 0)
				env_str_nopaths(&j, "cflags", cd[i].setting);
		}
	}
	env_close(&j);

	if (uname(&u) == 0)
	{
		env_open(&j, "kernel");
		env_str(&j, "sysname", u.sysname);
		env_str(&j, "release", u.release);
		env_str(&j, "version", u.version);
		env_str(&j, "machine", u.machine);
		env_close(&j);
	}

	env_cpu(&j);
	env_cpufreq(&j);

	{
		static const char *const names[] = {"MemTotal", "HugePages_Total", "Hugepagesize"};
		int64		values[3];
		bool		found[3];

		env_open(&j, "memory");
		if (chronicle_proc_read_keyed("meminfo", names, 3, values, found))
		{
			if (found[0])
				env_int(&j, "total_kb", values[0]);
			if (found[1])
				env_int(&j, "hugepages_total", values[1]);
			if (found[2])
				env_int(&j, "hugepage_size_kb", values[2]);
		}
		env_close(&j);
	}

	env_open(&j, "thp");
	env_choice_file(&j, "enabled", "/sys/kernel/mm/transparent_hugepage/enabled");
	env_choice_file(&j, "defrag", "/sys/kernel/mm/transparent_hugepage/defrag");
	env_close(&j);

	env_open(&j, "device");
	env_device(&j, "data", DataDir);
	snprintf(path, sizeof(path), "%s/pg_wal", DataDir);
	env_device(&j, "pg_wal", path);
	env_close(&j);

	appendStringInfoChar(&j.buf, '}');
	return j.buf.data;
}
