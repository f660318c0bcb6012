/*
 * gcpcred.h - Google OAuth2 access tokens, found the way Google's client
 * libraries find application default credentials (ADC):
 *
 *   1. GOOGLE_APPLICATION_CREDENTIALS names a JSON file:
 *        "type": "service_account"  a JWT signed with its private_key
 *          (RS256, OpenSSL) - header {"alg":"RS256","typ":"JWT","kid":
 *          private_key_id}, claims {iss: client_email, scope, aud:
 *          token_uri, iat, exp = iat + 3600} - exchanged at token_uri
 *          with grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer;
 *        "type": "authorized_user"  its refresh_token traded at
 *          token_uri (default https://oauth2.googleapis.com/token) with
 *          grant_type=refresh_token, client_id, client_secret;
 *   2. gcloud's ADC file ($CLOUDSDK_CONFIG, else ~/.config/gcloud,
 *      /application_default_credentials.json) from `gcloud auth
 *      application-default login`: authorized_user, as above;
 *   3. the metadata server, on a GCE VM (/sys/class/dmi/id/product_name
 *      says Google) or at GCE_METADATA_HOST (host:port):
 *        GET /computeMetadata/v1/instance/service-accounts/default/token
 *        Metadata-Flavor: Google
 *      answered with Metadata-Flavor: Google.
 *   None: -SR_ENOTFOUND naming the variable and file to set.  A file that
 *   is there but unreadable, not JSON, of another type or missing a field
 *   is -SR_EPARSE naming the file and field.
 *
 * Every answer is {"access_token", "expires_in", "token_type":"Bearer"}.
 * The token is kept until GCPCRED_EARLY_S before it expires, then fetched
 * again (one request at a time, under the handle's mutex); a refusal
 * (400/401 invalid_grant, 403) is -EACCES, a transport failure -SR_EHTTP.
 *
 * Project: GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT, the key file's
 * project_id (quota_project_id for a user), else the metadata server's
 * project/project-id; "" when none says.
 *
 * Endpoints: token_uri must be https or loopback (a key file's token_uri
 * is where its JWT goes); the metadata server is plain http, as on GCE.
 * Secrets (the private key, refresh token, client secret, access tokens)
 * are registered with sr_log_secret and never copied into an error.
 *
 * Thread-safety: gcpcred_token may be called from any thread.
 */
#ifndef SR_GCP_GCPCRED_H
#define SR_GCP_GCPCRED_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GCPCRED_SCOPE "https://www.googleapis.com/auth/cloud-platform"
#define GCPCRED_TOKEN_URL "https://oauth2.googleapis.com/token"
#define GCPCRED_META_HOST "metadata.google.internal"
#define GCPCRED_EARLY_S 300     /* refresh this long before expiry */
#define GCPCRED_TOKEN_MAX 4096

enum gcpcred_kind {
	GCPCRED_SERVICE_ACCOUNT = 1,
	GCPCRED_AUTHORIZED_USER,
	GCPCRED_METADATA,
};

struct gcpcred;

/* Find credentials (no network call: a metadata source is only chosen,
 * not asked).  *out is the caller's (gcpcred_close).  0, -SR_ENOTFOUND
 * or -SR_EPARSE with *e naming the variable, file and field. */
int gcpcred_open(struct gcpcred **out, struct sr_err *e);
void gcpcred_close(struct gcpcred *c); /* NULL-safe */

/* A valid access token into out[0..n) (cached; fetched when it is
 * within GCPCRED_EARLY_S of expiry); *expires_s (may be NULL) its
 * expiry, epoch s.  0, -EACCES (refused), -SR_EHTTP, -SR_EPARSE. */
int gcpcred_token(struct gcpcred *c, char *out, size_t n, int64_t *expires_s,
		  struct sr_err *e);

enum gcpcred_kind gcpcred_kind(const struct gcpcred *c);
/* Where they came from, e.g. "service account sa@p.iam.gserviceaccount
 * .com (GOOGLE_APPLICATION_CREDENTIALS=/k.json)" (borrowed). */
const char *gcpcred_source(const struct gcpcred *c);
/* The project, "" unknown (borrowed).  On the metadata source it is
 * asked once (may block for its timeout). */
const char *gcpcred_project(struct gcpcred *c);
/* The metadata server's base URL ("http://host:port") (borrowed). */
const char *gcpcred_meta_url(const struct gcpcred *c);

/* The signed JWT assertion of a service account (exposed for the
 * conformance test): *out malloc'd (caller frees). */
int gcpcred_jwt(const char *email, const char *key_id, const char *pem,
		const char *aud, const char *scope, int64_t now_s, char **out,
		struct sr_err *e);

/* Parse a token endpoint's answer: the token into out[0..n), its
 * lifetime into *expires_in_s.  0 or -SR_EPARSE naming the field
 * (exposed for the fuzzer). */
int gcpcred_parse_token(const char *body, size_t len, char *out, size_t n,
			int64_t *expires_in_s, struct sr_err *e);

#endif
