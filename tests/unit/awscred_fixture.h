/*
 * awscred_fixture.h - shared by the tests of lib/common/awscred*.c: a
 * temporary HOME with ~/.aws, every AWS variable unset (and the instance
 * metadata off), file writers, and a fake STS on 127.0.0.1 that answers
 * AssumeRole / AssumeRoleWithWebIdentity with credentials named after the
 * role and records what it was sent.
 */
#ifndef TESTS_AWSCRED_FIXTURE_H
#define TESTS_AWSCRED_FIXTURE_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/awscred.h"
#include "common/fsutil.h"
#include "common/testsrv.h"

static const char *const fx_vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_CREDENTIAL_EXPIRATION", "AWS_PROFILE",
	"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION",
	"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2",
	"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_SSO",
	"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", NULL
};

struct fx {
	char dir[64];
	char aws[128];
	struct sr_testsrv *srv;   /* started by fx_sts() etc., or NULL */
	/* the fake STS's settings and record, under mu (its thread) */
	pthread_mutex_t mu;
	int sts_calls;
	char sts_last[4096];      /* the last STS form body */
	char sts_auth[512];       /* its Authorization header, "" none */
	int sts_expires_in_s;     /* credentials' lifetime it hands out */
	const char *sts_fail;     /* an error code to answer with, or NULL */
};

/* Set what the fake STS does next. */
static inline void fx_sts_set(struct fx *f, const char *fail, int expires_in_s)
{
	pthread_mutex_lock(&f->mu);
	f->sts_fail = fail;
	f->sts_expires_in_s = expires_in_s;
	pthread_mutex_unlock(&f->mu);
}

/* Calls so far; the last body and Authorization copied out. */
static inline int fx_sts_seen(struct fx *f, char *body, size_t nb, char *auth,
		       size_t na)
{
	int n;

	pthread_mutex_lock(&f->mu);
	n = f->sts_calls;
	if (body != NULL)
		snprintf(body, nb, "%s", f->sts_last);
	if (auth != NULL)
		snprintf(auth, na, "%s", f->sts_auth);
	pthread_mutex_unlock(&f->mu);
	return n;
}

static inline int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sr-awscred-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->aws, sizeof(f->aws), "%s/.aws", f->dir);
	mkdir(f->aws, 0700);
	for (int i = 0; fx_vars[i] != NULL; i++)
		unsetenv(fx_vars[i]);
	setenv("HOME", f->dir, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	f->sts_expires_in_s = 3600;
	pthread_mutex_init(&f->mu, NULL);
	*state = f;
	return 0;
}

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	sr_testsrv_stop(f->srv);
	sr_fs_rm_tree(f->dir);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

/* Write path (created 0600, parents made) with text. */
static inline void fx_write(const char *path, const char *text)
{
	FILE *o;
	char dir[512], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash != NULL) {
		*slash = '\0';
		sr_fs_mkdir_p(dir, 0700);
	}
	o = fopen(path, "w");
	assert_non_null(o);
	fputs(text, o);
	fclose(o);
	chmod(path, 0600);
}

/* ~/.aws/NAME */
static inline void fx_put(struct fx *f, const char *name, const char *text)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", f->aws, name);
	fx_write(p, text);
}

/* Value of form field `name` in body into buf (percent-decoded). */
static inline int fx_form(const char *body, const char *name, char *buf, size_t n)
{
	size_t l = strlen(name);
	const char *p = body;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, l) == 0 && p[l] == '=') {
			size_t k = 0;

			for (p += l + 1; *p != '\0' && *p != '&' && k + 1 < n; p++) {
				if (*p == '%' && p[1] && p[2]) {
					char hex[3] = { p[1], p[2], 0 };

					buf[k++] = (char)strtol(hex, NULL, 16);
					p += 2;
				} else {
					buf[k++] = *p;
				}
			}
			buf[k] = '\0';
			return 0;
		}
		p = strchr(p, '&');
		if (p != NULL)
			p++;
	}
	buf[0] = '\0';
	return -1;
}

/* The fake STS: credentials "ASIA<role name>", secret "sec-<role
 * name>", token "tok-<role name>-<call number>". */
static inline int fx_sts_handler(void *ud, const struct sr_testsrv_req *q,
			  int *status, char **ctype, char **body, size_t *len)
{
	struct fx *f = ud;
	char action[64], role[256], exp[40];
	const char *name, *fail;
	int calls, life;
	time_t t;

	if (strcmp(q->method, "POST") != 0)
		return -1;
	pthread_mutex_lock(&f->mu);
	calls = ++f->sts_calls;
	fail = f->sts_fail;
	life = f->sts_expires_in_s;
	snprintf(f->sts_last, sizeof(f->sts_last), "%s", q->body);
	if (sr_testsrv_req_header(q, "authorization", f->sts_auth,
				  sizeof(f->sts_auth)) < 0)
		f->sts_auth[0] = '\0';
	pthread_mutex_unlock(&f->mu);
	fx_form(q->body, "Action", action, sizeof(action));
	fx_form(q->body, "RoleArn", role, sizeof(role));
	name = strrchr(role, '/') != NULL ? strrchr(role, '/') + 1 : role;
	*ctype = strdup("text/xml");
	if (fail != NULL) {
		*status = 403;
		*len = (size_t)asprintf(body, "<ErrorResponse xmlns=\"https://sts."
					"amazonaws.com/doc/2011-06-15/\"><Error><Type>"
					"Sender</Type><Code>%s</Code><Message>Not "
					"authorized to perform sts:%s</Message></Error>"
					"<RequestId>r1</RequestId></ErrorResponse>",
					fail, action);
		return 0;
	}
	t = time(NULL) + life;
	strftime(exp, sizeof(exp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	*status = 200;
	*len = (size_t)asprintf(body,
				"<%sResponse xmlns=\"https://sts.amazonaws.com/doc/"
				"2011-06-15/\"><%sResult><Credentials>"
				"<AccessKeyId>ASIA%s</AccessKeyId>"
				"<SecretAccessKey>sec-%s</SecretAccessKey>"
				"<SessionToken>tok-%s-%d</SessionToken>"
				"<Expiration>%s</Expiration></Credentials>"
				"<AssumedRoleUser><Arn>%s</Arn></AssumedRoleUser>"
				"</%sResult></%sResponse>", action, action, name,
				name, name, calls, exp, role, action,
				action);
	return 0;
}

/* Start the fake STS and point AWS_ENDPOINT_URL_STS at it. */
static inline void fx_sts(struct fx *f)
{
	f->srv = sr_testsrv_start(0);
	assert_non_null(f->srv);
	sr_testsrv_set_handler(f->srv, fx_sts_handler, f);
	setenv("AWS_ENDPOINT_URL_STS", sr_testsrv_url(f->srv), 1);
}

#endif
