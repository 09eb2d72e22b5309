# pg_chronicle: PGXS build.
#
#   make PG_CONFIG=/path/to/pg_config install    build and install
#   make check-all                               every test layer, every provisioned version
#   make installcheck                            pg_regress against a temporary instance
#   make dist                                    pg_chronicle-<version>.zip for PGXN (of HEAD)

EXTENSION = pg_chronicle
EXTVERSION = 0.3.0
DISTNAME = $(EXTENSION)-$(EXTVERSION)

MODULE_big = pg_chronicle
# Every C file of src/ and its folders: a new file (a source, a split) is
# built without a line here to forget.
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))

# The install script is built from the pieces in src/sql, in name order.
# So is the upgrade script from each earlier release, straight to this one:
# the hand-written steps of every release since it, oldest first
# (src/upgrade/<a>--<b>-before.sql), the code of src/sql once (functions,
# triggers, comments, grants: src/upgrade/code.awk), then their -after.sql
# steps in the same order.  See docs/development.md, "Upgrade scripts".
SQL_PIECES = $(sort $(wildcard src/sql/*.sql))
# Every earlier release, oldest first; each has its step to the next one
# (the last, to EXTVERSION): UPGRADE_STEPS is 0.1.0--0.2.0 0.2.0--0.3.0.
UPGRADE_FROM = 0.1.0 0.2.0
UPGRADE_STEPS = $(join $(addsuffix --,$(UPGRADE_FROM)),$(wordlist 2,$(words $(UPGRADE_FROM)),$(UPGRADE_FROM)) $(EXTVERSION))
# The steps from release $(1) on: $(UPGRADE_STEPS) less those before it.
upgrade_steps_from = $(if $(filter $(1)--%,$(firstword $(2))),$(2),$(if $(2),$(call upgrade_steps_from,$(1),$(wordlist 2,$(words $(2)),$(2)))))
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
# classify) fails the build, with no partial script left behind.  It begins
# with psql's guard and COMMENT ON EXTENSION (the control file's comment),
# whose lock holds off a collector of the old library until the update
# commits (docs/development.md); each step file is named before its text.
$(UPGRADES): $(EXTENSION)--%--$(EXTVERSION).sql: $(EXTENSION).control src/upgrade/code.awk $(SQL_PIECES) \
		$(foreach s,$(UPGRADE_STEPS),src/upgrade/$(s)-before.sql src/upgrade/$(s)-after.sql)
	{ printf '%s\n' '\echo Use "ALTER EXTENSION $(EXTENSION) UPDATE TO '"'$(EXTVERSION)'"'" to load this file. \quit' '' && \
	  sed -n 's/^comment *= *\(.*\)$$/COMMENT ON EXTENSION $(EXTENSION) IS \1;/p' $(EXTENSION).control && \
	  awk 'FNR == 1 { printf "\n-- %s\n\n", FILENAME } { print }' \
		$(foreach s,$(call upgrade_steps_from,$*,$(UPGRADE_STEPS)),src/upgrade/$(s)-before.sql) && \
	  printf '\n-- The code of src/sql (src/upgrade/code.awk)\n\n' && \
	  awk -f src/upgrade/code.awk $(SQL_PIECES) && \
	  awk 'FNR == 1 { printf "\n-- %s\n\n", FILENAME } { print }' \
		$(foreach s,$(call upgrade_steps_from,$*,$(UPGRADE_STEPS)),src/upgrade/$(s)-after.sql); \
	} > $@.tmp && mv $@.tmp $@ || { rm -f $@.tmp; exit 1; }

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
