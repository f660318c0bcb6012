/*
 * teamtok.c - API tokens with default labels (see teamtok.h).
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "ctl/ctl_int.h"
#include "ctl/teamtok.h"
#include "finops/fconf.h"
#include "market/jobspec.h"

int ctl__team_tokens_load(struct ctl *c, struct sr_err *e)
{
	struct finops_conf conf;
	char path[2400], tok[CTL_TOKEN_HEX + 1];
	int rc;

	snprintf(path, sizeof path, "%s/finops.json", c->state_dir);
	rc = finops_conf_load(path, &conf, e);
	if (rc || !conf.ntokens)
		goto out;
	snprintf(path, sizeof path, "%s/tokens", c->state_dir);
	rc = sr_fs_mkdir_p(path, 0700);
	if (rc) {
		rc = sr_err_set(e, rc, "%s: %s", path, sr_strerror(rc));
		goto out;
	}
	c->team_tokens = calloc(conf.ntokens, sizeof *c->team_tokens);
	if (!c->team_tokens) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < conf.ntokens; i++) {
		const struct finops_token *t = &conf.tokens[i];
		struct ctl_team_token *k = &c->team_tokens[i];

		snprintf(path, sizeof path, "%s/tokens/%s.token", c->state_dir,
			 t->name);
		rc = ctl_token_load_or_create(path, tok, e);
		if (rc)
			goto out;
		sr_log_secret(tok);
		ctl_token_digest(tok, k->digest);
		explicit_bzero(tok, sizeof tok);
		memcpy(k->name, t->name, sizeof k->name);
		memcpy(k->team, t->team, sizeof k->team);
		memcpy(k->project, t->project, sizeof k->project);
		memcpy(k->cost_center, t->cost_center, sizeof k->cost_center);
		c->nteam_tokens++;
	}
	sr_info("ctl", "team tokens", "n=%zu", c->nteam_tokens);
out:
	finops_conf_free(&conf);
	return rc;
}

void ctl__team_tokens_free(struct ctl *c)
{
	if (c->team_tokens)
		explicit_bzero(c->team_tokens, c->nteam_tokens * sizeof *c->team_tokens);
	free(c->team_tokens);
	c->team_tokens = NULL;
	c->nteam_tokens = 0;
}

int ctl__team_token_find(const struct ctl *c, const unsigned char *d)
{
	int found = 0;

	/* every token compared: the time taken says nothing of which */
	for (size_t i = 0; i < c->nteam_tokens; i++)
		if (CRYPTO_memcmp(d, c->team_tokens[i].digest, CTL_DIGEST_LEN) == 0)
			found = (int)i + 1;
	return found;
}

void ctl__team_token_apply(const struct ctl *c, int which, struct jobspec *js)
{
	const struct ctl_team_token *k;

	if (which <= 0 || (size_t)which > c->nteam_tokens)
		return;
	k = &c->team_tokens[which - 1];
	if (!js->team[0])
		memcpy(js->team, k->team, sizeof js->team);
	if (!js->project[0])
		memcpy(js->project, k->project, sizeof js->project);
	if (!js->cost_center[0])
		memcpy(js->cost_center, k->cost_center, sizeof js->cost_center);
}
