/*
 * awscred_int.h - internals shared by the awscred*.c files (not an API).
 *
 *   awscred.c        the chain (awscred.h), environment, region, endpoint
 *   awscred_ini.c    the shared config and credentials files (libinih)
 *   awscred_prof.c   one profile: role_arn, web identity, SSO, static
 *                    keys, credential_process, in the CLI's order
 *   awscred_sts.c    STS AssumeRole / AssumeRoleWithWebIdentity
 *   awscred_proc.c   credential_process
 *   awscred_meta.c   credential documents over HTTP: ECS container
 *                    endpoint, EC2 instance role (IMDSv2)
 *   awscred_sso.c    the SSO token cache and the portal's role credentials
 *   awscred_cache.c  credentials kept fresh for a long-lived client
 */
#ifndef SR_COMMON_AWSCRED_INT_H
#define SR_COMMON_AWSCRED_INT_H

#include <stdbool.h>
#include <jansson.h>

#include "awscred.h"
#include "http.h"

/* ---- awscred.c ----------------------------------------------------- */

/* getenv, with "" read as unset. */
const char *sr_awscred__env(const char *name);
bool sr_awscred__env_true(const char *name);

/* Fill *out from borrowed strings (token may be NULL or ""); secrets are
 * registered with sr_log_secret().  -ENOMEM with *e set; *out untouched
 * then. */
int sr_awscred__set(struct sr_awscred *out, const char *akid,
		    const char *secret, const char *token, struct sr_err *e);

/* OPENSSL_cleanse + free; NULL-safe. */
void sr_awscred__wipe(char *s);

/* The profile the user asked for: $AWS_PROFILE, else "default". */
const char *sr_awscred__profile_name(void);

/* ---- awscred_cache.c ------------------------------------------------ */

/* How long a refresh waits after the last attempt (10 s; tests: 0). */
void sr_awscred__cache_retry(struct sr_awscred_cache *cc, int64_t ns);

/* ---- awscred_ini.c --------------------------------------------------- */

/* Both shared files, parsed once per resolve. */
struct sr_awsconf {
	char *cfg_path, *cred_path;    /* malloc'd; NULL when no HOME */
	struct sr_awsini *cfg, *cred;  /* NULL when the file is absent */
};

/* Load both files (absent files are empty).  -SR_EPARSE "path:line:
 * ..." on a malformed one, -ENOMEM.  Free with sr_awscred__conf_free. */
int sr_awscred__conf_load(struct sr_awsconf *c, struct sr_err *e);
void sr_awscred__conf_free(struct sr_awsconf *c); /* NULL-safe */

/* Parse one INI file the way the CLI's configparser reads it; exposed
 * for sr_aws_ini_get.  -SR_ENOTFOUND when absent. */
int sr_awscred__ini_load(const char *path, struct sr_awsini **out,
			 struct sr_err *e);
/* The same from memory; `name` stands for the file in messages. */
int sr_awscred__ini_parse(const char *name, const char *buf, size_t len,
			  struct sr_awsini **out, struct sr_err *e);
void sr_awscred__ini_free(struct sr_awsini *f); /* NULL-safe */
/* Number of keys, and the i-th one's section and key (borrowed). */
size_t sr_awscred__ini_count(const struct sr_awsini *f);
void sr_awscred__ini_entry(const struct sr_awsini *f, size_t i,
			   const char **section, const char **key);
/* Value of key (case-insensitive) in the section whose header is exactly
 * `section` (nothing trimmed on either side): borrowed, NULL when absent. */
const char *sr_awscred__ini_get(const struct sr_awsini *f, const char *section,
				const char *key);

/* Value of key for `profile`: the credentials file's, else the config
 * file's ([profile NAME], or [default]).  *where (may be NULL) receives
 * the file's path.  Borrowed from c; NULL when absent or empty. */
const char *sr_awscred__prof_get(const struct sr_awsconf *c,
				 const char *profile, const char *key,
				 const char **where);
/* Same, from one file only. */
const char *sr_awscred__prof_get_in(const struct sr_awsconf *c, bool config,
				    const char *profile, const char *key);
/* Whether either file has a section for the profile. */
bool sr_awscred__prof_exists(const struct sr_awsconf *c, const char *profile);
/* Key of the config file's [KIND NAME] section (kind "sso-session",
 * "services"); borrowed or NULL. */
const char *sr_awscred__conf_section(const struct sr_awsconf *c,
				     const char *kind, const char *name,
				     const char *key);

/* ---- awscred_prof.c -------------------------------------------------- */

/* Credentials of `profile` (see awscred.h, 2-6): -SR_ENOTFOUND when the
 * profile gives none (the chain goes on), else 0 or an error naming the
 * profile.  top: the profile the user named (environment variables of
 * web identity apply only there). */
int sr_awscred__from_profile(const struct sr_awsconf *c, const char *profile,
			     bool top, struct sr_awscred *out,
			     struct sr_err *e);

/* ---- awscred_sts.c --------------------------------------------------- */

struct sr_awssts_req {
	bool web_identity;         /* AssumeRoleWithWebIdentity (unsigned) */
	const char *role_arn;
	const char *session_name;
	const char *external_id;   /* AssumeRole only; NULL none */
	const char *web_token;     /* web identity only */
	int duration_s;            /* 0: not sent (STS default, 1 h) */
	const char *region;        /* NULL: the global endpoint */
	const char *profile;       /* for the endpoint lookup; may be NULL */
	const struct sr_awsconf *conf; /* may be NULL */
	const struct sr_awscred *src;  /* AssumeRole's signing credentials */
};

/* Call STS; on 0 *out holds the role's credentials (expires_s set).
 * Errors name the action, the role and STS's code and message. */
int sr_awscred__sts(const struct sr_awssts_req *r, struct sr_awscred *out,
		    struct sr_err *e);

/* ---- awscred_proc.c -------------------------------------------------- */

/* Run the credential_process command line (split as a POSIX shell splits
 * words, never run by a shell) and read its JSON. */
int sr_awscred__process(const char *cmdline, const char *profile,
			struct sr_awscred *out, struct sr_err *e);

/* Split a command line into words as Python's shlex.split(posix=True)
 * does (quotes, backslashes; no expansion).  *argv is a NULL-terminated
 * malloc'd array of malloc'd words (sr_awscred__argv_free); -EINVAL with
 * *e naming the problem (an unclosed quote, no words). */
int sr_awscred__split(const char *line, char ***argv, struct sr_err *e);
void sr_awscred__argv_free(char **argv); /* NULL-safe */

/* ---- awscred_meta.c -------------------------------------------------- */

/* Read a credential document {AccessKeyId, SecretAccessKey, Token |
 * SessionToken, Expiration} into *out.  `what` names the source in
 * errors; values never appear in them. */
int sr_awscred__from_doc(json_t *doc, const char *what, struct sr_awscred *out,
			 struct sr_err *e);

/* ECS / EKS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 * or _FULL_URI (+ AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]).
 * -SR_ENOTFOUND when neither variable is set. */
int sr_awscred__from_container(struct sr_awscred *out, struct sr_err *e);

/* The instance role through IMDSv2; -SR_ENOTFOUND off EC2 or with no
 * role. */
int sr_awscred__from_imds(struct sr_awscred *out, struct sr_err *e);

/* GET url with headers, a short timeout and a bounded body; the caller
 * frees resp.  0 when an answer came (any status). */
int sr_awscred__http_get(const char *url, const char *const *hdrs,
			 long timeout_ms, int retries,
			 struct sr_http_resp *resp, struct sr_err *e);

/* ---- awscred_sso.c --------------------------------------------------- */

/* A profile with sso_session or sso_start_url: the cached token (from
 * `aws sso login`) traded for the role's credentials. */
int sr_awscred__from_sso(const struct sr_awsconf *c, const char *profile,
			 struct sr_awscred *out, struct sr_err *e);

#endif
