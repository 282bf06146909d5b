# backend.mk: the hardware backend (backend/), included by the top Makefile
# after cuda.mk.
#   build/backend/libtally_backend_host.a  GPU-free parts (kernel-kind rule,
#       calibration arithmetic and cache, MPS command lines, cleanup, watchdog,
#       the context workers' messages, the block trace's files):
#       always built; tests/test_backend links it.
#   build/backend/libtally_backend_cuda.a  synthetic kernels (nvcc) and the CUDA
#       device: built when nvcc exists.
#   build/tally-run                        the command (when nvcc exists).
# The CUDA runtime is linked statically and the driver API is reached through
# cudaGetDriverEntryPointByVersion, so tally-run needs no libcuda.so to start:
# without a driver it says "no usable GPU" and exits 69.
# TALLY_STATIC_DEPS=1 links jansson, sqlite3 and zlib statically too (a binary
# that can be carried to a machine without those packages).

BACKEND_HOST_SRC := backend/kind_rule.c backend/calib_math.c backend/calib_db.c backend/mps.c \
                    backend/procs.c backend/watchdog.c backend/contention_fit.c backend/crowding_fit.c \
                    backend/gap_stats.c backend/host_jitter.c backend/gpu_sampler.c \
                    backend/worker_ipc.c backend/clock_fix.c backend/block_trace.c
BACKEND_HOST_OBJ := $(BACKEND_HOST_SRC:%.c=$(BUILD)/%.o)
BACKEND_HOST_LIB := $(BUILD)/backend/libtally_backend_host.a

$(BACKEND_HOST_LIB): $(BACKEND_HOST_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# tests/test_backend.c goes through the generic test rule; it also needs the
# host part of the backend (listed before libtally.a, which it calls).
$(BUILD)/tests/test_backend: $(BACKEND_HOST_LIB)
$(BUILD)/tests/test_backend: LDLIBS := $(BACKEND_HOST_LIB) $(BUILD)/libtally.a $(LDLIBS) -ldl
$(BUILD)/tests/test_backend.o: ALL_CFLAGS += -Ibackend

-include $(BACKEND_HOST_OBJ:.o=.d)

ifneq ($(strip $(NVCC)),)

BACKEND_CUDA_SRC := backend/cuda_device.c backend/cuda_launch.c backend/cuda_complete.c backend/cuda_metrics.c \
                    backend/cuda_plan.c backend/cuda_calib.c backend/cuda_green.c \
                    backend/cuda_probe.c backend/hw_selftest.c backend/hw_contention.c backend/hw_crowding.c \
                    backend/hw_gap.c \
                    backend/worker.c backend/graph_cache.c
BACKEND_CUDA_OBJ := $(BACKEND_CUDA_SRC:%.c=$(BUILD)/%.o) $(BUILD)/backend/synth.o
BACKEND_CUDA_LIB := $(BUILD)/backend/libtally_backend_cuda.a
BACKEND_RUN      := $(BUILD)/tally-run
# sm_90 machine code for the H100, compute_80 PTX that newer GPUs can JIT.
BACKEND_NVCC_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80
BACKEND_NVCC_FLAGS := -O3 -std=c++17 $(BACKEND_NVCC_ARCH) -Ibackend -Iinclude -Xcompiler -fPIC
BACKEND_CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread
ifeq ($(TALLY_STATIC_DEPS),1)
BACKEND_DEP_LIBS := -Wl,-Bstatic -ljansson -lsqlite3 -lz -lstdc++ -Wl,-Bdynamic -lm -lpthread -ldl
else
BACKEND_DEP_LIBS := $(LDLIBS) -lstdc++
endif

CUDA_TARGETS     += $(BACKEND_CUDA_LIB) $(BACKEND_RUN)
CUDA_INSTALL_BIN += $(BACKEND_RUN)

$(BACKEND_CUDA_SRC:%.c=$(BUILD)/%.o) $(BUILD)/backend/tally_run_main.o: ALL_CFLAGS += -I$(CUDA_HOME)/include

$(BUILD)/backend/synth.o: backend/synth.cu backend/synth.h backend/synth_version.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(BACKEND_NVCC_FLAGS) -c $< -o $@

$(BACKEND_CUDA_LIB): $(BACKEND_CUDA_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BACKEND_RUN): $(BUILD)/backend/tally_run_main.o $(BACKEND_CUDA_LIB) $(BACKEND_HOST_LIB) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BACKEND_CUDA_LIB) $(BACKEND_HOST_LIB) $(LIB) $(BACKEND_CUDA_LIBS) \
	    $(BACKEND_DEP_LIBS)

-include $(BACKEND_CUDA_SRC:%.c=$(BUILD)/%.d) $(BUILD)/backend/tally_run_main.d

endif
