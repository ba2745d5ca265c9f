/* Pure parts of the modbus backend; see modbus_regmap.h. */
#include "hal/modbus_regmap.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ycfg.h"

const char *const mb_type_names[] = { "int16", "uint16", "int32", "uint32", "float32", NULL };
const char *const mb_order_names[] = { "ABCD", "CDAB", "BADC", "DCBA", NULL };
const char *const mb_function_names[] = { "holding", "input", NULL };
const char *const mb_quantity_names[] = { "power_w", "energy_kwh", "voltage_v", "current_a",
					  "frequency_hz", NULL };
const char *const mb_rail_names[] = { "accel", "memory", "host", NULL };

/* Units a quantity may be given in, with the factor to its base unit. */
struct unit_def {
	const char *name;
	double to_base;
};
struct quantity_def {
	const char *base_unit;
	struct unit_def units[4];
	double min, max; /* default plausible range, base unit */
};
/* Default ranges reject what no single meter reports: a megawatt on one feed,
 * negative power or energy (export is not something a governor consumes). */
static const struct quantity_def qdefs[MB_Q_N] = {
	[MB_Q_POWER_W] = { "W", { { "W", 1 }, { "kW", 1e3 }, { "mW", 1e-3 }, { NULL, 0 } }, 0, 1e6 },
	[MB_Q_ENERGY_KWH] = { "kWh", { { "kWh", 1 }, { "Wh", 1e-3 }, { "MWh", 1e3 }, { NULL, 0 } },
			      0, 1e9 },
	[MB_Q_VOLTAGE_V] = { "V", { { "V", 1 }, { "mV", 1e-3 }, { "kV", 1e3 }, { NULL, 0 } }, 0, 1e4 },
	[MB_Q_CURRENT_A] = { "A", { { "A", 1 }, { "mA", 1e-3 }, { "kA", 1e3 }, { NULL, 0 } }, 0, 1e5 },
	[MB_Q_FREQUENCY_HZ] = { "Hz", { { "Hz", 1 }, { NULL, 0 } }, 0, 1e3 },
};

unsigned mb_type_words(enum mb_type t)
{
	return (t == MB_INT16 || t == MB_UINT16) ? 1 : 2;
}

/* Wire bytes in register order -> value bytes A..D (A most significant). */
static void to_abcd(const uint16_t *regs, unsigned words, enum mb_word_order o, uint8_t *v)
{
	uint8_t w[4] = { 0 };
	for (unsigned i = 0; i < words; i++) {
		w[2 * i] = (uint8_t)(regs[i] >> 8);
		w[2 * i + 1] = (uint8_t)(regs[i] & 0xff);
	}
	if (words == 1) {
		bool swap = (o == MB_BADC || o == MB_DCBA);
		v[0] = swap ? w[1] : w[0];
		v[1] = swap ? w[0] : w[1];
		return;
	}
	/* Position of A, B, C, D in the wire bytes per order. */
	static const uint8_t pos[MB_ORDER_N][4] = {
		[MB_ABCD] = { 0, 1, 2, 3 },
		[MB_CDAB] = { 2, 3, 0, 1 },
		[MB_BADC] = { 1, 0, 3, 2 },
		[MB_DCBA] = { 3, 2, 1, 0 },
	};
	for (int i = 0; i < 4; i++)
		v[i] = w[pos[o][i]];
}

static void from_abcd(const uint8_t *v, unsigned words, enum mb_word_order o, uint16_t *regs)
{
	uint8_t w[4];
	if (words == 1) {
		bool swap = (o == MB_BADC || o == MB_DCBA);
		w[0] = swap ? v[1] : v[0];
		w[1] = swap ? v[0] : v[1];
	} else {
		static const uint8_t pos[MB_ORDER_N][4] = {
			[MB_ABCD] = { 0, 1, 2, 3 },
			[MB_CDAB] = { 2, 3, 0, 1 },
			[MB_BADC] = { 1, 0, 3, 2 },
			[MB_DCBA] = { 3, 2, 1, 0 },
		};
		for (int i = 0; i < 4; i++)
			w[pos[o][i]] = v[i];
	}
	for (unsigned i = 0; i < words; i++)
		regs[i] = (uint16_t)((w[2 * i] << 8) | w[2 * i + 1]);
}

double mb_decode(const uint16_t *regs, enum mb_type t, enum mb_word_order o)
{
	uint8_t v[4];
	unsigned words = mb_type_words(t);
	to_abcd(regs, words, o, v);
	uint16_t u16 = (uint16_t)((v[0] << 8) | v[1]);
	uint32_t u32 = ((uint32_t)v[0] << 24) | ((uint32_t)v[1] << 16) | ((uint32_t)v[2] << 8) | v[3];
	switch (t) {
	case MB_INT16:
		return (double)(int16_t)u16;
	case MB_UINT16:
		return (double)u16;
	case MB_INT32:
		return (double)(int32_t)u32;
	case MB_UINT32:
		return (double)u32;
	case MB_FLOAT32: {
		float f;
		memcpy(&f, &u32, sizeof(f)); /* IEEE 754 binary32 on every target we build */
		return (double)f;
	}
	case MB_TYPE_N:
		break;
	}
	return NAN;
}

void mb_encode(double x, enum mb_type t, enum mb_word_order o, uint16_t *regs)
{
	uint32_t u32 = 0;
	switch (t) {
	case MB_INT16:
		u32 = (uint32_t)(uint16_t)(int16_t)lrint(x) << 16;
		break;
	case MB_UINT16:
		u32 = (uint32_t)(uint16_t)lrint(x) << 16;
		break;
	case MB_INT32:
		u32 = (uint32_t)(int32_t)llrint(x);
		break;
	case MB_UINT32:
		u32 = (uint32_t)llrint(x);
		break;
	case MB_FLOAT32: {
		float f = (float)x;
		memcpy(&u32, &f, sizeof(u32));
		break;
	}
	case MB_TYPE_N:
		break;
	}
	uint8_t v[4] = { (uint8_t)(u32 >> 24), (uint8_t)(u32 >> 16), (uint8_t)(u32 >> 8),
			 (uint8_t)u32 };
	from_abcd(v, mb_type_words(t), o, regs);
}

int mb_convert(const struct mb_reg *r, double raw, double *out)
{
	double v = (raw * r->scale + r->offset) * r->unit_to_base;
	*out = v;
	if (!isfinite(v))
		return -EDOM;
	if (v < r->min || v > r->max)
		return -ERANGE;
	return 0;
}

/* ---- YAML map ---------------------------------------------------------- */

struct loader {
	struct ycfg y;
	int errors;
};

static void count(struct loader *ld, int rc)
{
	if (rc)
		ld->errors++;
}

/* Register addresses are written as in the manuals: decimal or 0x hex. */
static int read_address(struct loader *ld, yaml_node_t *m, const char *path, int fn,
			uint16_t *out)
{
	char kp[160];
	ycfg_join(kp, sizeof(kp), path, "address");
	yaml_node_t *n = ycfg_get(&ld->y, m, "address");
	if (!n) {
		ycfg_error(&ld->y, m, kp, "missing", "required key 'address' is missing");
		return -EINVAL;
	}
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		ycfg_error(&ld->y, n, kp, "type",
			   "expected a plain register address (decimal or 0x hex)");
		return -EINVAL;
	}
	const char *s = (const char *)n->data.scalar.value;
	int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
	char *end;
	errno = 0;
	long v = strtol(s, &end, base);
	if (end == s || *end || errno || v < 0 || v > 0xffff) {
		ycfg_error(&ld->y, n, kp, "range",
			   "'%s' is not a register address; allowed 0..65535 or 0x0000..0xffff "
			   "(the protocol address, not the 3xxxx/4xxxx register number)",
			   s);
		return -EINVAL;
	}
	/* 30001.. and 40001.. are how manuals number input and holding registers. */
	long first = fn == MB_FN_INPUT ? 30001 : 40001;
	if (fn >= 0 && v >= first && v < first + 9999)
		ycfg_warning(&ld->y, n, kp, "register-number",
			     "%ld looks like a register number; the protocol address is 0x%04lx",
			     v, v - first);
	*out = (uint16_t)v;
	return 0;
}

static void load_entry(struct loader *ld, struct mb_regmap *m, yaml_node_t *e, const char *p)
{
	static const char *const keys[] = { "quantity", "rail", "address", "function", "type",
					    "word_order", "scale", "offset", "unit", "min", "max",
					    "name", NULL };
	if (!ycfg_is_map(&ld->y, e, p)) {
		ld->errors++;
		return;
	}
	ld->errors += ycfg_check_keys(&ld->y, e, p, keys);
	struct mb_reg r = { .rail = -1, .scale = 1, .offset = 0, .unit_to_base = 1,
			    .order = MB_ABCD, .line = (int)e->start_mark.line + 1 };
	int q = -1, fn = -1, ty = -1, ord = MB_ABCD, rail = -1;
	count(ld, ycfg_enum(&ld->y, e, p, "quantity", true, mb_quantity_names, &q));
	count(ld, ycfg_enum(&ld->y, e, p, "rail", false, mb_rail_names, &rail));
	count(ld, ycfg_enum(&ld->y, e, p, "function", true, mb_function_names, &fn));
	count(ld, read_address(ld, e, p, fn, &r.address));
	count(ld, ycfg_enum(&ld->y, e, p, "type", true, mb_type_names, &ty));
	count(ld, ycfg_enum(&ld->y, e, p, "word_order", false, mb_order_names, &ord));
	count(ld, ycfg_double(&ld->y, e, p, "scale", false, -1e12, 1e12, &r.scale));
	count(ld, ycfg_double(&ld->y, e, p, "offset", false, -1e12, 1e12, &r.offset));
	char name[32];
	count(ld, ycfg_string(&ld->y, e, p, "name", false, name, sizeof(name)));
	if (q < 0 || fn < 0 || ty < 0)
		return;
	r.quantity = (enum mb_quantity)q;
	r.function = (enum mb_function)fn;
	r.type = (enum mb_type)ty;
	r.order = (enum mb_word_order)ord;
	r.rail = rail;
	const struct quantity_def *qd = &qdefs[q];
	r.min = qd->min;
	r.max = qd->max;
	count(ld, ycfg_double(&ld->y, e, p, "min", false, -1e15, 1e15, &r.min));
	count(ld, ycfg_double(&ld->y, e, p, "max", false, -1e15, 1e15, &r.max));
	char kp[160];
	if (r.min >= r.max) {
		ycfg_error(&ld->y, ycfg_get(&ld->y, e, "max") ? ycfg_get(&ld->y, e, "max") : e,
			   ycfg_join(kp, sizeof(kp), p, "max"), "range",
			   "max (%g) must be above min (%g), both in %s", r.max, r.min,
			   qd->base_unit);
		ld->errors++;
	}
	if (r.scale == 0) {
		ycfg_error(&ld->y, ycfg_get(&ld->y, e, "scale"), ycfg_join(kp, sizeof(kp), p, "scale"),
			   "range", "scale 0 would turn every reading into the offset");
		ld->errors++;
	}
	snprintf(r.unit, sizeof(r.unit), "%s", qd->base_unit);
	if (ycfg_string(&ld->y, e, p, "unit", false, r.unit, sizeof(r.unit))) {
		ld->errors++;
	} else {
		bool found = false;
		char allowed[64] = "";
		for (size_t i = 0; qd->units[i].name; i++) {
			if (strcmp(qd->units[i].name, r.unit) == 0) {
				r.unit_to_base = qd->units[i].to_base;
				found = true;
			}
			size_t l = strlen(allowed);
			snprintf(allowed + l, sizeof(allowed) - l, "%s%s", i ? ", " : "",
				 qd->units[i].name);
		}
		if (!found) {
			ycfg_error(&ld->y, ycfg_get(&ld->y, e, "unit"),
				   ycfg_join(kp, sizeof(kp), p, "unit"), "enum",
				   "unit '%s' does not fit %s; allowed: %s", r.unit,
				   mb_quantity_names[q], allowed);
			ld->errors++;
		}
	}
	bool on_rail = (r.quantity == MB_Q_POWER_W || r.quantity == MB_Q_ENERGY_KWH);
	if (!on_rail && rail >= 0) {
		ycfg_error(&ld->y, ycfg_get(&ld->y, e, "rail"), ycfg_join(kp, sizeof(kp), p, "rail"),
			   "not-for-quantity", "'rail' only applies to power_w and energy_kwh");
		ld->errors++;
	}
	/* One source per (quantity, rail): two would race for the same sample field. */
	for (size_t i = 0; i < m->n; i++) {
		if (m->reg[i].quantity == r.quantity && m->reg[i].rail == r.rail) {
			ycfg_error(&ld->y, ycfg_get(&ld->y, e, "quantity"),
				   ycfg_join(kp, sizeof(kp), p, "quantity"), "duplicate",
				   "%s%s%s is already read at line %d", mb_quantity_names[q],
				   rail >= 0 ? " for rail " : "", rail >= 0 ? mb_rail_names[rail] : "",
				   m->reg[i].line);
			ld->errors++;
			return;
		}
	}
	if (m->n >= MB_MAX_REGS) {
		ycfg_error(&ld->y, e, p, "too-many", "at most %d registers per meter", MB_MAX_REGS);
		ld->errors++;
		return;
	}
	m->reg[m->n++] = r;
}

static int load_doc(struct loader *ld, struct mb_regmap *m)
{
	yaml_node_t *root = ycfg_root(&ld->y);
	if (!root) {
		ycfg_error(&ld->y, NULL, "", "empty", "empty register map; expected 'model' and 'registers'");
		return -EINVAL;
	}
	if (!ycfg_is_map(&ld->y, root, ""))
		return -EINVAL;
	static const char *const keys[] = { "model", "registers", "source", NULL };
	ld->errors += ycfg_check_keys(&ld->y, root, "", keys);
	count(ld, ycfg_string(&ld->y, root, "", "model", true, m->model, sizeof(m->model)));
	char src[512];
	count(ld, ycfg_string(&ld->y, root, "", "source", false, src, sizeof(src)));
	yaml_node_t *seq = ycfg_get(&ld->y, root, "registers");
	if (!seq) {
		ycfg_error(&ld->y, root, "registers", "missing", "required key 'registers' is missing");
		return -EINVAL;
	}
	if (!ycfg_is_seq(&ld->y, seq, "registers"))
		return -EINVAL;
	size_t n = ycfg_seq_len(seq);
	if (n == 0) {
		ycfg_error(&ld->y, seq, "registers", "empty", "a meter needs at least one register");
		ld->errors++;
	}
	for (size_t i = 0; i < n; i++) {
		char p[64];
		ycfg_index(p, sizeof(p), "registers", i);
		load_entry(ld, m, ycfg_seq_at(&ld->y, seq, i), p);
	}
	return ld->errors ? -EINVAL : 0;
}

int mb_regmap_load(struct mb_regmap *m, const char *path, struct diag_list *diags)
{
	struct loader ld = { .errors = 0 };
	memset(m, 0, sizeof(*m));
	int rc = ycfg_load_file(&ld.y, path, diags);
	if (rc == 0)
		rc = load_doc(&ld, m);
	ycfg_fini(&ld.y);
	return rc ? -EINVAL : 0;
}

int mb_regmap_load_string(struct mb_regmap *m, const char *name, const char *text,
			  struct diag_list *diags)
{
	struct loader ld = { .errors = 0 };
	memset(m, 0, sizeof(*m));
	int rc = ycfg_load_string(&ld.y, name, text, strlen(text), diags);
	if (rc == 0)
		rc = load_doc(&ld, m);
	ycfg_fini(&ld.y);
	return rc ? -EINVAL : 0;
}

/* ---- hold-last-good and backoff ---------------------------------------- */

void mb_held_good(struct mb_held *h, double v, uint64_t now_ms)
{
	h->v = v;
	h->t_ms = now_ms;
	h->have = true;
	h->rejected = false;
}

void mb_held_reject(struct mb_held *h)
{
	h->rejected = true;
}

bool mb_held_valid(const struct mb_held *h, uint64_t now_ms, uint32_t max_age_ms)
{
	if (!h->have || h->rejected)
		return false;
	return now_ms >= h->t_ms ? now_ms - h->t_ms <= max_age_ms : true;
}

void mb_backoff_init(struct mb_backoff *b, uint32_t min_ms, uint32_t max_ms)
{
	b->min_ms = min_ms;
	b->max_ms = max_ms < min_ms ? min_ms : max_ms;
	b->cur_ms = 0;
	b->next_ms = 0;
	b->failures = 0;
}

bool mb_backoff_may_try(const struct mb_backoff *b, uint64_t now_ms)
{
	return now_ms >= b->next_ms;
}

void mb_backoff_failed(struct mb_backoff *b, uint64_t now_ms)
{
	if (b->cur_ms == 0)
		b->cur_ms = b->min_ms;
	else
		b->cur_ms = b->cur_ms > b->max_ms / 2 ? b->max_ms : b->cur_ms * 2;
	b->next_ms = now_ms + b->cur_ms;
	b->failures++;
}

void mb_backoff_ok(struct mb_backoff *b)
{
	b->cur_ms = 0;
	b->next_ms = 0;
	b->failures = 0;
}
