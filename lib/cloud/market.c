/*
 * market.c - helpers shared by every market view (cloud/market.h).
 */
#include <stdint.h>

#include "cloud/market.h"

int cloud_offering_cmp(const void *a, const void *b)
{
	const struct cloud_offering *x = a, *y = b;
	sr_micros px = x->spot_per_h >= 0 ? x->spot_per_h : INT64_MAX;
	sr_micros py = y->spot_per_h >= 0 ? y->spot_per_h : INT64_MAX;

	if (px != py)
		return px < py ? -1 : 1;
	if (x->ondemand_per_h != y->ondemand_per_h)
		return x->ondemand_per_h < y->ondemand_per_h ? -1 : 1;
	return x->pool - y->pool;
}
