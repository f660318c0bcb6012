/*
 * cmd_dashboard.c - `spotrun dashboard`: the URL of spotrund's dashboard.
 *
 * The admin token travels in the URL fragment (#token=...), which a
 * browser never sends to a server or writes to its logs; the page keeps
 * it in sessionStorage.  So the URL printed here is a secret: it goes to
 * stdout only.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/err.h"
#include "ctlclient/ctlclient.h"

#define CMD "dashboard"

static int cmd_dashboard(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "api", required_argument, NULL, 'a' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *api = NULL, *state_flag = NULL;
	char *dir = NULL, *url = NULL, *token = NULL;
	struct sr_err e;
	int json = 0, c, rc = CLI_FAIL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("usage: spotrun dashboard [--api URL] [--state-dir DIR] [--json]\n\n"
			       "Print the URL of spotrund's live dashboard (jobs, nodes, cost,\n"
			       "savings, preemptions).  It carries the admin token in its\n"
			       "#fragment: treat it like the token.\n");
			return CLI_OK;
		case 'J':
			json = 1;
			break;
		case 'a':
			api = optarg;
			break;
		case 'S':
			state_flag = optarg;
			break;
		default:
			return cli_usage_error(CMD, "unknown or incomplete argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
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
