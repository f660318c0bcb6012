/*
 * azpage.c - the next page of an Azure list (azpage.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/azpage.h"

int azpage_follow(char *url, size_t cap, char **next, const char *base)
{
	size_t bl = strlen(base);
	char *n = *next;
	int rc = 0;

	*next = NULL;
	if (strncmp(n, base, bl) || (n[bl] != '/' && n[bl] != '?') ||
	    strlen(n) >= cap)
		rc = -EINVAL;
	else
		snprintf(url, cap, "%s", n);
	free(n);
	return rc;
}
