// SPDX-License-Identifier: GPL-2.0
/*
 * options_print.c - --print-config: the settings as a config file (see
 * options_print_yaml() in options.h). The YAML emitter is libyaml's, so
 * printed values are always quoted correctly.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/options.h"
#include "config/options_internal.h"
#include "config/runtimes.h"

struct emitter {
	yaml_emitter_t e;
	int err;
};

static void emit(struct emitter *em, yaml_event_t *ev)
{
	if (!em->err && !yaml_emitter_emit(&em->e, ev))
		em->err = -EIO;
}

static void emit_scalar(struct emitter *em, const char *s, bool plain_ok)
{
	yaml_event_t ev;

	/* libyaml refuses text that is not UTF-8: never emit the event then */
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
					  (int)strlen(s), plain_ok, !plain_ok,
					  plain_ok ? YAML_ANY_SCALAR_STYLE :
					  YAML_DOUBLE_QUOTED_SCALAR_STYLE)) {
		if (!em->err)
			em->err = -EILSEQ;
		return;
	}
	emit(em, &ev);
}

static void emit_seq_start(struct emitter *em)
{
	yaml_event_t ev;

	yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE);
	emit(em, &ev);
}

static void emit_seq_end(struct emitter *em)
{
	yaml_event_t ev;

	yaml_sequence_end_event_initialize(&ev);
	emit(em, &ev);
}

static int write_handler(void *data, unsigned char *buf, size_t size)
{
	return fwrite(buf, 1, size, data) == size;
}

/* The value of option @d in @o, as config-file text (strings quoted). */
static void emit_value(struct emitter *em, const struct options *o,
		       const struct option_def *d)
{
	const struct agent_config *c = &o->cfg;
	char buf[64];

	switch (d->key) {
	case OPT_FREQ:
		snprintf(buf, sizeof(buf), "%u", c->frequency_hz);
		break;
	case OPT_DURATION:
		snprintf(buf, sizeof(buf), "%u", c->duration_s);
		break;
	case OPT_INTERVAL:
		snprintf(buf, sizeof(buf), "%u", c->interval_s);
		break;
	case OPT_OUTPUT:
		return emit_scalar(em, c->output_dir, false);
	case OPT_RETENTION: {
		char age[32] = "", size[32] = "";

		if (!c->retention_age_s && !c->retention_bytes)
			return emit_scalar(em, "", false);
		if (c->retention_age_s)
			format_duration(c->retention_age_s, age, sizeof(age));
		if (c->retention_bytes) {
			static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
			unsigned long long b = c->retention_bytes;
			int u = 0;

			while (u < 4 && b % 1024 == 0) {
				b /= 1024;
				u++;
			}
			snprintf(size, sizeof(size), "%llu%s", b, units[u]);
		}
		snprintf(buf, sizeof(buf), "%s%s%s", age, age[0] && size[0] ? "," : "", size);
		return emit_scalar(em, buf, false);
	}
	case OPT_PID:
	case OPT_DEBUG_PID: {
		const pid_t *v = d->key == OPT_PID ? c->pids : c->debug_pids;
		size_t n = d->key == OPT_PID ? c->npids : c->ndebug_pids;

		emit_seq_start(em);
		for (size_t i = 0; i < n; i++) {
			snprintf(buf, sizeof(buf), "%d", (int)v[i]);
			emit_scalar(em, buf, true);
		}
		return emit_seq_end(em);
	}
	case OPT_LABEL:
		emit_seq_start(em);
		for (size_t i = 0; i < c->nlabels; i++) {
			char *kv;

			if (asprintf(&kv, "%s=%s", c->labels[i].key, c->labels[i].value) < 0) {
				em->err = -ENOMEM;
				break;
			}
			emit_scalar(em, kv, false);
			free(kv);
		}
		return emit_seq_end(em);
	case OPT_VERBOSE:
		snprintf(buf, sizeof(buf), "%d", c->verbose);
		break;
	case OPT_INCLUDE_IDLE:
		return emit_scalar(em, c->include_idle ? "true" : "false", true);
	case OPT_MAX_DEPTH:
		snprintf(buf, sizeof(buf), "%u", c->max_stack_depth);
		break;
	case OPT_PROB_INTERVAL:
		format_duration(c->probabilistic_interval_s, buf, sizeof(buf));
		break;
	case OPT_PROB_THRESHOLD:
		snprintf(buf, sizeof(buf), "%u", c->probabilistic_threshold);
		break;
	case OPT_OFF_CPU:
		return emit_scalar(em, c->off_cpu ? "true" : "false", true);
	case OPT_OFF_CPU_THRESHOLD:
		snprintf(buf, sizeof(buf), "%.9g", c->off_cpu_threshold);
		break;
	case OPT_OFF_CPU_MIN_BLOCK:
		format_duration_ns(c->off_cpu_min_block_ns, buf, sizeof(buf));
		break;
	case OPT_NO_KVER:
		return emit_scalar(em, c->check_kernel_version ? "false" : "true", true);
	case OPT_NO_DWARF:
		return emit_scalar(em, c->dwarf_unwinding ? "false" : "true", true);
	case OPT_NO_LINES:
		return emit_scalar(em, c->symbolize_lines ? "false" : "true", true);
	case OPT_STACK_COPY:
		snprintf(buf, sizeof(buf), "%u", c->stack_copy_bytes);
		break;
	case OPT_CHECK_UNWINDER:
		return emit_scalar(em, c->check_unwinder ? "true" : "false", true);
	case OPT_NO_PYTHON:
		return emit_scalar(em, c->python_unwinding ? "false" : "true", true);
	case OPT_TRACERS:
		/* unset: "" (all: a runtime added later is on too) */
		if (!c->tracers_set)
			return emit_scalar(em, "", false);
		emit_seq_start(em);
		for (unsigned int id = 0; config_tracer_name(id); id++)
			if (c->tracers & (1u << id))
				emit_scalar(em, config_tracer_name(id), true);
		return emit_seq_end(em);
	case OPT_MAP_SCALE:
		snprintf(buf, sizeof(buf), "%u", c->bpf_map_scale_factor);
		break;
	case OPT_UNWIND_MEMORY:
		/* unset: "" (the default, scaled by bpf-map-scale-factor) */
		if (!c->unwind_memory_set)
			return emit_scalar(em, "", false);
		snprintf(buf, sizeof(buf), "%u", c->unwind_memory_mib);
		break;
	case OPT_SYMBOL_CACHE:
		snprintf(buf, sizeof(buf), "%u", c->symbol_cache_mib);
		break;
	case OPT_MEMORY_LIMIT:
		snprintf(buf, sizeof(buf), "%u", c->memory_limit_mib);
		break;
	case OPT_DEBUGINFOD_URLS:
		/* unset: "" ($DEBUGINFOD_URLS); off: "off" */
		return emit_scalar(em, !c->debuginfod_urls ? "" : c->debuginfod_urls[0] ?
				   c->debuginfod_urls : "off", false);
	case OPT_DEBUGINFOD_CACHE:
		return emit_scalar(em, c->debuginfod_cache, false);
	case OPT_DEBUGINFOD_CACHE_SIZE:
		snprintf(buf, sizeof(buf), "%u", c->debuginfod_cache_mib);
		break;
	case OPT_MAX_PROCESSES:
		if (!c->max_processes_set)
			return emit_scalar(em, "", false);
		snprintf(buf, sizeof(buf), "%u", c->max_processes);
		break;
	case OPT_VERIFIER_LOG:
		snprintf(buf, sizeof(buf), "%u", c->bpf_verifier_log_level);
		break;
	case OPT_HTTP_ADDRESS:
		return emit_scalar(em, c->http_address ? c->http_address : "", false);
	case OPT_NO_GPU:
		return emit_scalar(em, c->gpu ? "false" : "true", true);
	case OPT_INJECT_LIBRARY:
		return emit_scalar(em, c->inject_library ? c->inject_library : "", false);
	case OPT_GPU_TIMEOUT:
		snprintf(buf, sizeof(buf), "%u", c->gpu_timeout_s);
		break;
	case OPT_OTLP_ENDPOINT:
		return emit_scalar(em, c->otlp_endpoint ? c->otlp_endpoint : "", false);
	case OPT_OTLP_PROTOCOL:
		return emit_scalar(em, c->otlp_protocol ? c->otlp_protocol : "", false);
	case OPT_OTLP_INSECURE:
		return emit_scalar(em, c->otlp_insecure ? "true" : "false", true);
	case OPT_NVTX_MAX_SPANS:
		snprintf(buf, sizeof(buf), "%u", c->nvtx_max_spans_per_sec);
		break;
	default:
		return emit_scalar(em, "", false);
	}
	emit_scalar(em, buf, true);
}

/*
 * A setting printed "" (unset) that the run takes from the environment gets
 * a YAML comment after the document saying which variable and its value, so
 * the printed file tells what the run uses without pinning the variable's
 * value into a config file.
 */
static void print_env_notes(const struct options *o, FILE *f)
{
	static const struct {
		int key;
		const char *name, *env;
	} notes[] = {
		{ OPT_DEBUGINFOD_URLS, "debuginfod-urls", "DEBUGINFOD_URLS" },
		{ OPT_OTLP_ENDPOINT, "otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT" },
		{ OPT_OTLP_ENDPOINT, "otlp-endpoint", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT" },
		{ OPT_OTLP_PROTOCOL, "otlp-protocol", "OTEL_EXPORTER_OTLP_PROTOCOL" },
	};
	const struct agent_config *c = &o->cfg;

	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		const char *v = getenv(notes[i].env);
		bool unset = notes[i].key == OPT_DEBUGINFOD_URLS ? !c->debuginfod_urls :
			     notes[i].key == OPT_OTLP_ENDPOINT ? !c->otlp_endpoint :
			     !c->otlp_protocol;

		if (!unset || !v || !*v)
			continue;
		fprintf(f, "# %s: \"\" takes $%s: ", notes[i].name, notes[i].env);
		for (const char *p = v; *p && p - v < 200; p++)	/* one line, printable */
			fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', f);
		fputc('\n', f);
	}
}

int options_print_yaml(const struct options *o, FILE *f)
{
	struct emitter em = { .err = 0 };
	const struct option_def *table;
	yaml_event_t ev;
	size_t n;

	if (!yaml_emitter_initialize(&em.e))
		return -ENOMEM;
	yaml_emitter_set_output(&em.e, write_handler, f);
	yaml_emitter_set_unicode(&em.e, 1);
	yaml_emitter_set_width(&em.e, -1);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	emit(&em, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0);
	emit(&em, &ev);
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	emit(&em, &ev);
	table = option_table(&n);
	for (size_t i = 0; i < n; i++) {
		if (!table[i].file)
			continue;
		emit_scalar(&em, table[i].name, true);
		emit_value(&em, o, &table[i]);
	}
	yaml_mapping_end_event_initialize(&ev);
	emit(&em, &ev);
	yaml_document_end_event_initialize(&ev, 1);
	emit(&em, &ev);
	yaml_stream_end_event_initialize(&ev);
	emit(&em, &ev);
	if (!em.err && !yaml_emitter_flush(&em.e))
		em.err = -EIO;
	yaml_emitter_delete(&em.e);
	if (!em.err)
		print_env_notes(o, f);
	return em.err;
}
