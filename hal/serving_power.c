/* The serving backend's power side (option power_backend): another backend
 * opened with the power.* options behind this device's sample, limits and
 * clock / power-limit writes, through the one forwarding view (hal_fwd.h);
 * serving, quality and precision stay the server's. A sim plant is
 * advanced to the device clock's elapsed time since open and its
 * timestamps moved onto that clock. Also the haproxy router's record for
 * the state file where no power side keeps one. */
#include "hal/hal_serving.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "hal/hal_fwd.h"
#include "hal/router_haproxy.h"
#include "hal/serving_internal.h"

static void shift(struct hal_value *v, uint64_t d)
{
	v->t_ms += d;
}

static int pw_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct sv *s = dev->priv;
	struct hal_dev *in = &s->inner;
	if (s->inner_sim) {
		uint64_t now = govd_clock_now_or_mono_ms(s->clock);
		int rc = govd_clock_wait_until(&s->pclk, now > s->t0_ms ? now - s->t0_ms : 0);
		if (rc)
			return rc; /* -EHOSTDOWN: the plant shut down (thermal) */
	}
	int rc = in->ops->sample(in, out);
	if (rc || !s->inner_sim)
		return rc;
	/* plant time (from 0 at open) onto the device's clock */
	uint64_t d = s->t0_ms;
	out->t_ms += d;
	for (int i = 0; i < HAL_RAIL_N; i++) {
		shift(&out->power_mw[i], d);
		shift(&out->energy_mj[i], d);
	}
	for (int i = 0; i < HAL_TEMP_N; i++)
		shift(&out->temp_mc[i], d);
	shift(&out->clk_khz, d);
	shift(&out->power_limit_mw, d);
	shift(&out->util_pct, d);
	return 0;
}

/* The server's side, then the power side's own restore. */
static int pw_restore(struct hal_dev *dev)
{
	struct sv *s = dev->priv;
	int rc = sv_restore(dev);
	if (hal_can_restore(&s->inner)) {
		int r = s->inner.ops->restore(&s->inner);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* The server's document first; the plant's share only if the server took it. */
static int pw_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_precision(dev, int8_frac, n_slices);
	if (!rc && s->fwd_precision)
		s->inner.ops->set_precision(&s->inner, int8_frac, n_slices);
	return rc;
}

static int pw_set_low_mode(struct hal_dev *dev, const uint8_t *mode, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_low_mode(dev, mode, n_slices);
	if (!rc && s->fwd_precision && s->inner.ops->set_low_mode)
		s->inner.ops->set_low_mode(&s->inner, mode, n_slices);
	return rc;
}

static int pw_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct sv *s = dev->priv;
	int rc = sv_set_shadow_rate(dev, rate, n_slices);
	if (!rc && s->fwd_precision && s->inner.ops->set_shadow_rate)
		s->inner.ops->set_shadow_rate(&s->inner, rate, n_slices);
	return rc;
}

/* haproxy: the weights found at open, for the state file, in the generic
 * record's shape (the restore reopens the device and sets BF16) plus the
 * router's servers, which close() then puts back. */
static int hap_get_original(struct hal_dev *dev, char *json, size_t len)
{
	struct sv *s = dev->priv;
	char *h = hap_original_json(s->hap);
	if (!h)
		return -ENOMEM;
	int n = snprintf(json, len,
			 "{\"generic\":true,\"power_limit_mw\":null,\"locked_clocks\":\"reset\","
			 "\"int8_slices\":%zu,\"haproxy\":%s}",
			 s->n_slices, h);
	free(h);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static int hap_adopt(struct hal_dev *dev, const char *json)
{
	struct sv *s = dev->priv;
	json_t *o = json_loads(json, 0, NULL);
	char *h = o ? json_dumps(json_object_get(o, "haproxy"), JSON_COMPACT) : NULL;
	int rc = h ? hap_adopt_original(s->hap, h) : -EINVAL;
	free(h);
	json_decref(o);
	return rc;
}

static const char *hap_last_error(struct hal_dev *dev)
{
	struct sv *s = dev->priv;
	return s->hap->err;
}

void sv_power_ops(struct hal_dev *dev, struct sv *s)
{
	const struct hal_ops *own = dev->ops; /* the server's, for its options */
	struct hal_ops *o = &s->pw.ops;
	if (s->hap && !s->has_inner) {
		*o = *own;
		o->get_original = hap_get_original;
		o->adopt_original = hap_adopt;
		o->last_error = hap_last_error;
		o->set_shadow_rate = NULL; /* weights carry no shadow rate */
		dev->ops = o;
		return;
	}
	if (!s->has_inner)
		return;
	/* The power side's capabilities, its record and its adoption of a
	 * crashed run's record (the record is its own); the server's serving,
	 * quality, precision and lifecycle. */
	hal_fwd_init(&s->pw, &s->inner);
	o->name = own->name;
	o->open = own->open;
	o->close = own->close;
	o->check_options = own->check_options;
	o->expand = own->expand;
	o->sample = pw_sample;
	o->read_serving = own->read_serving;
	o->read_quality = own->read_quality;
	o->set_precision = own->set_precision ? pw_set_precision : NULL;
	o->set_low_mode = own->set_low_mode ? pw_set_low_mode : NULL;
	o->set_shadow_rate = own->set_shadow_rate && !s->hap ? pw_set_shadow_rate : NULL;
	o->restore = pw_restore;
	o->writer_ids = own->writer_ids;
	if (s->hap && !s->inner.ops->get_original && !s->inner.ops->adopt_original) {
		/* a power side without its own record (the sim): the router's */
		o->get_original = hap_get_original;
		o->adopt_original = hap_adopt;
	}
	dev->ops = o;
}
