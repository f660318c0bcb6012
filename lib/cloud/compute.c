/*
 * compute.c - the small shared parts of the compute-driver contract
 * (compute.h): error classes, idempotency keys, instance records.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"

const char *cloud_err_class_str(enum cloud_err_class c)
{
	switch (c) {
	case CLOUD_EOK: return "ok";
	case CLOUD_ECAPACITY: return "capacity";
	case CLOUD_EQUOTA: return "quota";
	case CLOUD_EAUTH: return "auth";
	case CLOUD_ETHROTTLE: return "throttle";
	case CLOUD_ETRANSIENT: return "transient";
	case CLOUD_EINVALID: return "invalid";
	case CLOUD_ECREDS: return "credentials";
	case CLOUD_ECONFLICT: return "conflict";
	case CLOUD_EFENCED: return "fenced";
	}
	return "unknown";
}

bool cloud_err_retryable(enum cloud_err_class c)
{
	return c == CLOUD_ETHROTTLE || c == CLOUD_ETRANSIENT || c == CLOUD_ECREDS;
}

static int class_code(enum cloud_err_class c)
{
	switch (c) {
	case CLOUD_EOK: return 0;
	case CLOUD_ECAPACITY: return -ENOSPC;
	case CLOUD_EQUOTA: return -EDQUOT;
	case CLOUD_EAUTH: return -EACCES;
	case CLOUD_ETHROTTLE: return -EBUSY;
	case CLOUD_ETRANSIENT: return -SR_EHTTP;
	case CLOUD_EINVALID: return -EINVAL;
	case CLOUD_ECREDS: return -EKEYEXPIRED;
	case CLOUD_ECONFLICT: return -EEXIST;
	case CLOUD_EFENCED: return -ESTALE;
	}
	return -EINVAL;
}

int cloud_err_set(struct cloud_error *err, enum cloud_err_class cls,
		  const char *code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		err->cls = cls;
		snprintf(err->code, sizeof(err->code), "%s",
			 code != NULL ? code : "");
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return class_code(cls);
}

void cloud_idem_key(const struct cloud_tags *t, char out[CLOUD_IDEM_MAX])
{
	char tail[48];
	int tl = snprintf(tail, sizeof(tail), "-%lld-%d", (long long)t->node_id,
			  t->attempt);
	int room = CLOUD_IDEM_MAX - 1 - 3 - tl;
	const char *c = t->cluster != NULL ? t->cluster : "";

	/* the cluster id is cut, never the node and attempt */
	snprintf(out, CLOUD_IDEM_MAX, "sr-%.*s%s", room > 0 ? room : 0, c, tail);
}

void cloud_instance_clear(struct cloud_instance *inst)
{
	if (inst == NULL)
		return;
	free(inst->blob);
	memset(inst, 0, sizeof(*inst));
}

void cloud_instances_free(struct cloud_instance *v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].blob);
	free(v);
}
