/* Modbus power-meter backend over libmodbus; see hal_modbus.h and
 * docs/backends-modbus-gpio.md. Every transaction is bounded by timeout_ms,
 * a sample stops reading when budget_ms is spent, a lost link is retried with
 * exponential backoff (at most one connect per sample), and values live on
 * as "last good" only while younger than max_age_ms. */
#include "hal/hal_modbus.h"

#ifdef GOVD_WITH_MODBUS
#include <errno.h>
#include <math.h>
#include <modbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/backend_opts.h"

enum transport { TR_TCP, TR_RTU };
static const char *const transport_names[] = { "tcp", "rtu", NULL };
static const char *const parity_names[] = { "none", "even", "odd", NULL };
static const char parity_chars[] = { 'N', 'E', 'O' };

struct mb_priv {
	modbus_t *ctx;
	bool connected, rtu;
	struct mb_regmap map;
	struct mb_held held[MB_MAX_REGS];
	struct mb_backoff backoff;
	struct hal_modbus_stats stats;
	uint32_t timeout_ms, max_age_ms, poll_ms, budget_ms;
	int default_rail;
	uint64_t last_poll_ms;
	bool polled;
	size_t next_reg; /* round robin start, so a short budget starves no register */
	char desc[160];
	const struct govd_clock *clock; /* NULL: CLOCK_MONOTONIC */
	struct hal_faults flt;
};

/* The daemon's time base: timestamps, ageing, backoff (the per-sample
 * budget is real elapsed time: govd_mono_ms). */
static uint64_t now_ms(const struct mb_priv *p)
{
	return govd_clock_now_or_mono_ms(p->clock);
}

static const char *reg_name(const struct mb_reg *r)
{
	return mb_quantity_names[r->quantity];
}

/* libmodbus bounds the wait for a reply's first byte (response timeout)
 * and then each wait for more (byte timeout), never the whole: a meter
 * that drips its reply a byte at a time just inside the byte timeout
 * stretches one transaction far past timeout_ms. So the whole is split:
 * half for the first byte, the rest shared by the reply's remaining bytes
 * (libmodbus waits at most once per byte), which bounds a transaction of
 * `words` registers by total_us. A reply that arrives in one burst (TCP,
 * or RTU at any usual baud rate) is not slowed by it. */
static void set_timeouts(modbus_t *ctx, bool rtu, uint64_t total_us, unsigned words)
{
	if (total_us < 2)
		total_us = 2;
	/* TCP: MBAP 7 + function + byte count; RTU: unit + function + byte count + CRC 2 */
	unsigned bytes = (rtu ? 5u : 9u) + 2u * words;
	uint64_t resp_us = total_us / 2;
	uint64_t byte_us = (total_us - resp_us) / (bytes - 1);
	if (byte_us < 1)
		byte_us = 1;
	modbus_set_response_timeout(ctx, (uint32_t)(resp_us / 1000000), (uint32_t)(resp_us % 1000000));
	modbus_set_byte_timeout(ctx, (uint32_t)(byte_us / 1000000), (uint32_t)(byte_us % 1000000));
}

static void link_down(struct mb_priv *p, int err, uint64_t now)
{
	if (p->connected)
		modbus_close(p->ctx);
	p->connected = false;
	p->stats.connected = false;
	p->stats.last_errno = err;
	mb_backoff_failed(&p->backoff, now);
}

static bool try_connect(struct mb_priv *p, uint64_t now)
{
	if (p->connected)
		return true;
	if (!mb_backoff_may_try(&p->backoff, now))
		return false;
	p->stats.connects++;
	/* a TCP connect waits up to the response timeout: the whole timeout_ms */
	modbus_set_response_timeout(p->ctx, p->timeout_ms / 1000, (p->timeout_ms % 1000) * 1000);
	if (modbus_connect(p->ctx) == -1) {
		int err = errno;
		p->stats.connect_failures++;
		p->stats.last_errno = err;
		hal_fault(&p->flt, "modbus connect: %s", modbus_strerror(err));
		mb_backoff_failed(&p->backoff, now);
		return false;
	}
	p->connected = true;
	p->stats.connected = true;
	return true;
}

/* Exceptions and corrupted frames leave the link usable; anything else
 * (timeout, reset, refused) means reconnect, so a late reply to a timed-out
 * request can never be taken for the answer to the next one. */
static bool link_error(int err)
{
	return err < MODBUS_ENOBASE;
}

/* left_ms: what is left of the sample's budget; the transaction gets
 * timeout_ms or that, whichever is less. */
static void read_one(struct mb_priv *p, size_t i, uint64_t left_ms)
{
	const struct mb_reg *r = &p->map.reg[i];
	uint16_t regs[2] = { 0, 0 };
	int nw = (int)mb_type_words(r->type);
	uint64_t total_ms = left_ms < p->timeout_ms ? left_ms : p->timeout_ms;
	set_timeouts(p->ctx, p->rtu, total_ms * 1000, (unsigned)nw);
	int rc = r->function == MB_FN_INPUT
			 ? modbus_read_input_registers(p->ctx, r->address, nw, regs)
			 : modbus_read_registers(p->ctx, r->address, nw, regs);
	uint64_t t = now_ms(p);
	if (rc != nw) {
		int err = rc == -1 ? errno : EMBMDATA;
		p->stats.reads_failed++;
		p->stats.last_errno = err;
		hal_fault(&p->flt, "0x%04x %s: %s", r->address, reg_name(r), modbus_strerror(err));
		if (link_error(err))
			link_down(p, err, t);
		else if (err == EMBBADCRC || err == EMBBADDATA || err == EMBBADSLAVE)
			modbus_flush(p->ctx);
		return;
	}
	p->stats.reads_ok++;
	double v;
	int crc = mb_convert(r, mb_decode(regs, r->type, r->order), &v);
	mb_backoff_ok(&p->backoff); /* the link works, whatever the value */
	if (crc == 0) {
		mb_held_good(&p->held[i], v, t);
	} else {
		p->stats.rejected++;
		mb_held_reject(&p->held[i]);
		if (crc == -EDOM)
			hal_fault(&p->flt, "0x%04x %s: %g rejected", r->address, reg_name(r), v);
		else
			hal_fault(&p->flt, "0x%04x %s: %g out of [%g, %g]", r->address, reg_name(r), v,
				  r->min, r->max);
	}
}

static void poll_meter(struct mb_priv *p)
{
	uint64_t start = govd_mono_ms();
	if (!try_connect(p, now_ms(p)))
		return;
	size_t n = p->map.n;
	for (size_t k = 0; k < n && p->connected; k++) {
		size_t i = (p->next_reg + k) % n;
		uint64_t spent = govd_mono_ms() - start;
		if (spent >= p->budget_ms) {
			p->stats.budget_skips += n - k;
			p->next_reg = i;
			return;
		}
		read_one(p, i, p->budget_ms - spent);
	}
	p->next_reg = 0;
}

static void fill_value(struct hal_value *out, const struct mb_held *h, bool valid, double scale)
{
	out->t_ms = h->t_ms;
	out->valid = valid;
	out->v = h->have ? (int64_t)llround(h->v * scale) : 0;
}

static int mb_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct mb_priv *p = dev->priv;
	memset(out, 0, sizeof(*out));
	uint64_t now = now_ms(p);
	if (!p->polled || now - p->last_poll_ms >= p->poll_ms) {
		poll_meter(p);
		p->last_poll_ms = now;
		p->polled = true;
	}
	now = now_ms(p);
	out->t_ms = now;
	hal_faults_put(&p->flt, out);
	for (size_t i = 0; i < p->map.n; i++) {
		const struct mb_reg *r = &p->map.reg[i];
		const struct mb_held *h = &p->held[i];
		bool valid = mb_held_valid(h, now, p->max_age_ms);
		int rail = r->rail >= 0 ? r->rail : p->default_rail;
		if (r->quantity == MB_Q_POWER_W)
			fill_value(&out->power_mw[rail], h, valid, 1e3);
		else if (r->quantity == MB_Q_ENERGY_KWH)
			fill_value(&out->energy_mj[rail], h, valid, 3.6e9);
	}
	return 0;
}

static int mb_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	struct mb_priv *p = dev->priv;
	memset(out, 0, sizeof(*out)); /* a meter: nothing settable */
	snprintf(out->model, sizeof(out->model), "%s", p->map.model);
	snprintf(out->driver_version, sizeof(out->driver_version), "libmodbus %s",
		 LIBMODBUS_VERSION_STRING);
	return 0;
}

static void mb_close(struct hal_dev *dev)
{
	struct mb_priv *p = dev->priv;
	if (!p)
		return;
	if (p->connected)
		modbus_close(p->ctx);
	modbus_free(p->ctx);
	free(p);
	dev->priv = NULL;
}

static int mb_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	static const char *const keys[] = { "transport", "host", "port", "unit_id", "device",
					    "baud", "parity", "data_bits", "stop_bits", "map",
					    "rail", "timeout_ms", "max_age_ms", "poll_ms",
					    "budget_ms", "backoff_min_ms", "backoff_max_ms", NULL };
	struct bopts o;
	bopts_init(&o, cfg, diags, "modbus");
	bopts_check_keys(&o, keys);
	int tr = TR_TCP, parity = 1, rail = HAL_RAIL_HOST;
	uint32_t port, unit, baud, dbits, sbits, timeout_ms, max_age, poll, budget, bmin, bmax;
	bopts_enum(&o, "transport", transport_names, TR_TCP, &tr);
	bopts_enum(&o, "rail", mb_rail_names, HAL_RAIL_HOST, &rail);
	bopts_u32(&o, "port", 1, 65535, 502, &port);
	/* 0 is broadcast (no reply); TCP gateways also answer 255. */
	bopts_u32(&o, "unit_id", 1, 255, 1, &unit);
	bopts_u32(&o, "baud", 300, 4000000, 9600, &baud);
	bopts_enum(&o, "parity", parity_names, 1, &parity); /* Modbus serial default: even */
	bopts_u32(&o, "data_bits", 5, 8, 8, &dbits);
	bopts_u32(&o, "stop_bits", 1, 2, 1, &sbits);
	bopts_u32(&o, "timeout_ms", 1, 60000, 200, &timeout_ms);
	bopts_u32(&o, "max_age_ms", 0, 3600000, 1000, &max_age);
	bopts_u32(&o, "poll_ms", 0, 3600000, 0, &poll);
	bopts_u32(&o, "budget_ms", 1, 60000, timeout_ms, &budget);
	bopts_u32(&o, "backoff_min_ms", 1, 600000, 100, &bmin);
	bopts_u32(&o, "backoff_max_ms", 1, 600000, bmin > 5000 ? bmin : 5000, &bmax);
	const char *host = bopts_str(&o, "host", NULL);
	const char *device = bopts_str(&o, "device", NULL);
	const char *map_path = bopts_str(&o, "map", NULL);
	if (!map_path || !map_path[0])
		bopts_error(&o, "map", "missing",
			    "option 'map' (register map YAML, e.g. configs/meters/eastron-sdm630.yaml) "
			    "is required");
	if (tr == TR_TCP && (!host || !host[0]))
		bopts_error(&o, "host", "missing", "transport tcp needs option 'host'");
	if (tr == TR_RTU && (!device || !device[0]))
		bopts_error(&o, "device", "missing",
			    "transport rtu needs option 'device' (e.g. /dev/ttyUSB0)");
	if (tr == TR_TCP && device)
		bopts_error(&o, "device", "not-for-transport", "'device' is for transport rtu");
	if (tr == TR_RTU && (host || bopts_has(&o, "port")))
		bopts_error(&o, host ? "host" : "port", "not-for-transport",
			    "'host' and 'port' are for transport tcp");
	if (bmax < bmin)
		bopts_error(&o, "backoff_max_ms", "range", "backoff_max_ms (%u) is below "
			    "backoff_min_ms (%u)", bmax, bmin);
	if (o.errors)
		return -EINVAL;

	struct mb_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	int rc = mb_regmap_load(&p->map, map_path, diags);
	if (rc)
		goto free_priv;
	p->timeout_ms = timeout_ms;
	p->max_age_ms = max_age;
	p->poll_ms = poll;
	p->budget_ms = budget;
	p->default_rail = rail;
	p->clock = cfg->clock;
	mb_backoff_init(&p->backoff, bmin, bmax);
	if (tr == TR_TCP) {
		char svc[8];
		snprintf(svc, sizeof(svc), "%u", port);
		p->ctx = modbus_new_tcp_pi(host, svc);
		snprintf(p->desc, sizeof(p->desc), "tcp %s:%u unit %u", host, port, unit);
	} else {
		p->ctx = modbus_new_rtu(device, (int)baud, parity_chars[parity], (int)dbits,
					(int)sbits);
		snprintf(p->desc, sizeof(p->desc), "rtu %s %u %u%c%u unit %u", device, baud, dbits,
			 parity_chars[parity], sbits, unit);
	}
	if (!p->ctx) {
		rc = errno ? -errno : -ENOMEM;
		bopts_error(&o, tr == TR_TCP ? "host" : "device", "modbus",
			    "cannot set up %s: %s", p->desc, modbus_strerror(errno));
		goto free_priv;
	}
	if (modbus_set_slave(p->ctx, (int)unit) == -1) {
		rc = -EINVAL;
		bopts_error(&o, "unit_id", "range", "libmodbus refuses unit id %u for %s: %s", unit,
			    transport_names[tr], modbus_strerror(errno));
		goto free_ctx;
	}
	p->rtu = tr == TR_RTU;
	dev->priv = p;
	/* A meter that is down at start is not a config error: samples say
	 * invalid and the backoff keeps trying. */
	if (!try_connect(p, now_ms(p)))
		bopts_warning(&o, "", "unreachable", "meter %s not reachable yet (%s); will retry",
			      p->desc, modbus_strerror(p->stats.last_errno));
	return 0;

free_ctx:
	modbus_free(p->ctx);
free_priv:
	free(p);
	return rc;
}

int hal_modbus_aux(struct hal_dev *dev, enum mb_quantity q, struct hal_value *out)
{
	if (!dev || dev->ops != &hal_modbus_ops || !dev->priv)
		return -EINVAL;
	struct mb_priv *p = dev->priv;
	for (size_t i = 0; i < p->map.n; i++) {
		if (p->map.reg[i].quantity != q)
			continue;
		fill_value(out, &p->held[i], mb_held_valid(&p->held[i], now_ms(p), p->max_age_ms),
			   1e3);
		return 0;
	}
	return -ENOENT;
}

int hal_modbus_stats(struct hal_dev *dev, struct hal_modbus_stats *out)
{
	if (!dev || dev->ops != &hal_modbus_ops || !dev->priv)
		return -EINVAL;
	const struct mb_priv *p = dev->priv;
	*out = p->stats;
	return 0;
}

const struct hal_ops hal_modbus_ops = {
	.name = "modbus",
	.open = mb_open,
	.close = mb_close,
	.get_limits = mb_get_limits,
	.sample = mb_sample,
};

#endif /* GOVD_WITH_MODBUS */
