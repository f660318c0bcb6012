/*
 * server.c - the HTTP listener: libmicrohttpd glue, body limits, Content-
 * Type checks, and the hand-off to the router.
 *
 * DESIGN.  MHD runs an epoll thread pool (cfg.http_threads).  The access
 * callback is called (1) once with the headers, (2) once per body chunk,
 * (3) once more with no data.  On (1) a request whose Content-Length is
 * over CTL_BODY_MAX by more than CTL_DRAIN_MAX is answered 413 at once
 * (a smaller excess is read and dropped, so the client, still sending,
 * gets the answer rather than a reset); on (2) chunks are appended until
 * the limit, past which the rest is discarded and 413 answered on (3).  Routing, authentication and the handler all run on (3).  One
 * exception to the limit: POST /v1/uploads (a job's files, a tar of up
 * to BUNDLE_MAX_BYTES) carrying the admin token - checked on (1), from
 * the header alone, so nobody without it makes the daemon hold more
 * than CTL_BODY_MAX of a body.
 *
 * Every answer is JSON.  libmicrohttpd 0.9.75 writes some answers itself,
 * as HTML, before any callback of ours runs, and has no hook to replace
 * them.  So the limits that can be ours are ours: the connection pool
 * (CTL_CONN_MEMORY) is large enough that a request head far over our own
 * limits (path, query, CTL_HEADERS_MAX) still reaches on_request, which
 * answers JSON 400 / 431.  What stays libmicrohttpd's (a head over the
 * pool, a malformed Content-Length, header line or chunk, an HTTP
 * version other than 1.0/1.1) is listed in docs/api.md, "Errors".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <openssl/crypto.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "bundle/bundle.h"
#include "ctl/api_body.h"
#include "ctl/ctl_int.h"
#include "ctl/teamtok.h"
#include "ctl/routes.h"

/* how far over its limit a body is still read (and dropped) to answer 413 */
#define CTL_DRAIN_MAX (8u * 1024 * 1024)

struct conn {
	char *body;
	size_t len, cap;
	size_t max;         /* this request's body limit (set on call 1) */
	bool too_big;
	bool started;       /* the header call (1) has been seen */
	size_t query_len;   /* bytes after '?' in the raw request target */
};

/* MHD's URI log hook runs first, with the raw request target, and its
 * return value becomes the connection's con_cls: the only place that
 * sees the query string's length (the access callback gets the path). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
	struct conn *cn = calloc(1, sizeof *cn);
	const char *q = uri ? strchr(uri, '?') : NULL;

	(void)cls;
	(void)mc;
	if (cn && q)
		cn->query_len = strlen(q + 1);
	return cn;
}

const char *ctl__req_header(const struct ctl_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *ctl_req_query(const struct ctl_req *rq, const char *key)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result send_resp(struct MHD_Connection *mc, struct ctl_resp *rs)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(rs->body_len, rs->body,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(rs->body);
		return MHD_NO;
	}
	rs->body = NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				rs->ctype ? rs->ctype : "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (rs->allow[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs->allow);
	ret = MHD_queue_response(mc, (unsigned)rs->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *mc, int status,
				  const char *msg)
{
	struct ctl_resp rs = { 0 };

	if (ctl_resp_error(&rs, status, "%s", msg))
		return MHD_NO;
	return send_resp(mc, &rs);
}

static bool ctype_is(const char *ct, const char *want)
{
	size_t n = strlen(want);

	return ct && strncasecmp(ct, want, n) == 0 &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static bool json_ctype(const char *ct)
{
	return ctype_is(ct, "application/json");
}

/* The body limit of a request, from its head: a job's files (POST
 * /v1/uploads, application/x-tar) may be BUNDLE_MAX_BYTES when the
 * request carries the admin token; anything else CTL_BODY_MAX. */
static size_t body_max(struct ctl *c, struct MHD_Connection *mc,
		       const char *method, const char *url)
{
	struct ctl_req rq = { .ctl = c };
	unsigned char d[CTL_DIGEST_LEN];
	const char *tok;

	if (strcmp(method, "POST") || strcmp(url, "/v1/uploads"))
		return CTL_BODY_MAX;
	rq.auth_header = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_AUTHORIZATION);
	tok = ctl_req_bearer(&rq);
	if (!tok)
		return CTL_BODY_MAX;
	ctl_token_digest(tok, d);
	return CRYPTO_memcmp(d, c->admin_digest, CTL_DIGEST_LEN) == 0 ||
	       ctl__team_token_find(c, d) ? BUNDLE_MAX_BYTES : CTL_BODY_MAX;
}

/* libmicrohttpd's own messages (a request it refused itself, a socket
 * error) as one of our log lines, not raw text on stderr. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof msg, fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	for (char *p = msg; *p; p++) {
		if (*p == '"' || *p == '\n')
			*p = '\'';
	}
	sr_warn("http", "libmicrohttpd", "detail=\"%s\"", msg);
}

/* What the first callback checks of a request's header block. */
struct head_scan {
	size_t len;     /* bytes, as on the wire */
	int n_length;   /* Content-Length fields */
	int n_transfer; /* Transfer-Encoding fields */
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct head_scan *h = cls;

	(void)kind;
	h->len += (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 4;
	if (key && strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		h->n_length++;
	if (key && strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		h->n_transfer++;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ctl *c = cls;
	struct conn *cn = *con_cls;
	struct ctl_req rq;
	struct ctl_resp rs = { 0 };
	enum MHD_Result ret;

	(void)version;
	if (!cn) {
		cn = calloc(1, sizeof *cn);
		if (!cn)
			return MHD_NO;
		*con_cls = cn;
	}
	if (!cn->started) {
		const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
				MHD_HTTP_HEADER_CONTENT_LENGTH);
		struct head_scan h = { 0 };

		cn->started = true;
		MHD_get_connection_values(mc, MHD_HEADER_KIND, scan_header, &h);
		if (h.len > CTL_HEADERS_MAX)
			return send_error(mc, 431, "request header fields over "
					  "16384 bytes");
		/* Two framings a proxy in front could read differently from
		 * us (request smuggling, RFC 9112 6.3): refuse, never pick */
		if (h.n_length > 1)
			return send_error(mc, 400, "more than one Content-Length "
					  "header");
		if (h.n_length && h.n_transfer)
			return send_error(mc, 400, "both Content-Length and "
					  "Transfer-Encoding");
		if (strlen(url) > CTL_PATH_MAX)
			return send_error(mc, 400,
					  "request path longer than 1024 bytes");
		if (cn->query_len > CTL_QUERY_MAX)
			return send_error(mc, 400, "query string longer than "
					  "1024 bytes");
		cn->max = body_max(c, mc, method, url);
		if (cl && strtoull(cl, NULL, 10) > cn->max) {
			cn->too_big = true;
			/* a body at most CTL_DRAIN_MAX over the limit is read
			 * and dropped, and 413 answered at its end: answered
			 * now, the connection closes under a client still
			 * sending, which then sees a reset, not our answer */
			if (strtoull(cl, NULL, 10) - cn->max <= CTL_DRAIN_MAX)
				return MHD_YES;
			return send_error(mc, 413, cn->max == CTL_BODY_MAX ?
					  "request body over 1048576 bytes" :
					  "a job's files over the upload limit");
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (cn->too_big || cn->len + n > cn->max) {
			cn->too_big = true;
			return MHD_YES;
		}
		if (cn->len + n + 1 > cn->cap) {
			size_t nc = cn->cap ? cn->cap : 4096;
			char *nb;

			while (nc < cn->len + n + 1)
				nc *= 2;
			nb = realloc(cn->body, nc);
			if (!nb)
				return MHD_NO;
			cn->body = nb;
			cn->cap = nc;
		}
		memcpy(cn->body + cn->len, upload, n);
		cn->len += n;
		cn->body[cn->len] = '\0';
		return MHD_YES;
	}
	if (cn->too_big)
		return send_error(mc, 413, cn->max == CTL_BODY_MAX ?
				  "request body over 1048576 bytes" :
				  "a job's files over the upload limit");
	if (atomic_load(&c->stopping))
		return send_error(mc, 503, "spotrund is shutting down");

	memset(&rq, 0, sizeof rq);
	rq.ctl = c;
	rq.method = method;
	rq.path = url;
	rq.conn = mc;
	rq.body = cn->body;
	rq.body_len = cn->len;
	rq.auth_header = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_AUTHORIZATION);
	rq.ctype = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
					       MHD_HTTP_HEADER_CONTENT_TYPE);
	if (cn->len > 0 && strncmp(url, "/imds/", 6) != 0 && !json_ctype(rq.ctype) &&
	    !(strcmp(url, "/v1/uploads") == 0 &&
	      ctype_is(rq.ctype, "application/x-tar")))
		return send_error(mc, 415, "request body must be Content-Type: "
				  "application/json");
	ctl__dispatch(&rq, &rs);
	if (!rs.body)
		return send_error(mc, 500, "no response");
	ret = send_resp(mc, &rs);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	(void)cls;
	(void)mc;
	(void)toe;
	if (cn) {
		free(cn->body);
		free(cn);
		*con_cls = NULL;
	}
}

/* Load the TLS certificate and key named in the config (PEM text, owned
 * by c until ctl__http_stop).  The key file must not be readable by
 * others. */
static int tls_load(struct ctl *c, struct sr_err *e)
{
	struct stat sb;
	int rc;

	if (!c->cfg.tls_cert && !c->cfg.tls_key)
		return 0;
	if (!c->cfg.tls_cert || !c->cfg.tls_key)
		return sr_err_set(e, -EINVAL, "--tls-cert and --tls-key go "
				  "together");
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return sr_err_set(e, -SR_EUNSUPPORTED, "--tls-cert: this "
				  "libmicrohttpd has no TLS support");
	if (stat(c->cfg.tls_key, &sb) == 0 && (sb.st_mode & 077))
		return sr_err_set(e, -EACCES, "--tls-key %s: mode %03o lets "
				  "other users read the private key; chmod 600 "
				  "it", c->cfg.tls_key, sb.st_mode & 0777);
	rc = sr_fs_read_file(c->cfg.tls_cert, 1 << 20, &c->tls_cert_pem, NULL, e);
	if (!rc)
		rc = sr_fs_read_file(c->cfg.tls_key, 1 << 20, &c->tls_key_pem,
				     NULL, e);
	if (rc)
		sr_err_prefix(e, "TLS");
	return rc;
}

/* 127.0.0.0/8: reachable only from this host. */
static bool loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

/* Bind and listen here rather than in libmicrohttpd, so a busy port is
 * reported with its number and errno ("127.0.0.1:7077: Address already
 * in use") instead of MHD's "Failed to bind to port 0".  Returns the fd
 * or a negative code with e set. */
static int listen_fd(const struct ctl *c, const struct sockaddr_in *sa,
		     struct sr_err *e)
{
	int one = 1, err;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return sr_err_set(e, -errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) == 0 &&
	    listen(fd, 4096) == 0)
		return fd;
	err = errno;
	close(fd);
	return sr_err_set(e, -err, "cannot listen on %s:%d: %s%s", c->cfg.listen_host,
			  c->cfg.listen_port, strerror(err),
			  err == EADDRINUSE ? " (another spotrund? choose a port "
			  "with --listen HOST:PORT)" : "");
}

int ctl__http_prepare(struct ctl *c, struct sr_err *e)
{
	struct in_addr a;
	int rc;

	if (inet_pton(AF_INET, c->cfg.listen_host, &a) != 1)
		return sr_err_set(e, -EINVAL, "--listen: '%s' is not an IPv4 "
				  "address", c->cfg.listen_host);
	rc = tls_load(c, e);
	if (rc)
		return rc;
	if (!loopback(&a) && !c->tls_cert_pem) {
		if (!c->cfg.insecure_listen)
			return sr_err_set(e, -EACCES, "--listen %s: other hosts "
					  "could reach the API, and every token "
					  "would cross the network in clear; give "
					  "--tls-cert and --tls-key (or, on a "
					  "trusted network only, --insecure-listen)",
					  c->cfg.listen_host);
		sr_warn("ctl", "INSECURE: the API listens on a non-loopback "
			"address without TLS; bearer tokens and job secrets "
			"cross the network in clear", "listen=%s",
			c->cfg.listen_host);
	}
	return 0;
}

int ctl__http_start(struct ctl *c, struct sr_err *e)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ERROR_LOG;
	struct MHD_OptionItem tls[3] = {
		{ MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	int fd;

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->cfg.listen_port);
	if (inet_pton(AF_INET, c->cfg.listen_host, &sa.sin_addr) != 1)
		return sr_err_set(e, -EINVAL, "--listen: '%s' is not an IPv4 "
				  "address", c->cfg.listen_host);
	if (c->tls_cert_pem) {
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0,
						  c->tls_cert_pem };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0,
						  c->tls_key_pem };
	}
	fd = listen_fd(c, &sa, e);
	if (fd < 0)
		return fd;
	c->httpd = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, c,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, c, /* first, or some
							       go to stderr */
		MHD_OPTION_ARRAY, tls,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)c->cfg.http_threads,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, c,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)20000,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CTL_CONN_MEMORY,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096,
		MHD_OPTION_END);
	if (!c->httpd) {
		close(fd);
		return sr_err_set(e, -EIO, "cannot start the HTTP server on %s:%d%s",
				  c->cfg.listen_host, c->cfg.listen_port,
				  c->tls_cert_pem ? " (a bad TLS certificate or key?)"
						  : "");
	}
	di = MHD_get_daemon_info(c->httpd, MHD_DAEMON_INFO_BIND_PORT);
	c->port = di ? di->port : c->cfg.listen_port;
	/* agents and the CLI on this host reach a wildcard bind on loopback */
	snprintf(c->url, sizeof c->url, "%s://%s:%d",
		 c->tls_cert_pem ? "https" : "http",
		 sa.sin_addr.s_addr == htonl(INADDR_ANY) ? "127.0.0.1"
							 : c->cfg.listen_host,
		 c->port);
	return 0;
}

void ctl__http_stop(struct ctl *c)
{
	if (c->httpd) {
		MHD_stop_daemon(c->httpd);
		c->httpd = NULL;
	}
	free(c->tls_cert_pem);
	if (c->tls_key_pem) {
		explicit_bzero(c->tls_key_pem, strlen(c->tls_key_pem));
		free(c->tls_key_pem);
	}
	c->tls_cert_pem = c->tls_key_pem = NULL;
}
