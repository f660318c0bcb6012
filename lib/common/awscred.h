/*
 * awscred.h - AWS credentials, region and endpoint, found the way the AWS
 * CLI finds them (botocore's chain).
 *
 * Credentials (sr_awscred_resolve), first source that has them wins:
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *      (+ AWS_SESSION_TOKEN, + AWS_CREDENTIAL_EXPIRATION as `aws configure
 *      export-credentials` writes it); one without the other is an error
 *      naming the missing variable.
 *   The profile $AWS_PROFILE (else "default") of the shared files,
 *        config:      $AWS_CONFIG_FILE or ~/.aws/config,
 *                     [default] / [profile NAME] / [sso-session NAME]
 *        credentials: $AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
 *                     [NAME]; its keys win over config's,
 *   read with libinih as Python's configparser reads them (indented lines
 *   continue a value, no inline comments, a key or section given twice
 *   is an error, lines of any length: session tokens run to kilobytes):
 *   2. role_arn + source_profile (another profile, resolved the same way,
 *      chains allowed, loops refused) or credential_source (Environment,
 *      Ec2InstanceMetadata, EcsContainer): STS AssumeRole, with
 *      role_session_name, external_id, duration_seconds; mfa_serial is
 *      refused (it needs a person to type a code);
 *   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *      (+ AWS_ROLE_SESSION_NAME), or the profile's web_identity_token_file
 *      + role_arn: STS AssumeRoleWithWebIdentity (EKS IRSA);
 *   4. SSO: sso_session ([sso-session NAME]: sso_start_url, sso_region) or
 *      the legacy sso_start_url + sso_region, with sso_account_id and
 *      sso_role_name: the token `aws sso login` cached in
 *      ~/.aws/sso/cache/SHA1.json traded for role credentials at the SSO
 *      portal (GetRoleCredentials); an expired token names the login
 *      command;
 *   5. aws_access_key_id + aws_secret_access_key (+ aws_session_token) in
 *      the credentials file, then
 *   6. credential_process: the command line split into words as the CLI
 *      splits it (shlex), run without a shell, its JSON (Version 1)
 *      read; a failure quotes its exit status and stderr's first line;
 *   7. the same static keys in the config file;
 *   (a profile that exists but gives none of these is an error naming it)
 *   8. ECS / EKS container credentials: AWS_CONTAINER_CREDENTIALS_
 *      RELATIVE_URI (http://169.254.170.2) or _FULL_URI (loopback, the
 *      ECS/EKS link-local addresses, or https), with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE / _TOKEN;
 *   9. the instance role through IMDSv2 (unless AWS_EC2_METADATA_DISABLED
 *      =true):
 *        PUT  /latest/api/token  (X-aws-ec2-metadata-token-ttl-seconds)
 *        GET  /latest/meta-data/iam/security-credentials/        -> role
 *        GET  /latest/meta-data/iam/security-credentials/ROLE    -> JSON
 *      at $AWS_EC2_METADATA_SERVICE_ENDPOINT or http://169.254.169.254,
 *      with a 1 s timeout and no retries, so a laptop is not held up.
 * When nothing is found the error lists what was tried.
 *
 * Refreshing: temporary credentials carry expires_s.  A long-lived client
 * keeps them in a struct sr_awscred_cache, which resolves the chain again
 * SR_AWSCRED_REFRESH_S before they expire (a failed refresh keeps the old
 * ones while they last).  renew_until_s says until when that can work
 * without a person: 0 for sources that renew themselves (roles, the
 * container, the instance, a process), expires_s for keys that were
 * handed over (environment, a file), the SSO token's expiry for SSO;
 * sr_awscred_health() turns it into the warning `spotrun check` and the
 * daemon's alert print before it runs out.
 *
 * Region (sr_aws_region): AWS_REGION, AWS_DEFAULT_REGION, then `region` of
 * the profile in the config file.
 *
 * Endpoint (sr_aws_endpoint): AWS_ENDPOINT_URL_<SERVICE> (service id upper-
 * cased, spaces and dashes as '_': EC2, S3, STS, SSO), then
 * AWS_ENDPOINT_URL, then the profile's `services` section's
 * `<service> =\n  endpoint_url = ...`, then `endpoint_url` of the profile,
 * then https://<prefix>.<region>.amazonaws.com.
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true skips all but the default.
 *
 * Secrets: the secret key and session token are registered with
 * sr_log_secret() when loaded (and forgotten when freed) and never copied
 * into an error message; errors name the variable, file and profile,
 * never a value.  Credentials obtained over the network come only from
 * https, loopback or the clouds' link-local metadata addresses.
 *
 * Thread-safety: sr_awscred_resolve reads the environment and files; call
 * it where nothing else changes the environment.  A struct
 * sr_awscred_cache may be shared by threads.
 */
#ifndef SR_COMMON_AWSCRED_H
#define SR_COMMON_AWSCRED_H

#include <stdint.h>
#include "err.h"
#include "sigv4.h"

/* Resolve again this long before temporary credentials expire. */
#define SR_AWSCRED_REFRESH_S (15 * 60)
/* Warn this long before credentials that cannot be renewed run out. */
#define SR_AWSCRED_WARN_S (60 * 60)

enum sr_awscred_kind {
	SR_AWSCRED_NONE = 0,
	SR_AWSCRED_ENV,          /* environment variables */
	SR_AWSCRED_STATIC,       /* keys in a shared file */
	SR_AWSCRED_ASSUME_ROLE,  /* role_arn: STS AssumeRole */
	SR_AWSCRED_WEB_IDENTITY, /* STS AssumeRoleWithWebIdentity */
	SR_AWSCRED_SSO,          /* SSO portal, cached token */
	SR_AWSCRED_PROCESS,      /* credential_process */
	SR_AWSCRED_CONTAINER,    /* ECS / EKS container endpoint */
	SR_AWSCRED_IMDS,         /* EC2 instance role */
};

struct sr_awscred {
	char *access_key_id;     /* malloc'd */
	char *secret_access_key; /* malloc'd, wiped on free */
	char *session_token;     /* malloc'd or NULL, wiped on free */
	int64_t expires_s;       /* epoch seconds, 0 = does not expire */
	enum sr_awscred_kind kind;
	/* Until when the chain can hand out fresh ones unaided (epoch s):
	 * 0 = indefinitely; see Refreshing above. */
	int64_t renew_until_s;
	/* What a person does before renew_until_s, e.g. "run `aws sso login
	 * --profile dev`"; "" when nothing is needed. */
	char renew_hint[192];
	/* Where they came from, for `spotrun check`, e.g. "environment",
	 * "profile dev in /home/u/.aws/credentials", "instance role web". */
	char source[320];
};

/* Resolve credentials (order above) into *out.  On failure *out is zeroed
 * and *e says what was tried: -SR_ENOTFOUND when no source had any,
 * -EINVAL for a half-set source or a profile that gives none,
 * -SR_EUNSUPPORTED for a profile kind we cannot use (mfa_serial),
 * -SR_EPARSE for a malformed file (file:line), -EACCES for an answer
 * that refused us (STS, SSO, a process that failed), -SR_EHTTP for a
 * source that could not be reached or answered nonsense.  Free with
 * sr_awscred_free(). */
int sr_awscred_resolve(struct sr_awscred *out, struct sr_err *e);

/* Wipes the secrets (and forgets them in the log's redaction list) and
 * frees the strings; *c is zeroed.  NULL-safe. */
void sr_awscred_free(struct sr_awscred *c);

/* A borrowed view for sr_sigv4_sign(), valid while *c is. */
struct sr_sigv4_creds sr_awscred_view(const struct sr_awscred *c);

/* Words for a kind ("environment", "assume-role", ...).  Never NULL. */
const char *sr_awscred_kind_str(enum sr_awscred_kind k);

/*
 * Health of credentials at now_s: 0 when they are good for longer than
 * SR_AWSCRED_WARN_S or renew themselves; 1 (warning) when they, or what
 * renews them, run out within SR_AWSCRED_WARN_S; 2 (error) when that has
 * happened.  msg (may be NULL) gets one line naming the source, the time
 * and renew_hint: what `spotrun check` prints and the daemon alerts.
 */
int sr_awscred_health(const struct sr_awscred *c, int64_t now_s, char *msg,
		      size_t n);

/*
 * Credentials kept fresh for a long-lived client (the EC2 driver, the S3
 * store).  Thread-safe.
 */
struct sr_awscred_cache;

/* Resolve now; fails as sr_awscred_resolve.  *out is the caller's, freed
 * with sr_awscred_cache_close(). */
int sr_awscred_cache_open(struct sr_awscred_cache **out, struct sr_err *e);
void sr_awscred_cache_close(struct sr_awscred_cache *cc); /* NULL-safe */

/*
 * Sign r with the current credentials (sr_sigv4_sign), resolving the
 * chain again first when they expire within SR_AWSCRED_REFRESH_S (at most
 * one attempt per 10 s while it fails) or when sr_awscred_cache_expire()
 * said so.  A failed refresh keeps credentials that have not expired;
 * once they have, -EKEYEXPIRED with *e naming the source and the
 * refresh's error, so the caller waits instead of failing a job.
 */
int sr_awscred_cache_sign(struct sr_awscred_cache *cc,
			  const struct sr_sigv4_req *r, char ***sig,
			  struct sr_err *e);

/* Resolve the chain again now (the lock not held over it).  0, or the
 * resolve's error (the old credentials stay). */
int sr_awscred_cache_refresh(struct sr_awscred_cache *cc, struct sr_err *e);

/* The cloud answered that the credentials expired (ExpiredToken): the
 * next sign resolves again, whatever expires_s says. */
void sr_awscred_cache_expire(struct sr_awscred_cache *cc);

struct sr_awscred_state {
	char source[320];
	enum sr_awscred_kind kind;
	int64_t expires_s, renew_until_s;
	char renew_hint[192];
	int64_t refreshed_s;      /* wall clock of the last resolve */
	int refreshes;            /* successful refreshes so far */
	int last_rc;              /* of the last refresh attempt, 0 ok */
	char last_err[SR_ERR_MSG_MAX];
};

/* A copy of the cache's state, for `spotrun check` and alerts. */
void sr_awscred_cache_state(struct sr_awscred_cache *cc,
			    struct sr_awscred_state *out);

/* Health (sr_awscred_health) of what the cache holds, with a failing
 * refresh counted as an error once the credentials expired and as a
 * warning before. */
int sr_awscred_cache_health(struct sr_awscred_cache *cc, int64_t now_s,
			    char *msg, size_t n);

/* The region, malloc'd into *out (caller frees); -SR_ENOTFOUND with a
 * message naming AWS_REGION and the config file when none is set. */
int sr_aws_region(char **out, struct sr_err *e);

/*
 * Endpoint URL for service_id ("EC2", "S3") in region: malloc'd into *out
 * (caller frees), without a trailing '/'.  host_prefix builds the default
 * ("ec2" -> https://ec2.REGION.amazonaws.com).  *custom (may be NULL) is
 * set to 1 when the URL came from a variable or the config file.
 */
int sr_aws_endpoint(const char *service_id, const char *host_prefix,
		    const char *region, char **out, int *custom,
		    struct sr_err *e);

/*
 * Whether url's host is a loopback address (127.0.0.0/8, ::1,
 * "localhost"): sr_url_is_loopback (url.h).  Tests call it to refuse
 * spending real money.
 */
int sr_aws_url_is_loopback(const char *url);

/*
 * Shared-file lookup, exposed for tests and `spotrun check`: the value of
 * `key` in profile `profile` of the INI file `path` (config-file section
 * naming when is_config).  Returns 0 with *out malloc'd (caller frees),
 * -SR_ENOTFOUND when the file, the profile or the key is absent,
 * -SR_EPARSE "path:line: ..." on a malformed line.
 */
int sr_aws_ini_get(const char *path, int is_config, const char *profile,
		   const char *key, char **out, struct sr_err *e);

#endif
