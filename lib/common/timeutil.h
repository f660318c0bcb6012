/*
 * timeutil.h - clocks, RFC 3339 and durations.
 *
 * Time is int64 nanoseconds: monotonic for intervals, Unix epoch (UTC)
 * for wall-clock instants.
 */
#ifndef SR_COMMON_TIMEUTIL_H
#define SR_COMMON_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define SR_NS_PER_SEC INT64_C(1000000000)

int64_t sr_time_mono_ns(void);  /* CLOCK_MONOTONIC */
int64_t sr_time_real_ns(void);  /* CLOCK_REALTIME, ns since the epoch */

/* Parse RFC 3339: "2026-11-29T14:14:28Z", fractional seconds and
 * "+hh:mm"/"-hh:mm" offsets accepted; 't'/'z' lower case accepted.
 * The one time parser of the project: every reader of a date calls it
 * (or sr_time_parse for the looser forms of data files). */
int sr_time_parse_rfc3339(const char *s, int64_t *out_ns, struct sr_err *e);

/* sr_time_parse_rfc3339, and with flags what data files also write:
 * SR_TIME_SPACE  a space between date and time ("2023-02-15 22:08:16",
 *                which RFC 3339 5.6 allows "for readability");
 * SR_TIME_UTC    no zone at all means UTC;
 * SR_TIME_DATE   a date alone ("2026-11-29", RFC 3339's full-date) is
 *                that day's midnight UTC;
 * SR_TIME_US_DATE "MM/DD/YYYY", month and day of one or two digits
 *                (Azure's cost exports), that day's midnight UTC. */
enum { SR_TIME_SPACE = 1, SR_TIME_UTC = 2, SR_TIME_DATE = 4,
       SR_TIME_US_DATE = 8 };
int sr_time_parse(const char *s, unsigned flags, int64_t *out_ns, struct sr_err *e);

/* The first instant (UTC) of the month `months` after the one holding
 * ns: 0 is that month's start, 1 the next month's. */
int64_t sr_time_month_start(int64_t ns, int months);

/* Format UTC as "YYYY-MM-DDTHH:MM:SSZ" (frac_digits 0) or with 3/6/9
 * fractional digits.  Returns the length written, or -ENOSPC. */
int sr_time_format_rfc3339(int64_t ns, int frac_digits, char *buf, size_t n);

/* Durations: "90s", "2h", "1d", "1h30m", "500ms", "1.5h", "0".  Units:
 * ns us ms s m h d.  Negative and unit-less values are rejected. */
int sr_dur_parse(const char *s, int64_t *out_ns, struct sr_err *e);

/* Format the shortest exact form: "90s" -> "1m30s", 7200s -> "2h",
 * 86400s -> "1d", sub-second -> "250ms".  Returns length or -ENOSPC. */
int sr_dur_format(int64_t ns, char *buf, size_t n);

#endif
