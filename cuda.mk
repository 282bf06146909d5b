# cuda.mk: the CUPTI tracer (traces/tracer/), built when nvcc and CUPTI exist.
#   build/libtally_trace.so  injection library (CUDA_INJECTION64_PATH)
#   build/tally-trace        the command that runs a program under it
#   build/tracer_testprog    CUDA test program with known launches (tests)
# The top Makefile includes this file; `make -f cuda.mk tracer` works alone
# (on a machine with only the CUDA toolkit and a C compiler: no jansson).
# The library is never built with sanitizers: it is loaded into programs
# that are not.

BUILD     ?= build
CUDA_HOME ?= /usr/local/cuda
CC        ?= cc
NVCC      ?= $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
PREFIX    ?= /usr/local
Q         ?= @

TRACER_CUPTI_INC := $(firstword $(dir $(wildcard $(CUDA_HOME)/include/cupti.h \
                       $(CUDA_HOME)/extras/CUPTI/include/cupti.h)))
TRACER_CUPTI_LIB := $(firstword $(dir $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
                       $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so)))

ifneq ($(and $(strip $(NVCC)),$(TRACER_CUPTI_INC),$(TRACER_CUPTI_LIB)),)

TRACER_DIR  := traces/tracer
TRACER_HDR  := $(TRACER_DIR)/tracer.h include/tally/common.h
TRACER_SO   := $(BUILD)/libtally_trace.so
TRACER_CMD  := $(BUILD)/tally-trace
TRACER_PROG := $(BUILD)/tracer_testprog
TRACER_LIB_SRC := $(TRACER_DIR)/inject.c $(TRACER_DIR)/devices.c $(TRACER_DIR)/activity.c \
                  $(TRACER_DIR)/activity_kinds.c $(TRACER_DIR)/iterations.c \
                  $(TRACER_DIR)/callbacks.c $(TRACER_DIR)/flush.c $(TRACER_DIR)/lite.c \
                  $(TRACER_DIR)/lite_sample.c $(TRACER_DIR)/hostcalls.c \
                  $(TRACER_DIR)/store.c $(TRACER_DIR)/options.c $(TRACER_DIR)/write.c core/common.c
# core/common.c (option parsing, mkdir -p) needs libc alone, so the library
# and the command link it and follow the rules the other commands do; in the
# library its names stay hidden (-fvisibility=hidden) from the traced program.
TRACER_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow \
                 -Wno-unused-parameter -Wno-missing-field-initializers \
                 -Iinclude -I$(CUDA_HOME)/include -I$(TRACER_CUPTI_INC)
# sm_90 code for the H100, PTX for anything newer or older that can JIT it.
TRACER_NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80

CUDA_TARGETS       += $(TRACER_SO) $(TRACER_CMD) $(TRACER_PROG)
CUDA_INSTALL_BIN   += $(TRACER_CMD)
CUDA_INSTALL_EXTRA += install -d $(DESTDIR)$(PREFIX)/lib && \
                      install -m 755 $(TRACER_SO) $(DESTDIR)$(PREFIX)/lib/;

.PHONY: tracer
tracer: $(TRACER_SO) $(TRACER_CMD) $(TRACER_PROG)

# inject.h is the library's own header (tracer.h is shared with the command).
TRACER_LIB_INC := $(TRACER_DIR)/inject.h
$(TRACER_SO): $(TRACER_LIB_SRC) $(TRACER_LIB_INC) $(TRACER_HDR)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) $(TRACER_CFLAGS) -fPIC -fvisibility=hidden -shared -o $@ $(TRACER_LIB_SRC) \
	    -L$(TRACER_CUPTI_LIB) -Wl,-rpath,$(TRACER_CUPTI_LIB) -lcupti -ldl -lpthread -lstdc++

TRACER_CMD_SRC := $(TRACER_DIR)/tally_trace.c $(TRACER_DIR)/options.c core/common.c
$(TRACER_CMD): $(TRACER_CMD_SRC) $(TRACER_HDR)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) $(TRACER_CFLAGS) -o $@ $(TRACER_CMD_SRC) -ldl

$(TRACER_PROG): $(TRACER_DIR)/testprog.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(NVCC) -O2 $(TRACER_NVCC_ARCH) -o $@ $< -ldl

endif
