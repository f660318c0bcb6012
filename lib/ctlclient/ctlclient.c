/*
 * ctlclient.c - REST client of spotrund (see ctlclient.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/http.h"
#include "common/json.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "common/url.h"
#include "ctlclient/ctlclient.h"

#define TOKEN_MIN 16
#define TOKEN_MAX 256

struct ctlc {
	char *url;     /* as given: one endpoint or a comma-separated list */
	char **eps;    /* the endpoints, owned */
	size_t neps;
	atomic_size_t cur; /* the endpoint that answered last */
	char *ca_file; /* $SPOTRUN_CA_CERT: trust anchor for https, or NULL */
	char *auth; /* "Authorization: Bearer <token>" */
	struct ctlc_opts o;
};

/* c->url "A,B,C" -> c->eps (each without a trailing '/'). */
static int split_endpoints(struct ctlc *c)
{
	const char *p = c->url;

	for (;;) {
		size_t len = strcspn(p, ",");
		char **nv;

		while (len > 0 && p[len - 1] == '/')
			len--;
		if (len > 0) {
			nv = realloc(c->eps, (c->neps + 1) * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			c->eps = nv;
			c->eps[c->neps] = strndup(p, len);
			if (!c->eps[c->neps])
				return -ENOMEM;
			c->neps++;
		}
		p += strcspn(p, ",");
		if (!*p)
			break;
		p++;
	}
	return c->neps ? 0 : -EINVAL;
}

struct ctlc *ctlc_create(const char *url, const char *token,
				     const struct ctlc_opts *opts)
{
	struct ctlc *c = calloc(1, sizeof *c);
	size_t n;

	if (!c)
		return NULL;
	c->url = strdup(url ? url : CTLC_DEFAULT_URL);
	if (!c->url || asprintf(&c->auth, "Authorization: Bearer %s",
				token ? token : "") < 0) {
		c->auth = NULL;
		ctlc_destroy(c);
		return NULL;
	}
	if (getenv("SPOTRUN_CA_CERT") && *getenv("SPOTRUN_CA_CERT")) {
		c->ca_file = strdup(getenv("SPOTRUN_CA_CERT"));
		if (!c->ca_file) {
			ctlc_destroy(c);
			return NULL;
		}
	}
	n = strlen(c->url);
	while (n > 0 && c->url[n - 1] == '/')
		c->url[--n] = '\0';
	if (split_endpoints(c)) {
		ctlc_destroy(c);
		return NULL;
	}
	c->o.timeout_ms = 10000;
	c->o.max_retries = 2;
	c->o.failover_rounds = 20;
	if (opts) {
		if (opts->timeout_ms > 0)
			c->o.timeout_ms = opts->timeout_ms;
		if (opts->max_retries >= 0)
			c->o.max_retries = opts->max_retries;
		if (opts->failover_rounds > 0)
			c->o.failover_rounds = opts->failover_rounds;
	}
	return c;
}

void ctlc_destroy(struct ctlc *c)
{
	if (!c)
		return;
	free(c->url);
	for (size_t i = 0; i < c->neps; i++)
		free(c->eps[i]);
	free(c->eps);
	free(c->ca_file);
	if (c->auth) {
		explicit_bzero(c->auth, strlen(c->auth));
		free(c->auth);
	}
	free(c);
}

const char *ctlc_url(const struct ctlc *c)
{
	return c->eps[atomic_load(&((struct ctlc *)c)->cur) % c->neps];
}

/* A standby's refusal (lease.c): try the next endpoint. */
static bool not_leader(const struct sr_http_resp *r)
{
	return r->status == 503 && r->body && r->body_len &&
	       memmem(r->body, r->body_len, "\"not_leader\"", 12);
}

static int status_code(long st)
{
	switch (st) {
	case 400: return -EINVAL;
	case 401:
	case 403: return -EACCES;
	case 404: return -SR_ENOTFOUND;
	case 409: return -SR_ECONFLICT;
	case 413: return -E2BIG;
	default: return -SR_EHTTP;
	}
}

/* Build the error for a non-2xx reply from its {"error":{...}} body. */
static int reply_error(const struct sr_http_resp *r, const char *method,
		       const char *path, struct sr_err *e)
{
	const char *code = NULL, *msg = NULL;
	json_t *j = NULL, *err;
	int rc = status_code(r->status);

	if (r->body_len > 0)
		j = json_loadb(r->body, r->body_len, 0, NULL);
	err = j ? json_object_get(j, "error") : NULL;
	if (json_is_object(err)) {
		code = json_string_value(json_object_get(err, "code"));
		msg = json_string_value(json_object_get(err, "message"));
	}
	if (msg)
		sr_err_set(e, rc, "%s", msg);
	else
		sr_err_set(e, rc, "%s %s: HTTP %ld%s%s", method, path, r->status,
			   code ? " " : "", code ? code : "");
	if (r->status == 401)
		sr_err_prefix(e, "the daemon refused the token (HTTP 401; "
			      "wrong state dir or $SPOTRUN_TOKEN?)");
	json_decref(j);
	return rc;
}

int ctlc_idem_key(char out[CTLC_IDEM_KEY_LEN + 1])
{
	return sr_random_hex(out, CTLC_IDEM_KEY_LEN / 2);
}

/* A body that is not JSON (ctlc_post_raw), and a per-call timeout. */
struct raw {
	const char *ctype;     /* "Content-Type: ..." header line */
	const void *data;
	size_t len;
	long timeout_ms;       /* 0: the client's */
};

/* Send `method path` (body, or raw's, may be NULL); on a 2xx reply return
 * 0 with it in *r (the caller frees it with sr_http_resp_free, also on
 * failure). */
static int request(const struct ctlc *c, const char *method, const char *path,
		   json_t *body, const struct raw *raw, const char *accept,
		   struct sr_http_resp *r, long *status, struct sr_err *e)
{
	const char *hdr[] = { c->auth, accept, NULL, NULL, NULL };
	char idem[sizeof "Idempotency-Key: " + CTLC_IDEM_KEY_LEN];
	struct sr_http_opts o;
	char *url = NULL, *text = NULL;
	const char *data = NULL;
	size_t nh = 2, dlen = 0;
	int rc;

	if (status)
		*status = 0;
	memset(r, 0, sizeof *r);
	if (!sr_http_method_idempotent(method)) {
		/* one key for every attempt of this call: a retry of a
		 * request the daemon already applied returns its result */
		char key[CTLC_IDEM_KEY_LEN + 1];

		rc = ctlc_idem_key(key);
		if (rc < 0) {
			rc = sr_err_set(e, rc, "idempotency key: %s",
					sr_strerror(rc));
			goto out;
		}
		snprintf(idem, sizeof idem, "Idempotency-Key: %s", key);
		hdr[nh++] = idem;
	}
	if (body) {
		text = sr_json_dump(body);
		if (!text) {
			rc = -ENOMEM;
			goto out;
		}
		hdr[nh++] = "Content-Type: application/json";
		data = text;
		dlen = strlen(text);
	} else if (raw && raw->data) {
		hdr[nh++] = raw->ctype;
		data = raw->data;
		dlen = raw->len;
	}
	sr_http_opts_default(&o);
	o.timeout_ms = raw && raw->timeout_ms ? raw->timeout_ms : c->o.timeout_ms;
	o.max_retries = c->o.max_retries;
	o.ca_file = c->ca_file;
	/* Every endpoint in turn, from the one that answered last, until
	 * one answers other than "unreachable" or "not the leader"; rounds
	 * apart by a growing pause, long enough for a standby to take over
	 * a dead leader's lease (docs/store.md). */
	for (size_t k = 0, start = atomic_load(&((struct ctlc *)c)->cur);
	     ; k++) {
		size_t i = (start + k) % c->neps;

		if (k > 0 && k % c->neps == 0) {
			if (k / c->neps > (size_t)c->o.failover_rounds)
				break;
			int64_t ms = (int64_t)(k / c->neps) * 250;
			struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

			nanosleep(&ts, NULL);
		}
		free(url);
		sr_http_resp_free(r);
		memset(r, 0, sizeof *r);
		if (asprintf(&url, "%s%s", c->eps[i], path) < 0) {
			url = NULL;
			rc = -ENOMEM;
			goto out;
		}
		rc = sr_http_request(method, url, hdr, data, dlen, &o, r, e);
		if ((rc < 0 || not_leader(r)) && c->neps > 1)
			continue;
		atomic_store(&((struct ctlc *)c)->cur, i);
		break;
	}
	if (rc < 0) {
		char why[SR_ERR_MSG_MAX];

		snprintf(why, sizeof why, "%s", sr_err_str(e, rc));
		rc = sr_err_set(e, -SR_EHTTP, "cannot reach spotrund at %s: %s "
				"(is it running?  start it with 'spotrun daemon "
				"start')", c->url, why);
		goto out;
	}
	if (status)
		*status = r->status;
	if (r->status < 200 || r->status > 299) {
		rc = reply_error(r, method, path, e);
		goto out;
	}
	rc = 0;
out:
	free(url);
	free(text);
	return rc;
}

int ctlc_call(const struct ctlc *c, const char *method, const char *path,
	     json_t *body, json_t **reply, long *status, struct sr_err *e)
{
	struct sr_http_resp r;
	json_t *j;
	int rc;

	if (reply)
		*reply = NULL;
	rc = request(c, method, path, body, NULL, "Accept: application/json", &r,
		     status, e);
	if (!rc && reply) {
		j = sr_json_load_buf(r.body ? r.body : "", r.body_len,
				     "spotrund reply", e);
		if (!j)
			rc = -SR_EPARSE;
		*reply = j;
	}
	sr_http_resp_free(&r);
	return rc;
}

int ctlc_get_text(const struct ctlc *c, const char *path, const char *accept,
		  char **out, size_t *len, struct sr_err *e)
{
	return ctlc_get_raw(c, path, accept, 0, out, len, e);
}

int ctlc_post_raw(const struct ctlc *c, const char *path, const char *ctype,
		  const void *data, size_t len, long timeout_ms, json_t **reply,
		  struct sr_err *e)
{
	char hdr[128];
	struct raw raw = { hdr, data, len, timeout_ms };
	struct sr_http_resp r;
	int rc;

	*reply = NULL;
	snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
	rc = request(c, "POST", path, NULL, &raw, "Accept: application/json", &r,
		     NULL, e);
	if (!rc) {
		*reply = sr_json_load_buf(r.body ? r.body : "", r.body_len,
					  "spotrund reply", e);
		if (!*reply)
			rc = -SR_EPARSE;
	}
	sr_http_resp_free(&r);
	return rc;
}

int ctlc_get_raw(const struct ctlc *c, const char *path, const char *accept,
		 long timeout_ms, char **out, size_t *len, struct sr_err *e)
{
	struct raw raw = { NULL, NULL, 0, timeout_ms };
	struct sr_http_resp r;
	char hdr[128];
	int rc;

	*out = NULL;
	*len = 0;
	snprintf(hdr, sizeof hdr, "Accept: %s", accept);
	rc = request(c, "GET", path, NULL, &raw, hdr, &r, NULL, e);
	if (!rc) {
		*out = malloc(r.body_len + 1);
		if (!*out) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
		} else {
			if (r.body_len)
				memcpy(*out, r.body, r.body_len);
			(*out)[r.body_len] = '\0';
			*len = r.body_len;
		}
	}
	sr_http_resp_free(&r);
	return rc;
}

/* $name if set and non-empty, else NULL. */
static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

char *ctlc_state_dir(const char *flag, struct sr_err *e)
{
	const char *dir = flag && *flag ? flag : env_nonempty("SPOTRUN_STATE_DIR");
	const char *xdg = env_nonempty("XDG_STATE_HOME");
	const char *home = env_nonempty("HOME");
	char *out = NULL;
	int n = 0;

	if (dir)
		out = strdup(dir);
	else if (xdg)
		n = asprintf(&out, "%s/spotrun", xdg);
	else if (home)
		n = asprintf(&out, "%s/.local/state/spotrun", home);
	else {
		sr_err_set(e, -EINVAL, "no state dir: set $HOME, "
			   "$SPOTRUN_STATE_DIR or --state-dir");
		return NULL;
	}
	if (n < 0)
		out = NULL;
	if (!out)
		sr_err_set(e, -ENOMEM, "state dir: out of memory");
	return out;
}

/* First line of path, trailing whitespace removed; NULL if unreadable. */
static char *first_line(const char *path, size_t max)
{
	char *buf = NULL;
	size_t n = 0;

	if (sr_fs_read_file(path, max, &buf, &n, NULL) < 0)
		return NULL;
	buf[strcspn(buf, "\r\n")] = '\0';
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return buf;
}

char *ctlc_api_url(const char *flag, const char *state_dir)
{
	const char *v = flag;
	char *path = NULL, *line = NULL, scheme[8];

	if (v && *v)
		return strdup(v);
	v = getenv("SPOTRUN_API");
	if (v && *v)
		return strdup(v);
	if (state_dir && asprintf(&path, "%s/api.url", state_dir) >= 0) {
		line = first_line(path, 4096);
		free(path);
		if (line && sr_url_scheme(line, scheme, sizeof scheme) == 1 &&
		    (!strcmp(scheme, "http") || !strcmp(scheme, "https")))
			return line;
		free(line);
	}
	return strdup(CTLC_DEFAULT_URL);
}

int ctlc_read_token_file(const char *path, char **out, struct sr_err *e)
{
	char *t = NULL;
	size_t n;
	int rc;

	*out = NULL;
	rc = sr_fs_read_file(path, 4096, &t, NULL, e);
	if (rc < 0)
		return rc;
	t[strcspn(t, "\r\n")] = '\0';
	n = strlen(t);
	if (n < TOKEN_MIN || n > TOKEN_MAX) {
		rc = sr_err_set(e, -EINVAL, "%s: token length %zu not in %d..%d",
				path, n, TOKEN_MIN, TOKEN_MAX);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)t[i] <= ' ' || (unsigned char)t[i] >= 0x7f) {
			rc = sr_err_set(e, -EINVAL, "%s: token has a non-printable "
					"character at byte %zu", path, i);
			goto fail;
		}
	}
	*out = t;
	return 0;
fail:
	explicit_bzero(t, strlen(t));
	free(t);
	return rc;
}

int ctlc_admin_token(const char *state_dir, char **out, struct sr_err *e)
{
	const char *v = getenv("SPOTRUN_TOKEN");
	char *path = NULL;
	int rc;

	*out = NULL;
	if (v && *v) {
		*out = strdup(v);
		return *out ? 0 : -ENOMEM;
	}
	if (asprintf(&path, "%s/api.token", state_dir) < 0)
		return -ENOMEM;
	rc = ctlc_read_token_file(path, out, e);
	if (rc == -ENOENT)
		rc = sr_err_set(e, rc, "no API token at %s: spotrund has not "
				"been started with this state dir (start it with "
				"'spotrun daemon start', or set $SPOTRUN_TOKEN)",
				path);
	else if (rc == -EACCES)
		rc = sr_err_set(e, rc, "%s: permission denied (the token is "
				"readable only by the user who started spotrund)",
				path);
	free(path);
	return rc;
}

/* $SPOTRUN_API_TIMEOUT (a duration: "10s", "500ms") sets the per-request
 * timeout of the CLI's client. */
static int cli_opts(struct ctlc_opts *co, struct sr_err *e)
{
	const char *v = env_nonempty("SPOTRUN_API_TIMEOUT");
	int64_t ns = 0;

	co->timeout_ms = 0;
	co->max_retries = -1;
	if (!v)
		return 0;
	if (sr_dur_parse(v, &ns, e) < 0 || ns < 1000000 ||
	    ns > INT64_C(3600) * 1000000000) {
		sr_err_clear(e);
		return sr_err_set(e, -EINVAL, "$SPOTRUN_API_TIMEOUT: '%s' is "
				  "not a duration from 1ms to 1h", v);
	}
	co->timeout_ms = (long)(ns / 1000000);
	return 0;
}

int ctlc_open_cli(const char *api, const char *state_dir,
			struct ctlc **out, struct sr_err *e)
{
	struct ctlc_opts co;
	char *dir = NULL, *url = NULL, *tok = NULL;
	struct sr_err de = { 0 };
	int rc;

	*out = NULL;
	dir = ctlc_state_dir(state_dir, &de);
	if (!dir) {
		rc = sr_err_set(e, de.code, "%s", de.msg);
		goto out;
	}
	url = ctlc_api_url(api, dir);
	if (!url) {
		rc = -ENOMEM;
		goto out;
	}
	rc = ctlc_admin_token(dir, &tok, e);
	if (rc < 0)
		goto out;
	rc = cli_opts(&co, e);
	if (rc < 0)
		goto out;
	*out = ctlc_create(url, tok, &co);
	rc = *out ? 0 : -ENOMEM;
out:
	if (tok) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
	}
	free(url);
	free(dir);
	return rc;
}
