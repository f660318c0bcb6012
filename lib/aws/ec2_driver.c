/*
 * ec2_driver.c - the EC2 client as a compute driver (cloud/compute.h).
 *
 * provision() runs RunInstances (the launch's idempotency key as
 * ClientToken) on a worker thread of its own (cloud/asynclaunch.h: the
 * launch copied, the outcome stored, launch->done called); poll() reads
 * the outcome without blocking, req_free() joins the thread.
 * terminate() and list() are synchronous TerminateInstances /
 * DescribeInstances(tag:spotrun:cluster).
 */
#include <stdlib.h>
#include <string.h>

#include "cloud/asynclaunch.h"
#include "ec2_int.h"

/* The worker's call (cloud/asynclaunch.h): RunInstances for the copy of
 * the launch the request holds. */
static int run_fn(void *ud, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err)
{
	struct ec2_run run = {
		.client_token = l->idem_key, .instance_type = l->instance_type,
		.zone = l->zone, .spot = l->spot,
		.max_price_per_h = l->max_price_per_h, .tags = l->tags,
		.user_data = l->bootstrap, .image_id = l->image,
		.subnet_id = l->subnet, .security_group_id = l->security_group,
		.epoch = l->epoch, /* fenced just before it is sent */
	};

	return ec2_run_instances(ud, &run, out, err);
}

static int drv_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **out, struct cloud_error *err)
{
	return cloud_async_start("aws", run_fn, st, l, out, err);
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
	.poll = cloud_async_poll,
	.req_free = cloud_async_free,
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
