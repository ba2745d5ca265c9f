/* server.h front: dispatches to the LLM or the dynamic-batching model by
 * the model's kind. */
#include "plant_models/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plant_models/dynbatch.h"
#include "plant_models/llm_server.h"

struct server {
	enum server_kind kind;
	union {
		struct llm_server *llm;
		struct dynbatch *dyn;
	} u;
};

int server_create(const struct server_cfg *cfg, const struct plant_preset *dev,
		  struct server **out)
{
	if (!cfg || !cfg->model || !dev || !out)
		return -EINVAL;
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->kind = cfg->model->kind;
	int rc;
	switch (s->kind) {
	case SERVER_LLM:
		rc = llm_server_create(cfg, dev, &s->u.llm);
		break;
	case SERVER_DYNBATCH:
		rc = dynbatch_create(cfg, dev, &s->u.dyn);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc < 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void server_destroy(struct server *s)
{
	if (!s)
		return;
	if (s->kind == SERVER_LLM)
		llm_server_destroy(s->u.llm);
	else
		dynbatch_destroy(s->u.dyn);
	free(s);
}

void server_submit(struct server *s, const struct request *r)
{
	if (s->kind == SERVER_LLM)
		llm_server_submit(s->u.llm, r);
	else
		dynbatch_submit(s->u.dyn, r);
}

void server_advance(struct server *s, double t_s, double dt_s, uint32_t clk_mhz,
		    struct device_load *load,
		    void (*on_done)(void *ctx, const struct request *r, double t_done_s), void *ctx)
{
	if (s->kind == SERVER_LLM)
		llm_server_advance(s->u.llm, t_s, dt_s, clk_mhz, load, on_done, ctx);
	else
		dynbatch_advance(s->u.dyn, t_s, dt_s, clk_mhz, load, on_done, ctx);
}

const struct server_stats *server_get_stats(const struct server *s)
{
	return s->kind == SERVER_LLM ? llm_server_stats(s->u.llm) : dynbatch_stats(s->u.dyn);
}

int server_step_cost(const struct model_spec *m, const struct serving_stack *stack,
		     const struct plant_preset *dev, bool int8, bool prefill, uint32_t batch,
		     uint32_t context, uint32_t prompt, uint32_t clk_mhz, struct step_cost *out)
{
	if (!m)
		return -EINVAL;
	if (m->kind == SERVER_LLM)
		return llm_step_cost(m, stack, dev, int8, prefill, batch, context, prompt, clk_mhz,
				     out);
	return dynbatch_step_cost(m, dev, int8, batch, clk_mhz, out);
}

const struct model_spec *model_spec_find(const char *name)
{
	if (!name)
		return NULL;
	for (const struct model_spec *m = llm_models; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	for (const struct model_spec *m = dynbatch_models; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

static const char *spec_names[32];
static pthread_once_t spec_names_once = PTHREAD_ONCE_INIT;

static void spec_names_fill(void)
{
	size_t n = 0;
	for (const struct model_spec *m = llm_models; m->name && n + 1 < 32; m++)
		spec_names[n++] = m->name;
	for (const struct model_spec *m = dynbatch_models; m->name && n + 1 < 32; m++)
		spec_names[n++] = m->name;
	spec_names[n] = NULL;
}

const char *const *model_spec_names(void)
{
	pthread_once(&spec_names_once, spec_names_fill);
	return spec_names;
}
