/*
 * timeutil.c - clocks, RFC 3339 instants and human durations.
 *
 * Calendar conversion uses the proleptic Gregorian calendar via day
 * counts relative to 1970-01-01 (era arithmetic, 400-year cycles), so it
 * needs no timegm() and no TZ.  int64 nanoseconds cover about
 * 1677-09-21 .. 2262-04-11; instants outside fail with -ERANGE.
 */
#include "timeutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * SR_NS_PER_SEC + ts.tv_nsec;
}

int64_t sr_time_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
int64_t sr_time_real_ns(void) { return clock_ns(CLOCK_REALTIME); }

/* Days since 1970-01-01 of y-m-d (m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

/* Read exactly n digits at *p; advance.  -1 if not n digits. */
static int digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	return v;
}

/* One or two digits (a US date's month or day); -1 if none. */
static int digits12(const char **p)
{
	int v = digits(p, 2);

	return v >= 0 ? v : digits(p, 1);
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

int64_t sr_time_month_start(int64_t ns, int months)
{
	int64_t secs = ns / SR_NS_PER_SEC - (ns % SR_NS_PER_SEC < 0), y, mm;
	int m, d;

	civil_from_days(secs / 86400 - (secs % 86400 < 0), &y, &m, &d);
	mm = (int64_t)m - 1 + months; /* months since January of year y */
	y += mm / 12 - (mm % 12 < 0);
	mm = (mm % 12 + 12) % 12;
	return days_from_civil(y, (int)mm + 1, 1) * 86400 * SR_NS_PER_SEC;
}

int sr_time_parse_rfc3339(const char *s, int64_t *out_ns, struct sr_err *e)
{
	return sr_time_parse(s, 0, out_ns, e);
}

int sr_time_parse(const char *s, unsigned flags, int64_t *out_ns, struct sr_err *e)
{
	const char *p = s, *why = "expected YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm)";
	int Y, M, D, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, secs;
	__int128 wide;
	int nfrac = 0;

	if (s == NULL)
		return sr_err_set(e, -SR_EPARSE, "time: missing");
	if ((flags & SR_TIME_US_DATE) && strchr(s, '/')) {
		why = "expected MM/DD/YYYY";
		M = digits12(&p);
		if (M < 0 || expect(&p, '/') < 0)
			goto bad;
		D = digits12(&p);
		if (D < 0 || expect(&p, '/') < 0)
			goto bad;
		Y = digits(&p, 4);
		if (Y < 0 || *p != '\0')
			goto bad;
		h = mi = sec = 0;
		goto fields;
	}
	Y = digits(&p, 4);
	if (Y < 0 || expect(&p, '-') < 0)
		goto bad;
	M = digits(&p, 2);
	if (M < 0 || expect(&p, '-') < 0)
		goto bad;
	D = digits(&p, 2);
	if (D >= 0 && *p == '\0' && (flags & SR_TIME_DATE)) {
		h = mi = sec = 0;
		goto fields;
	}
	if (D < 0 || (*p != 'T' && *p != 't' && !(*p == ' ' && (flags & SR_TIME_SPACE))))
		goto bad;
	p++;
	h = digits(&p, 2);
	if (h < 0 || expect(&p, ':') < 0)
		goto bad;
	mi = digits(&p, 2);
	if (mi < 0 || expect(&p, ':') < 0)
		goto bad;
	sec = digits(&p, 2);
	if (sec < 0)
		goto bad;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++, nfrac++) {
			if (nfrac < 9)
				frac = frac * 10 + (*p - '0');
		}
		for (int i = nfrac; i < 9; i++)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		p++;
		oh = digits(&p, 2);
		if (oh < 0 || expect(&p, ':') < 0)
			goto bad;
		om = digits(&p, 2);
		if (om < 0)
			goto bad;
	} else if (!(*p == '\0' && (flags & SR_TIME_UTC))) {
		why = "missing time zone (Z or +hh:mm)";
		goto bad;
	}
	if (*p != '\0') {
		why = "trailing characters";
		goto bad;
	}
fields:
	why = "field out of range";
	if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 ||
	    mi > 59 || sec > 59 || oh > 23 || om > 59)
		goto bad;
	secs = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec;
	secs -= sign * (oh * 3600 + om * 60);
	wide = (__int128)secs * SR_NS_PER_SEC + frac;
	if (wide > INT64_MAX || wide < INT64_MIN)
		return sr_err_set(e, -ERANGE, "time '%s': outside the int64 nanosecond range", s);
	*out_ns = (int64_t)wide;
	return 0;
bad:
	return sr_err_set(e, -SR_EPARSE, "time '%.64s': %s", s, why);
}

int sr_time_format_rfc3339(int64_t ns, int frac_digits, char *buf, size_t n)
{
	int64_t secs = ns / SR_NS_PER_SEC, rem = ns % SR_NS_PER_SEC, days, sod, y;
	int m, d, len;
	char frac[16] = "";

	if (rem < 0) {
		rem += SR_NS_PER_SEC;
		secs--;
	}
	days = secs / 86400;
	sod = secs % 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	switch (frac_digits) {
	case 0:
		break;
	case 3:
		snprintf(frac, sizeof(frac), ".%03d", (int)(rem / 1000000));
		break;
	case 6:
		snprintf(frac, sizeof(frac), ".%06d", (int)(rem / 1000));
		break;
	case 9:
		snprintf(frac, sizeof(frac), ".%09d", (int)rem);
		break;
	default:
		return -EINVAL;
	}
	len = snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02d%sZ", (long long)y,
		       m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
		       (int)(sod % 60), frac);
	if (len < 0 || (size_t)len >= n)
		return -ENOSPC;
	return len;
}

static const struct {
	const char *name;
	int64_t ns;
} units[] = {
	/* longest names first so "ms" wins over "m" */
	{ "ns", 1 },
	{ "us", 1000 },
	{ "ms", 1000000 },
	{ "s", SR_NS_PER_SEC },
	{ "m", 60 * SR_NS_PER_SEC },
	{ "h", 3600 * SR_NS_PER_SEC },
	{ "d", 86400 * SR_NS_PER_SEC },
};
#define NUNITS (sizeof(units) / sizeof(units[0]))

int sr_dur_parse(const char *s, int64_t *out_ns, struct sr_err *e)
{
	const char *p = s, *why;
	__int128 total = 0;

	if (s == NULL || *s == '\0')
		return sr_err_set(e, -SR_EPARSE, "duration: empty");
	if (strcmp(s, "0") == 0) {
		*out_ns = 0;
		return 0;
	}
	if (*s == '-') {
		why = "negative durations are not allowed";
		goto bad;
	}
	while (*p != '\0') {
		__int128 ip = 0, fp = 0, fscale = 1;
		const char *u;
		size_t i, ul = 0;

		why = "expected a number";
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++) {
			ip = ip * 10 + (*p - '0');
			if (ip > INT64_MAX)
				goto range;
		}
		if (*p == '.') {
			p++;
			why = "expected digits after '.'";
			if (*p < '0' || *p > '9')
				goto bad;
			for (; *p >= '0' && *p <= '9'; p++) {
				if (fscale < INT64_C(1000000000000000000)) {
					fp = fp * 10 + (*p - '0');
					fscale *= 10;
				}
			}
		}
		u = p;
		for (i = 0; i < NUNITS; i++) {
			ul = strlen(units[i].name);
			if (strncmp(u, units[i].name, ul) == 0 &&
			    (u[ul] == '\0' || (u[ul] >= '0' && u[ul] <= '9')))
				break;
		}
		if (i == NUNITS) {
			why = *u == '\0' ? "missing unit (ns us ms s m h d)"
					 : "unknown unit (ns us ms s m h d)";
			goto bad;
		}
		p = u + ul;
		total += ip * units[i].ns + fp * units[i].ns / fscale;
		if (total > INT64_MAX)
			goto range;
	}
	*out_ns = (int64_t)total;
	return 0;
range:
	return sr_err_set(e, -ERANGE, "duration '%.64s': too large", s);
bad:
	return sr_err_set(e, -SR_EPARSE, "duration '%.64s': %s", s, why);
}

int sr_dur_format(int64_t ns, char *buf, size_t n)
{
	uint64_t v = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	size_t len = 0;
	int w;

	if (n == 0)
		return -ENOSPC;
	buf[0] = '\0';
	if (ns < 0) {
		if (n < 2)
			return -ENOSPC;
		buf[len++] = '-';
		buf[len] = '\0';
	}
	if (v == 0)
		return snprintf(buf, n, "0s") >= (int)n ? -ENOSPC : 2;
	for (int i = (int)NUNITS - 1; i >= 0; i--) {
		uint64_t u = (uint64_t)units[i].ns, q = v / u;

		if (q == 0)
			continue;
		v -= q * u;
		w = snprintf(buf + len, n - len, "%llu%s", (unsigned long long)q,
			     units[i].name);
		if (w < 0 || (size_t)w >= n - len)
			return -ENOSPC;
		len += (size_t)w;
	}
	return (int)len;
}
