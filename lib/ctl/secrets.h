/*
 * secrets.h - a job's secret env values (SkyPilot `secrets:`), never
 * stored in clear (issue 10, item 4).
 *
 * At POST /v1/jobs the values of the keys the job file lists under
 * `secrets:` - given in the file or, for a key without one, in the
 * request's `envs` - are taken out of everything stored in clear:
 *   - spec_yaml: each value of the top-level `secrets:` mapping becomes
 *     "<redacted>" (the stored text is for display; it is never parsed
 *     again);
 *   - spec_json: `secrets` maps each key to "<redacted>" (what the API
 *     shows, views.c);
 *   - envs: those keys are removed.
 * They are kept as one JSON object sealed with AES-256-GCM under a key in
 * <state-dir>/secrets.key (0600, created at first start) in
 * jobs.secrets_enc: nonce (12 bytes) | ciphertext | tag (16 bytes), with
 * the label "spotrun-secrets-v1" as associated data.  The node's register reply
 * opens it and hands the values to the agent, which puts them in the
 * workload's environment.  Whoever reads the database without the key
 * file (a backup, a WAL copy) learns nothing of them.
 */
#ifndef SR_CTL_SECRETS_H
#define SR_CTL_SECRETS_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"
#include "market/jobspec.h"

#define CTL_SECRET_KEY_LEN 32

/* What jobs_create stores instead of the clear values.  Free with
 * ctl_secrets_clear(). */
struct ctl_secrets {
	char *yaml;            /* redacted job YAML (NUL-terminated) */
	size_t yaml_len;
	json_t *envs;          /* the request's envs without the secret keys,
				  or NULL */
	unsigned char *sealed; /* NULL when the job has no secrets */
	size_t sealed_len;
};

/* Split the secrets of job `js` (parsed from yaml) out of yaml, specj
 * (changed in place) and envs (not changed; a filtered copy is made) and
 * seal them with key.  0, or -EINVAL naming a secret with no value, or
 * -ENOMEM / -EIO. */
int ctl_secrets_split(const struct jobspec *js, const char *yaml, size_t len,
		      json_t *specj, json_t *envs,
		      const unsigned char key[CTL_SECRET_KEY_LEN],
		      struct ctl_secrets *out, struct sr_err *e);
void ctl_secrets_clear(struct ctl_secrets *s);

/* Open a sealed blob: a new JSON object of the secret values, or NULL
 * (wrong key, damaged blob, out of memory). */
json_t *ctl_secrets_open(const unsigned char *blob, size_t len,
			 const unsigned char key[CTL_SECRET_KEY_LEN]);

/* The same sealing for other secrets kept in the database (a launch's
 * parameters: clouds.c), under their own label (the associated data,
 * so a blob of one kind never opens as another): v as compact JSON,
 * sealed into *out (malloc'd, caller frees) of *n bytes.  0, -ENOMEM,
 * -EIO. */
int ctl_sealed_json(const json_t *v, const char *label,
		    const unsigned char key[CTL_SECRET_KEY_LEN],
		    unsigned char **out, size_t *n);
/* Open a blob sealed under label: a new JSON object, or NULL. */
json_t *ctl_sealed_open(const unsigned char *blob, size_t len,
			const char *label,
			const unsigned char key[CTL_SECRET_KEY_LEN]);

/* The redaction of spec_yaml alone (exposed for tests): a malloc'd copy
 * of yaml with every value of the top-level `secrets:` mapping replaced. */
int ctl_secrets_redact_yaml(const char *yaml, size_t len, char **out,
			    size_t *out_len);

#endif
