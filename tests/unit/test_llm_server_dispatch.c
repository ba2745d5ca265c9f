/* Unit tests for the server.h front (plant_models/server.c): model lookup
 * over both tables and dispatch by kind. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plant_models/dynbatch.h"
#include "plant_models/llm_server.h"
#include "plant_models/server.h"

static void test_model_lookup(void **state)
{
	(void)state;
	const struct model_spec *m = model_spec_find("llama-3.1-8b");
	assert_non_null(m);
	assert_int_equal(m->kind, SERVER_LLM);
	assert_true(m->kv_bytes_per_token == 2.0 * 32 * 8 * 128 * 2);
	m = model_spec_find("llama2-70b-tp8");
	assert_non_null(m);
	assert_true(fabs(m->params_b - 68.98 / 8) < 1e-9);
	assert_true(m->comm_ms_per_step > 0);
	assert_non_null(model_spec_find("llama2-70b"));
	m = model_spec_find("resnet50");
	assert_non_null(m);
	assert_int_equal(m->kind, SERVER_DYNBATCH);
	assert_null(model_spec_find("gpt-5"));
	assert_null(model_spec_find(NULL));

	/* names: every entry of both tables once, NULL-terminated, all findable. */
	const char *const *names = model_spec_names();
	size_t n = 0, want = 0;
	for (const struct model_spec *t = llm_models; t->name; t++)
		want++;
	for (const struct model_spec *t = dynbatch_models; t->name; t++)
		want++;
	for (; names[n]; n++) {
		assert_non_null(model_spec_find(names[n]));
		for (size_t k = 0; k < n; k++)
			assert_true(strcmp(names[k], names[n]) != 0);
	}
	assert_int_equal(n, want);
	assert_true(model_spec_names() == names);
}

static void on_done(void *ctx, const struct request *r, double t)
{
	(void)r;
	(void)t;
	(*(int *)ctx)++;
}

static void run_one(const char *model, const char *preset_name)
{
	const struct plant_preset *p = plant_preset_find(preset_name);
	assert_non_null(p);
	struct server_cfg c;
	memset(&c, 0, sizeof(c));
	c.model = model_spec_find(model);
	assert_non_null(c.model);
	c.max_batch = 8;
	c.max_queue = 64;
	c.batch_timeout_ms = 2.0;
	c.n_slices = 1;
	struct server *s = NULL;
	assert_int_equal(server_create(&c, p, &s), 0);
	for (int i = 0; i < 5; i++) {
		struct request r;
		memset(&r, 0, sizeof(r));
		r.arrival_s = 0.001 * i;
		r.ctx_tokens = 64;
		r.gen_tokens = 4;
		server_submit(s, &r);
	}
	int done = 0;
	double t = 0, busy = 0;
	for (int k = 0; k < 200; k++, t += 0.01) {
		struct device_load l;
		server_advance(s, t, 0.01, p->dvfs.max_mhz, &l, on_done, &done);
		busy += l.busy;
	}
	const struct server_stats *st = server_get_stats(s);
	assert_int_equal(st->arrived, 5);
	assert_int_equal(st->completed, 5);
	assert_int_equal(done, 5);
	assert_true(busy > 0);
	server_destroy(s);
}

static void test_dispatch_by_kind(void **state)
{
	(void)state;
	run_one("llama-3.1-8b", "h100-sxm");
	run_one("resnet50", "h200-sxm");
	server_destroy(NULL);

	struct server_cfg c;
	memset(&c, 0, sizeof(c));
	struct server *s = NULL;
	assert_int_equal(server_create(&c, plant_preset_find("h100-sxm"), &s), -EINVAL);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_lookup),
		cmocka_unit_test(test_dispatch_by_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
