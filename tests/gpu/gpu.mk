# gpu.mk - the GPU mocks and test programs (owned by the mock helper).
#
# `make gpu-test-bins` builds, under $(BUILD)/tests/gpu/:
#   mock/libcuda.so.1 (+ libcuda.so)      mock CUDA driver; also holds the
#                                         mock CUPTI state and MOCK_CUPTI_LOG
#   mock/libcupti.so (+ libcupti.so.13)   mock CUPTI entry points (SONAME libcupti.so.13)
#   mock/libcudart.so (+ libcudart.so.13) mock CUDA runtime (SONAME libcudart.so.13)
#   apps/gpu_app, apps/fake.cubin         the test program and its "cubin"
# Nothing has an rpath: run with LD_LIBRARY_PATH=$(BUILD)/tests/gpu/mock.

GPU_MOCK_DIR  := $(BUILD)/tests/gpu/mock
GPU_APPS_DIR  := $(BUILD)/tests/gpu/apps
CUDA_INCLUDE  ?= /usr/local/cuda/include

GPU_MOCK_CFLAGS := $(CFLAGS) -fPIC -fvisibility=hidden -I$(CUDA_INCLUDE) -Itests/gpu/mock
GPU_APP_CFLAGS  := -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -O1 -g \
                   -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
                   -I$(CUDA_INCLUDE)
GPU_MOCK_HDRS   := tests/gpu/mock/mock_internal.h

GPU_TEST_BINS := $(GPU_MOCK_DIR)/libcuda.so.1 $(GPU_MOCK_DIR)/libcuda.so \
                 $(GPU_MOCK_DIR)/libcupti.so $(GPU_MOCK_DIR)/libcupti.so.13 \
                 $(GPU_MOCK_DIR)/libcudart.so $(GPU_MOCK_DIR)/libcudart.so.13 \
                 $(GPU_APPS_DIR)/gpu_app $(GPU_APPS_DIR)/fake.cubin

.PHONY: gpu-test-bins
ifneq ($(wildcard $(CUDA_INCLUDE)/cupti.h),)
gpu-test-bins: $(GPU_TEST_BINS)
else
gpu-test-bins:
endif

$(GPU_MOCK_DIR)/libcuda.so.1: tests/gpu/mock/cuda_driver.c tests/gpu/mock/cupti_core.c $(GPU_MOCK_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GPU_MOCK_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined \
		-o $@ tests/gpu/mock/cuda_driver.c tests/gpu/mock/cupti_core.c -lz -ldl -lpthread

$(GPU_MOCK_DIR)/libcuda.so: $(GPU_MOCK_DIR)/libcuda.so.1
	ln -sf libcuda.so.1 $@

$(GPU_MOCK_DIR)/libcupti.so: tests/gpu/mock/cupti.c $(GPU_MOCK_HDRS) $(GPU_MOCK_DIR)/libcuda.so
	$(CC) $(GPU_MOCK_CFLAGS) -shared -Wl,-soname,libcupti.so.13 -Wl,--no-undefined \
		-o $@ tests/gpu/mock/cupti.c -L$(GPU_MOCK_DIR) -lcuda

$(GPU_MOCK_DIR)/libcupti.so.13: $(GPU_MOCK_DIR)/libcupti.so
	ln -sf libcupti.so $@

$(GPU_MOCK_DIR)/libcudart.so: tests/gpu/mock/cudart.c $(GPU_MOCK_HDRS) $(GPU_MOCK_DIR)/libcuda.so
	$(CC) $(GPU_MOCK_CFLAGS) -shared -Wl,-soname,libcudart.so.13 -Wl,--no-undefined \
		-o $@ tests/gpu/mock/cudart.c -L$(GPU_MOCK_DIR) -lcuda -lpthread

$(GPU_MOCK_DIR)/libcudart.so.13: $(GPU_MOCK_DIR)/libcudart.so
	ln -sf libcudart.so $@

# A relocatable object is enough: the mock driver reads its symbol table.
$(GPU_APPS_DIR)/fake.cubin: tests/gpu/apps/fake_cubin.c
	@mkdir -p $(dir $@)
	$(CC) -c -O0 -o $@ $<

$(GPU_APPS_DIR)/gpu_app: tests/gpu/apps/gpu_app.c $(GPU_MOCK_DIR)/libcudart.so.13 $(GPU_MOCK_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(GPU_APP_CFLAGS) -o $@ $< -L$(GPU_MOCK_DIR) -Wl,-rpath-link,$(GPU_MOCK_DIR) \
		-lcudart -lcuda -lpthread
