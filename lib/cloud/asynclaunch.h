/*
 * asynclaunch.h - a launch on its own worker thread, for a driver whose
 * cloud call blocks (cloud/compute.h, LIFECYCLE OF ONE LAUNCH): the
 * driver gives one blocking function, this runs it and answers
 * provision/poll/req_free.
 *
 *   cloud_async_start --> worker: fn(ud, copy of the launch) -->
 *     outcome stored under the request's mutex, launch->done called
 *   cloud_async_poll  --> -EAGAIN until then, the outcome after
 *   cloud_async_free  --> joins the worker, wipes the bootstrap copy
 *
 * The launch is deep-copied (its strings are borrowed only for the call);
 * the copy of the bootstrap text (it holds the node's secret) is wiped
 * before it is freed.  fn runs on the worker thread with ud shared by
 * every launch: it must be thread-safe.
 */
#ifndef SR_CLOUD_ASYNCLAUNCH_H
#define SR_CLOUD_ASYNCLAUNCH_H

#include "cloud/compute.h"

typedef int (*cloud_launch_fn)(void *ud, const struct cloud_launch *l,
			       struct cloud_instance *out,
			       struct cloud_error *err);

/* Start fn on a worker for l.  0 with *req the caller's (free with
 * cloud_async_free), or < 0 with *err (-ENOMEM, no thread; or a launch
 * without idem_key, instance_type or cluster: CLOUD_EINVALID naming
 * `who`) and *req NULL. */
int cloud_async_start(const char *who, cloud_launch_fn fn, void *ud,
		      const struct cloud_launch *l, struct cloud_req **req,
		      struct cloud_error *err);
/* The driver's poll and req_free themselves (cloud_driver_ops; st is
 * not read): -EAGAIN, 0 with *out (a copy), or the launch's error; the
 * request freed (NULL-safe) once its worker is joined. */
int cloud_async_poll(void *st, struct cloud_req *req,
		     struct cloud_instance *out, struct cloud_error *err);
void cloud_async_free(void *st, struct cloud_req *req);

#endif
