/*
 * web_assets.h - the dashboard's embedded static files.
 */
#ifndef SR_SPOTRUND_WEB_ASSETS_H
#define SR_SPOTRUND_WEB_ASSETS_H

#include <stddef.h>

/* The asset served at `path` ("/", "/dashboard.js", ...): borrowed body,
 * length and Content-Type.  0, or -1 if there is none. */
int web_asset_get(const char *path, const char **body, size_t *len,
		  const char **ctype);

#endif
