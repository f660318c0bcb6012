/*
 * web_assets.c - the dashboard's static files, embedded in spotrund.
 *
 * The files under src/spotrund/web/ are pulled into .rodata by the
 * assembler's .incbin (paths relative to the repository root, where make
 * runs the compiler), so the daemon serves them with no install step and
 * nothing is fetched from the network at run time.  The Makefile lists
 * web/ as a prerequisite of this object so an edited asset rebuilds it.
 */
#include <stddef.h>
#include <string.h>

#include "web_assets.h"

#define ASSET(sym, file)                                                    \
	__asm__(".section .rodata\n"                                        \
		".balign 16\n"                                              \
		#sym ":\n"                                                  \
		".incbin \"src/spotrund/web/" file "\"\n"                   \
		#sym "_end:\n"                                              \
		".byte 0\n"                                                 \
		".previous\n");                                             \
	extern const char sym[], sym##_end[]

ASSET(web_index_html, "index.html");
ASSET(web_dashboard_js, "dashboard.js");
ASSET(web_dashboard_css, "dashboard.css");

int web_asset_get(const char *path, const char **body, size_t *len,
		  const char **ctype)
{
	static const struct {
		const char *path, *ctype;
		const char *start, *end;
	} assets[] = {
		{ "/", "text/html; charset=utf-8", web_index_html, web_index_html_end },
		{ "/index.html", "text/html; charset=utf-8", web_index_html,
		  web_index_html_end },
		{ "/dashboard.js", "text/javascript; charset=utf-8", web_dashboard_js,
		  web_dashboard_js_end },
		{ "/dashboard.css", "text/css; charset=utf-8", web_dashboard_css,
		  web_dashboard_css_end },
	};

	for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++) {
		if (!strcmp(path, assets[i].path)) {
			*body = assets[i].start;
			*len = (size_t)(assets[i].end - assets[i].start);
			*ctype = assets[i].ctype;
			return 0;
		}
	}
	return -1;
}
