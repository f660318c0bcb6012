/*
 * text.h - names safe to show on a terminal.
 *
 * A job name travels from a job file to `spotrun status`, the dashboard,
 * logs and alerts.  A name with ESC can rewrite the user's terminal; one
 * with U+202E (right-to-left override) can make "gpt-fine.sh" read as
 * something else.  Names are checked when they come in (sr_text_unsafe)
 * and escaped when printed (sr_text_escape), for rows stored before the
 * check existed.
 *
 * Unsafe: C0 controls (0x00-0x1f), DEL, C1 controls (U+0080-U+009F), the
 * Unicode bidirectional controls U+061C, U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069, the line and paragraph separators U+2028 and U+2029
 * (a new line to JavaScript and many terminals), the byte-order mark
 * U+FEFF (invisible), and bytes that are not valid UTF-8.  A NUL cannot
 * be in a C string: the parsers refuse a value that holds one.
 */
#ifndef SR_COMMON_TEXT_H
#define SR_COMMON_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* 0 if s is safe; else 1, with *off (may be NULL) the byte offset of the
 * first unsafe character and *cp (may be NULL) its code point (the byte's
 * value for invalid UTF-8). */
int sr_text_unsafe(const char *s, size_t *off, unsigned *cp);

/* s with each unsafe character written as \xNN (a byte) or \u{XXXX} (a
 * code point), and backslashes doubled only when something was escaped.
 * Returns a malloc'd string (caller frees) or NULL on out-of-memory. */
char *sr_text_escape(const char *s);

/* b bytes as a person reads them, in binary units ("512 B", "1.5 GiB"),
 * into buf (n bytes, truncated as snprintf does). */
void sr_text_bytes(unsigned long long b, char *buf, size_t n);

/* h folded with the bytes of s by FNV-1a (64 bit): a cheap hash of a name
 * for a table or a salt, never for security.  FNV's own start is
 * SR_FNV1A_BASIS; a caller whose hashes are already out in the world
 * keeps its own start. */
#define SR_FNV1A_BASIS UINT64_C(14695981039346656037)
/* FNV's basis with its last digit missing: the start of store.c's
 * statement cache and routes_nodes.c's rendezvous ports, kept so the
 * ports already handed out stay the same. */
#define SR_FNV1A_BASIS_SHORT UINT64_C(1469598103934665603)
uint64_t sr_text_fnv1a(const char *s, uint64_t h);

#endif
