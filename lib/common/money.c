/*
 * money.c - exact decimal parsing and formatting of micro-dollars.
 *
 * Grammar accepted by sr_money_parse:
 *     [-] [$] INT [. FRAC]      INT  = digits | 1-3 digits (, 3 digits)*
 *                               FRAC = 1..6 digits
 * No floating point is involved; overflow of int64 is -ERANGE.
 */
#include "money.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#define NS_PER_HOUR (INT64_C(3600) * INT64_C(1000000000))

int sr_money_parse(const char *s, sr_micros *out, struct sr_err *e)
{
	const char *p = s, *why;
	__int128 v = 0;
	bool neg = false, commas = false;
	int group = 0, nfrac = 0;

	if (s == NULL || *s == '\0')
		return sr_err_set(e, -SR_EPARSE, "money: empty");
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (*p == '$')
		p++;
	why = "expected digits";
	if (*p < '0' || *p > '9')
		goto bad;
	for (; (*p >= '0' && *p <= '9') || *p == ','; p++) {
		if (*p == ',') {
			why = "misplaced ',' (groups of 3 digits expected)";
			if ((!commas && (group == 0 || group > 3)) ||
			    (commas && group != 3))
				goto bad;
			commas = true;
			group = 0;
			continue;
		}
		v = v * 10 + (*p - '0');
		group++;
		if (v > INT64_MAX / SR_MICROS_PER_USD + 1)
			goto range;
	}
	why = "misplaced ',' (groups of 3 digits expected)";
	if (commas && group != 3)
		goto bad;
	v *= SR_MICROS_PER_USD;
	if (*p == '.') {
		int64_t scale = SR_MICROS_PER_USD / 10;

		p++;
		why = "expected digits after '.'";
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++, nfrac++) {
			why = "more than 6 decimals (micro-dollar precision)";
			if (nfrac == 6)
				goto bad;
			v += (*p - '0') * scale;
			scale /= 10;
		}
	}
	why = "unexpected character";
	if (*p != '\0')
		goto bad;
	if (neg)
		v = -v;
	if (v > INT64_MAX || v < INT64_MIN)
		goto range;
	*out = (sr_micros)v;
	return 0;
range:
	return sr_err_set(e, -ERANGE, "money '%.64s': out of range", s);
bad:
	return sr_err_set(e, -SR_EPARSE, "money '%.64s': %s", s, why);
}

int sr_money_format(sr_micros m, char *buf, size_t n)
{
	uint64_t a = m < 0 ? (uint64_t)0 - (uint64_t)m : (uint64_t)m;
	int len;

	len = snprintf(buf, n, "%s$%llu.%06llu", m < 0 ? "-" : "",
		       (unsigned long long)(a / 1000000),
		       (unsigned long long)(a % 1000000));
	if (len < 0 || (size_t)len >= n)
		return -ENOSPC;
	return len;
}

sr_micros sr_money_from_usd(double usd)
{
	double v = usd * (double)SR_MICROS_PER_USD;

	if (isnan(v))
		return 0;
	if (v >= 9.2233720368547748e18)
		return INT64_MAX;
	if (v <= -9.2233720368547748e18)
		return INT64_MIN;
	return (sr_micros)llround(v);
}

double sr_money_to_usd(sr_micros m)
{
	return (double)m / (double)SR_MICROS_PER_USD;
}

sr_micros sr_money_cost(sr_micros per_hour, int64_t ns)
{
	__int128 prod = (__int128)per_hour * ns;
	__int128 q = prod / NS_PER_HOUR, r = prod % NS_PER_HOUR;

	/* round half away from zero */
	if (r < 0)
		r = -r;
	if (2 * r >= NS_PER_HOUR)
		q += prod < 0 ? -1 : 1;
	if (q > INT64_MAX)
		return INT64_MAX;
	if (q < INT64_MIN)
		return INT64_MIN;
	return (sr_micros)q;
}

sr_micros sr_money_hours(double hours, sr_micros per_hour)
{
	double v = hours * (double)per_hour;

	return v < 9.2e18 ? (sr_micros)llround(v) : INT64_MAX;
}
