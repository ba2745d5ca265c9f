/* Unit tests for the modbus meter backend: pure decoding for every type and
 * word order (known byte patterns, cross-checked with libmodbus's own float
 * getters), unit conversion and plausibility, hold-last-good ageing,
 * reconnect backoff, register-map loading with file:line:col errors, the
 * shipped presets, and the backend's option errors, unreachable meter and
 * empty limits. Live reads against a real server: tests/integration/. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "common/diag.h"
#include "hal/hal_modbus.h"
#include "hal/modbus_regmap.h"

#ifdef GOVD_WITH_MODBUS
#include <modbus.h>
#endif

static char fmt_buf[2048];

static const char *diag_str(const struct diag_list *l, size_t i)
{
	assert_true(i < l->n);
	diag_format(&l->v[i], fmt_buf, sizeof(fmt_buf));
	return fmt_buf;
}

/* Does any diag contain all of the given substrings? */
static bool has_diag(const struct diag_list *l, const char *a, const char *b)
{
	for (size_t i = 0; i < l->n; i++) {
		diag_format(&l->v[i], fmt_buf, sizeof(fmt_buf));
		if (strstr(fmt_buf, a) && (!b || strstr(fmt_buf, b)))
			return true;
	}
	return false;
}

static void dump(const struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		printf("  diag: %s\n", diag_str(l, i));
}

/* ---- decoding ---------------------------------------------------------- */

struct pattern {
	enum mb_type type;
	enum mb_word_order order;
	uint16_t regs[2];
	double want;
};

/* 1234.5f = 0x449A5000, -123456789 = 0xF8A432EB, 0xDEADBEEF, -123 = 0xFF85. */
static const struct pattern patterns[] = {
	{ MB_FLOAT32, MB_ABCD, { 0x449A, 0x5000 }, 1234.5 },
	{ MB_FLOAT32, MB_CDAB, { 0x5000, 0x449A }, 1234.5 },
	{ MB_FLOAT32, MB_BADC, { 0x9A44, 0x0050 }, 1234.5 },
	{ MB_FLOAT32, MB_DCBA, { 0x0050, 0x9A44 }, 1234.5 },
	{ MB_INT32, MB_ABCD, { 0xF8A4, 0x32EB }, -123456789 },
	{ MB_INT32, MB_CDAB, { 0x32EB, 0xF8A4 }, -123456789 },
	{ MB_INT32, MB_BADC, { 0xA4F8, 0xEB32 }, -123456789 },
	{ MB_INT32, MB_DCBA, { 0xEB32, 0xA4F8 }, -123456789 },
	{ MB_UINT32, MB_ABCD, { 0xDEAD, 0xBEEF }, 3735928559.0 },
	{ MB_UINT32, MB_CDAB, { 0xBEEF, 0xDEAD }, 3735928559.0 },
	{ MB_UINT32, MB_BADC, { 0xADDE, 0xEFBE }, 3735928559.0 },
	{ MB_UINT32, MB_DCBA, { 0xEFBE, 0xADDE }, 3735928559.0 },
	{ MB_INT16, MB_ABCD, { 0xFF85, 0 }, -123 },
	{ MB_INT16, MB_CDAB, { 0xFF85, 0 }, -123 },
	{ MB_INT16, MB_BADC, { 0x85FF, 0 }, -123 },
	{ MB_INT16, MB_DCBA, { 0x85FF, 0 }, -123 },
	{ MB_UINT16, MB_ABCD, { 0xFF85, 0 }, 65413 },
	{ MB_UINT16, MB_CDAB, { 0xFF85, 0 }, 65413 },
	{ MB_UINT16, MB_BADC, { 0x85FF, 0 }, 65413 },
	{ MB_UINT16, MB_DCBA, { 0x85FF, 0 }, 65413 },
	/* SDM630 total system power of 230.0 W as the meter sends it. */
	{ MB_FLOAT32, MB_ABCD, { 0x4366, 0x0000 }, 230.0 },
};

static void test_decode_every_type_and_order(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		const struct pattern *p = &patterns[i];
		double got = mb_decode(p->regs, p->type, p->order);
		if (got != p->want)
			fail_msg("pattern %zu (%s %s): got %.17g want %.17g", i,
				 mb_type_names[p->type], mb_order_names[p->order], got, p->want);
		uint16_t enc[2] = { 0, 0 };
		mb_encode(p->want, p->type, p->order, enc);
		assert_int_equal(enc[0], p->regs[0]);
		if (mb_type_words(p->type) == 2)
			assert_int_equal(enc[1], p->regs[1]);
	}
}

static void test_decode_float_specials(void **state)
{
	(void)state;
	uint16_t nan_regs[2] = { 0x7FC0, 0x0000 }, inf_regs[2] = { 0x7F80, 0x0000 };
	uint16_t ninf_regs[2] = { 0xFF80, 0x0000 }, negz[2] = { 0x8000, 0x0000 };
	assert_true(isnan(mb_decode(nan_regs, MB_FLOAT32, MB_ABCD)));
	assert_true(isinf(mb_decode(inf_regs, MB_FLOAT32, MB_ABCD)));
	assert_true(mb_decode(ninf_regs, MB_FLOAT32, MB_ABCD) < 0);
	double z = mb_decode(negz, MB_FLOAT32, MB_ABCD);
	assert_true(z == 0 && signbit(z));
	/* NaN word-swapped is not NaN read big-endian: order matters. */
	uint16_t swapped[2] = { 0x0000, 0x7FC0 };
	assert_true(isnan(mb_decode(swapped, MB_FLOAT32, MB_CDAB)));
	assert_false(isnan(mb_decode(swapped, MB_FLOAT32, MB_ABCD)));
}

static void test_decode_matches_libmodbus(void **state)
{
	(void)state;
#ifdef GOVD_WITH_MODBUS
	/* libmodbus >= 3.1.6 names orders the same way (A = most significant). */
	static const float values[] = { 1234.5f, -0.15625f, 3.0e-20f, 65504.0f, 230.1f };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint16_t r[2];
		mb_encode(values[i], MB_FLOAT32, MB_ABCD, r);
		assert_true(modbus_get_float_abcd(r) == values[i]);
		mb_encode(values[i], MB_FLOAT32, MB_CDAB, r);
		assert_true(modbus_get_float_cdab(r) == values[i]);
		mb_encode(values[i], MB_FLOAT32, MB_BADC, r);
		assert_true(modbus_get_float_badc(r) == values[i]);
		mb_encode(values[i], MB_FLOAT32, MB_DCBA, r);
		assert_true(modbus_get_float_dcba(r) == values[i]);
	}
#else
	TEST_SKIP("modbus backend not compiled in (GOVD_WITH_MODBUS=OFF)");
#endif
}

/* ---- conversion and plausibility ---------------------------------------- */

static struct mb_reg reg_of(enum mb_quantity q, double scale, double offset, double to_base,
			    double min, double max)
{
	struct mb_reg r = { .quantity = q, .rail = -1, .type = MB_FLOAT32, .scale = scale,
			    .offset = offset, .unit_to_base = to_base, .min = min, .max = max };
	return r;
}

static void test_convert_scale_offset_unit(void **state)
{
	(void)state;
	double v;
	struct mb_reg kw = reg_of(MB_Q_POWER_W, 0.1, 0, 1000, 0, 1e6); /* raw 0.1 kW units */
	assert_int_equal(mb_convert(&kw, 123, &v), 0);
	assert_true(fabs(v - 12300) < 1e-9);
	struct mb_reg off = reg_of(MB_Q_POWER_W, 2, -10, 1, 0, 1e6);
	assert_int_equal(mb_convert(&off, 60, &v), 0);
	assert_true(v == 110);
	struct mb_reg wh = reg_of(MB_Q_ENERGY_KWH, 1, 0, 1e-3, 0, 1e9);
	assert_int_equal(mb_convert(&wh, 2500, &v), 0);
	assert_true(fabs(v - 2.5) < 1e-12);
}

static void test_convert_rejects_garbage(void **state)
{
	(void)state;
	double v;
	struct mb_reg p = reg_of(MB_Q_POWER_W, 1, 0, 1, 0, 100000);
	assert_int_equal(mb_convert(&p, NAN, &v), -EDOM);
	assert_int_equal(mb_convert(&p, INFINITY, &v), -EDOM);
	assert_int_equal(mb_convert(&p, -INFINITY, &v), -EDOM);
	assert_int_equal(mb_convert(&p, -0.5, &v), -ERANGE);  /* negative power */
	assert_int_equal(mb_convert(&p, 3.4e38, &v), -ERANGE); /* absurdly large */
	assert_int_equal(mb_convert(&p, 100000.5, &v), -ERANGE);
	assert_int_equal(mb_convert(&p, 0, &v), 0);
	assert_int_equal(mb_convert(&p, 100000, &v), 0);
	/* Scale can overflow a finite raw value into inf. */
	struct mb_reg big = reg_of(MB_Q_POWER_W, 1e300, 0, 1e300, 0, 1e6);
	assert_int_equal(mb_convert(&big, 1e10, &v), -EDOM);
}

/* ---- hold-last-good and backoff ------------------------------------------ */

static void test_held_ages_into_invalid_keeping_its_time(void **state)
{
	(void)state;
	struct mb_held h = { 0 };
	assert_false(mb_held_valid(&h, 0, 1000)); /* never read */
	mb_held_good(&h, 500, 10000);
	assert_true(mb_held_valid(&h, 10000, 1000));
	assert_true(mb_held_valid(&h, 11000, 1000));
	assert_false(mb_held_valid(&h, 11001, 1000));
	assert_int_equal(h.t_ms, 10000); /* the old timestamp stays */
	mb_held_good(&h, 510, 12000);
	assert_true(mb_held_valid(&h, 12000, 0));
	assert_false(mb_held_valid(&h, 12001, 0)); /* max_age 0: fresh reads only */
	mb_held_reject(&h);
	assert_false(mb_held_valid(&h, 12000, 1000)); /* garbage is not hidden by the old value */
	assert_true(h.v == 510 && h.t_ms == 12000);
	mb_held_good(&h, 520, 12100);
	assert_true(mb_held_valid(&h, 12100, 1000));
}

static void test_backoff_doubles_caps_and_resets(void **state)
{
	(void)state;
	struct mb_backoff b;
	mb_backoff_init(&b, 100, 1000);
	assert_true(mb_backoff_may_try(&b, 0));
	uint64_t now = 5000;
	static const uint32_t want[] = { 100, 200, 400, 800, 1000, 1000 };
	for (size_t i = 0; i < 6; i++) {
		mb_backoff_failed(&b, now);
		assert_int_equal(b.cur_ms, want[i]);
		assert_false(mb_backoff_may_try(&b, now));
		assert_false(mb_backoff_may_try(&b, now + want[i] - 1));
		assert_true(mb_backoff_may_try(&b, now + want[i]));
		now += want[i];
	}
	assert_int_equal(b.failures, 6);
	mb_backoff_ok(&b);
	assert_true(mb_backoff_may_try(&b, now));
	mb_backoff_failed(&b, now);
	assert_int_equal(b.cur_ms, 100);
}

/* ---- register maps ----------------------------------------------------- */

static void test_presets_load(void **state)
{
	(void)state;
	struct diag_list dl = { 0 };
	struct mb_regmap m;
	int rc = mb_regmap_load(&m, "configs/meters/eastron-sdm630.yaml", &dl);
	dump(&dl);
	assert_int_equal(rc, 0);
	assert_int_equal(dl.n, 0);
	assert_string_equal(m.model, "eastron-sdm630");
	bool power = false, energy = false;
	for (size_t i = 0; i < m.n; i++) {
		const struct mb_reg *r = &m.reg[i];
		assert_int_equal(r->function, MB_FN_INPUT);
		assert_int_equal(r->type, MB_FLOAT32);
		assert_int_equal(r->order, MB_ABCD);
		if (r->quantity == MB_Q_POWER_W) {
			power = true;
			assert_int_equal(r->address, 0x0034);
			assert_true(r->min == 0);
		}
		if (r->quantity == MB_Q_ENERGY_KWH) {
			energy = true;
			assert_int_equal(r->address, 0x0048);
		}
	}
	assert_true(power && energy);

	rc = mb_regmap_load(&m, "configs/meters/eastron-sdm120.yaml", &dl);
	dump(&dl);
	assert_int_equal(rc, 0);
	assert_int_equal(dl.n, 0);
	power = energy = false;
	for (size_t i = 0; i < m.n; i++) {
		if (m.reg[i].quantity == MB_Q_POWER_W) {
			power = true;
			assert_int_equal(m.reg[i].address, 0x000C);
		}
		if (m.reg[i].quantity == MB_Q_ENERGY_KWH) {
			energy = true;
			assert_int_equal(m.reg[i].address, 0x0156);
		}
	}
	assert_true(power && energy);
	diag_clear(&dl);
}

static void test_map_fields_and_units(void **state)
{
	(void)state;
	struct diag_list dl = { 0 };
	struct mb_regmap m;
	const char *text = "model: test\n"
			   "registers:\n"
			   "  - quantity: power_w\n"
			   "    rail: accel\n"
			   "    address: 100\n"
			   "    function: holding\n"
			   "    type: int32\n"
			   "    word_order: CDAB\n"
			   "    scale: 0.01\n"
			   "    offset: 1.5\n"
			   "    unit: kW\n"
			   "  - quantity: power_w\n"
			   "    rail: host\n"
			   "    address: 0x10\n"
			   "    function: input\n"
			   "    type: uint16\n";
	int rc = mb_regmap_load_string(&m, "map.yaml", text, &dl);
	dump(&dl);
	assert_int_equal(rc, 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.reg[0].rail, HAL_RAIL_ACCEL);
	assert_int_equal(m.reg[0].address, 100);
	assert_int_equal(m.reg[0].function, MB_FN_HOLDING);
	assert_int_equal(m.reg[0].type, MB_INT32);
	assert_int_equal(m.reg[0].order, MB_CDAB);
	assert_true(m.reg[0].scale == 0.01 && m.reg[0].offset == 1.5);
	assert_true(m.reg[0].unit_to_base == 1000);
	assert_int_equal(m.reg[1].address, 0x10);
	assert_int_equal(m.reg[1].order, MB_ABCD); /* default */
	assert_string_equal(m.reg[1].unit, "W");
	diag_clear(&dl);
}

struct bad_map {
	const char *text;
	const char *want1, *want2; /* substrings of one diag */
};

static void test_map_errors_have_positions(void **state)
{
	(void)state;
	static const char head[] = "model: t\nregisters:\n  - quantity: power_w\n";
	static const struct bad_map cases[] = {
		{ "    address: 0x34\n    function: input\n    type: float64\n",
		  "map.yaml:6:11: error: registers[0].type", "float32" },
		{ "    address: 0x34\n    function: input\n    type: float32\n    unit: kWh\n",
		  "map.yaml:7:11: error: registers[0].unit", "allowed: W, kW, mW" },
		{ "    address: 70000\n    function: input\n    type: float32\n",
		  "map.yaml:4:14: error: registers[0].address", "0..65535" },
		{ "    address: \"0x34\"\n    function: input\n    type: float32\n",
		  "registers[0].address", "plain" },
		{ "    function: input\n    type: float32\n",
		  "registers[0].address", "missing" },
		{ "    address: 1\n    function: input\n    type: float32\n    colour: red\n",
		  "map.yaml:7:5: error: registers[0].colour", "allowed" },
		{ "    address: 1\n    function: input\n    type: float32\n    min: 10\n    max: 5\n",
		  "registers[0].max", "above min" },
		{ "    address: 1\n    function: input\n    type: float32\n"
		  "  - quantity: power_w\n    address: 3\n    function: input\n    type: float32\n",
		  "registers[1].quantity", "already read at line 3" },
		{ "    address: 1\n    function: input\n    type: float32\n"
		  "  - quantity: voltage_v\n    rail: host\n    address: 3\n    function: input\n"
		  "    type: float32\n",
		  "registers[1].rail", "only applies" },
		{ "    address: 1\n    function: input\n    type: float32\n    scale: 0\n",
		  "registers[0].scale", "offset" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), "%s%s", head, cases[i].text);
		struct diag_list dl = { 0 };
		struct mb_regmap m;
		int rc = mb_regmap_load_string(&m, "map.yaml", text, &dl);
		if (rc != -EINVAL || !has_diag(&dl, cases[i].want1, cases[i].want2)) {
			dump(&dl);
			fail_msg("case %zu: rc %d, wanted a diag with '%s' and '%s'", i, rc,
				 cases[i].want1, cases[i].want2);
		}
		diag_clear(&dl);
	}
	/* Missing file names it. */
	struct diag_list dl = { 0 };
	struct mb_regmap m;
	assert_int_equal(mb_regmap_load(&m, "configs/meters/no-such-meter.yaml", &dl), -EINVAL);
	assert_true(has_diag(&dl, "no-such-meter.yaml", NULL));
	diag_clear(&dl);
}

static void test_map_register_number_warns(void **state)
{
	(void)state;
	struct diag_list dl = { 0 };
	struct mb_regmap m;
	const char *text = "model: t\nregisters:\n  - quantity: power_w\n    address: 30053\n"
			   "    function: input\n    type: float32\n";
	assert_int_equal(mb_regmap_load_string(&m, "map.yaml", text, &dl), 0);
	assert_int_equal(diag_count(&dl, DIAG_WARNING), 1);
	assert_true(has_diag(&dl, "map.yaml:4:14: warning: registers[0].address", "0x0034"));
	diag_clear(&dl);
}

/* ---- backend ------------------------------------------------------------ */

#ifdef GOVD_WITH_MODBUS
static int open_with(struct hal_dev *dev, const char *const *kv, size_t n, struct diag_list *dl)
{
	const char *keys[16], *vals[16];
	for (size_t i = 0; i < n; i++) {
		keys[i] = kv[2 * i];
		vals[i] = kv[2 * i + 1];
	}
	struct hal_dev_cfg cfg = { .name = "meter0", .backend = "modbus", .n_opts = n,
				   .keys = keys, .values = vals };
	return hal_open(dev, &cfg, dl); /* through the registry */
}
#endif

static void test_backend_option_errors(void **state)
{
	(void)state;
#ifdef GOVD_WITH_MODBUS
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const no_host[] = { "map", "configs/meters/eastron-sdm630.yaml" };
	assert_int_equal(open_with(&dev, no_host, 1, &dl), -EINVAL);
	assert_true(has_diag(&dl, "meter0: error: options.host", "transport tcp"));
	diag_clear(&dl);

	static const char *const bad[] = { "host", "127.0.0.1", "transport", "udp", "timeout_ms",
					   "0", "bogus", "1", "port", "70000" };
	assert_int_equal(open_with(&dev, bad, 5, &dl), -EINVAL);
	dump(&dl);
	assert_true(has_diag(&dl, "options.transport", "tcp, rtu"));
	assert_true(has_diag(&dl, "options.timeout_ms", "out of range"));
	assert_true(has_diag(&dl, "options.bogus", "allowed"));
	assert_true(has_diag(&dl, "options.port", "1..65535"));
	assert_true(has_diag(&dl, "options.map", "required"));
	diag_clear(&dl);

	static const char *const rtu[] = { "transport", "rtu", "host", "10.0.0.1", "map", "x.yaml" };
	assert_int_equal(open_with(&dev, rtu, 3, &dl), -EINVAL);
	assert_true(has_diag(&dl, "options.device", "rtu"));
	assert_true(has_diag(&dl, "options.host", "tcp"));
	diag_clear(&dl);

	static const char *const bad_map[] = { "host", "127.0.0.1", "map", "tests/no-map.yaml" };
	assert_int_equal(open_with(&dev, bad_map, 2, &dl), -EINVAL);
	assert_true(has_diag(&dl, "tests/no-map.yaml", NULL));
	diag_clear(&dl);
#else
	TEST_SKIP("modbus backend not compiled in (GOVD_WITH_MODBUS=OFF)");
#endif
}

static void test_backend_unreachable_meter_is_invalid_not_zero(void **state)
{
	(void)state;
#ifdef GOVD_WITH_MODBUS
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	/* Port 1 on loopback: refused at once. A long backoff keeps the count exact. */
	static const char *const kv[] = { "host", "127.0.0.1", "port", "1", "map",
					   "configs/meters/eastron-sdm630.yaml", "backoff_min_ms",
					   "600000", "timeout_ms", "100" };
	assert_int_equal(open_with(&dev, kv, 5, &dl), 0);
	assert_int_equal(diag_count(&dl, DIAG_ERROR), 0);
	assert_true(has_diag(&dl, "warning", "not reachable"));
	for (int i = 0; i < 10; i++) {
		struct hal_sample s;
		assert_int_equal(hal_modbus_ops.sample(&dev, &s), 0);
		assert_true(s.t_ms > 0);
		for (int r = 0; r < HAL_RAIL_N; r++) {
			assert_false(s.power_mw[r].valid);
			assert_false(s.energy_mj[r].valid);
		}
		assert_false(s.temp_mc[HAL_TEMP_JUNCTION].valid);
		assert_false(s.power_limit_mw.valid);
	}
	struct hal_modbus_stats st;
	assert_int_equal(hal_modbus_stats(&dev, &st), 0);
	assert_int_equal(st.connects, 1); /* no reconnect storm */
	assert_int_equal(st.connect_failures, 1);
	assert_false(st.connected);
	assert_int_equal(st.last_errno, ECONNREFUSED);
	struct hal_sample s;
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_int_equal(s.fault_count, 1); /* the one failed connect, named */
	assert_non_null(strstr(s.fault, "Connection refused"));
	struct hal_value v;
	assert_int_equal(hal_modbus_aux(&dev, MB_Q_VOLTAGE_V, &v), 0);
	assert_false(v.valid);
	hal_close(&dev);
	assert_null(dev.priv);
	diag_clear(&dl);
#else
	TEST_SKIP("modbus backend not compiled in (GOVD_WITH_MODBUS=OFF)");
#endif
}

static void test_backend_is_sample_only(void **state)
{
	(void)state;
#ifdef GOVD_WITH_MODBUS
	const struct hal_ops *o = &hal_modbus_ops;
	assert_string_equal(o->name, "modbus");
	assert_null(o->set_clock_range);
	assert_null(o->set_power_limit);
	assert_null(o->reset_clocks);
	assert_null(o->set_precision);
	assert_null(o->set_brake);
	assert_null(o->alert_fd);
	struct hal_dev dev;
	struct diag_list dl = { 0 };
	static const char *const kv[] = { "host", "127.0.0.1", "port", "1", "map",
					   "configs/meters/eastron-sdm120.yaml", "rail", "accel" };
	assert_int_equal(open_with(&dev, kv, 4, &dl), 0);
	struct hal_limits lim;
	assert_int_equal(o->get_limits(&dev, &lim), 0);
	assert_int_equal(lim.clk_max_khz, 0);
	assert_int_equal(lim.power_limit_max_mw, 0);
	assert_string_equal(lim.model, "eastron-sdm120");
	assert_non_null(strstr(lim.driver_version, "libmodbus"));
	assert_int_equal(hal_modbus_aux(&dev, MB_Q_ENERGY_KWH + 100, &(struct hal_value){ 0 }),
			 -ENOENT);
	o->close(&dev);
	diag_clear(&dl);
#else
	TEST_SKIP("modbus backend not compiled in (GOVD_WITH_MODBUS=OFF)");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_every_type_and_order),
		cmocka_unit_test(test_decode_float_specials),
		cmocka_unit_test(test_decode_matches_libmodbus),
		cmocka_unit_test(test_convert_scale_offset_unit),
		cmocka_unit_test(test_convert_rejects_garbage),
		cmocka_unit_test(test_held_ages_into_invalid_keeping_its_time),
		cmocka_unit_test(test_backoff_doubles_caps_and_resets),
		cmocka_unit_test(test_presets_load),
		cmocka_unit_test(test_map_fields_and_units),
		cmocka_unit_test(test_map_errors_have_positions),
		cmocka_unit_test(test_map_register_number_warns),
		cmocka_unit_test(test_backend_option_errors),
		cmocka_unit_test(test_backend_unreachable_meter_is_invalid_not_zero),
		cmocka_unit_test(test_backend_is_sample_only),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
