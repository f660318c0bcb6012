/*
 * asynclaunch.c - one launch on a worker thread (asynclaunch.h).
 *
 * Request states:   RUNNING --worker ends--> DONE (rc, instance | error)
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/asynclaunch.h"

struct cloud_req {
	pthread_t th;
	pthread_mutex_t mu;
	bool done;
	int rc;
	struct cloud_instance inst;
	struct cloud_error err;
	cloud_launch_fn fn;
	void *ud;
	struct cloud_launch l;     /* strings below are its storage */
	char *s[8];
};

static void req_destroy(struct cloud_req *r)
{
	pthread_mutex_destroy(&r->mu);
	cloud_instance_clear(&r->inst);
	if (r->s[4]) /* the bootstrap copy: the node's secret */
		explicit_bzero(r->s[4], strlen(r->s[4]));
	for (size_t i = 0; i < sizeof r->s / sizeof r->s[0]; i++)
		free(r->s[i]);
	free(r);
}

static void *worker(void *arg)
{
	struct cloud_req *r = arg;
	struct cloud_instance inst = { 0 };
	struct cloud_error err = { 0 };
	int rc = r->fn(r->ud, &r->l, &inst, &err);

	pthread_mutex_lock(&r->mu);
	r->rc = rc;
	r->inst = inst;
	r->err = err;
	r->done = true;
	pthread_mutex_unlock(&r->mu);
	if (r->l.done)
		r->l.done(r->l.done_ud);
	return NULL;
}

/* *dst = a copy of src in r->s[i] (NULL stays NULL); false on OOM. */
static bool keep(struct cloud_req *r, int i, const char *src, const char **dst)
{
	*dst = NULL;
	if (!src)
		return true;
	r->s[i] = strdup(src);
	*dst = r->s[i];
	return r->s[i] != NULL;
}

int cloud_async_start(const char *who, cloud_launch_fn fn, void *ud,
		      const struct cloud_launch *l, struct cloud_req **req,
		      struct cloud_error *err)
{
	struct cloud_req *r;
	bool ok;
	int rc;

	*req = NULL;
	if (!l->idem_key || !l->idem_key[0] ||
	    strlen(l->idem_key) >= CLOUD_IDEM_MAX || !l->instance_type ||
	    !l->tags.cluster)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "%s provision: "
				     "idempotency key (< %d bytes), instance "
				     "type and cluster are required", who,
				     CLOUD_IDEM_MAX);
	r = calloc(1, sizeof *r);
	if (!r)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	r->fn = fn;
	r->ud = ud;
	r->l = *l;
	ok = keep(r, 0, l->idem_key, &r->l.idem_key) &&
	     keep(r, 1, l->zone, &r->l.zone) &&
	     keep(r, 2, l->instance_type, &r->l.instance_type) &&
	     keep(r, 3, l->tags.cluster, &r->l.tags.cluster) &&
	     keep(r, 4, l->bootstrap, &r->l.bootstrap) &&
	     keep(r, 5, l->image, &r->l.image) &&
	     keep(r, 6, l->subnet, &r->l.subnet) &&
	     keep(r, 7, l->security_group, &r->l.security_group);
	if (!ok) {
		req_destroy(r);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	}
	rc = pthread_create(&r->th, NULL, worker, r);
	if (rc) {
		req_destroy(r);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "%s provision: "
				     "cannot start a thread: %s", who,
				     strerror(rc));
	}
	*req = r;
	return 0;
}

int cloud_async_poll(void *st, struct cloud_req *r,
		     struct cloud_instance *out, struct cloud_error *err)
{
	int rc;

	(void)st;
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&r->mu);
	if (!r->done) {
		pthread_mutex_unlock(&r->mu);
		return -EAGAIN;
	}
	rc = r->rc;
	if (rc < 0) {
		if (err)
			*err = r->err;
	} else {
		*out = r->inst;
		out->blob = r->inst.blob ? strdup(r->inst.blob) : NULL;
		if (r->inst.blob && !out->blob)
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "out of memory");
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void cloud_async_free(void *st, struct cloud_req *r)
{
	(void)st;
	if (!r)
		return;
	pthread_join(r->th, NULL);
	req_destroy(r);
}
