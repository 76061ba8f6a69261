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
LDLIBS    := -lbpf -ldebuginfod -ldw -lelf -lz -lprotobuf-c -lcurl -lyaml -lmicrohttpd -liberty -lstdc++ -lpthread -lm
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall \
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
all: $(BUILD)/profd $(UNIT_BINS) inject gpu-test-bins nvtx-test-bins $(BUILD)/demo/server

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
	$(MAKE) -j$$(nproc) all
	/usr/bin/python3 -m pytest -v tests

# `make run`: only what it runs (profd, the injection library, the demo
# program), then 10 s of this machine with the demo (scripts/run-demo.sh).
run: deps
	$(MAKE) -j$$(nproc) $(BUILD)/profd inject $(BUILD)/demo/server
	sh scripts/run-demo.sh 10 profd-out

# The native demo program: -O2 without frame pointers, as distributions build.
$(BUILD)/demo/server: demo/server.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fomit-frame-pointer -o $@ $<

bench: all
	sh bench/run-all.sh

clean:
	rm -rf $(BUILD)

# --- install / uninstall ------------------------------------------------
# `make install [PREFIX=/usr/local] [DESTDIR=/staging]` installs what `all`
# built: PREFIX/bin/profd, PREFIX/lib/profd/libprofd_inject.so (where
# profd looks, ../lib/profd/ from its binary: keep the two together),
# the man page, the systemd unit generated from dist/profd.service.in, and
# the example /etc/profd/profd.yaml unless one exists. Nothing is started:
# then `systemctl daemon-reload && systemctl enable --now profd`.
# `make uninstall` removes the same files but keeps the config and
# /var/lib/profd (the profiles).
PREFIX         ?= /usr/local
SYSCONFDIR     ?= /etc
MANDIR         ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL        ?= install
PROFD_BINDIR   := $(PREFIX)/bin
PROFD_LIBDIR   := $(PREFIX)/lib/profd

.PHONY: install uninstall
install: $(BUILD)/profd $(BUILD)/libprofd_inject.so
	$(INSTALL) -d $(DESTDIR)$(PROFD_BINDIR) $(DESTDIR)$(PROFD_LIBDIR) \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/profd
	$(INSTALL) -m 0755 $(BUILD)/profd $(DESTDIR)$(PROFD_BINDIR)/profd
	$(INSTALL) -m 0644 $(BUILD)/libprofd_inject.so $(DESTDIR)$(PROFD_LIBDIR)/libprofd_inject.so
	gzip -9n < docs/profd.8 > $(DESTDIR)$(MANDIR)/man8/profd.8.gz.tmp
	chmod 0644 $(DESTDIR)$(MANDIR)/man8/profd.8.gz.tmp
	mv -f $(DESTDIR)$(MANDIR)/man8/profd.8.gz.tmp $(DESTDIR)$(MANDIR)/man8/profd.8.gz
	sed -e 's|@BINDIR@|$(PROFD_BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		dist/profd.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/profd.service.tmp
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/profd.service.tmp
	mv -f $(DESTDIR)$(SYSTEMDUNITDIR)/profd.service.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/profd.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/profd/profd.yaml ]; then \
		echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/profd/profd.yaml (dist/profd.yaml is the example)"; \
	else \
		echo "$(INSTALL) -m 0644 dist/profd.yaml $(DESTDIR)$(SYSCONFDIR)/profd/profd.yaml"; \
		$(INSTALL) -m 0644 dist/profd.yaml $(DESTDIR)$(SYSCONFDIR)/profd/profd.yaml; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PROFD_BINDIR)/profd \
		$(DESTDIR)$(PROFD_LIBDIR)/libprofd_inject.so \
		$(DESTDIR)$(MANDIR)/man8/profd.8.gz \
		$(DESTDIR)$(SYSTEMDUNITDIR)/profd.service
	-rmdir $(DESTDIR)$(PROFD_LIBDIR) 2>/dev/null
	@echo "uninstall: kept $(DESTDIR)$(SYSCONFDIR)/profd/profd.yaml and /var/lib/profd"
