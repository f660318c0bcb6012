/*
 * awscred_sso.c - IAM Identity Center (SSO) profiles: the token `aws sso
 * login` cached, traded for the role's credentials.
 *
 *   [profile dev]                      [profile legacy]
 *   sso_session = corp                 sso_start_url = https://x/start
 *   sso_account_id = 111122223333      sso_region = us-east-1
 *   sso_role_name = Admin              sso_account_id = ...
 *   [sso-session corp]                 sso_role_name = ...
 *   sso_start_url = https://x/start
 *   sso_region = us-east-1
 *
 * Token cache: ~/.aws/sso/cache/SHA1.json, SHA1 the lower-case hex SHA-1
 * of the session name (sso_session) or of the start URL (legacy), as the
 * CLI names it; {"accessToken": "...", "expiresAt": "...Z"} (older CLIs
 * wrote "...UTC").  The token is not refreshed here: once it expires the
 * user logs in again, and the error and renew_hint say how.
 *
 * Role credentials (the SSO portal, GetRoleCredentials):
 *   GET https://portal.sso.REGION.amazonaws.com/federation/credentials
 *       ?role_name=ROLE&account_id=ACCOUNT
 *   x-amz-sso_bearer_token: TOKEN
 *   -> {"roleCredentials": {"accessKeyId", "secretAccessKey",
 *       "sessionToken", "expiration": epoch milliseconds}}
 * (AWS_ENDPOINT_URL_SSO moves the portal, for tests.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "awscred_int.h"
#include "json.h"
#include "log.h"
#include "sigv4.h"
#include "timeutil.h"
#include "url.h"

struct sso {
	const char *profile, *session, *start_url, *region, *account, *role;
	char login[160];      /* the command that renews the token */
};

/* Read the profile's SSO settings; -SR_ENOTFOUND when it has none. */
static int settings(const struct sr_awsconf *c, const char *profile,
		    struct sso *s, struct sr_err *e)
{
	const char *missing = NULL;

	memset(s, 0, sizeof(*s));
	s->profile = profile;
	s->session = sr_awscred__prof_get(c, profile, "sso_session", NULL);
	if (s->session == NULL &&
	    sr_awscred__prof_get(c, profile, "sso_start_url", NULL) == NULL)
		return -SR_ENOTFOUND;
	if (s->session != NULL) {
		s->start_url = sr_awscred__conf_section(c, "sso-session",
							s->session,
							"sso_start_url");
		s->region = sr_awscred__conf_section(c, "sso-session", s->session,
						     "sso_region");
		if (s->start_url == NULL && s->region == NULL)
			return sr_err_set(e, -EINVAL, "aws credentials: profile %s:"
					  " sso_session %s: no [sso-session %s] "
					  "section with sso_start_url and "
					  "sso_region in %s", profile, s->session,
					  s->session, c->cfg_path);
		snprintf(s->login, sizeof(s->login),
			 "aws sso login --sso-session %s", s->session);
	} else {
		s->start_url = sr_awscred__prof_get(c, profile, "sso_start_url",
						    NULL);
		s->region = sr_awscred__prof_get(c, profile, "sso_region", NULL);
		snprintf(s->login, sizeof(s->login), "aws sso login --profile %s",
			 profile);
	}
	s->account = sr_awscred__prof_get(c, profile, "sso_account_id", NULL);
	s->role = sr_awscred__prof_get(c, profile, "sso_role_name", NULL);
	if (s->start_url == NULL)
		missing = "sso_start_url";
	else if (s->region == NULL)
		missing = "sso_region";
	else if (s->account == NULL)
		missing = "sso_account_id";
	else if (s->role == NULL)
		missing = "sso_role_name";
	if (missing != NULL)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: SSO "
				  "profile without %s", profile, missing);
	return 0;
}

static void sha1_hex(const char *s, char out[41])
{
	unsigned char md[SHA_DIGEST_LENGTH];

	SHA1((const unsigned char *)s, strlen(s), md);
	for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

/* The cached access token (malloc'd into *tok) and its expiry. */
static int cached_token(const struct sso *s, char **tok, int64_t *exp_s,
			struct sr_err *e)
{
	const char *home = sr_awscred__env("HOME");
	char key[41], path[1024], when[64];
	const char *t = NULL, *x = NULL;
	struct sr_err je = { 0 };
	json_t *doc = NULL;
	int64_t ns = 0;
	size_t l;
	int rc = 0;

	*tok = NULL;
	sha1_hex(s->session != NULL ? s->session : s->start_url, key);
	snprintf(path, sizeof(path), "%s/.aws/sso/cache/%s.json",
		 home != NULL ? home : "~", key);
	doc = sr_json_load_file(path, &je);
	if (doc == NULL) {
		rc = sr_err_set(e, -EACCES, "aws credentials: profile %s: no SSO "
				"token (%s): run `%s`", s->profile,
				je.code == -ENOENT ? path : je.msg, s->login);
		goto out;
	}
	if (sr_json_get_str(doc, "accessToken", &t, "", NULL) < 0 ||
	    sr_json_get_str(doc, "expiresAt", &x, "", NULL) < 0) {
		rc = sr_err_set(e, -EACCES, "aws credentials: %s: expected "
				"accessToken and expiresAt: run `%s`", path,
				s->login);
		goto out;
	}
	snprintf(when, sizeof(when), "%s", x);
	l = strlen(when);
	if (l > 3 && strcmp(when + l - 3, "UTC") == 0)
		snprintf(when + l - 3, sizeof(when) - (l - 3), "Z");
	if (sr_time_parse_rfc3339(when, &ns, NULL) < 0) {
		rc = sr_err_set(e, -EACCES, "aws credentials: %s: expiresAt '%s':"
				" not a time: run `%s`", path, x, s->login);
		goto out;
	}
	*exp_s = ns / SR_NS_PER_SEC;
	if (*exp_s <= (int64_t)time(NULL)) {
		rc = sr_err_set(e, -EACCES, "aws credentials: profile %s: the SSO "
				"token expired at %s: run `%s`", s->profile, x,
				s->login);
		goto out;
	}
	*tok = strdup(t);
	if (*tok == NULL)
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	else
		sr_log_secret(*tok);
out:
	if (t != NULL)
		OPENSSL_cleanse((void *)t, strlen(t));
	json_decref(doc);
	return rc;
}

/* The portal's answer into *out. */
static int role_credentials(const struct sso *s, const struct sr_http_resp *r,
			    struct sr_awscred *out, struct sr_err *e)
{
	json_t *doc = sr_json_load_buf(r->body, r->body_len, "sso", NULL);
	json_t *rc_obj = NULL;
	const char *id = NULL, *sk = NULL, *tok = NULL;
	int64_t exp_ms = 0;
	int rc;

	if (doc == NULL ||
	    sr_json_get_obj(doc, "roleCredentials", &rc_obj, "", NULL) < 0 ||
	    sr_json_get_str(rc_obj, "accessKeyId", &id, "", NULL) < 0 ||
	    sr_json_get_str(rc_obj, "secretAccessKey", &sk, "", NULL) < 0 ||
	    sr_json_get_str(rc_obj, "sessionToken", &tok, "", NULL) < 0 ||
	    sr_json_get_int(rc_obj, "expiration", &exp_ms, "", NULL) < 0) {
		json_decref(doc);
		return sr_err_set(e, -SR_EHTTP, "aws credentials: profile %s: SSO "
				  "GetRoleCredentials: unusable answer (expected "
				  "roleCredentials with accessKeyId, "
				  "secretAccessKey, sessionToken, expiration)",
				  s->profile);
	}
	rc = sr_awscred__set(out, id, sk, tok, e);
	if (rc == 0)
		out->expires_s = exp_ms / 1000;
	json_decref(doc);
	return rc;
}

int sr_awscred__from_sso(const struct sr_awsconf *c, const char *profile,
			 struct sr_awscred *out, struct sr_err *e)
{
	struct sso s;
	struct sr_http_resp r = { 0 };
	struct sr_err he = { 0 };
	char *tok = NULL, *base = NULL, *role = NULL, *acct = NULL;
	char *url = NULL, *hdr = NULL;
	const char *hdrs[2] = { NULL, NULL };
	int64_t tok_exp = 0;
	int rc;

	rc = settings(c, profile, &s, e);
	if (rc < 0)
		return rc;
	rc = cached_token(&s, &tok, &tok_exp, e);
	if (rc < 0)
		goto out;
	rc = sr_aws_endpoint("SSO", "portal.sso", s.region, &base, NULL, e);
	if (rc < 0)
		goto out;
	if (!sr_url_tls_or_loopback(base)) {
		rc = sr_err_set(e, -EINVAL, "aws credentials: SSO endpoint %s: "
				"https or loopback only", base);
		goto out;
	}
	role = sr_sigv4_uri_encode(s.role, strlen(s.role), 0);
	acct = sr_sigv4_uri_encode(s.account, strlen(s.account), 0);
	if (role == NULL || acct == NULL ||
	    asprintf(&url, "%s/federation/credentials?role_name=%s&account_id=%s",
		     base, role, acct) < 0 ||
	    asprintf(&hdr, "x-amz-sso_bearer_token: %s", tok) < 0) {
		url = hdr = NULL;
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	hdrs[0] = hdr;
	rc = sr_awscred__http_get(url, hdrs, 10000, 2, &r, &he);
	if (rc < 0) {
		rc = sr_err_set(e, -SR_EHTTP, "aws credentials: profile %s: SSO "
				"portal: %s", profile, he.msg);
		goto out;
	}
	if (r.status == 401 || r.status == 403) {
		rc = sr_err_set(e, -EACCES, "aws credentials: profile %s: the SSO "
				"portal refused the token (HTTP %ld): run `%s`",
				profile, r.status, s.login);
		goto out;
	}
	if (r.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP, "aws credentials: profile %s: SSO "
				"GetRoleCredentials: HTTP %ld", profile, r.status);
		goto out;
	}
	rc = role_credentials(&s, &r, out, e);
	if (rc < 0)
		goto out;
	out->kind = SR_AWSCRED_SSO;
	out->renew_until_s = tok_exp;
	snprintf(out->renew_hint, sizeof(out->renew_hint), "run `%s`", s.login);
	snprintf(out->source, sizeof(out->source), "profile %s (SSO role %s in "
		 "account %s)", profile, s.role, s.account);
out:
	if (r.body != NULL)
		OPENSSL_cleanse(r.body, r.body_len);
	sr_http_resp_free(&r);
	if (tok != NULL)
		sr_log_secret_forget(tok);
	sr_awscred__wipe(tok);
	sr_awscred__wipe(hdr);
	free(base);
	free(role);
	free(acct);
	free(url);
	return rc;
}
