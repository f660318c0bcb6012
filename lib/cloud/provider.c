/*
 * provider.c - the small shared parts of the provider contract
 * (provider.h): closing an open provider, clearing a check's answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/provider.h"

void cloud_provider_close(struct cloud_provider *p)
{
	if (!p)
		return;
	/* the market first: a provider's market may borrow its driver's
	 * client (aws), never the other way round */
	if (p->mkt.ops)
		p->mkt.ops->destroy(p->mkt.st);
	if (p->drv.ops)
		p->drv.ops->destroy(p->drv.st);
	if (p->ops && p->ops->destroy)
		p->ops->destroy(p->st);
	memset(p, 0, sizeof *p);
}

void cloud_check_clear(struct cloud_check *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nzones; i++)
		free(c->zones[i]);
	free(c->zones);
	memset(c, 0, sizeof *c);
}

enum cloud_cred_state cloud_cred_state_of(int rc)
{
	switch (rc) {
	case 0:
		return CLOUD_CRED_VALID;
	case -SR_ENOTFOUND:
		return CLOUD_CRED_MISSING;
	case -EACCES:
	case -EPERM:
	case -EKEYEXPIRED:
	case -EKEYREJECTED:
	case -SR_EPARSE:
		return CLOUD_CRED_BAD;
	default:
		return CLOUD_CRED_UNVERIFIED;
	}
}

const char *cloud_cred_state_str(enum cloud_cred_state s)
{
	switch (s) {
	case CLOUD_CRED_VALID:
		return "valid";
	case CLOUD_CRED_MISSING:
		return "missing";
	case CLOUD_CRED_BAD:
		return "bad";
	case CLOUD_CRED_UNVERIFIED:
		return "unverified";
	case CLOUD_CRED_NONE:
		return "none needed";
	case CLOUD_CRED_UNSET:
		break;
	}
	return "unknown";
}
