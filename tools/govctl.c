/* govctl: the command-line front end (subcommand table). */
#include "tools/govctl.h"
#include "common/datapath.h"
#include "common/ycfg.h"
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmd_help(int argc, char **argv);

static const struct govctl_cmd cmds[] = {
	{ .name = "sim",
	  .synopsis = "sim --scenario FILE --policy FILE [--seed N] [--out DIR] [--duration S] | sim "
		      "--fleet [--fit] ...",
	  .summary = "run one policy on one scenario (or a fleet) in the simulator",
	  .own_help = true,
	  .run = govctl_sim },
	{ .name = "compare",
	  .synopsis = "compare --scenarios A,B --policies P,Q [--seeds 1,2] [--baseline NAME] [-j N] "
		      "[--out DIR]",
	  .summary = "run every scenario x policy x seed and tabulate them against a baseline",
	  .own_help = true,
	  .run = govctl_compare },
	{ .name = "qualify",
	  .synopsis = "qualify --scenario FILE [--samples N] [--seed N] [--at S]",
	  .summary = "draw a slice's offline qualification samples and print the prior a policy carries",
	  .run = govctl_qualify },
	{ .name = "scenarios",
	  .synopsis = "scenarios --seeds A-B --out DIR [--duration S] [--headroom [--policy FILE]] | "
		      "scenarios --headroom --scenario FILE,...",
	  .summary = "generate a seeded scenario family; how much room each leaves DVFS",
	  .run = govctl_scenarios },
	{ .name = "plant",
	  .synopsis = "plant --preset NAME --model NAME [--precision MODE] --phase decode|prefill "
		      "--batch N [--context N] [--prompt N] (--clocks all|MHZ,... | --power-limits W,...) "
		      "[--csv] [--plot FILE.svg]",
	  .summary = "what the simulator's plant predicts per locked clock or power limit",
	  .run = govctl_plant },
	{ .name = "explain",
	  .synopsis = "explain RUN [--from S] [--to S] [--every S]",
	  .summary = "why the clock sat where it did, from a decision log's explanations",
	  .own_help = true,
	  .run = govctl_explain },
	{ .name = "lint",
	  .synopsis = "lint [--format text|json] [--strict] FILE...",
	  .summary = "check policy files (errors name file:line:col)",
	  .own_help = true,
	  .run = govctl_lint },
	{ .name = "restore",
	  .synopsis = "restore [--state FILE | --config FILE]",
	  .summary = "put the devices' original settings back from govd's state file",
	  .own_help = true,
	  .run = govctl_restore },
	{ .name = "probe",
	  .synopsis = "probe --config FILE [--json]",
	  .summary = "read-only look at what a govd config finds on this machine",
	  .own_help = true,
	  .run = govctl_probe },
	{ .name = "report",
	  .synopsis = "report RUN... --baseline RUN [--alternatives PATH]... [-o DIR] [--sign KEYFILE]",
	  .summary = "write the perf-per-watt report of runs against a baseline",
	  .own_help = true,
	  .run = govctl_report },
	{ .name = "signoff",
	  .synopsis = "signoff REPORT --role ROLE --decision GO|GO-WITH-CONDITIONS|NO-GO --key KEYFILE "
		      "[--name NAME] [--signers FILE]",
	  .summary = "sign an owner's decision on a report, beside it",
	  .run = govctl_signoff },
	{ .name = "verify",
	  .synopsis = "verify FILE SIGFILE PUBKEY | verify REPORT [--signers FILE] [--require-all]",
	  .summary = "check a report's Ed25519 signature, or list and check its sign-offs",
	  .run = govctl_verify },
	{ .name = "keygen",
	  .synopsis = "keygen BASENAME",
	  .summary = "make an Ed25519 key pair for signing reports",
	  .run = govctl_keygen },
	{ .name = "status",
	  .synopsis = "status [--json] [--socket PATH]",
	  .summary = "a running govd's state: a table, or JSON with --json",
	  .run = govctl_status },
	{ .name = "set",
	  .synopsis = "set budget-w WATTS [--socket PATH]",
	  .summary = "override a running govd's node power budget",
	  .run = govctl_set },
	{ .name = "hold",
	  .synopsis = "hold [--socket PATH]",
	  .summary = "keep every device at its current operating point",
	  .run = govctl_hold },
	{ .name = "resume",
	  .synopsis = "resume [--socket PATH]",
	  .summary = "let the governor decide again after a hold",
	  .run = govctl_resume },
	{ .name = "reload",
	  .synopsis = "reload [--socket PATH]",
	  .summary = "reload govd's config and policies as one transaction",
	  .run = govctl_reload },
	{ .name = "fleet",
	  .synopsis = "fleet status|set-budget WATTS|allocate (--config FILE | --endpoints URLS "
		      "--group G)",
	  .summary = "a fleet's power budget on etcd: status, set the budget, run an allocator",
	  .own_help = true,
	  .run = govctl_fleet },
	{ .name = "help",
	  .synopsis = "help [COMMAND]",
	  .summary = "list the commands, or show one command's usage",
	  .run = cmd_help },
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: govctl COMMAND [ARGS]   (govctl COMMAND --help, govctl --version)\n"
		   "commands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary ? cmds[i].summary : "");
}

static const struct govctl_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(name, cmds[i].name))
			return &cmds[i];
	return NULL;
}

static void cmd_usage(FILE *f, const struct govctl_cmd *c)
{
	fprintf(f, "usage: govctl %s\n", c->synopsis);
	if (c->summary && c->summary[0])
		fprintf(f, "%c%s.\n", toupper((unsigned char)c->summary[0]), c->summary + 1);
	fprintf(f, "More: man govctl.\n");
}

/* The nearest command to a mistyped one, if near enough to be a typo. */
static const struct govctl_cmd *nearest_cmd(const char *name)
{
	const char *names[N_CMDS + 1];
	for (size_t i = 0; i < N_CMDS; i++)
		names[i] = cmds[i].name;
	names[N_CMDS] = NULL;
	const char *best = ycfg_closest(name, names);
	return best ? find_cmd(best) : NULL;
}

static int cmd_help(int argc, char **argv)
{
	if (argc >= 2) {
		const struct govctl_cmd *c = find_cmd(argv[1]);
		if (!c) {
			fprintf(stderr, "govctl help: unknown command '%s'\n", argv[1]);
			return GOVCTL_EXIT_USAGE;
		}
		cmd_usage(stdout, c);
		return GOVCTL_EXIT_OK;
	}
	usage(stdout);
	return GOVCTL_EXIT_OK;
}

bool govctl_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool govctl_parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

void govctl_print_diags(const struct diag_list *d)
{
	diag_print(d, stderr);
}

const char *govctl_data_file(const char *path, char *buf, size_t len)
{
	if (!path || path[0] == '/' || access(path, R_OK) == 0)
		return path;
	return govd_data_find(path, buf, len) == 0 ? buf : path;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("govctl %s\n", GOVD_VERSION);
		return GOVCTL_EXIT_OK;
	}
	/* For completions/govctl: the table's names, one per line. */
	if (!strcmp(argv[1], "--list-commands")) {
		for (size_t i = 0; i < N_CMDS; i++)
			printf("%s\n", cmds[i].name);
		return GOVCTL_EXIT_OK;
	}
	const struct govctl_cmd *c = find_cmd(argv[1]);
	if (c) {
		/* `govctl CMD --help` for every command without its own. */
		if (!c->own_help && argc >= 3 &&
		    (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			cmd_usage(stdout, c);
			return GOVCTL_EXIT_OK;
		}
		return c->run(argc - 1, argv + 1);
	}
	const struct govctl_cmd *near = nearest_cmd(argv[1]);
	if (near)
		fprintf(stderr, "govctl: unknown command '%s'; did you mean '%s'?\n", argv[1], near->name);
	else
		fprintf(stderr, "govctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return GOVCTL_EXIT_USAGE;
}
