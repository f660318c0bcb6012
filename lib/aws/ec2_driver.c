/*
 * ec2_driver.c - the EC2 client as a compute driver (cloud/compute.h).
 *
 * provision() copies the launch and starts one worker thread that runs
 * RunInstances (with the launch's idempotency key as ClientToken); the
 * thread stores the outcome under the request's mutex and calls
 * launch->done.  poll() reads the outcome without blocking.  req_free()
 * joins the thread.  terminate() and list() are synchronous
 * TerminateInstances / DescribeInstances(tag:spotrun:cluster).
 *
 * Request states:   RUNNING --worker ends--> DONE (rc, instance | error)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ec2_int.h"

struct cloud_req {
	pthread_t th;
	pthread_mutex_t mu;
	bool done;
	int rc;
	struct cloud_instance inst;
	struct cloud_error err;
	struct ec2 *c;
	struct ec2_run run;        /* strings below are its storage */
	char *idem, *type, *zone, *cluster, *bootstrap;
	char *image, *subnet, *group;
	void (*cb)(void *ud);
	void *cb_ud;
};

static void req_destroy(struct cloud_req *r)
{
	pthread_mutex_destroy(&r->mu);
	cloud_instance_clear(&r->inst);
	free(r->idem);
	free(r->type);
	free(r->zone);
	free(r->cluster);
	free(r->bootstrap);
	free(r->image);
	free(r->subnet);
	free(r->group);
	free(r);
}

static void *worker(void *arg)
{
	struct cloud_req *r = arg;
	struct cloud_instance inst;
	struct cloud_error err = { 0 };
	int rc = ec2_run_instances(r->c, &r->run, &inst, &err);

	pthread_mutex_lock(&r->mu);
	r->rc = rc;
	r->inst = inst;
	r->err = err;
	r->done = true;
	pthread_mutex_unlock(&r->mu);
	if (r->cb != NULL)
		r->cb(r->cb_ud);
	return NULL;
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*oom = true;
	return d;
}

static int drv_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **out, struct cloud_error *err)
{
	struct cloud_req *r;
	bool oom = false;
	int rc;

	*out = NULL;
	if (l->idem_key == NULL || l->idem_key[0] == '\0' ||
	    strlen(l->idem_key) >= CLOUD_IDEM_MAX || l->instance_type == NULL ||
	    l->tags.cluster == NULL)
		return cloud_err_set(err, CLOUD_EINVALID, NULL,
				     "aws provision: idempotency key (< %d bytes), "
				     "instance type and cluster are required",
				     CLOUD_IDEM_MAX);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	r->c = st;
	r->idem = dup_or_null(l->idem_key, &oom);
	r->type = dup_or_null(l->instance_type, &oom);
	r->zone = dup_or_null(l->zone, &oom);
	r->cluster = dup_or_null(l->tags.cluster, &oom);
	r->bootstrap = dup_or_null(l->bootstrap, &oom);
	r->image = dup_or_null(l->image, &oom);
	r->subnet = dup_or_null(l->subnet, &oom);
	r->group = dup_or_null(l->security_group, &oom);
	if (oom) {
		req_destroy(r);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	}
	r->run = (struct ec2_run){
		.client_token = r->idem, .instance_type = r->type,
		.zone = r->zone, .spot = l->spot,
		.max_price_per_h = l->max_price_per_h, .tags = l->tags,
		.user_data = r->bootstrap, .image_id = r->image,
		.subnet_id = r->subnet, .security_group_id = r->group,
		.epoch = l->epoch, /* fenced just before it is sent */
	};
	r->run.tags.cluster = r->cluster;
	r->cb = l->done;
	r->cb_ud = l->done_ud;
	rc = pthread_create(&r->th, NULL, worker, r);
	if (rc != 0) {
		req_destroy(r);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
				     "aws provision: cannot start a thread: %s",
				     strerror(rc));
	}
	*out = r;
	return 0;
}

static int drv_poll(void *st, struct cloud_req *r, struct cloud_instance *out,
		    struct cloud_error *err)
{
	int rc;

	(void)st;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->mu);
	if (!r->done) {
		pthread_mutex_unlock(&r->mu);
		return -EAGAIN;
	}
	rc = r->rc;
	if (rc < 0) {
		if (err != NULL)
			*err = r->err;
	} else {
		*out = r->inst;
		out->blob = r->inst.blob != NULL ? strdup(r->inst.blob) : NULL;
		if (r->inst.blob != NULL && out->blob == NULL)
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "out of memory");
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static void drv_req_free(void *st, struct cloud_req *r)
{
	(void)st;
	if (r == NULL)
		return;
	pthread_join(r->th, NULL);
	req_destroy(r);
}

static int drv_terminate(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err)
{
	return ec2_terminate_instances(st, ids, n, err);
}

static int drv_list(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err)
{
	return ec2_describe_instances(st, cluster, NULL, out, n, err);
}

static void drv_destroy(void *st)
{
	ec2_close(st);
}

static const struct cloud_driver_ops ec2_driver_ops = {
	.name = "aws",
	.provision = drv_provision,
	.poll = drv_poll,
	.req_free = drv_req_free,
	.terminate = drv_terminate,
	.list = drv_list,
	.destroy = drv_destroy,
};

int ec2_driver_new(struct ec2 *c, struct cloud_driver *out, struct sr_err *e)
{
	if (c == NULL) {
		out->ops = NULL;
		out->st = NULL;
		return sr_err_set(e, -EINVAL, "aws driver: no EC2 client");
	}
	out->ops = &ec2_driver_ops;
	out->st = c;
	return 0;
}
