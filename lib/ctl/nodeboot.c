/*
 * nodeboot.c - one-time bootstrap secrets and their exchange for a node
 * token (nodeboot.h has the protocol).
 *
 * A secret's life (table node_boot):
 *
 *   issued (row: hash, node, expires) --first exchange--> used (nonce
 *     hash, used_ns; the node's other rows deleted; a new random token's
 *     hash in nodes.token_hash)
 *   used --the same nonce again, unexpired--> used (another new token)
 *   any --expired--> refused; deleted by the next issue
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/nodeboot.h"
#include "ctl/routes.h"
#include "store/store.h"
#include "store/store_ctl.h"

_Static_assert(CTL_DIGEST_LEN == STORE_DIGEST_LEN, "one digest size");

#define NONCE_MIN 32
#define NONCE_MAX 128

int ctl__boot_issue(struct ctl *c, struct store *db, int64_t node_id,
		    char out[CTL_TOKEN_HEX + 1], struct sr_err *e)
{
	unsigned char d[CTL_DIGEST_LEN];
	int64_t now = ctl__now(c);
	int64_t ttl = c->cfg.boot_timeout_ms * 1000000 + CTL_BOOT_GRACE_NS;
	int rc = ctl_token_new(out);

	if (rc)
		return sr_err_set(e, rc, "bootstrap secret: no randomness");
	ctl_token_digest(out, d);
	rc = store_boot_issue(db, d, node_id, now, now + (ttl > CTL_BOOT_TTL_NS ?
							  ttl : CTL_BOOT_TTL_NS), e);
	if (rc)
		explicit_bzero(out, CTL_TOKEN_HEX + 1);
	return rc;
}

/* The nonce of an exchange body: NONCE_MIN..NONCE_MAX hex characters. */
static int nonce_of(const char *body, size_t len, unsigned char d[CTL_DIGEST_LEN],
		    struct sr_err *e)
{
	static const char *const keys[] = { "nonce", NULL };
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	const char *n = NULL;
	size_t k;
	int rc;

	if (!root)
		return sr_err_set(e, -SR_EPARSE, "body: %d:%d: %s", je.line,
				  je.column, je.text);
	rc = sr_json_check_keys(root, keys, "body", e);
	if (!rc)
		rc = sr_json_get_str(root, "nonce", &n, "body", e);
	for (k = 0; !rc && n[k]; k++) {
		if (!((n[k] >= '0' && n[k] <= '9') || (n[k] >= 'a' && n[k] <= 'f')))
			break;
	}
	if (!rc && (n[k] || k < NONCE_MIN || k > NONCE_MAX))
		rc = sr_err_set(e, -SR_EPARSE, "body: nonce: expected %d to %d "
				"lower-case hex characters", NONCE_MIN, NONCE_MAX);
	if (!rc)
		ctl_token_digest(n, d);
	json_decref(root);
	return rc;
}

/* What the exchange found, inside its transaction. */
enum verdict { V_OK, V_UNKNOWN, V_EXPIRED, V_USED, V_GONE };

static int check(struct store *db, int64_t node, const unsigned char *sd,
		 const unsigned char *nd, int64_t now, enum verdict *v,
		 struct sr_err *e)
{
	struct store_boot b;
	int rc = store_boot_get(db, sd, &b, e);

	if (rc == 0)
		*v = V_UNKNOWN;
	if (rc != 1)
		return rc;
	if (b.node != node)
		*v = V_UNKNOWN;
	else if (b.expires_ns <= now)
		*v = V_EXPIRED;
	else if (b.used && (b.nonce_len != CTL_DIGEST_LEN ||
			    memcmp(b.nonce, nd, CTL_DIGEST_LEN)))
		*v = V_USED;
	else if (strcmp(b.state, "REQUESTED") && strcmp(b.state, "BOOTING") &&
		 strcmp(b.state, "READY"))
		*v = V_GONE;
	else
		*v = V_OK;
	return 0;
}

/* POST /v1/nodes/{id}/bootstrap (nodeboot.h). */
static int node_bootstrap(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	const char *secret = ctl_req_bearer(rq), *body;
	unsigned char sd[CTL_DIGEST_LEN], nd[CTL_DIGEST_LEN], td[CTL_DIGEST_LEN];
	char tok[CTL_TOKEN_HEX + 1];
	enum verdict v = V_UNKNOWN;
	struct sr_err e = { 0 };
	int64_t id, now = ctl__now(c);
	size_t len;
	int rc;

	if (ctl_req_param_id(rq, "id", &id, rs))
		return 0;
	if (!secret)
		return ctl_resp_error(rs, 401, "missing bearer token (Authorization:"
				      " Bearer <bootstrap secret>)");
	body = ctl_req_body(rq, &len);
	rc = nonce_of(body, len, nd, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	if (!db)
		return ctl_resp_error(rs, 503, "no store connection");
	ctl_token_digest(secret, sd);
	rc = ctl_token_new(tok);
	if (rc)
		return ctl_resp_error(rs, 500, "node token: no randomness");
	ctl_token_digest(tok, td);
	rc = store_begin(db, &e);
	if (!rc)
		rc = check(db, id, sd, nd, now, &v, &e);
	if (!rc && v == V_OK)
		rc = store_boot_use(db, id, sd, nd, td, now, &e);
	rc = store_end(db, rc ? rc : v == V_OK ? 0 : -EACCES, &e);
	if (rc && rc != -EACCES) {
		explicit_bzero(tok, sizeof tok);
		return ctl_resp_error(rs, 500, "bootstrap: %s", sr_err_str(&e, rc));
	}
	if (v != V_OK) {
		explicit_bzero(tok, sizeof tok);
		sr_warn("api", "bootstrap refused", "node=%" PRId64 " why=%s", id,
			v == V_EXPIRED ? "expired" : v == V_USED ? "used" :
			v == V_GONE ? "node ended" : "unknown");
		if (v == V_GONE)
			return ctl_resp_error(rs, 409, "node %" PRId64 " has ended;"
					      " exit", id);
		return ctl_resp_error(rs, 401, "%s", v == V_EXPIRED ?
				      "bootstrap secret expired" : v == V_USED ?
				      "bootstrap secret already used" :
				      "bootstrap secret unknown or not this node's");
	}
	sr_info("api", "node token issued", "node=%" PRId64, id);
	rc = ctl_resp_json(rs, 200, json_pack("{s:s}", "token", tok));
	explicit_bzero(tok, sizeof tok);
	return rc;
}

static const struct ctl_route routes[] = {
	{ "POST", "/v1/nodes/{id}/bootstrap", CTL_AUTH_PUBLIC, node_bootstrap,
	  "node_bootstrap" },
};

void ctl__routes_boot(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
