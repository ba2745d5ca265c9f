/* The decision log's reader, beside its writer (declog.c): both follow the
 * schema in docs/decision-log.md (DECLOG_SCHEMA_VERSION). It frames lines,
 * checks what a header must carry, and hands back typed records; a compact
 * log's left-out periods come back as copies of the record before them.
 * Used by the report (report/report_load.c); pure of printing. */
#ifndef GOVD_GOVERNOR_DECLOG_READ_H
#define GOVD_GOVERNOR_DECLOG_READ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sla.h"
#include "governor/policy/opoint.h"
#include "hal/hal.h"

/* The header record (strings cut at a UTF-8 boundary to fit). */
struct declog_head {
	uint32_t schema_version; /* 1 for logs written before the key */
	char govd_version[32];
	char scenario[64];       /* "" for govd */
	char policy[64], controller[32], policy_hash[40], policy_path[1024];
	char scenario_path[1024]; /* "" where not recorded (govd, older runs) */
	char command[8192];       /* the govctl sim command line; "" where not recorded */
	char compiler[128];       /* versions.compiler */
	double period_ms;
	bool dry_run;
	uint64_t seed;
	char dev_name[HAL_NAME_LEN], dev_model[HAL_NAME_LEN];
	char driver[HAL_NAME_LEN], firmware[HAL_NAME_LEN];
	double slowdown_mc, shutdown_mc; /* NaN when absent */
	size_t n_slices;
	char slice[HAL_MAX_SLICES][HAL_NAME_LEN];
	uint64_t compact_gap; /* compact log: the most periods one gap may hold; 0: full log */
	size_t line;          /* its line number */
};

/* One control period, from a decision record. NaN: absent from the record. */
struct declog_period {
	double t_s;
	double clk_mhz, power_limit_w;
	double p_accel_w, p_mem_w, p_host_w;
	double tj_c, tmem_c, tin_c;
	double util, tokens_per_s, int8_share;
	double q_ms[SLA_N_ROWS];  /* inputs.sla, by SLA_INDEX() */
	double win_s, win_requests;
	double queue_len, running;
	uint32_t throttle, reasons; /* reasons: enum gov_reason bits */
	uint32_t gate_open;       /* bit per slice: inputs.quality[s].gate_open */
	uint32_t detect_held;     /* bit per slice: inputs.quality[s].detect_held_s present */
	uint32_t mix_held;        /* bit per slice: inputs.quality[s].mix_held true */
	size_t n_faults;
	bool clk_locked;
	double int8_before[HAL_MAX_SLICES], int8_after[HAL_MAX_SLICES];
	double q_drop_upper[HAL_MAX_SLICES], q_samples[HAL_MAX_SLICES];
	struct gov_why why;       /* the record's "why"; why.valid false when absent or unknown */
};

struct declog_read_cb {
	/* Each returns 0 or a negative errno, which stops the read. */
	int (*header)(void *ctx, const struct declog_head *h);
	/* copied: a compact log's unchanged period, a copy of the one before
	 * one period later */
	int (*period)(void *ctx, const struct declog_period *p, bool copied);
};

/* Reads the log at path (at most max_bytes). 0, or a negative errno with
 * err set to "path:line:col: error: ..." (not JSON, a decision before the
 * header or without t_ms/inputs, a second header, a header without a
 * period or with bad slices, a schema newer than this reader, a compact log
 * whose seq jumps past its heartbeat, no header, no decision). A last line
 * without its newline is a crash's torn write and is dropped. */
int declog_read(const char *path, uint64_t max_bytes, const struct declog_read_cb *cb, void *ctx,
		char *err, size_t errlen);

#endif
