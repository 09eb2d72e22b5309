# pg_chronicle: PGXS build.
#
#   make PG_CONFIG=/path/to/pg_config install    build and install
#   make check-all                               every test layer, every provisioned version
#   make installcheck                            pg_regress against a temporary instance
#   make dist                                    pg_chronicle-<version>.zip for PGXN (of HEAD)

EXTENSION = pg_chronicle
EXTVERSION = 0.2.0
DISTNAME = $(EXTENSION)-$(EXTVERSION)

MODULE_big = pg_chronicle
OBJS = \
	src/pg_chronicle.o \
	src/functions.o \
	src/worker.o \
	src/collector.o \
	src/emitter.o \
	src/sources.o \
	src/source_io.o \
	src/source_wal.o \
	src/source_checkpointer.o \
	src/source_bgwriter.o \
	src/source_database.o \
	src/standby.o \
	src/source_statements.o \
	src/os_proc.o \
	src/source_os_memory.o \
	src/source_os_disk.o \
	src/source_os_pressure.o \
	src/source_os_process_io.o \
	src/sampler.o \
	src/source_waits.o \
	src/source_buffers.o \
	src/deltas.o \
	src/runs.o \
	src/environment.o \
	src/history.o

# The install script is built from the pieces in src/sql, in name order.
# So is the upgrade script from each earlier release: its hand-written
# steps (src/upgrade/<from>--<to>-before.sql and -after.sql) around the code
# of src/sql (functions, triggers, comments, grants: src/upgrade/code.awk).
# See docs/development.md, "Upgrade scripts".
SQL_PIECES = $(sort $(wildcard src/sql/*.sql))
UPGRADE_FROM = 0.1.0
UPGRADES = $(foreach v,$(UPGRADE_FROM),$(EXTENSION)--$(v)--$(EXTVERSION).sql)
DATA_built = $(EXTENSION)--$(EXTVERSION).sql $(UPGRADES)

# pg_regress: sql/ and expected/, on a temporary instance that preloads the
# library (the collector runs, but the tests read only what they write).
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --temp-instance=tmp_check_regress \
	--temp-config=$(srcdir)/test/regress.conf \
	--load-extension=$(EXTENSION)

# Perl TAP tests in test/t, with PostgreSQL::Test::Cluster.
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

EXTRA_CLEAN = $(DATA_built) $(addsuffix .tmp,$(UPGRADES)) tmp_check_regress tmp_check results regression.diffs regression.out log \
	$(DISTNAME).zip

# The library refuses to record into SQL objects of another version (until
# ALTER EXTENSION pg_chronicle UPDATE).
PG_CPPFLAGS = -DPG_CHRONICLE_VERSION=\"$(EXTVERSION)\"

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PIECES)
	cat $^ > $@

# Written whole or not at all: a failure of code.awk (a statement it cannot
# classify) fails the build, with no partial script left behind.
$(EXTENSION)--%--$(EXTVERSION).sql: src/upgrade/%--$(EXTVERSION)-before.sql src/upgrade/code.awk \
		$(SQL_PIECES) src/upgrade/%--$(EXTVERSION)-after.sql
	{ cat src/upgrade/$*--$(EXTVERSION)-before.sql && \
	  printf '\n-- The code of src/sql (src/upgrade/code.awk)\n\n' && \
	  awk -f src/upgrade/code.awk $(SQL_PIECES) && \
	  cat src/upgrade/$*--$(EXTVERSION)-after.sql; } > $@.tmp && mv $@.tmp $@ || { rm -f $@.tmp; exit 1; }

# prove_installcheck from PGXS runs test/t with the installed server.
.PHONY: tapcheck
tapcheck:
	$(prove_installcheck)

.PHONY: check-all
check-all:
	tools/test.sh

# The release as PGXN takes it: the committed tree (git archive of HEAD, so
# no build products) under a $(DISTNAME)/ prefix; .gitattributes leaves out
# CI and git's own files.  Uncommitted changes are not in it: said, not hidden.
.PHONY: dist
dist:
	@git diff --quiet HEAD -- || \
		echo "make dist: uncommitted changes are not in $(DISTNAME).zip (it is HEAD)" >&2
	git archive --format=zip --prefix=$(DISTNAME)/ -o $(DISTNAME).zip HEAD
