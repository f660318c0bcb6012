/*
 * testsrv.c - canned-reply HTTP server for tests, over libmicrohttpd.
 *
 * Request life cycle inside MHD (thread per connection):
 *     uri_log_cb        -> allocate struct pending, keep the raw URI
 *     on_request #1     -> note method/path, return (headers are in)
 *     on_request #2..n  -> append upload data to the body
 *     on_request last   -> record the request, pick the reply, sleep
 *                          delay_ms (in slices, so stop is prompt), queue
 *     on_completed      -> free struct pending
 * Records are heap objects held in an array of pointers, so a pointer
 * returned by sr_testsrv_req() stays valid until sr_testsrv_stop().
 */
#include "testsrv.h"

#include <ctype.h>
#include <errno.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_BODY ((size_t)64 << 20)

struct reply {
	int status, delay_ms;
	char *ctype, *body;
	char *hdrs;         /* "Name: value\n" lines, or NULL */
};

struct route {
	char *method, *path;
	struct reply *replies;
	size_t n, next;
};

struct sr_testsrv {
	struct MHD_Daemon *d;
	int port;
	char url[64];
	pthread_mutex_t mu;
	struct route *routes;
	size_t nroutes;
	struct sr_testsrv_req **reqs;
	size_t nreqs;
	sr_testsrv_fn fn;
	void *ud;
	int stopping;       /* atomic: set by stop, read by delayed replies */
};

struct pending {
	char *uri;          /* raw request target, with query */
	char *body;
	size_t len, cap;
	bool started, too_big, oom;
};

static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct pending *p = calloc(1, sizeof(*p));

	(void)cls;
	(void)c;
	if (p == NULL)
		return NULL;
	p->uri = strdup(uri != NULL ? uri : "");
	if (p->uri == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct pending *p = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (p == NULL)
		return;
	free(p->uri);
	free(p->body);
	free(p);
	*con_cls = NULL;
}

static void append(struct pending *p, const char *data, size_t n)
{
	if (p->oom || p->too_big)
		return;
	if (p->len + n > MAX_BODY) {
		p->too_big = true;
		return;
	}
	if (p->len + n + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		char *nb;

		while (cap < p->len + n + 1)
			cap *= 2;
		nb = realloc(p->body, cap);
		if (nb == NULL) {
			p->oom = true;
			return;
		}
		p->body = nb;
		p->cap = cap;
	}
	memcpy(p->body + p->len, data, n);
	p->len += n;
}

struct hdr_acc {
	char *p;
	size_t len;
	bool oom;
};

static enum MHD_Result hdr_iter(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	struct hdr_acc *h = cls;
	size_t kl = strlen(key), vl = value != NULL ? strlen(value) : 0;
	char *np;

	(void)kind;
	np = realloc(h->p, h->len + kl + vl + 4);
	if (np == NULL) {
		h->oom = true;
		return MHD_NO;
	}
	h->p = np;
	for (size_t i = 0; i < kl; i++)
		h->p[h->len + i] = (char)tolower((unsigned char)key[i]);
	h->len += kl;
	memcpy(h->p + h->len, ": ", 2);
	h->len += 2;
	if (vl > 0)
		memcpy(h->p + h->len, value, vl);
	h->len += vl;
	h->p[h->len++] = '\n';
	h->p[h->len] = '\0';
	return MHD_YES;
}

static void req_free(struct sr_testsrv_req *r)
{
	if (r == NULL)
		return;
	free(r->headers);
	free(r->body);
	free(r);
}

/* Build a record; NULL on out-of-memory. */
static struct sr_testsrv_req *record_new(struct MHD_Connection *c,
					 const char *method,
					 struct pending *p)
{
	struct sr_testsrv_req *r = calloc(1, sizeof(*r));
	struct hdr_acc h = { 0 };
	size_t plen = strcspn(p->uri, "?");

	if (r == NULL)
		return NULL;
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->path, sizeof(r->path), "%.*s", (int)plen, p->uri);
	snprintf(r->query, sizeof(r->query), "%s",
		 p->uri[plen] == '?' ? p->uri + plen + 1 : "");
	MHD_get_connection_values(c, MHD_HEADER_KIND, hdr_iter, &h);
	r->headers = h.p != NULL ? h.p : strdup("");
	r->body = malloc(p->len + 1);
	if (h.oom || r->headers == NULL || r->body == NULL) {
		req_free(r);
		return NULL;
	}
	if (p->len > 0)
		memcpy(r->body, p->body, p->len);
	r->body[p->len] = '\0';
	r->body_len = p->len;
	return r;
}

static int store(struct sr_testsrv *s, struct sr_testsrv_req *r)
{
	struct sr_testsrv_req **nr;

	nr = realloc(s->reqs, (s->nreqs + 1) * sizeof(*nr));
	if (nr == NULL)
		return -ENOMEM;
	s->reqs = nr;
	s->reqs[s->nreqs++] = r;
	return 0;
}

static struct route *route_find(struct sr_testsrv *s, const char *method,
				const char *path)
{
	for (size_t i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].method, method) == 0 &&
		    strcmp(s->routes[i].path, path) == 0)
			return &s->routes[i];
	}
	return NULL;
}

static void delay(struct sr_testsrv *s, int ms)
{
	while (ms > 0 && !__atomic_load_n(&s->stopping, __ATOMIC_RELAXED)) {
		int step = ms < 10 ? ms : 10;
		struct timespec ts = { 0, step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

static void add_headers(struct MHD_Response *resp, const char *hdrs)
{
	char line[512];

	while (hdrs != NULL && *hdrs != '\0') {
		size_t n = strcspn(hdrs, "\n");
		char *colon;

		if (n < sizeof(line)) {
			memcpy(line, hdrs, n);
			line[n] = '\0';
			colon = strchr(line, ':');
			if (colon != NULL) {
				*colon++ = '\0';
				while (*colon == ' ')
					colon++;
				MHD_add_response_header(resp, line, colon);
			}
		}
		hdrs += n + (hdrs[n] == '\n');
	}
}

static enum MHD_Result respond_h(struct MHD_Connection *c, int status,
				 const char *ctype, const char *hdrs,
				 const char *body, size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body,
					       MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		return MHD_NO;
	add_headers(resp, hdrs);
	if (ctype != NULL && ctype[0] != '\0')
		MHD_add_response_header(resp, "Content-Type", ctype);
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result respond(struct MHD_Connection *c, int status,
			       const char *ctype, const char *body, size_t len)
{
	return respond_h(c, status, ctype, NULL, body, len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct sr_testsrv *s = cls;
	struct pending *p = *con_cls;
	struct sr_testsrv_req *r;
	struct reply rep = { 0 };
	struct route *rt;
	sr_testsrv_fn fn;
	void *ud;
	char *dbody = NULL, *dctype = NULL;
	size_t dlen = 0;
	int dstatus = 404;
	enum MHD_Result ret;

	(void)url;
	(void)version;
	if (p == NULL)
		return MHD_NO;
	if (!p->started) {
		p->started = true;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		append(p, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (p->oom)
		return respond(c, 500, "text/plain", "out of memory\n", 14);
	if (p->too_big)
		return respond(c, 413, "text/plain", "body too large\n", 15);
	r = record_new(c, method, p);
	if (r == NULL)
		return respond(c, 500, "text/plain", "out of memory\n", 14);

	pthread_mutex_lock(&s->mu);
	if (store(s, r) < 0) {
		pthread_mutex_unlock(&s->mu);
		req_free(r);
		return respond(c, 500, "text/plain", "out of memory\n", 14);
	}
	rt = route_find(s, r->method, r->path);
	if (rt != NULL) {
		rep = rt->replies[rt->next];
		if (rt->next + 1 < rt->n)
			rt->next++;
	}
	fn = s->fn;
	ud = s->ud;
	pthread_mutex_unlock(&s->mu);

	if (rt != NULL) {
		delay(s, rep.delay_ms);
		return respond_h(c, rep.status, rep.ctype, rep.hdrs, rep.body,
				 rep.body != NULL ? strlen(rep.body) : 0);
	}
	if (fn != NULL && fn(ud, r, &dstatus, &dctype, &dbody, &dlen) == 0) {
		ret = respond(c, dstatus, dctype, dbody != NULL ? dbody : "",
			      dbody != NULL ? dlen : 0);
		free(dbody);
		free(dctype);
		return ret;
	}
	free(dbody);
	free(dctype);
	return respond(c, 404, "text/plain", "no route\n", 9);
}

struct sr_testsrv *sr_testsrv_start(int port)
{
	struct sr_testsrv *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { 0 };
	const union MHD_DaemonInfo *info;

	if (s == NULL)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_THREAD_PER_CONNECTION,
				(uint16_t)port, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, s,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
				MHD_OPTION_END);
	if (s->d == NULL)
		goto fail;
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info == NULL || info->port == 0)
		goto fail;
	s->port = info->port;
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	return s;
fail:
	sr_testsrv_stop(s);
	return NULL;
}

int sr_testsrv_port(const struct sr_testsrv *s)
{
	return s->port;
}

const char *sr_testsrv_url(const struct sr_testsrv *s)
{
	return s->url;
}

int sr_testsrv_reply(struct sr_testsrv *s, const char *method,
		     const char *path, int status, const char *ctype,
		     const char *body, int delay_ms)
{
	return sr_testsrv_reply_hdrs(s, method, path, status, ctype, NULL, body,
				     delay_ms);
}

int sr_testsrv_reply_hdrs(struct sr_testsrv *s, const char *method,
			  const char *path, int status, const char *ctype,
			  const char *hdrs, const char *body, int delay_ms)
{
	struct reply rep = { status, delay_ms, NULL, NULL, NULL };
	struct route *rt, *nr;
	struct reply *nrep;
	int rc = 0;

	rep.ctype = strdup(ctype != NULL ? ctype : "");
	rep.body = strdup(body != NULL ? body : "");
	rep.hdrs = hdrs != NULL ? strdup(hdrs) : NULL;
	if (rep.ctype == NULL || rep.body == NULL || (hdrs && !rep.hdrs))
		goto oom;
	pthread_mutex_lock(&s->mu);
	rt = route_find(s, method, path);
	if (rt == NULL) {
		nr = realloc(s->routes, (s->nroutes + 1) * sizeof(*nr));
		if (nr == NULL)
			goto oom_locked;
		s->routes = nr;
		rt = &s->routes[s->nroutes];
		memset(rt, 0, sizeof(*rt));
		rt->method = strdup(method);
		rt->path = strdup(path);
		if (rt->method == NULL || rt->path == NULL) {
			free(rt->method);
			free(rt->path);
			goto oom_locked;
		}
		s->nroutes++;
	}
	nrep = realloc(rt->replies, (rt->n + 1) * sizeof(*nrep));
	if (nrep == NULL)
		goto oom_locked;
	rt->replies = nrep;
	rt->replies[rt->n++] = rep;
	pthread_mutex_unlock(&s->mu);
	return rc;
oom_locked:
	pthread_mutex_unlock(&s->mu);
oom:
	free(rep.ctype);
	free(rep.body);
	free(rep.hdrs);
	return -ENOMEM;
}

void sr_testsrv_set_handler(struct sr_testsrv *s, sr_testsrv_fn fn, void *ud)
{
	pthread_mutex_lock(&s->mu);
	s->fn = fn;
	s->ud = ud;
	pthread_mutex_unlock(&s->mu);
}

size_t sr_testsrv_nreq(struct sr_testsrv *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->nreqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

const struct sr_testsrv_req *sr_testsrv_req(struct sr_testsrv *s, size_t idx)
{
	const struct sr_testsrv_req *r = NULL;

	pthread_mutex_lock(&s->mu);
	if (idx < s->nreqs)
		r = s->reqs[idx];
	pthread_mutex_unlock(&s->mu);
	return r;
}

size_t sr_testsrv_count(struct sr_testsrv *s, const char *method,
			const char *path)
{
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreqs; i++) {
		if (strcmp(s->reqs[i]->method, method) == 0 &&
		    strcmp(s->reqs[i]->path, path) == 0)
			n++;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

int sr_testsrv_req_header(const struct sr_testsrv_req *r, const char *name,
			  char *buf, size_t n)
{
	size_t nl = strlen(name);
	const char *p = r->headers;

	while (p != NULL && *p != '\0') {
		const char *eol = strchr(p, '\n');
		size_t ll = eol != NULL ? (size_t)(eol - p) : strlen(p);

		if (ll >= nl + 1 && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1;
			size_t vl = ll - nl - 1;

			if (vl > 0 && *v == ' ') {
				v++;
				vl--;
			}
			if (n > 0) {
				size_t k = vl < n - 1 ? vl : n - 1;

				memcpy(buf, v, k);
				buf[k] = '\0';
			}
			return 0;
		}
		p = eol != NULL ? eol + 1 : NULL;
	}
	return -1;
}

void sr_testsrv_stop(struct sr_testsrv *s)
{
	if (s == NULL)
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
	if (s->d != NULL)
		MHD_stop_daemon(s->d);
	for (size_t i = 0; i < s->nroutes; i++) {
		for (size_t j = 0; j < s->routes[i].n; j++) {
			free(s->routes[i].replies[j].ctype);
			free(s->routes[i].replies[j].body);
			free(s->routes[i].replies[j].hdrs);
		}
		free(s->routes[i].replies);
		free(s->routes[i].method);
		free(s->routes[i].path);
	}
	free(s->routes);
	for (size_t i = 0; i < s->nreqs; i++)
		req_free(s->reqs[i]);
	free(s->reqs);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
