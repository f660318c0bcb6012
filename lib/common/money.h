/*
 * money.h - money as int64 micro-dollars.
 *
 * 1 USD = 1,000,000 micros.  Parsing is exact (no floating point);
 * arithmetic that multiplies a rate by a time rounds half away from zero
 * using 128-bit intermediates and saturates at INT64 limits.
 */
#ifndef SR_COMMON_MONEY_H
#define SR_COMMON_MONEY_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef int64_t sr_micros;

#define SR_MICROS_PER_USD INT64_C(1000000)

/* "$12.345678", "12.34", "-$0.5", "$1,234.50" (commas between digit
 * groups allowed).  More than 6 decimals is an error (no silent rounding). */
int sr_money_parse(const char *s, sr_micros *out, struct sr_err *e);

/* "$12.345678" (always 6 decimals; "-$0.500000" when negative).
 * Returns length or -ENOSPC. */
int sr_money_format(sr_micros m, char *buf, size_t n);

/* Round a double dollar amount to micros (for catalog floats). */
sr_micros sr_money_from_usd(double usd);
double sr_money_to_usd(sr_micros m);

/* Cost of holding a resource priced `per_hour` for `ns` nanoseconds. */
sr_micros sr_money_cost(sr_micros per_hour, int64_t ns);

/* The same for a planned `hours` (a model's double), rounded to the
 * nearest micro; INT64_MAX when it does not fit. */
sr_micros sr_money_hours(double hours, sr_micros per_hour);

#endif
