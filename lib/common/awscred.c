/*
 * awscred.c - the AWS credential chain, region and endpoint (awscred.h).
 *
 * Order of the chain:  environment -> shared files (profile) -> IMDSv2.
 * Each step either returns credentials, says "nothing here" (-SR_ENOTFOUND,
 * the chain goes on) or fails with a reason that stops the chain (a
 * half-set environment, a profile the user asked for that does not exist,
 * a malformed file): a user who configured something wrong hears about it
 * instead of silently getting another identity.
 */
#include <ctype.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/crypto.h>

#include "awscred.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"

#define IMDS_DEFAULT "http://169.254.169.254"
#define IMDS_CREDS "/latest/meta-data/iam/security-credentials/"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return (v != NULL && v[0] != '\0') ? v : NULL;
}

static int env_true(const char *name)
{
	const char *v = env(name);

	return v != NULL && strcasecmp(v, "true") == 0;
}

static void wipe_free(char *s)
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
	free(c->access_key_id);
	wipe_free(c->secret_access_key);
	wipe_free(c->session_token);
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

/* Fill *out from three borrowed strings; token may be NULL. */
static int cred_set(struct sr_awscred *out, const char *akid,
		    const char *secret, const char *token, struct sr_err *e)
{
	out->access_key_id = strdup(akid);
	out->secret_access_key = strdup(secret);
	out->session_token = (token != NULL && token[0] != '\0') ? strdup(token)
								 : NULL;
	if (out->access_key_id == NULL || out->secret_access_key == NULL ||
	    (token != NULL && token[0] != '\0' && out->session_token == NULL)) {
		sr_awscred_free(out);
		return sr_err_set(e, -ENOMEM, "aws credentials: out of memory");
	}
	sr_log_secret(out->secret_access_key);
	if (out->session_token != NULL)
		sr_log_secret(out->session_token);
	return 0;
}

/* ---- files ------------------------------------------------------------ */

static int home_path(const char *rel, char **out)
{
	const char *home = env("HOME");
	struct passwd *pw;

	if (home == NULL) {
		pw = getpwuid(getuid());
		home = pw != NULL ? pw->pw_dir : NULL;
	}
	if (home == NULL)
		return -SR_ENOTFOUND;
	if (asprintf(out, "%s/%s", home, rel) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Path of the shared file: the variable if set, else ~/.aws/NAME. */
static int shared_path(int is_config, char **out)
{
	const char *v = env(is_config ? "AWS_CONFIG_FILE"
				      : "AWS_SHARED_CREDENTIALS_FILE");

	if (v != NULL) {
		*out = strdup(v);
		return *out != NULL ? 0 : -ENOMEM;
	}
	return home_path(is_config ? ".aws/config" : ".aws/credentials", out);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Does section header text `sec` (inside the brackets, trimmed) name
 * `profile`?  Config files write [profile NAME] except for default. */
static int section_is(const char *sec, int is_config, const char *profile)
{
	if (!is_config)
		return strcmp(sec, profile) == 0;
	if (strcmp(profile, "default") == 0 && strcmp(sec, "default") == 0)
		return 1;
	if (strncmp(sec, "profile", 7) != 0 || !isspace((unsigned char)sec[7]))
		return 0;
	sec += 8;
	while (isspace((unsigned char)*sec))
		sec++;
	return strcmp(sec, profile) == 0;
}

/*
 * Scan an INI file.  With key == NULL only reports whether the profile's
 * section exists (0 or -SR_ENOTFOUND).  Indented lines continue a nested
 * block ("s3 =\n  addressing_style = path") and are skipped.
 */
static int ini_scan(const char *path, int is_config, const char *profile,
		    const char *key, char **out, struct sr_err *e)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, in = 0, seen = 0, rc = -SR_ENOTFOUND;

	if (out != NULL)
		*out = NULL;
	f = fopen(path, "r");
	if (f == NULL) {
		rc = errno == ENOENT ? -SR_ENOTFOUND
				     : sr_err_set(e, -errno, "%s: %s", path,
						  strerror(errno));
		goto out;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *s, *eq, *k, *v;

		lineno++;
		if (n > 0 && isspace((unsigned char)line[0]) &&
		    trim(line)[0] != '\0')
			continue; /* nested sub-property */
		s = trim(line);
		if (s[0] == '\0' || s[0] == '#' || s[0] == ';')
			continue;
		if (s[0] == '[') {
			char *close = strchr(s, ']');

			if (close == NULL) {
				rc = sr_err_set(e, -SR_EPARSE,
						"%s:%d: section header: missing ']'",
						path, lineno);
				goto out;
			}
			*close = '\0';
			in = section_is(trim(s + 1), is_config, profile);
			seen |= in;
			continue;
		}
		eq = strchr(s, '=');
		if (eq == NULL) {
			rc = sr_err_set(e, -SR_EPARSE,
					"%s:%d: expected 'key = value' or '[section]'",
					path, lineno);
			goto out;
		}
		if (!in || key == NULL)
			continue;
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		if (strcasecmp(k, key) != 0 || v[0] == '\0')
			continue;
		*out = strdup(v);
		rc = *out != NULL ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (key == NULL && seen)
		rc = 0;
out:
	if (line != NULL) {
		OPENSSL_cleanse(line, cap);
		free(line);
	}
	if (f != NULL)
		fclose(f);
	return rc;
}

int sr_aws_ini_get(const char *path, int is_config, const char *profile,
		   const char *key, char **out, struct sr_err *e)
{
	return ini_scan(path, is_config, profile, key, out, e);
}

static const char *profile_name(void)
{
	const char *p = env("AWS_PROFILE");

	return p != NULL ? p : "default";
}

/* Value of key for the profile: credentials file first (when creds), then
 * config.  *where receives the file it came from (malloc'd). */
static int profile_get(const char *key, int creds, char **out, char **where,
		       struct sr_err *e)
{
	const char *prof = profile_name();
	int rc = -SR_ENOTFOUND;

	*out = NULL;
	for (int is_config = creds ? 0 : 1; is_config <= 1; is_config++) {
		char *path = NULL;

		rc = shared_path(is_config, &path);
		if (rc == -ENOMEM)
			return sr_err_set(e, rc, "out of memory");
		if (rc < 0)
			continue;
		rc = ini_scan(path, is_config, prof, key, out, e);
		if (rc == 0 && where != NULL) {
			*where = path;
			return 0;
		}
		free(path);
		if (rc != -SR_ENOTFOUND)
			return rc;
	}
	return rc;
}

static int from_env(struct sr_awscred *out, struct sr_err *e)
{
	const char *id = env("AWS_ACCESS_KEY_ID");
	const char *sk = env("AWS_SECRET_ACCESS_KEY");
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
	rc = cred_set(out, id, sk, env("AWS_SESSION_TOKEN"), e);
	if (rc == 0)
		snprintf(out->source, sizeof(out->source),
			 "environment (AWS_ACCESS_KEY_ID)");
	return rc;
}

static int from_profile(struct sr_awscred *out, struct sr_err *e)
{
	static const char *const unsupported[] = {
		"role_arn", "credential_process", "sso_session",
		"sso_start_url", "web_identity_token_file", NULL
	};
	const char *prof = profile_name();
	char *id = NULL, *sk = NULL, *tok = NULL, *where = NULL, *other = NULL;
	char *cpath = NULL, *fpath = NULL;
	int rc;

	rc = profile_get("aws_access_key_id", 1, &id, &where, e);
	if (rc == -SR_ENOTFOUND) {
		for (int i = 0; unsupported[i] != NULL; i++) {
			rc = profile_get(unsupported[i], 1, &other, NULL, e);
			if (rc == 0) {
				rc = sr_err_set(e, -SR_EUNSUPPORTED,
						"aws credentials: profile %s uses "
						"%s, which spotrun does not support; "
						"export AWS_ACCESS_KEY_ID/"
						"AWS_SECRET_ACCESS_KEY/"
						"AWS_SESSION_TOKEN instead "
						"(e.g. from `aws configure "
						"export-credentials`)",
						prof, unsupported[i]);
				goto out;
			}
			if (rc != -SR_ENOTFOUND)
				goto out;
		}
		if (env("AWS_PROFILE") == NULL)
			goto out; /* default absent: the chain goes on */
		/* A named profile must exist somewhere. */
		if (shared_path(0, &fpath) == 0 &&
		    ini_scan(fpath, 0, prof, NULL, NULL, NULL) == 0)
			rc = sr_err_set(e, -EINVAL,
					"aws credentials: profile %s in %s: "
					"aws_access_key_id: missing", prof, fpath);
		else if (shared_path(1, &cpath) == 0 &&
			 ini_scan(cpath, 1, prof, NULL, NULL, NULL) == 0)
			rc = sr_err_set(e, -EINVAL,
					"aws credentials: profile %s in %s: "
					"aws_access_key_id: missing", prof, cpath);
		else
			rc = sr_err_set(e, -EINVAL,
					"aws credentials: AWS_PROFILE=%s: no such "
					"profile in %s or %s", prof,
					fpath != NULL ? fpath : "~/.aws/credentials",
					cpath != NULL ? cpath : "~/.aws/config");
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = profile_get("aws_secret_access_key", 1, &sk, NULL, e);
	if (rc == -SR_ENOTFOUND) {
		rc = sr_err_set(e, -EINVAL,
				"aws credentials: profile %s in %s: "
				"aws_secret_access_key: missing", prof, where);
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = profile_get("aws_session_token", 1, &tok, NULL, e);
	if (rc < 0 && rc != -SR_ENOTFOUND)
		goto out;
	rc = cred_set(out, id, sk, tok, e);
	if (rc == 0)
		snprintf(out->source, sizeof(out->source), "profile %s in %s",
			 prof, where);
out:
	free(id);
	wipe_free(sk);
	wipe_free(tok);
	wipe_free(other);
	free(where);
	free(cpath);
	free(fpath);
	return rc;
}

/* ---- IMDSv2 ----------------------------------------------------------- */

static int imds_get(const char *base, const char *path, const char *token,
		    struct sr_http_resp *resp, struct sr_err *e)
{
	struct sr_http_opts o;
	char url[512], hdr[600];
	const char *const hdrs[] = { hdr, NULL };
	int put = token == NULL;

	sr_http_opts_default(&o);
	o.timeout_ms = 1000;
	o.connect_timeout_ms = 1000;
	o.max_retries = 0;
	o.max_body = 64 << 10;
	snprintf(url, sizeof(url), "%s%s", base, path);
	if (put)
		snprintf(hdr, sizeof(hdr),
			 "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	else
		snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", token);
	return sr_http_request(put ? "PUT" : "GET", url, hdrs, NULL, 0, &o,
			       resp, e);
}

static int from_imds(struct sr_awscred *out, struct sr_err *e)
{
	const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct sr_http_resp r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	char *token = NULL, *role = NULL, *nl;
	char path[300], b[512];
	json_t *doc = NULL;
	const char *id, *sk, *tok, *code = NULL, *exp = NULL;
	struct sr_err je = { 0 };
	int64_t ns;
	int rc;

	if (env_true("AWS_EC2_METADATA_DISABLED"))
		return -SR_ENOTFOUND;
	if (base == NULL)
		base = IMDS_DEFAULT;
	snprintf(b, sizeof(b), "%s", base);
	while (b[0] != '\0' && b[strlen(b) - 1] == '/')
		b[strlen(b) - 1] = '\0';
	rc = imds_get(b, "/latest/api/token", NULL, &r1, NULL);
	if (rc < 0 || r1.status != 200) {
		rc = -SR_ENOTFOUND; /* no metadata service: not on EC2 */
		goto out;
	}
	token = strndup(r1.body, r1.body_len);
	if (token == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	sr_log_secret(token);
	rc = imds_get(b, IMDS_CREDS, token, &r2, NULL);
	if (rc < 0 || r2.status == 404) {
		rc = -SR_ENOTFOUND; /* on EC2, but no instance role */
		goto out;
	}
	if (r2.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance metadata %s: HTTP %ld",
				IMDS_CREDS, r2.status);
		goto out;
	}
	role = strndup(r2.body, r2.body_len);
	if (role == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	nl = strchr(role, '\n');
	if (nl != NULL)
		*nl = '\0';
	if (role[0] == '\0' || strchr(role, '/') != NULL || strlen(role) > 128) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance metadata %s: bad role name",
				IMDS_CREDS);
		goto out;
	}
	snprintf(path, sizeof(path), IMDS_CREDS "%s", role);
	rc = imds_get(b, path, token, &r3, NULL);
	if (rc < 0 || r3.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance role %s: HTTP %ld",
				role, r3.status);
		goto out;
	}
	doc = sr_json_load_buf(r3.body, r3.body_len, "instance role", &je);
	if (doc == NULL || sr_json_get_str_opt(doc, "Code", &code, "", NULL) < 0 ||
	    (code != NULL && strcmp(code, "Success") != 0) ||
	    sr_json_get_str(doc, "AccessKeyId", &id, "", NULL) < 0 ||
	    sr_json_get_str(doc, "SecretAccessKey", &sk, "", NULL) < 0 ||
	    sr_json_get_str(doc, "Token", &tok, "", NULL) < 0 ||
	    sr_json_get_str_opt(doc, "Expiration", &exp, "", NULL) < 0) {
		/* the message would quote the document: keep it out */
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance role %s: unusable answer "
				"(expected Code=Success, AccessKeyId, "
				"SecretAccessKey, Token)", role);
		goto out;
	}
	rc = cred_set(out, id, sk, tok, e);
	if (rc < 0)
		goto out;
	if (exp != NULL && sr_time_parse_rfc3339(exp, &ns, NULL) == 0)
		out->expires_s = ns / 1000000000;
	snprintf(out->source, sizeof(out->source), "instance role %s (IMDSv2)",
		 role);
out:
	if (r3.body != NULL)
		OPENSSL_cleanse(r3.body, r3.body_len);
	json_decref(doc);
	sr_http_resp_free(&r1);
	sr_http_resp_free(&r2);
	sr_http_resp_free(&r3);
	wipe_free(token);
	free(role);
	return rc;
}

int sr_awscred_resolve(struct sr_awscred *out, struct sr_err *e)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = from_env(out, e);
	if (rc != -SR_ENOTFOUND)
		return rc;
	rc = from_profile(out, e);
	if (rc != -SR_ENOTFOUND)
		return rc;
	rc = from_imds(out, e);
	if (rc != -SR_ENOTFOUND)
		return rc;
	return sr_err_set(e, -SR_ENOTFOUND,
			  "aws credentials: none found: set AWS_ACCESS_KEY_ID and "
			  "AWS_SECRET_ACCESS_KEY, or add profile %s to "
			  "~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE), or run "
			  "on EC2 with an instance role",
			  profile_name());
}

/* ---- region and endpoint ---------------------------------------------- */

int sr_aws_region(char **out, struct sr_err *e)
{
	const char *v = env("AWS_REGION");
	int rc;

	*out = NULL;
	if (v == NULL)
		v = env("AWS_DEFAULT_REGION");
	if (v != NULL) {
		*out = strdup(v);
		return *out != NULL ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
	}
	rc = profile_get("region", 0, out, NULL, e);
	if (rc == -SR_ENOTFOUND)
		rc = sr_err_set(e, -SR_ENOTFOUND,
				"aws region: none set: export AWS_REGION, or add "
				"'region = ...' to profile %s in ~/.aws/config "
				"(AWS_CONFIG_FILE)", profile_name());
	return rc;
}

int sr_aws_endpoint(const char *service_id, const char *host_prefix,
		    const char *region, char **out, int *custom,
		    struct sr_err *e)
{
	char var[96];
	const char *v = NULL;
	char *prof = NULL;
	size_t n;
	int rc;

	*out = NULL;
	if (custom != NULL)
		*custom = 0;
	if (!env_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) {
		n = (size_t)snprintf(var, sizeof(var), "AWS_ENDPOINT_URL_%s",
				     service_id);
		for (size_t i = 17; i < n && i < sizeof(var); i++)
			var[i] = (var[i] == ' ' || var[i] == '-')
					 ? '_'
					 : (char)toupper((unsigned char)var[i]);
		v = env(var);
		if (v == NULL)
			v = env("AWS_ENDPOINT_URL");
		if (v == NULL) {
			rc = profile_get("endpoint_url", 0, &prof, NULL, e);
			if (rc < 0 && rc != -SR_ENOTFOUND)
				return rc;
			v = prof;
		}
	}
	if (v != NULL) {
		if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
			rc = sr_err_set(e, -EINVAL,
					"aws endpoint for %s: '%s': expected an "
					"http:// or https:// URL", service_id, v);
			free(prof);
			return rc;
		}
		*out = strdup(v);
		if (custom != NULL)
			*custom = 1;
	} else if (asprintf(out, "https://%s.%s.amazonaws.com", host_prefix,
			    region) < 0) {
		*out = NULL;
	}
	free(prof);
	if (*out == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	n = strlen(*out);
	while (n > 0 && (*out)[n - 1] == '/')
		(*out)[--n] = '\0';
	return 0;
}

int sr_aws_url_is_loopback(const char *url)
{
	const char *h, *end;
	char host[256];
	struct in_addr a4;
	size_t n;

	if (url == NULL)
		return 0;
	h = strstr(url, "://");
	if (h == NULL)
		return 0;
	h += 3;
	if (strchr(h, '@') != NULL && strchr(h, '@') < h + strcspn(h, "/"))
		h = strchr(h, '@') + 1;
	if (*h == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return 0;
		n = (size_t)(end - h - 1);
		if (n >= sizeof(host))
			return 0;
		memcpy(host, h + 1, n);
		host[n] = '\0';
		return strcmp(host, "::1") == 0;
	}
	n = strcspn(h, ":/?#");
	if (n == 0 || n >= sizeof(host))
		return 0;
	memcpy(host, h, n);
	host[n] = '\0';
	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return 0;
}
