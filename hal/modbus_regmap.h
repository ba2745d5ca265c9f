/* Modbus power-meter register maps and the pure parts of the modbus backend:
 * register decoding (every type and word order), unit conversion, plausibility
 * checks, hold-last-good with a maximum age, and reconnect backoff. No I/O
 * except loading the YAML map; no libmodbus, so all of it is unit tested
 * whether or not the backend is compiled in. Format: docs/backends-modbus-gpio.md. */
#ifndef GOVD_HAL_MODBUS_REGMAP_H
#define GOVD_HAL_MODBUS_REGMAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "hal/hal.h"

#define MB_MAX_REGS 16

enum mb_type { MB_INT16, MB_UINT16, MB_INT32, MB_UINT32, MB_FLOAT32, MB_TYPE_N };
/* Byte order of a 32-bit value A (most significant) .. D across two registers,
 * each register as sent on the wire (high byte first): ABCD = big-endian,
 * CDAB = word-swapped, BADC = byte-swapped, DCBA = little-endian. For 16-bit
 * types only the byte order inside the register counts (BADC, DCBA swap). */
enum mb_word_order { MB_ABCD, MB_CDAB, MB_BADC, MB_DCBA, MB_ORDER_N };
enum mb_function { MB_FN_HOLDING, MB_FN_INPUT, MB_FN_N };
/* Quantities and their base units; power and energy go into hal_sample rails,
 * the others are auxiliary (read, checked, offered by hal_modbus_aux()). */
enum mb_quantity { MB_Q_POWER_W, MB_Q_ENERGY_KWH, MB_Q_VOLTAGE_V, MB_Q_CURRENT_A,
		   MB_Q_FREQUENCY_HZ, MB_Q_N };

extern const char *const mb_type_names[];     /* "int16", ... NULL-terminated */
extern const char *const mb_order_names[];    /* "ABCD", ... */
extern const char *const mb_function_names[]; /* "holding", "input" */
extern const char *const mb_quantity_names[]; /* "power_w", ... */
extern const char *const mb_rail_names[];     /* "accel", "memory", "host" */

struct mb_reg {
	enum mb_quantity quantity;
	int rail;              /* enum hal_rail; -1: the backend's `rail` option */
	uint16_t address;      /* protocol (0-based) address, as in "Start Address Hex" */
	enum mb_function function;
	enum mb_type type;
	enum mb_word_order order;
	double scale, offset;  /* value = raw * scale + offset, in `unit` */
	double unit_to_base;   /* e.g. kW -> W: 1000 */
	char unit[8];
	double min, max;       /* plausible range in the base unit */
	int line;              /* source line, for messages */
};

struct mb_regmap {
	char model[HAL_NAME_LEN];
	size_t n;
	struct mb_reg reg[MB_MAX_REGS];
};

/* Registers a type occupies (1 or 2). */
unsigned mb_type_words(enum mb_type t);
/* Decode regs[0..words) as read from the device into a number. Pure. */
double mb_decode(const uint16_t *regs, enum mb_type t, enum mb_word_order o);
/* Inverse, for tests and simulators: encode v (rounded for integers). */
void mb_encode(double v, enum mb_type t, enum mb_word_order o, uint16_t *regs);

/* raw -> base unit, then checked: 0, -EDOM for NaN/inf, -ERANGE outside
 * [min, max] (negative power, absurdly large values). *out is set either way. */
int mb_convert(const struct mb_reg *r, double raw, double *out);

/* Load a map; every problem becomes a diag with file:line:col. Entries
 * without `rail` get rail -1 (the backend's default). 0 or -EINVAL. */
int mb_regmap_load(struct mb_regmap *m, const char *path, struct diag_list *diags);
int mb_regmap_load_string(struct mb_regmap *m, const char *name, const char *text,
			  struct diag_list *diags);

/* Last good reading of one quantity; valid while younger than max_age_ms and
 * the latest value read was not rejected. */
struct mb_held {
	double v;        /* base unit */
	uint64_t t_ms;   /* when it was read; 0: never */
	bool have;
	bool rejected;   /* the newest reading was garbage */
};
void mb_held_good(struct mb_held *h, double v, uint64_t now_ms);
void mb_held_reject(struct mb_held *h);
bool mb_held_valid(const struct mb_held *h, uint64_t now_ms, uint32_t max_age_ms);

/* Reconnect pacing: at most one attempt when may_try says so; each failure
 * doubles the wait from min_ms up to max_ms, a success resets it. */
struct mb_backoff {
	uint32_t min_ms, max_ms, cur_ms;
	uint64_t next_ms;
	uint64_t failures; /* in a row */
};
void mb_backoff_init(struct mb_backoff *b, uint32_t min_ms, uint32_t max_ms);
bool mb_backoff_may_try(const struct mb_backoff *b, uint64_t now_ms);
void mb_backoff_failed(struct mb_backoff *b, uint64_t now_ms);
void mb_backoff_ok(struct mb_backoff *b);

#endif
