/*
 * provider.c - the small shared parts of the provider contract
 * (provider.h): closing an open provider, clearing a check's answer.
 */
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
