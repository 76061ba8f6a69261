# nvtx.mk - the NVTX test program (tests/nvtx/apps/).
#
# `make nvtx-test-bins` builds $(BUILD)/tests/nvtx/nvtx_app from the NVTX v3
# headers alone (no CUDA library: NVTX loads the injection library named by
# NVTX_INJECTION64_PATH with dlopen). Skipped when the headers are missing.

NVTX_APP      := $(BUILD)/tests/nvtx/nvtx_app
CUDA_INCLUDE  ?= /usr/local/cuda/include
NVTX_APP_CFLAGS := -std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE \
                   -O2 -g -fno-omit-frame-pointer -I$(CUDA_INCLUDE)

.PHONY: nvtx-test-bins
ifneq ($(wildcard $(CUDA_INCLUDE)/nvtx3/nvToolsExt.h),)
nvtx-test-bins: $(NVTX_APP)
else
nvtx-test-bins:
endif

$(NVTX_APP): tests/nvtx/apps/nvtx_app.c
	@mkdir -p $(dir $@)
	$(CC) $(NVTX_APP_CFLAGS) -o $@ $< -ldl -lpthread
