/*
 * azpage.h - following an Azure list's next page (ARM's nextLink, the
 * Retail Prices API's NextPageLink) without leaving the service asked.
 */
#ifndef SR_AZURE_AZPAGE_H
#define SR_AZURE_AZPAGE_H

#include <stddef.h>

/* The next page's URL into url[cap] when *next (malloc'd, freed and
 * set NULL here) is on base: base itself, then '/' or '?' (a bearer
 * token goes with it).  0, or -EINVAL when it leaves base or does not
 * fit. */
int azpage_follow(char *url, size_t cap, char **next, const char *base);

#endif
