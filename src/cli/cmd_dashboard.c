/*
 * cmd_dashboard.c - `spotrun dashboard`: the URL of spotrund's dashboard.
 *
 * The admin token travels in the URL fragment (#token=...), which a
 * browser never sends to a server or writes to its logs; the page keeps
 * it in sessionStorage.  So the URL printed here is a secret: it goes to
 * stdout only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/err.h"
#include "ctlcli.h"
#include "ctlclient/ctlclient.h"

#define CMD "dashboard"

static void usage(void)
{
	printf("usage: spotrun dashboard [--api URL] [--state-dir DIR] [--json]\n\n"
	       "Print the URL of spotrund's live dashboard (jobs, nodes, cost,\n"
	       "savings, preemptions).  It carries the admin token in its\n"
	       "#fragment: treat it like the token.\n");
}

static int cmd_dashboard(int argc, char **argv)
{
	struct cli_opts p = { .cmd = CMD, .more = ctlcli_common_defs,
			      .usage = usage, .flags = CLI_OPT_JSON };
	const char *api = NULL, *state_flag = NULL;
	char *dir = NULL, *url = NULL, *token = NULL;
	struct sr_err e;
	int json, c, rc = CLI_FAIL;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (c == CTLCLI_OPT_API)
			api = p.arg;
		else
			state_flag = p.arg;
	}
	if (c < 0)
		return p.status;
	json = p.json;
	dir = ctlc_state_dir(state_flag, &e);
	if (!dir) {
		fprintf(stderr, "spotrun dashboard: %s\n", e.msg);
		goto out;
	}
	url = ctlc_api_url(api, dir);
	if (!url) {
		fprintf(stderr, "spotrun dashboard: out of memory\n");
		goto out;
	}
	if (ctlc_admin_token(dir, &token, &e)) {
		fprintf(stderr, "spotrun dashboard: %s\n", sr_err_str(&e, e.code));
		goto out;
	}
	if (json)
		printf("{\"url\":\"%s/#token=%s\"}\n", url, token);
	else
		printf("%s/#token=%s\n", url, token);
	rc = CLI_OK;
out:
	free(dir);
	free(url);
	free(token);
	return rc;
}

CLI_COMMAND("dashboard", "print the URL of the live dashboard", cmd_dashboard)
