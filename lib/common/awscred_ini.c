/*
 * awscred_ini.c - the AWS shared config and credentials files, read with
 * libinih the way the AWS CLI's configparser reads them.
 *
 * libinih as Debian builds it reads lines into a 200-byte stack buffer
 * and silently splits a longer line in two: a 1 KB aws_session_token
 * would come back cut at 199 bytes, and the rest parsed as another line
 * (a base64 tail ending in '=' even parses as a key).  Its Debian build
 * exposes the compile-time settings as variables, so before the first
 * parse we switch to a heap buffer that grows (ini_use_stack = false,
 * ini_allow_realloc) up to LINE_MAX_BYTES, and we refuse a file with a
 * longer line ourselves ("path:N: line longer than ..."), so no line is
 * ever split.  Other settings match configparser: ';' and '#' start a
 * comment only at the start of a line (no inline comments: a
 * credential_process command may hold " ;"), indented lines continue the
 * previous key's value (joined with '\n', so "s3 =\n  addressing_style
 * = path" is one nested value, never a top-level key), "key: value" is
 * accepted, a key given twice in a section or a section given twice is
 * an error (configparser's strict mode, which the CLI uses), keys are
 * compared without case.
 *
 * We feed libinih through our own reader (ini_parse_stream) over the
 * file in memory: the reader counts lines and remembers where the
 * current one starts, so the handler knows the line number and whether
 * the line was indented (a continuation) - the Debian build passes
 * neither.
 *
 * Secrets: every value is wiped when freed; so is the file's buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>
#include <openssl/crypto.h>

#include "awscred_int.h"
#include "fsutil.h"

#define LINE_MAX_BYTES 65536
#define FILE_MAX_BYTES (4u << 20)

struct ent {
	char *section, *key, *val;
	int line;
};

struct sr_awsini {
	char *path;
	struct ent *v;
	size_t n, cap;
};

/* Parser state: the reader's position and the handler's context. */
struct pst {
	struct sr_awsini *f;
	const char *buf;
	size_t len, pos;
	size_t line_start;
	int lineno;
	bool mid_line;          /* the last chunk did not end the line */
	char *sec;              /* section of the previous key (malloc'd) */
	char *closed;           /* '\n'-joined sections already left */
	size_t prev;            /* index of the previous key, or SIZE_MAX */
	struct sr_err *e;
	int rc;
};

static pthread_once_t ini_once = PTHREAD_ONCE_INIT;

static void ini_setup(void)
{
	ini_use_stack = false;
	ini_allow_realloc = true;
	ini_initial_alloc = 512;
	ini_max_line = LINE_MAX_BYTES + 2; /* the line, '\n' and NUL */
	ini_allow_multiline = true;
	ini_allow_inline_comments = false;
	ini_allow_bom = true;
	ini_stop_on_first_error = true;
	ini_allow_no_value = false;
}

/* fgets over the buffer, counting lines. */
static char *reader(char *str, int num, void *stream)
{
	struct pst *p = stream;
	size_t room, n = 0;

	if (p->pos >= p->len || num < 2)
		return NULL;
	if (!p->mid_line) {
		p->lineno++;
		p->line_start = p->pos;
	}
	room = (size_t)num - 1;
	while (n < room && p->pos + n < p->len) {
		if (p->buf[p->pos + n++] == '\n')
			break;
	}
	memcpy(str, p->buf + p->pos, n);
	str[n] = '\0';
	p->pos += n;
	p->mid_line = str[n - 1] != '\n' && p->pos < p->len;
	return str;
}

static bool section_closed(const struct pst *p, const char *sec)
{
	const char *s = p->closed;
	size_t l = strlen(sec);

	while (s != NULL && *s != '\0') {
		const char *nl = strchr(s, '\n');
		size_t m = nl != NULL ? (size_t)(nl - s) : strlen(s);

		if (m == l && memcmp(s, sec, l) == 0)
			return true;
		s = nl != NULL ? nl + 1 : NULL;
	}
	return false;
}

static int close_section(struct pst *p)
{
	size_t have = p->closed != NULL ? strlen(p->closed) : 0;
	char *grown = realloc(p->closed, have + strlen(p->sec) + 2);

	if (grown == NULL)
		return -ENOMEM;
	p->closed = grown;
	sprintf(grown + have, "%s\n", p->sec);
	return 0;
}

/* Stop the parse with rc and "path:line: what" (rc -ENOMEM: no line). */
static int fail(struct pst *p, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct pst *p, int rc, const char *fmt, ...)
{
	char what[400];
	va_list ap;

	if (rc == -ENOMEM) {
		p->rc = sr_err_set(p->e, rc, "%s: out of memory", p->f->path);
		return 0;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p->rc = sr_err_set(p->e, rc, "%s:%d: %s", p->f->path, p->lineno, what);
	return 0;
}

#define OOM(p) fail(p, -ENOMEM, "out of memory")

static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct pst *p = user;
	struct sr_awsini *f = p->f;
	const char *raw = p->buf + p->line_start;
	bool indented = *raw == ' ' || *raw == '\t';
	struct ent *x;

	if (p->sec == NULL || strcmp(p->sec, section) != 0) {
		if (section_closed(p, section))
			return fail(p, -SR_EPARSE, "section [%s] given twice",
				    section);
		if (p->sec != NULL && close_section(p) < 0)
			return OOM(p);
		free(p->sec);
		p->sec = strdup(section);
		if (p->sec == NULL)
			return OOM(p);
		p->prev = SIZE_MAX;
	}
	if (indented && p->prev != SIZE_MAX &&
	    strcasecmp(f->v[p->prev].key, name) == 0) {
		/* a continuation line: configparser joins with '\n' */
		char *old = f->v[p->prev].val, *joined = NULL;

		if (asprintf(&joined, "%s\n%s", old, value) < 0)
			return OOM(p);
		sr_awscred__wipe(old);
		f->v[p->prev].val = joined;
		return 1;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->v[i].section, section) == 0 &&
		    strcasecmp(f->v[i].key, name) == 0)
			return fail(p, -SR_EPARSE, "key '%s' given twice in [%s]",
				    name, section);
	}
	if (f->n == f->cap) {
		size_t nc = f->cap ? 2 * f->cap : 16;
		struct ent *g = realloc(f->v, nc * sizeof(*g));

		if (g == NULL)
			return OOM(p);
		f->v = g;
		f->cap = nc;
	}
	x = &f->v[f->n];
	x->section = strdup(section);
	x->key = strdup(name);
	x->val = strdup(value);
	x->line = p->lineno;
	if (x->section == NULL || x->key == NULL || x->val == NULL) {
		free(x->section);
		free(x->key);
		sr_awscred__wipe(x->val);
		return OOM(p);
	}
	p->prev = f->n++;
	return 1;
}

void sr_awscred__ini_free(struct sr_awsini *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].section);
		free(f->v[i].key);
		sr_awscred__wipe(f->v[i].val);
	}
	free(f->v);
	free(f->path);
	free(f);
}

/* Why libinih stopped at line `no`: a header without ']' or a line
 * without '='. */
static int syntax_error(const struct pst *p, int no, struct sr_err *e)
{
	const char *s = p->buf;
	int at = 1;

	while (at < no && s != NULL) {
		s = strchr(s, '\n');
		if (s != NULL)
			s++;
		at++;
	}
	while (s != NULL && (*s == ' ' || *s == '\t'))
		s++;
	if (s != NULL && *s == '[')
		return sr_err_set(e, -SR_EPARSE, "%s:%d: section header: missing ']'",
				  p->f->path, no);
	return sr_err_set(e, -SR_EPARSE,
			  "%s:%d: expected 'key = value' or '[section]'",
			  p->f->path, no);
}

/* Refuse a line libinih would split, and a binary file. */
static int check_lines(const char *path, const char *buf, size_t len,
		       struct sr_err *e)
{
	size_t start = 0;
	int no = 1;

	if (memchr(buf, '\0', len) != NULL)
		return sr_err_set(e, -SR_EPARSE, "%s: a NUL byte: not a text file",
				  path);
	for (size_t i = 0; i <= len; i++) {
		if (i < len && buf[i] != '\n')
			continue;
		if (i - start > LINE_MAX_BYTES)
			return sr_err_set(e, -SR_EPARSE,
					  "%s:%d: line longer than %d bytes", path,
					  no, LINE_MAX_BYTES);
		start = i + 1;
		no++;
	}
	return 0;
}

int sr_awscred__ini_parse(const char *name, const char *buf, size_t len,
			  struct sr_awsini **out, struct sr_err *e)
{
	struct pst p = { 0 };
	struct sr_awsini *f = NULL;
	int rc;

	*out = NULL;
	pthread_once(&ini_once, ini_setup);
	rc = check_lines(name, buf, len, e);
	if (rc < 0)
		return rc;
	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->path = strdup(name)) == NULL) {
		free(f);
		return sr_err_set(e, -ENOMEM, "%s: out of memory", name);
	}
	p = (struct pst){ .f = f, .buf = buf, .len = len, .prev = SIZE_MAX,
			  .e = e };
	rc = ini_parse_stream(reader, &p, handler, &p);
	if (p.rc < 0)
		rc = p.rc;
	else if (rc == -2)
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", name);
	else if (rc > 0)
		rc = syntax_error(&p, rc, e);
	else if (rc < 0)
		rc = sr_err_set(e, -EIO, "%s: cannot read", name);
	free(p.sec);
	free(p.closed);
	if (rc == 0)
		*out = f;
	else
		sr_awscred__ini_free(f);
	return rc;
}

int sr_awscred__ini_load(const char *path, struct sr_awsini **out,
			 struct sr_err *e)
{
	struct sr_err re = { 0 };
	char *buf = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = sr_fs_read_file(path, FILE_MAX_BYTES, &buf, &len, &re);
	if (rc == -ENOENT)
		return -SR_ENOTFOUND;
	if (rc < 0)
		return sr_err_set(e, rc, "%s", re.msg);
	rc = sr_awscred__ini_parse(path, buf, len, out, e);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc;
}

size_t sr_awscred__ini_count(const struct sr_awsini *f)
{
	return f != NULL ? f->n : 0;
}

void sr_awscred__ini_entry(const struct sr_awsini *f, size_t i,
			   const char **section, const char **key)
{
	*section = f->v[i].section;
	*key = f->v[i].key;
}

/* The header as written, as the CLI compares a credentials file's
 * sections: "[ dev ]" is the profile " dev ", not "dev". */
const char *sr_awscred__ini_get(const struct sr_awsini *f, const char *section,
				const char *key)
{
	if (f == NULL)
		return NULL;
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->v[i].section, section) == 0 &&
		    strcasecmp(f->v[i].key, key) == 0)
			return f->v[i].val;
	}
	return NULL;
}

/*
 * Does config section header `sec` name [KIND NAME]?  The CLI splits the
 * header into words as a shell would (shlex), so "profile dev",
 * "profile   dev" and "profile 'dev'" all name dev.  The config file
 * writes the default profile [default] (or [profile default]).
 */
static bool names(const char *sec, const char *kind, const char *name)
{
	size_t kl = strlen(kind), nl = strlen(name);
	const char *s = sec;

	if (strcmp(kind, "profile") == 0 && strcmp(name, "default") == 0 &&
	    strcmp(sec, "default") == 0)
		return true;
	if (strncmp(s, kind, kl) != 0 || !isspace((unsigned char)s[kl]))
		return false;
	s += kl;
	while (isspace((unsigned char)*s))
		s++;
	if ((*s == '\'' || *s == '"') && strlen(s) == nl + 2 &&
	    s[nl + 1] == *s)
		return strncmp(s + 1, name, nl) == 0;
	return strcmp(s, name) == 0;
}

static const char *section_get(const struct sr_awsini *f, const char *kind,
			       const char *name, const char *key)
{
	if (f == NULL)
		return NULL;
	for (size_t i = 0; i < f->n; i++) {
		if (names(f->v[i].section, kind, name) &&
		    strcasecmp(f->v[i].key, key) == 0)
			return f->v[i].val[0] != '\0' ? f->v[i].val : NULL;
	}
	return NULL;
}

const char *sr_awscred__prof_get_in(const struct sr_awsconf *c, bool config,
				    const char *profile, const char *key)
{
	const char *v;

	if (config)
		return section_get(c->cfg, "profile", profile, key);
	v = sr_awscred__ini_get(c->cred, profile, key);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *sr_awscred__prof_get(const struct sr_awsconf *c,
				 const char *profile, const char *key,
				 const char **where)
{
	const char *v = sr_awscred__prof_get_in(c, false, profile, key);

	if (v != NULL) {
		if (where != NULL)
			*where = c->cred_path;
		return v;
	}
	v = sr_awscred__prof_get_in(c, true, profile, key);
	if (v != NULL && where != NULL)
		*where = c->cfg_path;
	return v;
}

bool sr_awscred__prof_exists(const struct sr_awsconf *c, const char *profile)
{
	if (c->cred != NULL) {
		for (size_t i = 0; i < c->cred->n; i++)
			if (strcmp(c->cred->v[i].section, profile) == 0)
				return true;
	}
	if (c->cfg != NULL) {
		for (size_t i = 0; i < c->cfg->n; i++)
			if (names(c->cfg->v[i].section, "profile", profile))
				return true;
	}
	return false;
}

const char *sr_awscred__conf_section(const struct sr_awsconf *c,
				     const char *kind, const char *name,
				     const char *key)
{
	return section_get(c->cfg, kind, name, key);
}

/* Path of the shared file: the variable if set, else ~/.aws/NAME; NULL
 * without a home directory. */
static int shared_path(bool config, char **out)
{
	const char *v = sr_awscred__env(config ? "AWS_CONFIG_FILE"
					       : "AWS_SHARED_CREDENTIALS_FILE");
	const char *home = sr_awscred__env("HOME");

	*out = NULL;
	if (v != NULL)
		*out = strdup(v);
	else if (home == NULL)
		return 0;
	else if (asprintf(out, "%s/.aws/%s", home,
			  config ? "config" : "credentials") < 0)
		*out = NULL;
	return *out != NULL ? 0 : -ENOMEM;
}

int sr_awscred__conf_load(struct sr_awsconf *c, struct sr_err *e)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (shared_path(true, &c->cfg_path) < 0 ||
	    shared_path(false, &c->cred_path) < 0) {
		sr_awscred__conf_free(c);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	rc = c->cfg_path != NULL ? sr_awscred__ini_load(c->cfg_path, &c->cfg, e)
				 : 0;
	if (rc == 0 || rc == -SR_ENOTFOUND)
		rc = c->cred_path != NULL
			     ? sr_awscred__ini_load(c->cred_path, &c->cred, e)
			     : 0;
	if (rc == -SR_ENOTFOUND)
		rc = 0;
	if (rc < 0)
		sr_awscred__conf_free(c);
	return rc;
}

void sr_awscred__conf_free(struct sr_awsconf *c)
{
	if (c == NULL)
		return;
	sr_awscred__ini_free(c->cfg);
	sr_awscred__ini_free(c->cred);
	free(c->cfg_path);
	free(c->cred_path);
	memset(c, 0, sizeof(*c));
}

int sr_aws_ini_get(const char *path, int is_config, const char *profile,
		   const char *key, char **out, struct sr_err *e)
{
	struct sr_awsini *f = NULL;
	const char *v;
	int rc;

	*out = NULL;
	rc = sr_awscred__ini_load(path, &f, e);
	if (rc < 0)
		return rc;
	v = is_config ? section_get(f, "profile", profile, key)
		      : sr_awscred__ini_get(f, profile, key);
	if (v == NULL || v[0] == '\0') {
		rc = -SR_ENOTFOUND;
	} else {
		*out = strdup(v);
		rc = *out != NULL ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
	}
	sr_awscred__ini_free(f);
	return rc;
}
