/*
 * lambda_int.h - the Lambda client's internals (lambda_api.c: options,
 * requests, parsers; lambda_drv.c: the launch, its bootstrap, the
 * driver).
 */
#ifndef SR_LAMBDA_LAMBDA_INT_H
#define SR_LAMBDA_LAMBDA_INT_H

#include "common/http.h"
#include "lambda/lambda.h"

struct lambda {
	char *endpoint, *key, *key_name, *key_file, *user, *ssh, *region;
	long timeout_ms, boot_timeout_ms, poll_ms;
};

/* One API call (path under the endpoint): 0 with *r a 200, else < 0
 * with *err (its class) and *r the answer if any. */
int lambda__call(struct lambda *l, const char *method, const char *path,
		 const char *body, const char *op, struct sr_http_resp *r,
		 struct cloud_error *err);

#endif
