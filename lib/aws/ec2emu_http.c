/*
 * ec2emu_http.c - the EC2 emulator's HTTP side (libmicrohttpd on
 * 127.0.0.1), its clock thread, start and stop (ec2emu.h).
 *
 * Routes:
 *   POST /                                  EC2 Query API (form body)
 *   PUT  /imds/<id>/latest/api/token        IMDSv2 session token
 *   GET  /imds/<id>/latest/meta-data/instance-id
 *   GET  /imds/<id>/latest/meta-data/spot/instance-action
 *                                           404 until a notice
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/rand.h>

#include "common/timeutil.h"
#include "cloud/market.h"
#include "ec2emu_int.h"

#define TICK_MS 50
#define MAX_BODY (1u << 20)

struct conn {
	char *buf;
	size_t len, cap;
	bool started, too_big;
};

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *k = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (k != NULL) {
		free(k->buf);
		free(k);
	}
	*con_cls = NULL;
}

static enum MHD_Result respond(struct MHD_Connection *c, int status,
			       const char *ctype, const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, int status,
			    const char *s)
{
	return respond(c, status, "text/plain", s, strlen(s));
}

static enum MHD_Result imds(struct ec2emu *m, struct MHD_Connection *c,
			    const char *method, const char *url)
{
	const char *rest = url + 6; /* after "/imds/" */
	const char *slash = strchr(rest, '/');
	const char *tok;
	char id[32], buf[128];

	if (slash == NULL || (size_t)(slash - rest) >= sizeof(id))
		return text(c, 404, "not found\n");
	memcpy(id, rest, (size_t)(slash - rest));
	id[slash - rest] = '\0';
	if (strcmp(slash, "/latest/api/token") == 0) {
		if (strcmp(method, "PUT") != 0)
			return text(c, 405, "use PUT\n");
		if (MHD_lookup_connection_value(c, MHD_HEADER_KIND,
			"X-aws-ec2-metadata-token-ttl-seconds") == NULL)
			return text(c, 400, "missing ttl header\n");
		if (!ec2emu__imds_token_ok(m, id, NULL, buf, sizeof(buf)))
			return text(c, 404, "no such instance\n");
		return text(c, 200, buf);
	}
	tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					  "X-aws-ec2-metadata-token");
	if (!ec2emu__imds_token_ok(m, id, tok, NULL, 0))
		return text(c, 401, "unauthorized\n");
	if (strcmp(slash, "/latest/meta-data/instance-id") == 0)
		return text(c, 200, id);
	if (strcmp(slash, "/latest/meta-data/spot/instance-action") == 0) {
		if (ec2emu__imds_notice(m, id, buf, sizeof(buf)) < 0)
			return text(c, 404, "not found\n");
		return respond(c, 200, "application/json", buf, strlen(buf));
	}
	return text(c, 404, "not found\n");
}

static enum MHD_Result query_api(struct ec2emu *m, struct MHD_Connection *c,
				 struct conn *k)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Authorization");
	struct emu_params p;
	struct emu_answer a;
	enum MHD_Result ret;
	static const char noauth[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors>"
		"<Error><Code>AuthFailure</Code><Message>AWS was not able to "
		"validate the provided access credentials</Message></Error>"
		"</Errors><RequestID>00000000-0000-4000-8000-000000000000"
		"</RequestID></Response>";

	if (auth == NULL || strncmp(auth, "AWS4-HMAC-SHA256 Credential=", 28) != 0)
		return respond(c, 401, "text/xml;charset=UTF-8", noauth,
			       sizeof(noauth) - 1);
	if (ec2emu__params_parse(k->buf != NULL ? k->buf : "", k->len, &p) < 0)
		return text(c, 500, "out of memory\n");
	{
		const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     "User-Agent");
		const char *ep = ua != NULL ? strstr(ua, "lease-epoch ") : NULL;

		p.epoch = ep != NULL ? strtoll(ep + 12, NULL, 10) : 0;
	}
	if (m->run_latency_ms > 0) {
		const char *act = ec2emu__param(&p, "Action");

		if (act != NULL && strcmp(act, "RunInstances") == 0) {
			struct timespec ts = { m->run_latency_ms / 1000,
					       (m->run_latency_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL); /* this connection's thread only */
		}
	}
	ec2emu__action(m, &p, &a);
	ec2emu__params_free(&p);
	if (a.body == NULL)
		return text(c, 500, "out of memory\n");
	ret = respond(c, a.status, "text/xml;charset=UTF-8", a.body, a.len);
	free(a.body);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ec2emu *m = cls;
	struct conn *k = *con_cls;

	(void)version;
	if (k == NULL) {
		k = calloc(1, sizeof(*k));
		if (k == NULL)
			return MHD_NO;
		*con_cls = k;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (k->len + *upload_size > MAX_BODY) {
			k->too_big = true;
		} else {
			if (k->len + *upload_size + 1 > k->cap) {
				size_t nc = (k->len + *upload_size + 1) * 2;
				char *t = realloc(k->buf, nc);

				if (t == NULL)
					return MHD_NO;
				k->buf = t;
				k->cap = nc;
			}
			memcpy(k->buf + k->len, upload, *upload_size);
			k->len += *upload_size;
			k->buf[k->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (k->too_big)
		return text(c, 413, "body too large\n");
	if (strncmp(url, "/imds/", 6) == 0)
		return imds(m, c, method, url);
	if (strcmp(url, "/") == 0 && strcmp(method, "POST") == 0)
		return query_api(m, c, k);
	return text(c, 404, "not found\n");
}

static void *clock_main(void *arg)
{
	struct ec2emu *m = arg;
	struct timespec ts;

	pthread_mutex_lock(&m->mu);
	while (!m->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&m->cv, &m->mu, &ts);
		if (m->stopping)
			break;
		pthread_mutex_unlock(&m->mu);
		ec2emu__tick(m);
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* The AWS pools of the region, from the local market. */
static int load_pools(struct ec2emu *m, struct sr_err *e)
{
	size_t n = localmkt_npools(m->mkt);

	m->pools = calloc(n > 0 ? n : 1, sizeof(*m->pools));
	if (m->pools == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct cloud_offering o;

		if (localmkt_describe(m->mkt, (int)i, m->trace_start, &o) < 0 ||
		    strcmp(o.cloud, "aws") != 0 || strcmp(o.region, m->region) != 0 ||
		    o.zone[0] == '\0')
			continue;
		m->pools[m->npools].index = (int)i;
		snprintf(m->pools[m->npools].zone, sizeof(m->pools[0].zone), "%s",
			 o.zone);
		snprintf(m->pools[m->npools].type, sizeof(m->pools[0].type), "%s",
			 o.instance_type);
		m->npools++;
	}
	if (m->npools == 0)
		return sr_err_set(e, -SR_ENOTFOUND, "%s: no AWS offerings with a "
				  "zone in region %s", "catalog", m->region);
	return 0;
}

int ec2emu_start(const struct ec2emu_opts *o, struct ec2emu **out,
		 struct sr_err *e)
{
	struct ec2emu *m = calloc(1, sizeof(*m));
	struct sockaddr_in sa = { 0 };
	const union MHD_DaemonInfo *info;
	struct stat sb;
	int rc;

	*out = NULL;
	if (m == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->mu, NULL);
	/* the clock thread's deadlines are on CLOCK_MONOTONIC: a condvar on
	 * the default (realtime) clock saw them as long past and spun */
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	snprintf(m->region, sizeof(m->region), "%s",
		 o->region != NULL ? o->region : "us-east-1");
	m->time_scale = o->time_scale > 0 ? o->time_scale : 1.0;
	m->trace_start = o->trace_start_s;
	m->boot_s = o->boot_s > 0 ? o->boot_s : 0;
	m->notice_s = o->notice_s > 0 ? o->notice_s : 120;
	m->t0_ns = sr_time_mono_ns();
	m->epoch0_ns = sr_time_real_ns();
	m->epoch0 = m->epoch0_ns / 1000000000;
	RAND_bytes((unsigned char *)&m->id_salt, sizeof(m->id_salt));
	ec2emu__limits_init(m, o);
	if (o->request_log != NULL) {
		m->log = fopen(o->request_log, "ae");
		if (m->log == NULL) {
			rc = sr_err_set(e, -errno, "ec2 emulator: request log %s: %s",
					o->request_log, strerror(errno));
			goto fail;
		}
	}
	if (o->work_dir == NULL || stat(o->work_dir, &sb) != 0 ||
	    !S_ISDIR(sb.st_mode)) {
		rc = sr_err_set(e, -ENOENT, "ec2 emulator: work dir '%s': not a "
				"directory", o->work_dir ? o->work_dir : "(none)");
		goto fail;
	}
	snprintf(m->work_dir, sizeof(m->work_dir), "%s", o->work_dir);
	rc = localmkt_load(o->data_dir, &m->mkt, e);
	if (rc < 0)
		goto fail;
	rc = load_pools(m, e);
	if (rc < 0) {
		sr_err_prefix(e, "%s", o->data_dir);
		goto fail;
	}
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				     MHD_USE_THREAD_PER_CONNECTION,
				     (uint16_t)o->port, NULL, NULL, on_request, m,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
				     MHD_OPTION_END);
	if (m->daemon == NULL) {
		rc = sr_err_set(e, -EADDRINUSE, "ec2 emulator: cannot listen on "
				"127.0.0.1:%d", o->port);
		goto fail;
	}
	info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(m->url, sizeof(m->url), "http://127.0.0.1:%d",
		 info != NULL ? info->port : o->port);
	if (pthread_create(&m->clock, NULL, clock_main, m) != 0) {
		rc = sr_err_set(e, -EAGAIN, "ec2 emulator: cannot start a thread");
		goto fail;
	}
	m->clock_started = true;
	*out = m;
	return 0;
fail:
	ec2emu_stop(m);
	return rc;
}

const char *ec2emu_url(const struct ec2emu *m)
{
	return m->url;
}

void ec2emu_stop(struct ec2emu *m)
{
	if (m == NULL)
		return;
	if (m->daemon != NULL)
		MHD_stop_daemon(m->daemon);
	if (m->clock_started) {
		pthread_mutex_lock(&m->mu);
		m->stopping = true;
		pthread_cond_signal(&m->cv);
		pthread_mutex_unlock(&m->mu);
		pthread_join(m->clock, NULL);
	}
	ec2emu__free_state(m);
	if (m->log != NULL)
		fclose(m->log);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
