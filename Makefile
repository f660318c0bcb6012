# spotrun - top-level build.  GNU make, non-recursive.
#
#   make            build everything into build/
#   make check      every suite (scripts/check): the plain build's C tests
#                   and pytest, the PostgreSQL-only tests, the AWS SDK
#                   conformance suite; the same again under ASan+UBSan
#                   (build/san, the daemon tests on PostgreSQL 15); the C
#                   tests under ThreadSanitizer (clang, build/tsan); the
#                   fuzz targets for a bounded time.  Three lanes run at
#                   once; a suite that reports nothing fails; the closing
#                   line counts passed, failed and skipped tests
#   make soak       the long loops at their full counts (make check runs
#                   a bounded count of each)
#   make tsan       the C tests under ThreadSanitizer only
#   make bench      the benchmarks
#   make demo       install, build, then run a 2-node PyTorch DDP gang
#                   end to end on the local spot cloud through preemptions
#                   of one node at a time, and print its report
#   make demo-single  the single-node demo (tier 3 in s3rver, moves)
#   make demo CLOUD=aws-emulated  either demo through the AWS driver and
#                   the EC2 emulator (also demo-single)
#   make demo SPARES=1  the gang keeps a warm spare (issue 33): the report
#                   gives its cost and the boot and setup it saved
#   make clean
#
# Layout rules (see CONTRIBUTING.md):
#   lib/<name>/*.c        -> build/lib/libspot<name>.a   (every lib/ folder)
#   lib/providers/*.c + lib/providers/*/*.c -> build/lib/libspotproviders.a
#                         (the registry and one folder per provider)
#   lib/ckpt + lib/objstore + lib/common -> build/lib/libspotckpt.so
#                         (the public library; objstore is its tier 3)
#   src/cli/*.c           -> build/bin/spotrun
#   src/spotrund/*.c      -> build/bin/spotrund
#   src/agent/*.c         -> build/bin/spotrun-agent
#   tests/unit/test_*.c   -> build/tests/test_*   (cmocka, one binary each)
#   tests/providers/*/*.c -> linked into build/tests/test_prov_* (test
#                            providers: a folder and a registry line)
#   tests/helpers/*.c     -> build/tests/helpers/* (programs tests drive)
#   bench/bench_*.c       -> build/bench/bench_*
#   fuzz/fuzz_*.c         -> build/fuzz/bin/fuzz_*  (clang libFuzzer)
#   tests/conformance/*.c -> build/conformance/*  (helpers of the npm SDK
#                            conformance suite, `make conformance`)
#   tests/conformance_gcp/*.c -> build/conformance/*  (the same for the
#                            Google suite)
#   tests/conformance_azure/*.c -> build/conformance/*  (the same for the
#                            Microsoft suite)

ifeq ($(origin CC),default)
CC := gcc
endif
BUILD ?= build
SAN ?=
FUZZ ?=
DEPS_STAMP := .deps-ok

OPT ?= -O2
CFLAGS_BASE := -std=gnu11 $(OPT) -g -Wall -Wextra -Wshadow -Wformat=2 -Werror \
	-fPIC -fvisibility=hidden -D_GNU_SOURCE -Iinclude -Ilib -MMD -MP \
	-I/usr/include/libxml2 -I/usr/include/postgresql
ifeq ($(SAN),1)
CFLAGS_BASE += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDSAN := -fsanitize=address,undefined
endif
ifeq ($(SAN),tsan)
CFLAGS_BASE += -O1 -fsanitize=thread -fno-omit-frame-pointer
LDSAN := -fsanitize=thread
endif
ifeq ($(FUZZ),1)
CFLAGS_BASE += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
LDSAN := -fsanitize=address,undefined
endif
CFLAGS_ALL := $(CFLAGS_BASE) $(CFLAGS)

# Quiet by default; `make V=1` prints every command.
ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif

# Every program and library is linked by lld: a fifth of GNU ld's CPU
# time, and make check links ~100 programs in each of its four builds
# (scripts/install-deps installs it; GNU ld where it is missing).
LDFAST := $(if $(shell command -v ld.lld 2>/dev/null),-fuse-ld=lld)

EXTLIBS := -lcurl -ljansson -lsqlite3 -lpq -lmicrohttpd -luring -lxxhash -lyaml -lxml2 -linih \
	-lssl -lcrypto -lz -lpthread -ldl -lm

# ---- libraries ---------------------------------------------------------
LIBDIRS := $(patsubst lib/%/,%,$(sort $(dir $(wildcard lib/*/*.c))))
obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_A = $(BUILD)/lib/libspot$(1).a
STATIC_LIBS := $(foreach l,$(LIBDIRS),$(call LIB_A,$(l)))

# A library's folder may hold one level of subfolders (lib/providers/<name>/);
# ar keeps base names, so file names stay unique across them (local_drv.c).
define lib_rule
$(call LIB_A,$(1)): $(call obj,$(wildcard lib/$(1)/*.c) $(wildcard lib/$(1)/*/*.c))
	@mkdir -p $$(dir $$@)
	$$(call say,AR,$$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(LIBDIRS),$(eval $(call lib_rule,$(l))))

CKPT_SO := $(BUILD)/lib/libspotckpt.so
CKPT_SO_OBJS := $(call obj,$(wildcard lib/ckpt/*.c) $(wildcard lib/objstore/*.c) \
	$(wildcard lib/common/*.c))
ifneq ($(wildcard lib/ckpt/*.c),)
SHARED_LIBS := $(CKPT_SO)
endif
$(CKPT_SO): $(CKPT_SO_OBJS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -shared -o $@ $^ $(LDSAN) $(EXTLIBS)

LINK_LIBS = -Wl,--start-group $(STATIC_LIBS) -Wl,--end-group $(EXTLIBS)

# ---- programs ----------------------------------------------------------
BIN_spotrun := src/cli
BIN_spotrund := src/spotrund
BIN_spotrun-agent := src/agent
BINS := $(foreach b,spotrun spotrund spotrun-agent,$(if $(wildcard $(BIN_$(b))/*.c),$(BUILD)/bin/$(b)))

define bin_rule
$(BUILD)/bin/$(1): $(call obj,$(wildcard $(BIN_$(1))/*.c)) $(STATIC_LIBS)
	@mkdir -p $$(dir $$@)
	$$(call say,LD,$$@)
	$$(Q)$$(CC) $$(LDFAST) -o $$@ $(call obj,$(wildcard $(BIN_$(1))/*.c)) $$(LDSAN) $$(LINK_LIBS)
endef
$(foreach b,spotrun spotrund spotrun-agent,$(eval $(call bin_rule,$(b))))

# ---- tests, benches ----------------------------------------------------
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/bench_*.c))
# Programs the Python tests drive (crash tests kill them at random points).
HELPER_BINS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(wildcard tests/helpers/*.c))
CONF_BINS := $(patsubst tests/conformance/%.c,$(BUILD)/conformance/%,$(wildcard tests/conformance/*.c)) \
	$(patsubst tests/conformance_gcp/%.c,$(BUILD)/conformance/%,$(wildcard tests/conformance_gcp/*.c)) \
	$(patsubst tests/conformance_azure/%.c,$(BUILD)/conformance/%,$(wildcard tests/conformance_azure/*.c))

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LDEXTRA) $(LINK_LIBS) -lcmocka

# Test providers (tests/providers/<name>/, docs/providers.md): linked into
# the tests that drive them, test_prov_*; never into the programs.
TEST_PROV_OBJS := $(call obj,$(wildcard tests/providers/*/*.c))
TEST_PROV_BINS := $(filter $(BUILD)/tests/test_prov_%,$(TEST_BINS))
$(TEST_PROV_BINS): $(TEST_PROV_OBJS)
$(TEST_PROV_BINS): LDEXTRA = $(TEST_PROV_OBJS)

# Fault injection (lib/common/faultinj.h): this test's calls to these
# functions go through counting wrappers that fail the N-th one.
FAULT_WRAP := $(foreach f,malloc calloc realloc strdup write pwrite fsync \
	fdatasync sqlite3_step curl_easy_perform,-Wl,--wrap=$(f))
$(BUILD)/tests/test_faultinj: LDEXTRA := $(FAULT_WRAP)

$(BUILD)/tests/helpers/%: $(BUILD)/obj/tests/helpers/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LINK_LIBS)

$(BUILD)/conformance/%: $(BUILD)/obj/tests/conformance/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LINK_LIBS)

$(BUILD)/conformance/%: $(BUILD)/obj/tests/conformance_gcp/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LINK_LIBS)

$(BUILD)/conformance/%: $(BUILD)/obj/tests/conformance_azure/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LINK_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(STATIC_LIBS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -o $@ $< $(LDSAN) $(LINK_LIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS_ALL) -c -o $@ $<

# The release and the git commit, for `spotrun --version`.  The header is
# rewritten only when the commit changes, so a rebuild stays incremental.
SPOTRUN_VERSION := 0.1.0
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
$(BUILD)/gen/git_commit.h: FORCE
	@mkdir -p $(dir $@)
	@printf '#define SPOTRUN_VERSION "%s"\n#define SPOTRUN_GIT_COMMIT "%s"\n' \
		'$(SPOTRUN_VERSION)' '$(GIT_COMMIT)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(BUILD)/obj/src/cli/cmd_version.o: $(BUILD)/gen/git_commit.h
$(BUILD)/obj/src/cli/cmd_version.o: CFLAGS_ALL += -I$(BUILD)/gen
.PHONY: FORCE
FORCE:

# Files pulled in with .incbin (the dashboard) are not seen by -MMD.
$(BUILD)/obj/src/spotrund/web_assets.o: $(wildcard src/spotrund/web/*)

# ---- fuzz targets (built with clang in build/fuzz) ----------------------
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst fuzz/%.c,$(BUILD)/fuzzbin/%,$(FUZZ_SRCS))
# FUZZ_LIB_SRCS (make check's fuzz-build-lean): only these library
# sources are compiled, into one archive the targets link (ar q: two
# libraries may both have an http.o); empty: every library.
FUZZ_LIB_SRCS ?=
ifneq ($(strip $(FUZZ_LIB_SRCS)),)
FUZZ_LIB_A := $(BUILD)/lib/libspotfuzzlibs.a
$(FUZZ_LIB_A): $(call obj,$(FUZZ_LIB_SRCS))
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar qcs $@ $^
FUZZ_LINK_DEPS := $(FUZZ_LIB_A)
FUZZ_LINK := $(FUZZ_LIB_A) $(EXTLIBS)
else
FUZZ_LINK_DEPS := $(STATIC_LIBS)
FUZZ_LINK = $(LINK_LIBS)
endif
$(BUILD)/fuzzbin/%: $(BUILD)/obj/fuzz/%.o $(FUZZ_LINK_DEPS)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFAST) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_LINK)

# ---- top-level targets -------------------------------------------------
.PHONY: all deps build test-bins py-bins tests check test-run san fuzz fuzz-build \
	fuzz-build-lean fuzz-target-objs demo demo-single \
	bench clean tsan tsan-build tsan-bins conformance install install-files uninstall soak
.DEFAULT_GOAL := all
.SECONDARY:

all: deps
	@$(MAKE) --no-print-directory build

deps:
	@scripts/install-deps -q

build: test-bins $(BENCH_BINS)

# What the tests run: make check's ASan build (build/san) stops here, the
# benchmarks being compiled and linked by the plain build alone.
test-bins: py-bins $(TEST_BINS)

# What the pytest and conformance suites run (no C test binary): make
# check builds these first and starts its pytest passes on them, and the
# C tests' binaries after, beside those passes (scripts/check).
py-bins: $(STATIC_LIBS) $(SHARED_LIBS) $(BINS) $(CONF_BINS) $(HELPER_BINS)

# The whole suite, plain build.
test-run: build
	@scripts/run-tests $(BUILD) plain

# Every suite, the builds it needs included (scripts/check says which runs
# where; results, logs and the slowest tests in build/check).
check: deps
	@scripts/check

# The C unit tests built with clang -fsanitize=thread (the engine's copy
# and writer threads, the reconciler, libmicrohttpd's workers share state).
# TSAN_TESTS (make check: the test binaries that start a thread, named
# in scripts/check): only those test binaries; empty: every one.
TSAN_TESTS ?=
tsan-build:
	@$(MAKE) --no-print-directory BUILD=build/tsan SAN=tsan CC=clang \
		TSAN_TESTS="$(TSAN_TESTS)" tsan-bins

tsan-bins: $(STATIC_LIBS) $(BINS) \
	$(if $(strip $(TSAN_TESTS)),$(addprefix $(BUILD)/tests/,$(TSAN_TESTS)),$(TEST_BINS))

tsan: deps tsan-build
	@scripts/run-tests build/tsan tsan

# The official AWS, Google and Microsoft SDKs for JavaScript against our
# signer and drivers (tests/conformance, tests/conformance_gcp,
# tests/conformance_azure; scripts/run-conformance; needs node and npm,
# installed by install-deps).
conformance: build
	@scripts/run-conformance $(BUILD)

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ=1 \
		$(if $(FUZZ_SRCS),fuzz-bins)

fuzz-bins: $(FUZZ_BINS)

fuzz-target-objs: $(patsubst fuzz/%.c,$(BUILD)/obj/fuzz/%.o,$(FUZZ_SRCS))

# make check's fuzz build: the targets' own objects first, then only the
# library objects they link (scripts/fuzz-objs reads which from the plain
# build's archives, built by then: about 80 of 220 sources); every
# library when there is no plain build.
fuzz-build-lean:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ=1 \
		$(if $(FUZZ_SRCS),fuzz-target-objs)
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang FUZZ=1 \
		FUZZ_LIB_SRCS="$$(scripts/fuzz-objs build/fuzz build)" \
		$(if $(FUZZ_SRCS),fuzz-bins)

fuzz: fuzz-build
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-60} scripts/run-fuzz build/fuzz

# The main job (scripts/demo-gang): spotrund + the local spot cloud + a
# 2-node PyTorch DDP gang through preemptions of one node at a time,
# then the report.  demo-single (scripts/demo): one node through market
# preemptions and moves, checkpoints in s3rver.  CLOUD=aws-emulated runs
# either through the AWS provider and EC2 driver against the EC2 emulator
# instead (docs/providers.md).
CLOUD ?= local
SPARES ?= 0
demo: deps
	@$(MAKE) --no-print-directory build
	@scripts/demo-gang --build $(BUILD) --cloud $(CLOUD) --spares $(SPARES)

demo-single: deps
	@$(MAKE) --no-print-directory build
	@scripts/demo --build $(BUILD) --cloud $(CLOUD)

bench: all
	@scripts/run-bench build

# The demo job 10 times under stress-ng --cpu 2 (scripts/soak): every run
# meets its deadline, is bitwise identical, moves <= preemptions + 1.
# Then 200 random preemptions of 2- and 4-rank DDP jobs (make check: 20),
# 200 kill -9 of spotrund at random moments with a preemption in flight
# (make check: 50), then 2,000 kill -9 trials each of the tier-3 uploader
# and of the bucket-mount syncer
# (scripts/soak-uploader; make check runs 50), then 200 kill -9 of the
# leader of two daemons on PostgreSQL (bench/failover.sh; make check: 20),
# then the AWS soaks: 200 fake nodes in two throttling EC2 emulators over
# two simulated hours (make check: 6 over a quarter), and 20 leader kills
# + a frozen leader with the AWS provider on PostgreSQL (make check: 8)
# (scripts/soak-aws).
SOAK_PYTEST = SPOTRUN_BUILD=$(CURDIR)/$(BUILD) \
	SPOTRUN_LIB=$(CURDIR)/$(BUILD)/lib/libspotckpt.so \
	SPOTRUN_CHECK_MODE=plain PATH=$(CURDIR)/$(BUILD)/bin:$$PATH \
	/usr/bin/python3 -m pytest -q -s -p no:cacheprovider
soak: deps
	@$(MAKE) --no-print-directory build
	@scripts/soak --build $(BUILD)
	@SPOTRUN_DIST_TRIALS=200 $(SOAK_PYTEST) tests/py/test_dist_preempt.py
	@SPOTRUN_DAEMON_KILLS=200 $(SOAK_PYTEST) tests/py/test_ctl_crash.py \
		-k test_kill9_daemon_at_random_moments_during_preemptions
	@scripts/soak-uploader --build $(BUILD)
	@SPOTRUN_FAILOVER_KILLS=200 bench/failover.sh $(BUILD)
	@scripts/soak-aws $(BUILD)

clean:
	rm -rf build

# ---- install -------------------------------------------------------------
# Paths follow the GNU conventions; DESTDIR stages the tree (packaging,
# tests).  The Python package goes where /usr/bin/python3 looks for
# PREFIX's packages (/usr/local/lib/python3.X/dist-packages on Debian), and
# learns PREFIX's libdir from spotrun/_install.py, written here.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATAROOT ?= $(PREFIX)/share
MANDIR ?= $(DATAROOT)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSTEMDUSERDIR ?= $(LIBDIR)/systemd/user
COMPLETIONDIR ?= $(DATAROOT)/bash-completion/completions
PYTHONDIR ?= $(PREFIX)/$(shell /usr/bin/python3 -c 'import sys; print("lib/python%d.%d/dist-packages" % sys.version_info[:2])' 2>/dev/null || echo lib/python3/dist-packages)
INSTALL ?= install
D := $(DESTDIR)
subst_paths = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	-e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	-e 's|@VERSION@|$(SPOTRUN_VERSION)|g'
PY_FILES := $(wildcard python/spotrun/*.py)
MAN_PAGES := $(wildcard man/*.[1-8])

install: build
	@$(MAKE) --no-print-directory install-files

# The copy alone, for a tree already built (tests install from $(BUILD)).
install-files:
	$(INSTALL) -d $(D)$(BINDIR) $(D)$(LIBDIR) $(D)$(INCLUDEDIR)/spotrun \
		$(D)$(PKGCONFIGDIR) $(D)$(SYSTEMDUSERDIR) $(D)$(COMPLETIONDIR) \
		$(D)$(PYTHONDIR)/spotrun $(D)$(DATAROOT)/spotrun \
		$(D)$(MANDIR)/man1 $(D)$(MANDIR)/man3 $(D)$(MANDIR)/man8
	$(INSTALL) -m 0755 $(BINS) $(D)$(BINDIR)/
	$(INSTALL) -m 0755 $(CKPT_SO) $(D)$(LIBDIR)/
	$(INSTALL) -m 0644 include/spotrun/ckpt.h $(D)$(INCLUDEDIR)/spotrun/
	$(subst_paths) dist/spotckpt.pc.in > $(D)$(PKGCONFIGDIR)/spotckpt.pc
	$(subst_paths) dist/spotrund.service.in > $(D)$(SYSTEMDUSERDIR)/spotrund.service
	$(INSTALL) -m 0644 completion/spotrun.bash $(D)$(COMPLETIONDIR)/spotrun
	$(INSTALL) -m 0644 $(PY_FILES) $(D)$(PYTHONDIR)/spotrun/
	printf '"""Written by make install: where libspotckpt.so is."""\nLIBDIR = "%s"\n' \
		'$(LIBDIR)' > $(D)$(PYTHONDIR)/spotrun/_install.py
	rm -rf $(D)$(DATAROOT)/spotrun/data
	cp -R data $(D)$(DATAROOT)/spotrun/data
	for m in $(MAN_PAGES); do \
		$(INSTALL) -m 0644 $$m $(D)$(MANDIR)/man$${m##*.}/ || exit 1; done
	@echo "installed into $(D)$(PREFIX)"

uninstall:
	rm -f $(addprefix $(D)$(BINDIR)/,spotrun spotrund spotrun-agent)
	rm -f $(D)$(LIBDIR)/libspotckpt.so $(D)$(INCLUDEDIR)/spotrun/ckpt.h
	-rmdir $(D)$(INCLUDEDIR)/spotrun 2>/dev/null
	rm -f $(D)$(PKGCONFIGDIR)/spotckpt.pc $(D)$(SYSTEMDUSERDIR)/spotrund.service
	rm -f $(D)$(COMPLETIONDIR)/spotrun
	rm -rf $(D)$(PYTHONDIR)/spotrun $(D)$(DATAROOT)/spotrun
	for m in $(notdir $(MAN_PAGES)); do \
		rm -f $(D)$(MANDIR)/man$${m##*.}/$$m; done

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
