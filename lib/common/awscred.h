/*
 * awscred.h - AWS credentials, region and endpoint, found the way the AWS
 * SDKs find them.
 *
 * Credentials (sr_awscred_resolve), first source that has them wins:
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *      (+ AWS_SESSION_TOKEN); one without the other is an error naming
 *      the missing variable.
 *   2. shared files, profile $AWS_PROFILE (else "default"):
 *        credentials: $AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
 *                     section [NAME]
 *        config:      $AWS_CONFIG_FILE or ~/.aws/config,
 *                     section [NAME] for default, [profile NAME] otherwise
 *      keys aws_access_key_id, aws_secret_access_key, aws_session_token;
 *      the credentials file wins over config for the same profile.  A
 *      profile that only names role_arn, source_profile, sso_* or
 *      credential_process is reported as unsupported (by key name).
 *      A profile named by AWS_PROFILE that exists in neither file is an
 *      error naming both files.
 *   3. instance role through IMDSv2 (unless AWS_EC2_METADATA_DISABLED=true):
 *        PUT  /latest/api/token  (X-aws-ec2-metadata-token-ttl-seconds)
 *        GET  /latest/meta-data/iam/security-credentials/        -> role
 *        GET  /latest/meta-data/iam/security-credentials/ROLE    -> JSON
 *      at $AWS_EC2_METADATA_SERVICE_ENDPOINT or http://169.254.169.254,
 *      with a 1 s timeout and no retries, so a laptop is not held up.
 * When nothing is found the error lists what was tried.
 *
 * Region (sr_aws_region): AWS_REGION, AWS_DEFAULT_REGION, then `region` of
 * the profile in the config file.
 *
 * Endpoint (sr_aws_endpoint): AWS_ENDPOINT_URL_<SERVICE> (service id upper-
 * cased, spaces and dashes as '_': EC2, S3), then AWS_ENDPOINT_URL, then
 * `endpoint_url` of the profile, then https://<prefix>.<region>.amazonaws.com.
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true skips all but the default.
 *
 * Secrets: the secret key and session token are registered with
 * sr_log_secret() when loaded and never copied into an error message;
 * errors name the variable, file and profile, never a value.
 *
 * Thread-safety: these functions read the environment and files; call
 * them where nothing else changes the environment (start-up, refresh).
 */
#ifndef SR_COMMON_AWSCRED_H
#define SR_COMMON_AWSCRED_H

#include <stdint.h>
#include "err.h"
#include "sigv4.h"

struct sr_awscred {
	char *access_key_id;     /* malloc'd */
	char *secret_access_key; /* malloc'd, wiped on free */
	char *session_token;     /* malloc'd or NULL, wiped on free */
	int64_t expires_s;       /* epoch seconds, 0 = does not expire */
	/* Where they came from, for `spotrun check`, e.g. "environment",
	 * "profile dev in /home/u/.aws/credentials", "instance role web". */
	char source[320];
};

/* Resolve credentials (order above) into *out.  On failure *out is zeroed
 * and *e says what was tried: -SR_ENOTFOUND when no source had any,
 * -EINVAL for a half-set source, -SR_EUNSUPPORTED for a profile kind we
 * cannot use, -SR_EPARSE for a malformed file (file:line), -SR_EHTTP for
 * an instance-role answer that could not be used.  Free with
 * sr_awscred_free(). */
int sr_awscred_resolve(struct sr_awscred *out, struct sr_err *e);

/* Wipes the secrets and frees the strings; *c is zeroed.  NULL-safe. */
void sr_awscred_free(struct sr_awscred *c);

/* A borrowed view for sr_sigv4_sign(), valid while *c is. */
struct sr_sigv4_creds sr_awscred_view(const struct sr_awscred *c);

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
 * "localhost").  Tests call it to refuse spending real money.
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
