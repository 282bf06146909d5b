# Tally: build, test, benchmark, demo, install.
#   make            build libraries and commands into $(BUILD)/
#   make test       build and run the CMocka suite (alias: make check)
#   make asan       the same suite under AddressSanitizer + UBSan (in build/asan)
#   make bench      simulator benchmarks (experiments/bench)
#   make demo       the main job: all policies on the bundled traces, plots
#   make install    PREFIX=/usr/local DESTDIR=
#   V=1             show the full compiler command lines
# Missing Debian packages are installed first (scripts/install-deps.sh, as root).

.DEFAULT_GOAL := all
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= /usr/local/cuda
PKG_CONFIG ?= pkg-config
PKGS    := jansson sqlite3 zlib

ifeq ($(V),1)
Q :=
else
Q := @
endif

# DEPS_CFLAGS, DEPS_LIBS and CMOCKA_LIBS come from $(BUILD)/deps.mk, written
# by the rule below after scripts/install-deps.sh has installed what is missing.
# make remakes an included makefile first and then starts over, so on a bare
# machine the flags are read from the packages just installed (asking
# pkg-config here, at parse time, would ask before they are there).
ifeq ($(filter clean uninstall,$(MAKECMDGOALS)),)
include $(BUILD)/deps.mk
endif

OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-missing-field-initializers
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude $(WARN) $(DEPS_CFLAGS) $(CFLAGS)
LDLIBS  := $(DEPS_LIBS) -lm -lpthread
ifeq ($(SANITIZE),1)
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

# Library sources: every .c of these folders. Command front ends live in cmd/.
LIB_DIRS := core traces sim policies analysis
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libtally.a

CMDS     := tally-sim tally-plot tally-validate
CMD_BIN  := $(CMDS:%=$(BUILD)/%)

TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_COMMON := $(wildcard tests/support/*.c)
TEST_COMMON_OBJ := $(TEST_COMMON:%.c=$(BUILD)/%.o)

# CUDA parts are built when nvcc is present: the tracer (cuda.mk) and the
# hardware backend (backend/backend.mk). Each appends to CUDA_TARGETS,
# CUDA_INSTALL_BIN and CUDA_INSTALL_EXTRA and to TEST_EXTRA_LIBS if needed.
CUDA_TARGETS :=
CUDA_INSTALL_BIN :=
CUDA_INSTALL_EXTRA :=
-include cuda.mk
-include backend/backend.mk

.PHONY: all deps test check asan bench demo install uninstall clean
all: deps $(LIB) $(CMD_BIN) $(CUDA_TARGETS)

deps:
	@scripts/install-deps.sh

$(BUILD)/deps.mk: scripts/install-deps.sh Makefile
	@scripts/install-deps.sh
	@mkdir -p $(dir $@)
	$(Q)c=$$($(PKG_CONFIG) --cflags $(PKGS)) && l=$$($(PKG_CONFIG) --libs $(PKGS)) || { \
	    echo "Makefile: pkg-config finds no $(PKGS) (see scripts/install-deps.sh)" >&2; exit 1; }; \
	m=$$($(PKG_CONFIG) --libs cmocka 2>/dev/null || echo -lcmocka); \
	printf 'DEPS_CFLAGS := %s\nDEPS_LIBS := %s\nCMOCKA_LIBS := %s\n' "$$c" "$$l" "$$m" > $@.tmp && mv $@.tmp $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tally-%: $(BUILD)/cmd/tally_%.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/tests/%.o $(TEST_COMMON_OBJ): ALL_CFLAGS += -Itests/support

$(TEST_BIN): $(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(TEST_COMMON_OBJ) $(LIB) $(CMOCKA_LIBS) $(LDLIBS)

# Tests run from the top folder (they read traces/bundled and tests/data).
test: all $(TEST_BIN)
	@fail=0; for t in $(TEST_BIN); do \
	    echo "== $$t"; TALLY_BUILD=$(BUILD) $$t || fail=1; \
	done; \
	if [ $$fail = 0 ]; then echo "ALL TESTS PASSED"; else echo "SOME TESTS FAILED"; exit 1; fi
check: test

asan:
	$(MAKE) BUILD=build/asan SANITIZE=1 OPT=-O1 test

bench: all
	$(Q)experiments/bench/run.sh $(BUILD)

demo: all
	$(Q)experiments/demo.sh $(BUILD)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/tally/traces
	install -m 755 $(CMD_BIN) $(CUDA_INSTALL_BIN) $(DESTDIR)$(PREFIX)/bin/
	cp -r traces/bundled/. $(DESTDIR)$(PREFIX)/share/tally/traces/
	cp -r experiments/specs $(DESTDIR)$(PREFIX)/share/tally/ 2>/dev/null || true
	$(CUDA_INSTALL_EXTRA)

uninstall:
	rm -f $(CMDS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/bin/tally-run \
	      $(DESTDIR)$(PREFIX)/bin/tally-trace $(DESTDIR)$(PREFIX)/lib/libtally_trace.so
	rm -rf $(DESTDIR)$(PREFIX)/share/tally

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(TEST_BIN:=.d) $(TEST_COMMON_OBJ:.o=.d)
