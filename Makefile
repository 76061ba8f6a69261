# profd build. `make` builds build/profd and build/libprofd_core.a;
# `make test` installs what the tests need and runs them; `make run`
# records this machine for 10 seconds. See README.md.

BUILD     := build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
PROTOC_C  ?= protoc-c
ARCH      := x86

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE \
             -fno-omit-frame-pointer \
             -I$(BUILD) -I$(BUILD)/gen -Isrc -I.
LDLIBS    := -lbpf -lelf -lz -lprotobuf-c -lcurl -lyaml -lmicrohttpd -lstdc++ -lpthread -lm
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall \
             -idirafter /usr/include/$(shell $(CC) -dumpmachine)

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
# proto/*.proto (pprof) and the OTLP tree proto/opentelemetry/proto/...,
# imported by their path under proto/ (protoc-c -Iproto), generated into
# build/gen/ with the same layout.
PROTOS    := $(wildcard proto/*.proto) $(sort $(shell find proto/opentelemetry -name '*.proto' 2>/dev/null))
PROTO_C   := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
PROTO_H   := $(PROTO_C:.c=.h)
PROTO_O   := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(PROTO_C))

CORE_SRCS := $(filter-out src/main.c,$(wildcard src/*.c src/*/*.c))
CORE_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CORE_SRCS)) $(PROTO_O)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

.PHONY: all deps test-deps test run clean bench
# Keep intermediate BPF objects and generated sources.
.SECONDARY:
all: $(BUILD)/profd $(UNIT_BINS) inject gpu-test-bins nvtx-test-bins

# The CUDA/NVTX injection library and the GPU mocks/test programs.
include inject/inject.mk
include tests/gpu/gpu.mk
include tests/nvtx/nvtx.mk

deps:
	@sh scripts/deps.sh

test-deps:
	@sh scripts/deps.sh --test

$(BUILD)/vmlinux.h:
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h $(BUILD)/vmlinux.h
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	$(PROTOC_C) -Iproto --c_out=$(BUILD)/gen $<

# A generated file includes the headers of the files its .proto imports.
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# Every object may include a skeleton or generated proto header.
$(BUILD)/obj/%.o: src/%.c $(SKELS) $(PROTO_H) $(wildcard src/*/*.h src/*.h bpf/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libprofd_core.a: $(CORE_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/profd: $(BUILD)/obj/main.o $(BUILD)/libprofd_core.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libprofd_core.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libprofd_core.a $(LDLIBS)

test: test-deps
	$(MAKE) all
	/usr/bin/python3 -m pytest -v tests

run: deps
	$(MAKE) all
	$(BUILD)/profd --duration 10 --output-dir profd-out

bench: all
	sh bench/run-all.sh

clean:
	rm -rf $(BUILD)
