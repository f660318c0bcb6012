/*
 * teamtok.h - API tokens with default chargeback labels (issue 34;
 * <state-dir>/finops.json "tokens", lib/finops/fconf.h).
 *
 * At start spotrund reads each token of <state-dir>/tokens/<name>.token
 * (created random, mode 0600, when absent: ctl_token_load_or_create),
 * keeps its SHA-256 and the labels, and registers the token as a log
 * secret.  A request bearing one is authenticated like the admin token
 * (router.c); the jobs it launches get the token's labels where the job
 * file gives none (routes_jobs.c).  The set is fixed for the daemon's
 * life: restart spotrund after editing finops.json's tokens.
 */
#ifndef SR_CTL_TEAMTOK_H
#define SR_CTL_TEAMTOK_H

#include <stddef.h>

#include "common/err.h"
#include "ctl/auth.h"

struct ctl;
struct jobspec;

struct ctl_team_token {
	unsigned char digest[CTL_DIGEST_LEN];
	char name[64], team[64], project[64], cost_center[64];
};

/* Load (creating) the tokens finops.json names into c.  0 or < 0 with *e
 * naming the file. */
int ctl__team_tokens_load(struct ctl *c, struct sr_err *e);
void ctl__team_tokens_free(struct ctl *c);
/* 1 + the index of the token whose digest is d, or 0. */
int ctl__team_token_find(const struct ctl *c, const unsigned char *d);
/* Fill js's empty labels from token `which` (1-based; 0: nothing). */
void ctl__team_token_apply(const struct ctl *c, int which, struct jobspec *js);

#endif
