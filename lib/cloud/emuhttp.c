/*
 * emuhttp.c - the emulators' shared HTTP side, token decoding and VM
 * processes (emuhttp.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

#include "cloud/emuhttp.h"
#include "common/fsutil.h"
#include "common/proc.h"
#include "common/sigv4.h"

int emuhttp_gather(void **con_cls, const char *upload, size_t *upload_size,
		   struct emuhttp_body **out)
{
	struct emuhttp_body *k = *con_cls;

	if (!k) {
		k = calloc(1, sizeof *k);
		if (!k)
			return -1;
		*con_cls = k;
		return 0;
	}
	if (*upload_size > 0) {
		if (k->len + *upload_size > EMUHTTP_MAX_BODY) {
			k->too_big = true;
		} else {
			char *t = realloc(k->buf, k->len + *upload_size + 1);

			if (!t)
				return -1;
			k->buf = t;
			memcpy(k->buf + k->len, upload, *upload_size);
			k->len += *upload_size;
			k->buf[k->len] = '\0';
		}
		*upload_size = 0;
		return 0;
	}
	*out = k;
	return 1;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct emuhttp_body *k = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (k) {
		free(k->buf);
		free(k);
	}
	*con_cls = NULL;
}

struct MHD_Daemon *emuhttp_listen(int port, MHD_AccessHandlerCallback cb,
				  void *cls, char url[64], struct sr_err *e)
{
	struct sockaddr_in sa = { 0 };
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;

	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
			     MHD_USE_THREAD_PER_CONNECTION, (uint16_t)port, NULL,
			     NULL, cb, cls, MHD_OPTION_SOCK_ADDR,
			     (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
			     on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
			     (unsigned)330, MHD_OPTION_END);
	if (!d) {
		sr_err_set(e, -EADDRINUSE, "emulator: cannot listen on "
			   "127.0.0.1:%d", port);
		return NULL;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(url, 64, "http://127.0.0.1:%d", info ? info->port : port);
	return d;
}

int emuhttp_open(const char *what, const struct emuhttp_conf *c, char ***caps,
		 MHD_AccessHandlerCallback cb, void *cls, char work_out[512],
		 struct localmkt **mkt, void **daemon, char url[64],
		 struct sr_err *e)
{
	struct stat sb;
	int rc = emuhttp_cap_parse(caps, c->capacity, what, e);

	if (rc)
		return rc;
	if (!c->work_dir || stat(c->work_dir, &sb) || !S_ISDIR(sb.st_mode))
		return sr_err_set(e, -ENOENT, "%s: work dir '%s': not a "
				  "directory", what, c->work_dir ? c->work_dir :
				  "(none)");
	snprintf(work_out, 512, "%s", c->work_dir);
	rc = localmkt_load(c->data_dir, mkt, e);
	if (rc)
		return rc;
	*daemon = emuhttp_listen(c->port, cb, cls, url, e);
	return *daemon ? 0 : -EADDRINUSE;
}

void emuhttp_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

void emuhttp_tick_wait(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, mu, &ts);
}

enum MHD_Result emuhttp_respond(struct MHD_Connection *c, int status,
				const char *ctype, const char *body, size_t len,
				const char *const *hdrs)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	for (size_t i = 0; hdrs && hdrs[i] && hdrs[i + 1]; i += 2)
		MHD_add_response_header(r, hdrs[i], hdrs[i + 1]);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result emuhttp_json(struct MHD_Connection *c, int status, json_t *doc,
			     const char *const *hdrs)
{
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	enum MHD_Result ret;

	json_decref(doc);
	if (!s)
		return emuhttp_respond(c, 500, "text/plain", "out of memory\n",
				       14, NULL);
	ret = emuhttp_respond(c, status, "application/json; charset=UTF-8", s,
			      strlen(s), hdrs);
	free(s);
	return ret;
}

char *emuhttp_form_get(const char *body, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = body; p && *p;) {
		size_t n = strcspn(p, "&");

		if (n > kl && !strncmp(p, key, kl) && p[kl] == '=')
			return sr_sigv4_uri_decode(p + kl + 1, n - kl - 1, 1, NULL);
		p += n + (p[n] == '&');
	}
	return NULL;
}

json_t *emuhttp_jwt_part(const char *p, size_t n)
{
	char *b = malloc(n + 4);
	unsigned char *out = malloc(n + 4);
	json_t *doc = NULL;
	size_t k;
	int w;

	if (!b || !out || n == 0)
		goto out;
	for (k = 0; k < n; k++)
		b[k] = p[k] == '-' ? '+' : p[k] == '_' ? '/' : p[k];
	while (k % 4)
		b[k++] = '=';
	w = EVP_DecodeBlock(out, (unsigned char *)b, (int)k);
	if (w < 0)
		goto out;
	while (k > 0 && b[--k] == '=')
		w--;
	doc = json_loadb((char *)out, (size_t)w, 0, NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
out:
	free(b);
	free(out);
	return doc;
}

int emuhttp_jwt(const char *jwt, json_t **header, json_t **claims)
{
	const char *d1 = jwt ? strchr(jwt, '.') : NULL;
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;

	*header = d1 ? emuhttp_jwt_part(jwt, (size_t)(d1 - jwt)) : NULL;
	*claims = d2 ? emuhttp_jwt_part(d1 + 1, (size_t)(d2 - d1 - 1)) : NULL;
	if (*header && *claims && d2[1] && !strchr(d2 + 1, '.'))
		return 0;
	json_decref(*header);
	json_decref(*claims);
	*header = *claims = NULL;
	return -EINVAL;
}

int emuhttp_cap_set(char ***list, const char *key, const char *val)
{
	size_t kl = strlen(key), n = 0, cap = kl + strlen(val) + 2;
	char *ov, **nv;

	if (strcmp(val, "none") && strcmp(val, "plenty"))
		return -EINVAL;
	ov = malloc(cap);
	if (!ov)
		return -ENOMEM;
	snprintf(ov, cap, "%s=%s", key, val);
	for (; *list && (*list)[n]; n++) {
		if (!strncmp((*list)[n], key, kl) && (*list)[n][kl] == '=') {
			free((*list)[n]);
			(*list)[n] = ov;
			return 0;
		}
	}
	nv = realloc(*list, (n + 2) * sizeof *nv);
	if (!nv) {
		free(ov);
		return -ENOMEM;
	}
	nv[n] = ov;
	nv[n + 1] = NULL;
	*list = nv;
	return 0;
}

int emuhttp_cap_get(char *const *list, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; list && list[i]; i++) {
		if (!strncmp(list[i], key, kl) && list[i][kl] == '=')
			return strcmp(list[i] + kl + 1, "none") != 0;
	}
	return -1;
}

int emuhttp_cap_parse(char ***list, const char *const *opts, const char *what,
		      struct sr_err *e)
{
	for (size_t i = 0; opts && opts[i]; i++) {
		const char *eq = strchr(opts[i], '=');
		char key[128];

		if (!eq || eq == opts[i] || (size_t)(eq - opts[i]) >= sizeof key)
			return sr_err_set(e, -EINVAL, "%s: capacity '%s': "
					  "expected KEY=none|plenty", what,
					  opts[i]);
		snprintf(key, sizeof key, "%.*s", (int)(eq - opts[i]), opts[i]);
		if (emuhttp_cap_set(list, key, eq + 1))
			return sr_err_set(e, -EINVAL, "%s: capacity '%s': "
					  "expected KEY=none|plenty", what,
					  opts[i]);
	}
	return 0;
}

void emuhttp_cap_free(char **list)
{
	for (size_t i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}

static int gate_open(void *ud, int64_t pid, int64_t start)
{
	(void)ud;
	(void)pid;
	(void)start;
	return 0; /* nothing to record before it runs */
}

int emuhttp_vm_spawn(const char *work_dir, const char *name, const char *file,
		     const char *log, const char *script, const char *imds_url,
		     char dir[640], int64_t *pid, int64_t *start,
		     struct sr_err *e)
{
	char root[700], path[700], logp[700], env_root[740], env_meta[300];
	char env_home[740], env_hide[560], env_path[] = "PATH=/usr/local/bin:"
							"/usr/bin:/bin";
	char *argv[] = { "/bin/sh", path, NULL };
	char *envp[] = { env_path, env_root, env_home, env_hide, env_meta, NULL };

	snprintf(dir, 640, "%s/%s", work_dir, name);
	snprintf(root, sizeof root, "%s/root", dir);
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(logp, sizeof logp, "%s/%s", dir, log);
	if ((mkdir(dir, 0700) && errno != EEXIST) ||
	    (mkdir(root, 0700) && errno != EEXIST))
		return sr_err_set(e, -errno, "%s: %s", dir, strerror(errno));
	if (sr_fs_write_atomic(path, script, strlen(script), 0600, e))
		return -EIO;
	snprintf(env_root, sizeof env_root, "SPOTRUN_NODE_ROOT=%s", root);
	snprintf(env_home, sizeof env_home, "HOME=%s", root);
	snprintf(env_hide, sizeof env_hide, "SPOTRUN_EMU_HIDE=%s", work_dir);
	if (imds_url)
		snprintf(env_meta, sizeof env_meta, "SPOTRUN_IMDS_URL=%s",
			 imds_url);
	else
		envp[4] = NULL;
	return sr_proc_spawn(argv, envp, dir, logp, gate_open, NULL, pid, start,
			     e);
}

void emuhttp_vm_end(int64_t pid, int64_t start, const char *dir)
{
	char root[700];

	if (pid > 0)
		sr_proc_kill_session(pid, start);
	if (dir && dir[0]) {
		snprintf(root, sizeof root, "%s/root", dir);
		sr_fs_rm_tree(root);
	}
}
