/*
 * text.c - finding and escaping characters that are unsafe to print
 * (see text.h).
 */
#include "text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode one UTF-8 sequence at s; returns its length (1..4) and the code
 * point, or 0 for an invalid sequence. */
static size_t utf8_next(const unsigned char *s, unsigned *cp)
{
	unsigned c = s[0], v;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

static bool cp_unsafe(unsigned cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
	       cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0xfeff;
}

int sr_text_unsafe(const char *s, size_t *off, unsigned *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (p[i]) {
		unsigned c = 0;
		size_t n = utf8_next(p + i, &c);

		if (n == 0 || cp_unsafe(c)) {
			if (off)
				*off = i;
			if (cp)
				*cp = n == 0 ? p[i] : c;
			return 1;
		}
		i += n;
	}
	return 0;
}

char *sr_text_escape(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0, i = 0;
	char *out;

	if (!sr_text_unsafe(s, NULL, NULL))
		return strdup(s);
	/* worst case: every byte becomes \xNN, or a 2..4 byte character
	 * becomes \u{XXXXX} (9) */
	out = malloc(len * 5 + 1);
	if (!out)
		return NULL;
	while (p[i]) {
		unsigned c = 0;
		size_t n = utf8_next(p + i, &c);

		if (n == 0) {
			o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
			i++;
		} else if (cp_unsafe(c)) {
			if (c < 0x80)
				o += (size_t)sprintf(out + o, "\\x%02x", c);
			else
				o += (size_t)sprintf(out + o, "\\u{%04X}", c);
			i += n;
		} else if (c == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
		} else {
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	return out;
}

void sr_text_bytes(unsigned long long b, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, unit[i]);
}

uint64_t sr_text_fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}
