/*
 * awscred_prof.c - the credentials of one profile, in the AWS CLI's
 * order (awscred.h, 2-7):
 *
 *   role_arn (without web_identity_token_file)   -> AssumeRole
 *   web identity (variables at the top only)      -> AssumeRoleWithWebIdentity
 *   sso_session / sso_start_url                   -> SSO portal
 *   keys in the credentials file                  -> static
 *   credential_process                            -> the command
 *   keys in the config file                       -> static
 *   none of these                                 -> -SR_ENOTFOUND
 *
 * AssumeRole's signing credentials (source_profile):
 *   - the source profile has keys of its own (or is the profile itself,
 *     which then must have keys): those keys, even if it names a role
 *     too - the CLI's rule, which lets a profile assume a role with its
 *     own keys;
 *   - otherwise the source profile resolved by this same list, so role
 *     chains (A -> B -> C) work; a profile met twice on the way is a
 *     loop and an error naming the chain.
 * credential_source instead names Environment, Ec2InstanceMetadata or
 * EcsContainer.  mfa_serial is refused: a daemon cannot type a code.
 *
 * What renews what: the role's credentials are renewed by calling STS
 * again with the source's; so they can be renewed as long as the source
 * can (renew_until_s and renew_hint are inherited from it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "awscred_int.h"
#include "fsutil.h"
#include "log.h"

#define CHAIN_MAX 8

struct walk {
	const struct sr_awsconf *c;
	const char *seen[CHAIN_MAX];
	int n;
};

static int resolve(struct walk *w, const char *profile, bool top,
		   bool as_source, struct sr_awscred *out, struct sr_err *e);

static const char *get(const struct walk *w, const char *profile,
		       const char *key)
{
	return sr_awscred__prof_get(w->c, profile, key, NULL);
}

/* Static keys of the profile in one file. */
static int keys(const struct walk *w, const char *profile, bool config,
		struct sr_awscred *out, struct sr_err *e)
{
	const char *id = sr_awscred__prof_get_in(w->c, config, profile,
						 "aws_access_key_id");
	const char *sk = sr_awscred__prof_get_in(w->c, config, profile,
						 "aws_secret_access_key");
	const char *tok = sr_awscred__prof_get_in(w->c, config, profile,
						  "aws_session_token");
	const char *path = config ? w->c->cfg_path : w->c->cred_path;
	int rc;

	if (id == NULL && sk == NULL)
		return -SR_ENOTFOUND;
	if (id == NULL || sk == NULL)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s in %s:"
				  " %s: missing", profile, path,
				  id == NULL ? "aws_access_key_id"
					     : "aws_secret_access_key");
	rc = sr_awscred__set(out, id, sk, tok, e);
	if (rc < 0)
		return rc;
	out->kind = SR_AWSCRED_STATIC;
	if (tok != NULL)
		snprintf(out->renew_hint, sizeof(out->renew_hint),
			 "a session token in %s cannot be renewed by spotrun: "
			 "write fresh keys there, or use role_arn, sso_session or "
			 "credential_process", path);
	snprintf(out->source, sizeof(out->source), "profile %s in %s", profile,
		 path);
	return 0;
}

static bool has_keys(const struct walk *w, const char *profile)
{
	return get(w, profile, "aws_access_key_id") != NULL;
}

/* Session name: the profile's (or variable's), else spotrun-EPOCH. */
static const char *session_name(const char *given, char *buf, size_t n)
{
	if (given != NULL)
		return given;
	snprintf(buf, n, "spotrun-%lld", (long long)time(NULL));
	return buf;
}

/* The region STS is called in: the variables, then the profile's, else
 * the global endpoint (NULL). */
static const char *sts_region(const struct walk *w, const char *profile)
{
	const char *r = sr_awscred__env("AWS_REGION");

	if (r == NULL)
		r = sr_awscred__env("AWS_DEFAULT_REGION");
	if (r == NULL)
		r = sr_awscred__prof_get_in(w->c, true, profile, "region");
	if (r == NULL)
		r = sr_awscred__prof_get_in(w->c, true,
					    sr_awscred__profile_name(), "region");
	return r;
}

static int source_creds(struct walk *w, const char *profile,
			struct sr_awscred *src, struct sr_err *e)
{
	const char *sp = get(w, profile, "source_profile");
	const char *cs = get(w, profile, "credential_source");
	int rc;

	if (sp != NULL && cs != NULL)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				  "source_profile and credential_source: give "
				  "one", profile);
	if (cs != NULL) {
		if (strcasecmp(cs, "Environment") == 0) {
			const char *id = sr_awscred__env("AWS_ACCESS_KEY_ID");
			const char *sk = sr_awscred__env("AWS_SECRET_ACCESS_KEY");
			const char *tk = sr_awscred__env("AWS_SESSION_TOKEN");

			rc = id != NULL && sk != NULL
				     ? sr_awscred__set(src, id, sk, tk, e)
				     : -SR_ENOTFOUND;
		} else if (strcasecmp(cs, "Ec2InstanceMetadata") == 0) {
			rc = sr_awscred__from_imds(src, e);
		} else if (strcasecmp(cs, "EcsContainer") == 0) {
			rc = sr_awscred__from_container(src, e);
		} else {
			return sr_err_set(e, -EINVAL, "aws credentials: profile %s:"
					  " credential_source '%s': expected "
					  "Environment, Ec2InstanceMetadata or "
					  "EcsContainer", profile, cs);
		}
		if (rc == -SR_ENOTFOUND)
			rc = sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
					"credential_source %s has no credentials",
					profile, cs);
		return rc;
	}
	if (sp == NULL)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				  "role_arn needs source_profile or "
				  "credential_source", profile);
	if (strcmp(sp, profile) == 0) {
		/* a profile that assumes a role with its own keys */
		rc = keys(w, profile, false, src, e);
		if (rc == -SR_ENOTFOUND)
			rc = keys(w, profile, true, src, e);
		if (rc == -SR_ENOTFOUND)
			rc = sr_err_set(e, -EINVAL, "aws credentials: profile %s:"
					" source_profile is itself, but it has no "
					"keys", profile);
		return rc;
	}
	if (!sr_awscred__prof_exists(w->c, sp))
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				  "source_profile %s: no such profile", profile,
				  sp);
	rc = resolve(w, sp, false, true, src, e);
	if (rc == -SR_ENOTFOUND)
		rc = sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				"source_profile %s has no credentials", profile, sp);
	return rc;
}

static int duration(const struct walk *w, const char *profile, int *out,
		    struct sr_err *e)
{
	const char *d = get(w, profile, "duration_seconds");
	char *end = NULL;
	long v;

	*out = 0;
	if (d == NULL)
		return 0;
	v = strtol(d, &end, 10);
	if (end == d || *end != '\0' || v < 900 || v > 43200)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				  "duration_seconds '%s': expected 900 to 43200",
				  profile, d);
	*out = (int)v;
	return 0;
}

static int assume_role(struct walk *w, const char *profile,
		       struct sr_awscred *out, struct sr_err *e)
{
	struct sr_awscred src = { 0 };
	struct sr_awssts_req r = { 0 };
	char sess[64];
	int rc;

	if (get(w, profile, "mfa_serial") != NULL)
		return sr_err_set(e, -SR_EUNSUPPORTED, "aws credentials: profile "
				  "%s uses mfa_serial: spotrun runs unattended and "
				  "cannot ask for an MFA code; use a role without "
				  "MFA, sso_session or credential_process", profile);
	rc = duration(w, profile, &r.duration_s, e);
	if (rc < 0)
		return rc;
	rc = source_creds(w, profile, &src, e);
	if (rc < 0)
		return rc;
	r.role_arn = get(w, profile, "role_arn");
	r.session_name = session_name(get(w, profile, "role_session_name"), sess,
				      sizeof(sess));
	r.external_id = get(w, profile, "external_id");
	r.region = sts_region(w, profile);
	r.src = &src;
	rc = sr_awscred__sts(&r, out, e);
	if (rc == 0) {
		out->kind = SR_AWSCRED_ASSUME_ROLE;
		/* renewable as long as the source is */
		out->renew_until_s = src.renew_until_s;
		snprintf(out->renew_hint, sizeof(out->renew_hint), "%s",
			 src.renew_hint);
		snprintf(out->source, sizeof(out->source), "profile %.64s (role %.100s "
			 "via %.120s)", profile, r.role_arn, src.source);
	}
	sr_awscred_free(&src);
	return rc;
}

static int web_identity(const struct walk *w, const char *profile, bool top,
			struct sr_awscred *out, struct sr_err *e)
{
	const char *file = top ? sr_awscred__env("AWS_WEB_IDENTITY_TOKEN_FILE")
			       : NULL;
	const char *role = top ? sr_awscred__env("AWS_ROLE_ARN") : NULL;
	const char *name = top ? sr_awscred__env("AWS_ROLE_SESSION_NAME") : NULL;
	struct sr_awssts_req r = { .web_identity = true };
	struct sr_err fe = { 0 };
	char *tok = NULL, sess[64];
	size_t n = 0;
	int rc;

	if (file == NULL)
		file = get(w, profile, "web_identity_token_file");
	if (file == NULL)
		return -SR_ENOTFOUND;
	if (role == NULL)
		role = get(w, profile, "role_arn");
	if (name == NULL)
		name = get(w, profile, "role_session_name");
	if (role == NULL)
		return sr_err_set(e, -EINVAL, "aws credentials: a web identity "
				  "token file (%s) but no role: set AWS_ROLE_ARN or "
				  "role_arn in profile %s", file, profile);
	/* read on every call: the platform rotates the file */
	rc = sr_fs_read_file(file, 64 << 10, &tok, &n, &fe);
	if (rc < 0)
		return sr_err_set(e, rc == -ENOMEM ? rc : -EACCES,
				  "aws credentials: web identity token: %s", fe.msg);
	while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' ||
			 tok[n - 1] == ' '))
		tok[--n] = '\0';
	sr_log_secret(tok);
	r.role_arn = role;
	r.session_name = session_name(name, sess, sizeof(sess));
	r.web_token = tok;
	r.region = sts_region(w, profile);
	rc = sr_awscred__sts(&r, out, e);
	if (rc == 0) {
		out->kind = SR_AWSCRED_WEB_IDENTITY;
		snprintf(out->source, sizeof(out->source), "web identity %s "
			 "(role %s)", file, role);
	}
	sr_log_secret_forget(tok);
	sr_awscred__wipe(tok);
	return rc;
}

static int resolve(struct walk *w, const char *profile, bool top,
		   bool as_source, struct sr_awscred *out, struct sr_err *e)
{
	const char *role = get(w, profile, "role_arn");
	const char *proc;
	int rc;

	for (int i = 0; i < w->n; i++) {
		if (strcmp(w->seen[i], profile) != 0)
			continue;
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: "
				  "source_profile loops back to %s", w->seen[0],
				  profile);
	}
	if (w->n == CHAIN_MAX)
		return sr_err_set(e, -EINVAL, "aws credentials: profile %s: more "
				  "than %d roles chained", w->seen[0], CHAIN_MAX);
	w->seen[w->n++] = profile;
	if (role != NULL && get(w, profile, "web_identity_token_file") == NULL &&
	    !(as_source && has_keys(w, profile))) {
		rc = assume_role(w, profile, out, e);
		goto out;
	}
	rc = web_identity(w, profile, top, out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = sr_awscred__from_sso(w->c, profile, out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = keys(w, profile, false, out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	proc = get(w, profile, "credential_process");
	if (proc != NULL) {
		rc = sr_awscred__process(proc, profile, out, e);
		goto out;
	}
	rc = keys(w, profile, true, out, e);
out:
	w->n--;
	return rc;
}

int sr_awscred__from_profile(const struct sr_awsconf *c, const char *profile,
			     bool top, struct sr_awscred *out,
			     struct sr_err *e)
{
	struct walk w = { .c = c };

	return resolve(&w, profile, top, false, out, e);
}
