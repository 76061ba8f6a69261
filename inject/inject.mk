# inject.mk - build/libprofd_inject.so, the CUDA/NVTX injection library (inject/).
# libcuda loads it through CUDA_INJECTION64_PATH; it dlopens libcupti
# itself, so it builds with the CUDA headers only (no GPU, no libcupti).
CUDA_INCLUDE  ?= /usr/local/cuda/include
INJECT_SRCS   := $(wildcard inject/*.c)
INJECT_OBJS   := $(patsubst inject/%.c,$(BUILD)/inject/%.o,$(INJECT_SRCS))
INJECT_CFLAGS := -fPIC -fvisibility=hidden -isystem $(CUDA_INCLUDE)

.PHONY: inject
ifneq ($(wildcard $(CUDA_INCLUDE)/cupti.h),)
inject: $(BUILD)/libprofd_inject.so
else
inject:
	@echo "note: no CUDA headers at $(CUDA_INCLUDE) (CUDA_INCLUDE=...): GPU profiling not built"
endif

$(BUILD)/inject/%.o: inject/%.c $(wildcard inject/*.h) bpf/gpu_events.h bpf/nvtx_events.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INJECT_CFLAGS) -c $< -o $@

# Only InitializeInjection and InitializeInjectionNvtx2 are exported
# (-fvisibility=hidden + exports.map).
$(BUILD)/libprofd_inject.so: $(INJECT_OBJS) inject/exports.map
	$(CC) $(CFLAGS) -shared -Wl,--version-script=inject/exports.map \
		-Wl,-z,defs -o $@ $(INJECT_OBJS) -ldl -lpthread
