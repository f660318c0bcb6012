/*
 * boot.c - the agent's first contact on a node that booted with a
 * one-time bootstrap secret (lib/ctl/nodeboot.h has the protocol): POST
 * /v1/nodes/<id>/bootstrap with the secret as the bearer and a nonce
 * drawn here, retried (with the same nonce, so a reply lost on the way
 * is answered again) until spotrund answers; the node token that comes
 * back lives in this process's memory only, masked in every log line.
 * A refused secret (used, expired, another node's) ends the agent: the
 * node never registers and the control plane replaces it.
 */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "common/log.h"
#include "common/random.h"

/* A token as nodeboot.c makes them: 32..256 lower-case hex. */
static int token_ok(const char *t)
{
	size_t n = 0;

	for (; t[n]; n++) {
		if (!((t[n] >= '0' && t[n] <= '9') || (t[n] >= 'a' && t[n] <= 'f')))
			return 0;
	}
	return n >= 32 && n <= 256;
}

int agent__exchange(struct agent *ag)
{
	char nonce[65];
	const char *tok;
	json_t *b = NULL, *reply = NULL;
	struct ctlc *cli;
	int rc = sr_random_hex(nonce, 32);

	if (rc < 0) {
		sr_error("agent", "bootstrap: no randomness", "err=\"%s\"",
			 sr_strerror(rc));
		return rc;
	}
	b = json_pack("{s:s}", "nonce", nonce);
	if (!b)
		return -ENOMEM;
	rc = agent__post_first(ag, "bootstrap", b, &reply);
	json_decref(b);
	explicit_bzero(nonce, sizeof nonce);
	if (rc < 0) {
		sr_error("agent", "bootstrap refused: no node token", "node=%lld"
			 " rc=%d (the secret is used, expired or not this "
			 "node's; the control plane replaces this node)",
			 (long long)ag->o->node_id, rc);
		return rc;
	}
	tok = json_string_value(json_object_get(reply, "token"));
	if (!tok || !token_ok(tok)) {
		sr_error("agent", "bad bootstrap reply", "node=%lld error=\"token: "
			 "expected 32..256 hex characters\"",
			 (long long)ag->o->node_id);
		json_decref(reply);
		return -SR_EPARSE;
	}
	sr_log_secret(tok);
	cli = ctlc_create(ag->o->api, tok, &agent__client_opts);
	json_decref(reply); /* json_decref does not wipe: the token's bytes
			       stay in freed memory of this process only */
	if (!cli)
		return -ENOMEM;
	ctlc_destroy(ag->cli);
	ag->cli = cli;
	sr_info("agent", "node token received", "node=%lld",
		(long long)ag->o->node_id);
	return 0;
}
