/* fleet_grant_judge (governor/fleet/fleet.c), pure: which grants a node may
 * enforce. Forged grants (another epoch, another allocator, written before
 * the election, over the budget), malformed ones and reserves are refused;
 * a zero grant is a grant; grants of a lowered budget are scaled to it.
 * The real cluster, with forgeries written by etcdctl, is
 * tests/integration/fleet_faults.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "governor/fleet/fleet.h"

static struct etcd_kv kv_of(const char *key, const char *value, int64_t create_rev, int64_t mod_rev)
{
	return (struct etcd_kv){ .key = (char *)key,
				 .value = (char *)value,
				 .value_len = strlen(value),
				 .create_rev = create_rev,
				 .mod_rev = mod_rev,
				 .lease = 99 };
}

/* leader "a" elected at revision 10 (epoch 10), budget 900 W */
static struct etcd_kv leader, budget;

static int judge(const char *grants, int64_t mod_rev, uint64_t *mw, char *why)
{
	struct etcd_kv g = kv_of("/govd/c/g/grants", grants, 5, mod_rev);
	struct fleet_grant_read rd = { .leader = &leader, .budget = &budget, .grants = &g };
	return fleet_grant_judge(&rd, "n1", mw, why, 200);
}

static int setup(void **st)
{
	(void)st;
	leader = kv_of("/govd/c/g/leader", "{\"id\":\"a\",\"since_unix_ms\":1}", 10, 10);
	budget = kv_of("/govd/c/g/budget", "{\"budget_mw\":900000}", 2, 2);
	return 0;
}

static void test_valid(void **st)
{
	(void)st;
	uint64_t mw = 1;
	char why[200];
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":450000,\"n2\":450000}}",
			       12, &mw, why),
			 1);
	assert_int_equal(mw, 450000);
	assert_string_equal(why, "");
	/* valid, but not for this node */
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n2\":450000}}",
			       12, &mw, why),
			 0);
	/* no grants key at all */
	struct fleet_grant_read rd = { .leader = &leader, .budget = &budget, .grants = NULL };
	assert_int_equal(fleet_grant_judge(&rd, "n1", &mw, why, sizeof(why)), 0);
}

/* A group budget that rounds every share to 0: a grant of 0 (every device
 * at its minimum), never "no grant" and never "no limit". */
static void test_zero_grant(void **st)
{
	(void)st;
	uint64_t mw = 1;
	char why[200];
	budget = kv_of("/govd/c/g/budget", "{\"budget_mw\":1}", 2, 2);
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":1,"
			       "\"grants\":{\"n1\":0,\"n2\":0,\"n3\":1}}",
			       12, &mw, why),
			 1);
	assert_int_equal(mw, 0);
}

static void test_forged(void **st)
{
	(void)st;
	uint64_t mw = 7;
	char why[200];
	/* the finding: two nodes given 700 W each against a 900 W budget */
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":1400000,"
			       "\"grants\":{\"n1\":700000,\"n2\":700000}}",
			       12, &mw, why),
			 1); /* named for 1400 W: scaled to the 900 W beside it */
	assert_int_equal(mw, 450000);
	assert_non_null(strstr(why, "scaled"));
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":700000,\"n2\":700000}}",
			       12, &mw, why),
			 -EBADMSG);
	assert_non_null(strstr(why, "exceed"));
	/* another term's epoch */
	assert_int_equal(judge("{\"epoch\":9,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":100000}}",
			       12, &mw, why),
			 -EBADMSG);
	assert_non_null(strstr(why, "epoch"));
	/* another allocator's name */
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"mallory\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":100000}}",
			       12, &mw, why),
			 -EBADMSG);
	assert_non_null(strstr(why, "mallory"));
	/* a plain put: not bound to the allocator's lease */
	struct etcd_kv pg = kv_of("/govd/c/g/grants",
				  "{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
				  "\"grants\":{\"n1\":100000}}",
				  5, 12);
	pg.lease = 0;
	struct fleet_grant_read prd = { .leader = &leader, .budget = &budget, .grants = &pg };
	assert_int_equal(fleet_grant_judge(&prd, "n1", &mw, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "lease"));
	pg.lease = 98;
	assert_int_equal(fleet_grant_judge(&prd, "n1", &mw, why, sizeof(why)), -EBADMSG);
	pg.lease = 99;
	assert_int_equal(fleet_grant_judge(&prd, "n1", &mw, why, sizeof(why)), 1);
	/* written before the election (a replayed value) */
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":100000}}",
			       9, &mw, why),
			 -EBADMSG);
	/* reserves count: grants that fit only without them are refused */
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			       "\"grants\":{\"n1\":450000,\"n2\":400000},"
			       "\"reserved\":{\"n3\":{\"mw\":250000,\"safe_mw\":250000,\"hold_ms\":0}}}",
			       12, &mw, why),
			 -EBADMSG);
	/* not numbers, negative, huge */
	const char *bad[] = {
		"{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,\"grants\":{\"n1\":\"1\"}}",
		"{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,\"grants\":{\"n1\":-5}}",
		"{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,\"grants\":{\"n1\":1e3}}",
		"{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
		"\"grants\":{\"n1\":9223372036854775807,\"n2\":9223372036854775807}}",
		"{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,\"grants\":[1]}",
		"{\"epoch\":10,\"allocator\":\"a\",\"grants\":{\"n1\":1}}",
		"{\"epoch\":\"10\",\"allocator\":\"a\",\"budget_mw\":900000,\"grants\":{\"n1\":1}}",
		"{\"epoch\":10,\"budget_mw\":900000,\"grants\":{\"n1\":1}}",
		"[]",
		"not json",
		NULL,
	};
	for (int i = 0; bad[i]; i++) {
		mw = 7;
		assert_int_equal(judge(bad[i], 12, &mw, why), -EBADMSG);
		assert_int_equal(mw, 7);
		assert_true(why[0] != '\0');
	}
	/* no leader (allocator gone) or no budget beside the grants */
	struct etcd_kv g = kv_of("/govd/c/g/grants",
				 "{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
				 "\"grants\":{\"n1\":1}}",
				 5, 12);
	struct fleet_grant_read rd = { .leader = NULL, .budget = &budget, .grants = &g };
	assert_int_equal(fleet_grant_judge(&rd, "n1", &mw, why, sizeof(why)), -EBADMSG);
	rd = (struct fleet_grant_read){ .leader = &leader, .budget = NULL, .grants = &g };
	assert_int_equal(fleet_grant_judge(&rd, "n1", &mw, why, sizeof(why)), -EBADMSG);
}

/* A budget lowered after the grants were written: every node scales by the
 * same factor, so the sum meets the new budget before the next round. */
static void test_lowered_budget(void **st)
{
	(void)st;
	uint64_t a = 0, b = 0;
	char why[200];
	budget = kv_of("/govd/c/g/budget", "{\"budget_mw\":600000}", 2, 20);
	const char *g = "{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			"\"grants\":{\"n1\":500000,\"n2\":399999}}";
	assert_int_equal(judge(g, 12, &a, why), 1);
	struct etcd_kv gk = kv_of("/govd/c/g/grants", g, 5, 12);
	struct fleet_grant_read rd = { .leader = &leader, .budget = &budget, .grants = &gk };
	assert_int_equal(fleet_grant_judge(&rd, "n2", &b, why, sizeof(why)), 1);
	assert_true(a + b <= 600000);
	assert_true(a > 330000 && b > 260000);
	/* with a reserve (a gone node reads nothing): the grants scale into
	 * what the reserve leaves, 600 - 200 W */
	const char *gr = "{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":900000,"
			 "\"grants\":{\"n1\":400000,\"n2\":300000},"
			 "\"reserved\":{\"n3\":{\"mw\":200000,\"safe_mw\":200000,\"hold_ms\":0}}}";
	assert_int_equal(judge(gr, 12, &a, why), 1);
	gk = kv_of("/govd/c/g/grants", gr, 5, 12);
	assert_int_equal(fleet_grant_judge(&rd, "n2", &b, why, sizeof(why)), 1);
	assert_true(a + b + 200000 <= 600000);
	/* reserves alone above the budget: grants of 0 are the allocator's, taken */
	budget = kv_of("/govd/c/g/budget", "{\"budget_mw\":100000}", 2, 21);
	assert_int_equal(judge("{\"epoch\":10,\"allocator\":\"a\",\"budget_mw\":100000,"
			       "\"grants\":{\"n1\":0,\"n2\":0},"
			       "\"reserved\":{\"n3\":{\"mw\":250000,\"safe_mw\":250000,\"hold_ms\":0}}}",
			       12, &a, why),
			 1);
	assert_int_equal(a, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_valid, setup),
		cmocka_unit_test_setup(test_zero_grant, setup),
		cmocka_unit_test_setup(test_forged, setup),
		cmocka_unit_test_setup(test_lowered_budget, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
