/*
 * cmd_azemu.c - `spotrun azure-emulator`: serve Entra's token endpoint,
 * the ARM calls of the azure driver, the Retail Prices API and each VM's
 * IMDS with Scheduled Events for the local spot cloud's Azure pools on
 * 127.0.0.1 (lib/azure/azemu.h), so the azure driver (or an SDK) can be
 * pointed at it.  Runs until SIGINT or SIGTERM; SIGUSR1 evicts every
 * running spot VM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/azemu.h"
#include "cli.h"
#include "cliopt.h"
#include "emurun.h"

static int evict_all(void *ud)
{
	return azemu_preempt(ud, NULL, true);
}

static void usage(void)
{
	printf("usage: spotrun azure-emulator --work-dir DIR [--data DIR] "
	       "[--location L]\n"
	       "                              [--port N] [--time-scale X] "
	       "[--notice-s S]\n"
	       "                              [--boot-s S] [--page N] "
	       "[--quota-vms N]\n"
	       "                              [--capacity SIZE=none|plenty]...\n\n"
	       "Answer Microsoft Entra's token endpoint (client secret and\n"
	       "client certificate), the Azure Resource Manager calls of the\n"
	       "azure driver (virtualMachines PUT/GET/list/DELETE with\n"
	       "Azure-AsyncOperation operations and Retry-After; the NICs, OS\n"
	       "disks and public IPs a VM brings; SkuNotAvailable,\n"
	       "AllocationFailed, quota and 429 errors), the Retail Prices API\n"
	       "and each VM's IMDS (<url>/imds/<vm>/metadata/: Scheduled Events\n"
	       "whose acknowledgement evicts the VM early) on 127.0.0.1, for the\n"
	       "Azure pools of one location of the local spot cloud, whose\n"
	       "availability replays real traces.  A VM is its customData run\n"
	       "by /bin/sh in DIR/<vm>/.  Prints the URL on the first line; runs\n"
	       "until SIGINT or SIGTERM.  SIGUSR1 evicts every running spot VM.\n"
	       "Test controls: POST <url>/emu/preempt?name=N,\n"
	       "/emu/capacity?size=S&spot=none|plenty, /emu/throttle?n=K,\n"
	       "/emu/leak?name=N; GET <url>/emu/state, /emu/requests.\n\n"
	       "  --work-dir DIR   VM directories (must exist)\n"
	       "  --data DIR       catalog + traces (default $SPOTRUN_DATA or ./data)\n"
	       "  --location L     the location (default eastus)\n"
	       "  --port N         port (default 0: any free port)\n"
	       "  --time-scale X   cloud seconds per real second (default 1)\n"
	       "  --notice-s S     Preempt to NotBefore, cloud s (default 30)\n"
	       "  --boot-s S       a create's operation, real s (default 0.2)\n"
	       "  --page N         VMs, resources, prices a page (default 50)\n"
	       "  --quota-vms N    VMs at most: more is a quota error (default:\n"
	       "                   no limit)\n"
	       "  --capacity SIZE=none|plenty  the size's spot capacity, whatever\n"
	       "                   the trace says\n\n"
	       "Use it with: AZURE_AUTHORITY_HOST=<url> and the providers.azure\n"
	       "keys endpoint: <url>, prices_endpoint: <url>.\n");
}

enum { OPT_LOCATION = CLI_KEY_LONG, OPT_NOTICE_S, OPT_BOOT_S, OPT_PAGE,
       OPT_QUOTA };

static const struct cli_optdef azemu_defs[] = {
	{ "location", OPT_LOCATION, CLI_ARG },
	{ "notice-s", OPT_NOTICE_S, CLI_ARG },
	{ "boot-s", OPT_BOOT_S, CLI_ARG },
	{ "page", OPT_PAGE, CLI_ARG },
	{ "quota-vms", OPT_QUOTA, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_azemu(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "azure-emulator", .defs = azemu_defs,
			      .more = emurun_defs, .usage = usage };
	struct emurun_common c = { .cmd = "azure-emulator", .cap_key = "SIZE" };
	struct azemu_opts o = { 0 };
	struct azemu *m = NULL;
	struct sr_err e = { 0 };
	double d = 0;
	int opt, rc;

	while ((opt = cli_opts_next(&p, argc, argv)) > 0) {
		rc = emurun_option(&p, opt, &c);
		if (rc)
			rc = rc == 1 ? 0 : rc;
		else if (opt == OPT_LOCATION)
			o.location = p.arg;
		else if (opt == OPT_NOTICE_S || opt == OPT_BOOT_S)
			rc = emurun_number(&p, opt == OPT_NOTICE_S ? &o.notice_s :
					   &o.boot_s, 3600);
		else if (!(rc = emurun_number(&p, &d, 100000)))
			*(opt == OPT_PAGE ? &o.page : &o.quota_vms) = (int)d;
		if (rc)
			return CLI_USAGE;
	}
	if (opt < 0)
		return p.status;
	rc = emurun_check(&c);
	if (rc)
		return rc;
	o.conf = c.conf;
	rc = azemu_start(&o, &m, &e);
	if (rc < 0) {
		fprintf(stderr, "spotrun azure-emulator: %s\n", sr_err_str(&e, rc));
		return CLI_FAIL;
	}
	emurun_serve("azure-emulator", azemu_url(m), evict_all, m);
	azemu_stop(m);
	return CLI_OK;
}

CLI_COMMAND("azure-emulator", "serve the Azure APIs for the local spot cloud",
	    cmd_azemu)
