/*
 * awscred.c - the AWS credential chain (awscred.h): the environment, the
 * order of the sources, health, region and endpoint.  Each source lives
 * in its own file (awscred_int.h lists them).
 *
 * Each step either returns credentials, says "nothing here" (-SR_ENOTFOUND,
 * the chain goes on) or fails with a reason that stops the chain (a
 * half-set environment, a profile the user asked for that does not exist,
 * a malformed file, a role STS refused): a user who configured something
 * wrong hears about it instead of silently getting another identity.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "awscred_int.h"
#include "log.h"
#include "timeutil.h"
#include "url.h"

const char *sr_awscred__env(const char *name)
{
	const char *v = getenv(name);

	return (v != NULL && v[0] != '\0') ? v : NULL;
}

bool sr_awscred__env_true(const char *name)
{
	const char *v = sr_awscred__env(name);

	return v != NULL && strcasecmp(v, "true") == 0;
}

void sr_awscred__wipe(char *s)
{
	if (s == NULL)
		return;
	OPENSSL_cleanse(s, strlen(s));
	free(s);
}

void sr_awscred_free(struct sr_awscred *c)
{
	if (c == NULL)
		return;
	sr_log_secret_forget(c->secret_access_key);
	sr_log_secret_forget(c->session_token);
	free(c->access_key_id);
	sr_awscred__wipe(c->secret_access_key);
	sr_awscred__wipe(c->session_token);
	memset(c, 0, sizeof(*c));
}

struct sr_sigv4_creds sr_awscred_view(const struct sr_awscred *c)
{
	struct sr_sigv4_creds v = {
		.access_key_id = c->access_key_id,
		.secret_access_key = c->secret_access_key,
		.session_token = c->session_token,
	};
	return v;
}

const char *sr_awscred_kind_str(enum sr_awscred_kind k)
{
	switch (k) {
	case SR_AWSCRED_ENV: return "environment";
	case SR_AWSCRED_STATIC: return "shared file";
	case SR_AWSCRED_ASSUME_ROLE: return "assume-role";
	case SR_AWSCRED_WEB_IDENTITY: return "web-identity";
	case SR_AWSCRED_SSO: return "sso";
	case SR_AWSCRED_PROCESS: return "credential-process";
	case SR_AWSCRED_CONTAINER: return "container";
	case SR_AWSCRED_IMDS: return "instance-role";
	case SR_AWSCRED_NONE: break;
	}
	return "none";
}

int sr_awscred__set(struct sr_awscred *out, const char *akid,
		    const char *secret, const char *token, struct sr_err *e)
{
	bool tok = token != NULL && token[0] != '\0';
	char *a = strdup(akid), *s = strdup(secret);
	char *t = tok ? strdup(token) : NULL;

	if (a == NULL || s == NULL || (tok && t == NULL)) {
		free(a);
		sr_awscred__wipe(s);
		sr_awscred__wipe(t);
		return sr_err_set(e, -ENOMEM, "aws credentials: out of memory");
	}
	out->access_key_id = a;
	out->secret_access_key = s;
	out->session_token = t;
	sr_log_secret(s);
	sr_log_secret(t);
	return 0;
}

const char *sr_awscred__profile_name(void)
{
	const char *p = sr_awscred__env("AWS_PROFILE");

	return p != NULL ? p : "default";
}

/* Keys handed over in variables: they last until AWS_CREDENTIAL_
 * EXPIRATION (what `aws configure export-credentials` exports), and
 * nothing can renew them. */
static int from_env(struct sr_awscred *out, struct sr_err *e)
{
	const char *id = sr_awscred__env("AWS_ACCESS_KEY_ID");
	const char *sk = sr_awscred__env("AWS_SECRET_ACCESS_KEY");
	const char *tok = sr_awscred__env("AWS_SESSION_TOKEN");
	const char *exp = sr_awscred__env("AWS_CREDENTIAL_EXPIRATION");
	int64_t ns = 0;
	int rc;

	if (id == NULL && sk == NULL)
		return -SR_ENOTFOUND;
	if (id == NULL)
		return sr_err_set(e, -EINVAL,
				  "aws credentials: AWS_SECRET_ACCESS_KEY is set "
				  "but AWS_ACCESS_KEY_ID is not");
	if (sk == NULL)
		return sr_err_set(e, -EINVAL,
				  "aws credentials: AWS_ACCESS_KEY_ID is set "
				  "but AWS_SECRET_ACCESS_KEY is not");
	if (exp != NULL && sr_time_parse_rfc3339(exp, &ns, NULL) < 0)
		return sr_err_set(e, -EINVAL,
				  "aws credentials: AWS_CREDENTIAL_EXPIRATION: "
				  "'%s': expected an RFC 3339 time", exp);
	rc = sr_awscred__set(out, id, sk, tok, e);
	if (rc < 0)
		return rc;
	out->kind = SR_AWSCRED_ENV;
	out->expires_s = ns / SR_NS_PER_SEC;
	out->renew_until_s = out->expires_s;
	if (tok != NULL)
		snprintf(out->renew_hint, sizeof(out->renew_hint),
			 "session credentials in the environment cannot be "
			 "renewed: give spotrund a profile with role_arn, "
			 "sso_session or credential_process instead");
	snprintf(out->source, sizeof(out->source),
		 "environment (AWS_ACCESS_KEY_ID)");
	return 0;
}

int sr_awscred_resolve(struct sr_awscred *out, struct sr_err *e)
{
	struct sr_awsconf conf = { 0 };
	const char *prof = sr_awscred__profile_name();
	int rc;

	memset(out, 0, sizeof(*out));
	rc = from_env(out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = sr_awscred__conf_load(&conf, e);
	if (rc < 0)
		goto out;
	if (sr_awscred__env("AWS_PROFILE") != NULL &&
	    !sr_awscred__prof_exists(&conf, prof)) {
		rc = sr_err_set(e, -EINVAL,
				"aws credentials: AWS_PROFILE=%s: no such "
				"profile in %s or %s", prof,
				conf.cred_path != NULL ? conf.cred_path
						       : "~/.aws/credentials",
				conf.cfg_path != NULL ? conf.cfg_path
						      : "~/.aws/config");
		goto out;
	}
	rc = sr_awscred__from_profile(&conf, prof, true, out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = sr_awscred__from_container(out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = sr_awscred__from_imds(out, e);
	if (rc != -SR_ENOTFOUND)
		goto out;
	rc = sr_err_set(e, -SR_ENOTFOUND,
			"aws credentials: none found: set AWS_ACCESS_KEY_ID and "
			"AWS_SECRET_ACCESS_KEY, or add profile %s to "
			"~/.aws/credentials or ~/.aws/config (keys, role_arn, "
			"sso_session, credential_process), or run where a "
			"container or instance role is attached", prof);
out:
	sr_awscred__conf_free(&conf);
	if (rc < 0)
		sr_awscred_free(out);
	return rc;
}

int sr_awscred_health(const struct sr_awscred *c, int64_t now_s, char *msg,
		      size_t n)
{
	int64_t until = c->renew_until_s;
	char when[40];
	int lvl;

	if (until <= 0 || until - now_s > SR_AWSCRED_WARN_S) {
		if (msg != NULL)
			snprintf(msg, n, "%s", c->source);
		return 0;
	}
	lvl = until <= now_s ? 2 : 1;
	sr_time_format_rfc3339(until * SR_NS_PER_SEC, 0, when, sizeof(when));
	if (msg != NULL)
		snprintf(msg, n, "aws credentials from %s %s at %s and cannot be "
			 "renewed without you%s%s", c->source,
			 lvl == 2 ? "expired" : "expire", when,
			 c->renew_hint[0] ? ": " : "", c->renew_hint);
	return lvl;
}

/* ---- region and endpoint ---------------------------------------------- */

/* A key of the user's profile in the config file (borrowed from conf). */
static const char *profile_conf(const struct sr_awsconf *conf, const char *key)
{
	return sr_awscred__prof_get_in(conf, true, sr_awscred__profile_name(),
				       key);
}

int sr_aws_region(char **out, struct sr_err *e)
{
	struct sr_awsconf conf = { 0 };
	const char *v = sr_awscred__env("AWS_REGION");
	int rc;

	*out = NULL;
	if (v == NULL)
		v = sr_awscred__env("AWS_DEFAULT_REGION");
	if (v != NULL) {
		*out = strdup(v);
		return *out != NULL ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
	}
	rc = sr_awscred__conf_load(&conf, e);
	if (rc < 0)
		return rc;
	v = profile_conf(&conf, "region");
	if (v == NULL)
		rc = sr_err_set(e, -SR_ENOTFOUND,
				"aws region: none set: export AWS_REGION, or add "
				"'region = ...' to profile %s in ~/.aws/config "
				"(AWS_CONFIG_FILE)", sr_awscred__profile_name());
	else if ((*out = strdup(v)) == NULL)
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	sr_awscred__conf_free(&conf);
	return rc;
}

/* endpoint_url of `svc` in the profile's services section: the nested
 * value "\nendpoint_url = URL\n...".  Copied into buf; NULL if none. */
static const char *services_endpoint(const struct sr_awsconf *conf,
				     const char *svc, char *buf, size_t n)
{
	const char *name = profile_conf(conf, "services");
	const char *v = name != NULL
				? sr_awscred__conf_section(conf, "services", name, svc)
				: NULL;

	while (v != NULL && *v != '\0') {
		const char *nl = strchr(v, '\n');
		size_t len = nl != NULL ? (size_t)(nl - v) : strlen(v);
		char line[600], *eq, *k, *val;

		snprintf(line, sizeof(line), "%.*s", (int)len, v);
		v = nl != NULL ? nl + 1 : NULL;
		eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		k = line;
		while (isspace((unsigned char)*k))
			k++;
		for (char *t = eq; t > k && isspace((unsigned char)t[-1]);)
			*--t = '\0';
		val = eq + 1;
		while (isspace((unsigned char)*val))
			val++;
		if (strcasecmp(k, "endpoint_url") == 0 && *val != '\0') {
			snprintf(buf, n, "%s", val);
			return buf;
		}
	}
	return NULL;
}

int sr_aws_endpoint(const char *service_id, const char *host_prefix,
		    const char *region, char **out, int *custom,
		    struct sr_err *e)
{
	struct sr_awsconf conf = { 0 };
	char var[96], svc[64], nested[600];
	const char *v = NULL;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (custom != NULL)
		*custom = 0;
	if (!sr_awscred__env_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) {
		n = (size_t)snprintf(var, sizeof(var), "AWS_ENDPOINT_URL_%s",
				     service_id);
		for (size_t i = 17; i < n && i < sizeof(var); i++)
			var[i] = (var[i] == ' ' || var[i] == '-')
					 ? '_'
					 : (char)toupper((unsigned char)var[i]);
		snprintf(svc, sizeof(svc), "%s", service_id);
		for (char *p = svc; *p != '\0'; p++) {
			if (*p == ' ' || *p == '-')
				*p = '_';
			*p = (char)tolower((unsigned char)*p);
		}
		v = sr_awscred__env(var);
		if (v == NULL)
			v = sr_awscred__env("AWS_ENDPOINT_URL");
		if (v == NULL) {
			rc = sr_awscred__conf_load(&conf, e);
			if (rc < 0)
				return rc;
			v = services_endpoint(&conf, svc, nested, sizeof(nested));
			if (v == NULL)
				v = profile_conf(&conf, "endpoint_url");
		}
	}
	if (v != NULL) {
		struct sr_url u;
		char what[64];

		snprintf(what, sizeof(what), "aws endpoint for %s", service_id);
		rc = sr_url_parse_http(v, what, &u, e);
		if (rc < 0)
			goto out;
		sr_url_free(&u);
		*out = strdup(v);
		if (custom != NULL)
			*custom = 1;
	} else if (asprintf(out, "https://%s.%s.amazonaws.com", host_prefix,
			    region) < 0) {
		*out = NULL;
	}
	if (*out == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	n = strlen(*out);
	while (n > 0 && (*out)[n - 1] == '/')
		(*out)[--n] = '\0';
out:
	sr_awscred__conf_free(&conf);
	return rc;
}

int sr_aws_url_is_loopback(const char *url)
{
	return sr_url_is_loopback(url);
}
