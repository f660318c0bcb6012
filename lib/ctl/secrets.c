/*
 * secrets.c - sealing a job's secret values and redacting them from what
 * is stored in clear (see secrets.h).
 */
#include "ctl/secrets.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <yaml.h>

#include <openssl/evp.h>

#define NONCE_LEN 12
#define TAG_LEN 16
#define REDACTED "\"<redacted>\""

#define SECRETS_LABEL "spotrun-secrets-v1"

/* ---- spec_yaml ------------------------------------------------------------ */

struct span {
	size_t a, b; /* [a, b) bytes of a value to replace */
};

/* The byte ranges of the values of the top-level `secrets:` mapping. */
static int find_secret_values(const char *yaml, size_t len, struct span **out,
			      size_t *n)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct span *v = NULL;
	size_t cap = 0, k = 0;
	int depth = 0, in_secrets = 0, want_value = 0, top_key = 1, rc = 0;
	bool is_secrets_key = false;

	*out = NULL;
	*n = 0;
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
	for (;;) {
		yaml_event_type_t t;

		if (!yaml_parser_parse(&p, &ev)) {
			rc = -EINVAL;
			break;
		}
		t = ev.type;
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
			if (depth == 1 && !top_key && is_secrets_key &&
			    t == YAML_MAPPING_START_EVENT)
				in_secrets = 1;
			if (depth == 1)
				top_key = !top_key;
			depth++;
			want_value = 0;
		} else if (t == YAML_MAPPING_END_EVENT ||
			   t == YAML_SEQUENCE_END_EVENT) {
			depth--;
			if (depth == 1)
				in_secrets = 0;
		} else if (t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT) {
			if (depth == 1) {
				if (top_key)
					is_secrets_key = t == YAML_SCALAR_EVENT &&
						!strcmp((const char *)ev.data.scalar.value,
							"secrets");
				top_key = !top_key;
			} else if (depth == 2 && in_secrets) {
				/* an empty value (a key given at launch) has
				 * nothing to hide */
				if (want_value &&
				    ev.end_mark.index > ev.start_mark.index) {
					if (k == cap) {
						size_t nc = cap ? 2 * cap : 8;
						struct span *nv = realloc(v, nc * sizeof *nv);

						if (!nv) {
							yaml_event_delete(&ev);
							rc = -ENOMEM;
							break;
						}
						v = nv;
						cap = nc;
					}
					v[k].a = ev.start_mark.index;
					v[k].b = ev.end_mark.index;
					k++;
				}
				want_value = !want_value;
			}
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}

int ctl_secrets_redact_yaml(const char *yaml, size_t len, char **out,
			    size_t *out_len)
{
	struct span *v = NULL;
	size_t n = 0, o = 0, at = 0;
	char *s;
	int rc;

	*out = NULL;
	rc = find_secret_values(yaml, len, &v, &n);
	if (rc)
		return rc;
	s = malloc(len + n * sizeof REDACTED + 1);
	if (!s) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(s + o, yaml + at, v[i].a - at);
		o += v[i].a - at;
		memcpy(s + o, REDACTED, sizeof REDACTED - 1);
		o += sizeof REDACTED - 1;
		at = v[i].b;
	}
	memcpy(s + o, yaml + at, len - at);
	o += len - at;
	s[o] = '\0';
	free(v);
	*out = s;
	*out_len = o;
	return 0;
}

/* ---- sealing ----------------------------------------------------------------- */

static int seal(const unsigned char *key, const char *label,
		const char *plain, size_t n, unsigned char **out, size_t *outn)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	unsigned char *b = malloc(NONCE_LEN + n + TAG_LEN);
	int l1 = 0, l2 = 0, rc = -EIO;

	if (!x || !b) {
		rc = -ENOMEM;
		goto out;
	}
	if (getrandom(b, NONCE_LEN, 0) != NONCE_LEN)
		goto out;
	if (EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, key, b) != 1 ||
	    EVP_EncryptUpdate(x, NULL, &l1, (const unsigned char *)label,
			      (int)strlen(label)) != 1 ||
	    EVP_EncryptUpdate(x, b + NONCE_LEN, &l1, (const unsigned char *)plain,
			      (int)n) != 1 ||
	    EVP_EncryptFinal_ex(x, b + NONCE_LEN + l1, &l2) != 1 ||
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, TAG_LEN,
				b + NONCE_LEN + l1 + l2) != 1)
		goto out;
	*out = b;
	*outn = NONCE_LEN + (size_t)l1 + (size_t)l2 + TAG_LEN;
	b = NULL;
	rc = 0;
out:
	free(b);
	EVP_CIPHER_CTX_free(x);
	return rc;
}

int ctl_sealed_json(const json_t *v, const char *label,
		    const unsigned char key[CTL_SECRET_KEY_LEN],
		    unsigned char **out, size_t *n)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	int rc;

	*out = NULL;
	*n = 0;
	if (!text)
		return -ENOMEM;
	rc = seal(key, label, text, strlen(text), out, n);
	explicit_bzero(text, strlen(text));
	free(text);
	return rc;
}

json_t *ctl_secrets_open(const unsigned char *blob, size_t len,
			 const unsigned char key[CTL_SECRET_KEY_LEN])
{
	return ctl_sealed_open(blob, len, SECRETS_LABEL, key);
}

json_t *ctl_sealed_open(const unsigned char *blob, size_t len,
			const char *label,
			const unsigned char key[CTL_SECRET_KEY_LEN])
{
	EVP_CIPHER_CTX *x = NULL;
	unsigned char *p = NULL;
	json_t *j = NULL;
	size_t n;
	int l1 = 0, l2 = 0;

	if (!blob || len < NONCE_LEN + TAG_LEN)
		return NULL;
	n = len - NONCE_LEN - TAG_LEN;
	x = EVP_CIPHER_CTX_new();
	p = malloc(n + 1);
	if (!x || !p)
		goto out;
	if (EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, key, blob) != 1 ||
	    EVP_DecryptUpdate(x, NULL, &l1, (const unsigned char *)label,
			      (int)strlen(label)) != 1 ||
	    EVP_DecryptUpdate(x, p, &l1, blob + NONCE_LEN, (int)n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, TAG_LEN,
				(void *)(blob + NONCE_LEN + n)) != 1 ||
	    EVP_DecryptFinal_ex(x, p + l1, &l2) != 1)
		goto out;
	j = json_loadb((const char *)p, (size_t)(l1 + l2), 0, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
out:
	if (p) {
		explicit_bzero(p, n + 1);
		free(p);
	}
	EVP_CIPHER_CTX_free(x);
	return j;
}

/* ---- the split --------------------------------------------------------------- */

int ctl_secrets_split(const struct jobspec *js, const char *yaml, size_t len,
		      json_t *specj, json_t *envs,
		      const unsigned char key[CTL_SECRET_KEY_LEN],
		      struct ctl_secrets *out, struct sr_err *e)
{
	json_t *vals = NULL, *nulls = NULL;
	char *text = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (envs)
		out->envs = json_deep_copy(envs);
	rc = ctl_secrets_redact_yaml(yaml, len, &out->yaml, &out->yaml_len);
	if (rc == -EINVAL) {
		/* the job parser read it, so this cannot happen; store
		 * nothing rather than the clear text */
		rc = sr_err_set(e, -EIO, "secrets: cannot redact the job file");
		goto fail;
	}
	if (rc || (envs && !out->envs))
		goto oom;
	if (js->n_secrets == 0)
		return 0;
	vals = json_object();
	nulls = json_object();
	if (!vals || !nulls)
		goto oom;
	for (size_t i = 0; i < js->n_secrets; i++) {
		const char *k = js->secrets[i].key;
		json_t *v = out->envs ? json_object_get(out->envs, k) : NULL;

		if (json_is_string(v))
			json_object_set(vals, k, v);
		else if (js->secrets[i].value)
			json_object_set_new(vals, k, json_string(js->secrets[i].value));
		else {
			rc = sr_err_set(e, -EINVAL, "secrets.%s: no value (give it "
					"in the job file or in envs)", k);
			goto fail;
		}
		if (out->envs)
			json_object_del(out->envs, k);
		json_object_set_new(nulls, k, json_string("<redacted>"));
	}
	text = json_dumps(vals, JSON_COMPACT);
	if (!text)
		goto oom;
	rc = seal(key, SECRETS_LABEL, text, strlen(text), &out->sealed,
		  &out->sealed_len);
	if (rc) {
		sr_err_set(e, rc, "secrets: cannot seal: %s", sr_strerror(rc));
		goto fail;
	}
	if (json_object_set(specj, "secrets", nulls) < 0)
		goto oom;
	rc = 0;
	goto done;
oom:
	rc = sr_err_set(e, -ENOMEM, "secrets: out of memory");
fail:
	ctl_secrets_clear(out);
done:
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	json_decref(vals);
	json_decref(nulls);
	return rc;
}

void ctl_secrets_clear(struct ctl_secrets *s)
{
	if (!s)
		return;
	free(s->yaml);
	json_decref(s->envs);
	free(s->sealed);
	memset(s, 0, sizeof *s);
}
