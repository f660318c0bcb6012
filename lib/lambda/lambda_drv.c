/*
 * lambda_drv.c - a Lambda launch and the driver (lambda.h).
 *
 * One launch, on its worker thread (cloud/asynclaunch.h):
 *
 *   list: an instance named for this node and attempt?
 *     yes -> that one (a relaunch after a crash launches nothing)
 *     no  -> POST launch with the name
 *   poll the instance every poll_ms: booting -> wait; active -> its IP;
 *     terminated/unhealthy while booting -> failed (transient)
 *   bootstrap: the node script piped to ssh USER@IP sudo -n sh -s,
 *     again every poll_ms while ssh cannot connect (exit 255: sshd not
 *     up yet), until boot_timeout; any other failure ends the launch
 *   -> the instance, running
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cloud/asynclaunch.h"
#include "common/timeutil.h"
#include "lambda_int.h"

#define SSH_TIMEOUT_MS 120000

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The instance named for l among the cluster's (not terminated). */
static int find(struct lambda *c, const struct cloud_launch *l,
		struct cloud_instance *out, struct cloud_error *err)
{
	struct cloud_instance *v = NULL;
	size_t n = 0;
	int rc = lambda_list(c, l->tags.cluster, &v, &n, err);

	if (rc)
		return rc;
	rc = -SR_ENOTFOUND;
	for (size_t i = 0; i < n; i++) {
		if (rc == -SR_ENOTFOUND && v[i].node_id == l->tags.node_id &&
		    v[i].attempt == l->tags.attempt) {
			*out = v[i];
			memset(&v[i], 0, sizeof v[i]);
			rc = 0;
		}
	}
	cloud_instances_free(v, n);
	return rc;
}

static int launch(struct lambda *c, const struct cloud_launch *l,
		  const char *name, struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	json_t *doc = json_pack("{s:s, s:s, s:[s], s:i, s:s}", "region_name",
				c->region ? c->region : "", "instance_type_name",
				l->instance_type, "ssh_key_names",
				c->key_name ? c->key_name : "", "quantity", 1,
				"name", name);
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	int rc;

	json_decref(doc);
	if (!body)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	rc = lambda__call(c, "POST", "/instance-operations/launch", body,
			  "launch", &r, err);
	sr_http_resp_free(&r);
	free(body);
	return rc;
}

/* An IP as ssh gets it: digits, hex, '.' and ':' only. */
static bool ip_plain(const char *ip)
{
	return ip && *ip && strspn(ip, "0123456789abcdefABCDEF.:") == strlen(ip);
}

/* Pipe script to ssh; its exit status, or < 0. */
static int ssh_run(struct lambda *c, const char *ip, const char *script)
{
	char dest[256];
	const char *argv[16];
	int k = 0, p[2], status = 0;
	int64_t end = sr_time_mono_ns() + (int64_t)SSH_TIMEOUT_MS * 1000000;
	size_t len = strlen(script), off = 0;
	pid_t pid;

	snprintf(dest, sizeof dest, "%s@%s", c->user, ip);
	argv[k++] = c->ssh;
	if (c->key_file) {
		argv[k++] = "-i";
		argv[k++] = c->key_file;
	}
	argv[k++] = "-o";
	argv[k++] = "BatchMode=yes";
	argv[k++] = "-o";
	argv[k++] = "StrictHostKeyChecking=accept-new";
	argv[k++] = "-o";
	argv[k++] = "ConnectTimeout=10";
	argv[k++] = "--";
	argv[k++] = dest;
	argv[k++] = "sudo -n sh -s";
	argv[k] = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(p[0], 0);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	/* a reader gone early: EPIPE (spotrund ignores SIGPIPE) */
	while (off < len) {
		ssize_t w = write(p[1], script + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(p[1]);
	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (sr_time_mono_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		sleep_ms(50);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -EINTR;
}

int lambda_launch(struct lambda *c, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err)
{
	int64_t end = sr_time_mono_ns() + c->boot_timeout_ms * 1000000;
	char name[CLOUD_IDEM_MAX];
	const char *ip;
	json_t *blob = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	cloud_idem_key(&l->tags, name);
	if (!c->region || !c->key_name)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "lambda launch: "
				     "providers.lambda needs a region and "
				     "ssh_key_name");
	rc = find(c, l, out, err);
	if (rc == -SR_ENOTFOUND) {
		rc = launch(c, l, name, err);
		if (rc)
			return rc;
		rc = -SR_ENOTFOUND;
	}
	/* booting -> active (its IP), within the boot timeout */
	while (rc == -SR_ENOTFOUND || (rc == 0 && out->state == CLOUD_INST_PENDING)) {
		if (sr_time_mono_ns() > end)
			return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "lambda "
					     "launch %s: not active within %ld s",
					     name, c->boot_timeout_ms / 1000);
		sleep_ms(c->poll_ms);
		cloud_instance_clear(out);
		rc = find(c, l, out, err);
		if (rc && rc != -SR_ENOTFOUND)
			return rc;
	}
	if (out->state != CLOUD_INST_RUNNING) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "lambda launch %s:"
				   " instance %s is %s", name, out->id, out->reason);
		goto fail;
	}
	blob = out->blob ? json_loads(out->blob, 0, NULL) : NULL;
	ip = json_string_value(json_object_get(blob, "ip"));
	if (!ip_plain(ip)) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "lambda launch %s:"
				   " instance %s has no usable IP", name, out->id);
		goto fail;
	}
	/* the bootstrap step: the node's script over ssh */
	for (;;) {
		int st = ssh_run(c, ip, l->bootstrap ? l->bootstrap : "true\n");

		if (st == 0)
			break;
		if (st != 255 || sr_time_mono_ns() > end) {
			rc = cloud_err_set(err, st == 255 ? CLOUD_ETRANSIENT :
					   CLOUD_EINVALID, NULL, "lambda bootstrap "
					   "%s: %s %s@%s exited %d", out->id, c->ssh,
					   c->user, ip, st);
			goto fail;
		}
		sleep_ms(c->poll_ms);
	}
	json_decref(blob);
	out->spot = false;
	return 0;
fail:
	json_decref(blob);
	cloud_instance_clear(out);
	return rc;
}

/* ---- the driver ----------------------------------------------------- */

static int launch_fn(void *ud, const struct cloud_launch *l,
		     struct cloud_instance *out, struct cloud_error *err)
{
	return lambda_launch(ud, l, out, err);
}

static int drv_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **req, struct cloud_error *err)
{
	if (l->spot)
		return cloud_err_set(err, CLOUD_ECAPACITY, NULL, "lambda sells "
				     "no spot capacity");
	return cloud_async_start("lambda", launch_fn, st, l, req, err);
}

static int drv_terminate(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err)
{
	return lambda_terminate(st, ids, n, err);
}

static int drv_list(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err)
{
	return lambda_list(st, cluster, out, n, err);
}

static void drv_destroy(void *st)
{
	lambda_close(st);
}

static const struct cloud_driver_ops lambda_driver_ops = {
	.name = "lambda",
	.provision = drv_provision,
	.poll = cloud_async_poll,
	.req_free = cloud_async_free,
	.terminate = drv_terminate,
	.list = drv_list,
	.destroy = drv_destroy,
};

void lambda_driver_init(struct lambda *c, struct cloud_driver *out)
{
	out->ops = &lambda_driver_ops;
	out->st = c;
}
