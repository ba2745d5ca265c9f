/* govctl: the command-line front end (subcommand table). */
#include "tools/govctl.h"
#include "tools/govctl_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_help(int argc, char **argv);

static const struct govctl_cmd cmds[] = {
	{ .name = "sim",
	  .synopsis = "sim --scenario FILE --policy FILE [--seed N] [--out DIR] [--duration S]",
	  .run = govctl_sim },
	{ .name = "compare",
	  .synopsis = "compare --scenarios A,B --policies P,Q [--seeds 1,2] [--baseline NAME] [-j N] "
		      "[--out DIR]",
	  .run = govctl_compare },
	{ .name = "qualify", .synopsis = "qualify --scenario FILE [--samples N] [--seed N] [--at S]",
	  .run = govctl_qualify },
	{ .name = "scenarios",
	  .synopsis = "scenarios --seeds A-B --out DIR [--duration S]",
	  .run = govctl_scenarios },
	{ .name = "plant",
	  .synopsis = "plant --preset NAME --model NAME [--precision MODE] --phase decode|prefill "
		      "--batch N [--context N] [--prompt N] (--clocks all|MHZ,... | --power-limits W,...) "
		      "[--csv] [--plot FILE.svg]",
	  .run = govctl_plant },
	{ .name = "lint", .synopsis = "lint [--format text|json] [--strict] FILE...", .run = govctl_lint },
	{ .name = "restore", .synopsis = "restore [--state FILE | --config FILE]", .run = govctl_restore },
	{ .name = "probe", .synopsis = "probe --config FILE [--json]", .run = govctl_probe },
	{ .name = "report", .synopsis = "report RUN... --baseline RUN [-o DIR] [--sign KEYFILE]", .run = govctl_report },
	{ .name = "verify", .synopsis = "verify FILE SIGFILE PUBKEY", .run = govctl_verify },
	{ .name = "keygen", .synopsis = "keygen BASENAME", .run = govctl_keygen },
	{ .name = "status", .synopsis = "status [--json] [--socket PATH]", .run = govctl_status },
	{ .name = "set", .synopsis = "set budget-w WATTS [--socket PATH]", .run = govctl_set },
	{ .name = "hold", .synopsis = "hold [--socket PATH]", .run = govctl_hold },
	{ .name = "resume", .synopsis = "resume [--socket PATH]", .run = govctl_resume },
	{ .name = "reload", .synopsis = "reload [--socket PATH]", .run = govctl_reload },
	{ .name = "help", .synopsis = "help", .run = cmd_help },
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: govctl COMMAND [ARGS]\ncommands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		fprintf(f, "  govctl %s\n", cmds[i].synopsis);
}

static int cmd_help(int argc, char **argv)
{
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(argc, argv);
	for (size_t i = 0; i < N_CMDS; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "govctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return GOVCTL_EXIT_USAGE;
}
