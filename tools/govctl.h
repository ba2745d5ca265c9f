/* govctl subcommands: each a thin layer over the libraries. Exit codes:
 * 0 ok, 1 bad input file or run failure (diags printed), 2 bad usage. */
#ifndef GOVD_TOOLS_GOVCTL_H
#define GOVD_TOOLS_GOVCTL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

#define GOVCTL_EXIT_OK 0
#define GOVCTL_EXIT_FAIL 1
#define GOVCTL_EXIT_USAGE 2

/* One row of govctl's subcommand table (tools/govctl.c). `govctl CMD --help`
 * prints synopsis and summary; man/govctl.1 and completions/govctl are
 * checked against the table (tests/integration/install_cli.sh). */
struct govctl_cmd {
	const char *name;
	const char *synopsis;
	const char *summary; /* one line: what it does */
	bool own_help;	     /* run() prints its own usage on --help (else govctl does) */
	int (*run)(int argc, char **argv);
};

int govctl_sim(int argc, char **argv);
int govctl_compare(int argc, char **argv);
int govctl_lint(int argc, char **argv);
/* tools/govctl_qualify.c, tools/govctl_scenarios.c (issue 14). */
int govctl_qualify(int argc, char **argv);
/* tools/govctl_explain.c: why the clock sat where it did (issue 32). */
int govctl_explain(int argc, char **argv);
int govctl_scenarios(int argc, char **argv);
/* tools/govctl_plant.c: the plant's steady-state predictions (docs/plant-models.md). */
int govctl_plant(int argc, char **argv);
int govctl_restore(int argc, char **argv);
/* tools/govctl_probe.c: read-only look at a govd config's devices. */
int govctl_probe(int argc, char **argv);
/* Control socket client (tools/govctl_ctl.c); --socket PATH, else
 * $GOVD_SOCKET, else CTLSOCK_DEFAULT_PATH. */
int govctl_status(int argc, char **argv);
int govctl_set(int argc, char **argv);
int govctl_hold(int argc, char **argv);
int govctl_resume(int argc, char **argv);
int govctl_reload(int argc, char **argv);

/* tools/govctl_report.c, tools/govctl_verify.c: the perf-per-watt report
 * (report/report.h is the library behind them). */
int govctl_report(int argc, char **argv);
int govctl_verify(int argc, char **argv);
int govctl_keygen(int argc, char **argv);
/* What a report's signature covers: the SHA-256 of each file of the report
 * in dir (report.json, report.md, report.html; the HTML without its
 * sign-off section, which govctl signoff rewrites and whose entries carry
 * their own signatures), one "HEX  NAME" line each after a version line.
 * *out (malloc'd text) or -errno with err naming the file. */
int govctl_report_manifest(const char *dir, char **out, char *err, size_t errlen);
/* Signs the report in dir with the Ed25519 secret key in keyfile (hex):
 * writes report.manifest (the manifest above) and report.json.sig (the
 * detached signature of the manifest, hex). 0 or -errno/-EINVAL. */
int govctl_sign_report(const char *dir, const char *keyfile, char *err, size_t errlen);

/* tools/govctl_fleet.c: fleet budgets on etcd (docs/fleet.md). */
int govctl_fleet(int argc, char **argv);
/* tools/govctl_fleet_sim.c: govctl sim --fleet. */
int govctl_fleet_sim(int argc, char **argv);

/* Strict number parsing for flags; false on junk. */
bool govctl_parse_u64(const char *s, uint64_t *out);
bool govctl_parse_double(const char *s, double *out);
void govctl_print_diags(const struct diag_list *d);
/* A policy or scenario argument: as given when absolute or readable, else the
 * installed copy of that relative path (common/datapath.h) copied into buf,
 * else as given (the loader then names it). */
const char *govctl_data_file(const char *path, char *buf, size_t len);

#endif
