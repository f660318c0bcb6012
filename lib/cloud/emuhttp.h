/*
 * emuhttp.h - what the local spot cloud's API emulators share (the GCE
 * emulator lib/gcp/gceemu*, the Azure emulator lib/azure/azemu*): their
 * HTTP side over libmicrohttpd on 127.0.0.1 (a thread per connection, a
 * request body gathered whole before it is answered), form and JWT
 * decoding for their token endpoints, and a VM as a script run in a
 * session of its own.
 */
#ifndef SR_CLOUD_EMUHTTP_H
#define SR_CLOUD_EMUHTTP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cloud/emuconf.h"
#include "cloud/localmkt.h"
#include "common/err.h"

#define EMUHTTP_MAX_BODY (1u << 20)

/* One request's body, gathered (owned by the connection). */
struct emuhttp_body {
	char *buf;                 /* NUL-ended; NULL when empty */
	size_t len;
	bool too_big;              /* over EMUHTTP_MAX_BODY: answer 413 */
};

/* Call first in an access handler with its con_cls, upload and
 * upload_size: 1 with *out when the whole body is in (answer now), 0
 * when the handler must return MHD_YES (more to come), -1 MHD_NO. */
int emuhttp_gather(void **con_cls, const char *upload, size_t *upload_size,
		   struct emuhttp_body **out);

/* Listen on 127.0.0.1:port (0: any free port), a thread per connection
 * (a hanging GET holds one); the bodies emuhttp_gather kept are freed
 * when a request completes.  *url gets "http://127.0.0.1:PORT".  NULL
 * with *e when it cannot listen. */
struct MHD_Daemon *emuhttp_listen(int port, MHD_AccessHandlerCallback cb,
				  void *cls, char url[64], struct sr_err *e);

/* An emulator's start from c: its capacity overrides into *caps
 * (emuhttp_cap_parse), its work_dir a directory (copied to work_out, 512
 * bytes), the market loaded from data_dir into *mkt, then listening as
 * emuhttp_listen does (*daemon, url).  0, or < 0 with *e naming what
 * (the emulator); what was made is left for the caller's stop to free. */
int emuhttp_open(const char *what, const struct emuhttp_conf *c, char ***caps,
		 MHD_AccessHandlerCallback cb, void *cls, char work_out[512],
		 struct localmkt **mkt, void **daemon, char url[64],
		 struct sr_err *e);
/* A condition variable on the monotonic clock. */
void emuhttp_cond_init(pthread_cond_t *cv);
/* A clock thread's wait (mu held): ms, or until cv is signalled. */
void emuhttp_tick_wait(pthread_cond_t *cv, pthread_mutex_t *mu, long ms);

/* Answer status with body (len bytes) and headers hdrs ("Name", "value"
 * pairs, NULL-ended; may be NULL). */
enum MHD_Result emuhttp_respond(struct MHD_Connection *c, int status,
				const char *ctype, const char *body, size_t len,
				const char *const *hdrs);
/* Answer a JSON document (the reference is taken; NULL: 500). */
enum MHD_Result emuhttp_json(struct MHD_Connection *c, int status, json_t *doc,
			     const char *const *hdrs);

/* The value of form field key in an x-www-form-urlencoded body
 * (malloc'd, decoded) or NULL. */
char *emuhttp_form_get(const char *body, const char *key);
/* A JWT's n-byte base64url part as a JSON object (new reference) or
 * NULL. */
json_t *emuhttp_jwt_part(const char *p, size_t n);
/* A JWT's header and claims (new references, NULL when it is not three
 * non-empty parts or they are not JSON objects): 0 or -EINVAL. */
int emuhttp_jwt(const char *jwt, json_t **header, json_t **claims);

/* Capacity overrides: a NULL-ended list of "KEY=none" / "KEY=plenty"
 * (malloc'd strings in a malloc'd array; NULL: empty).  set replaces
 * key's (0, -EINVAL for another val, -ENOMEM); get says 0 none, 1
 * plenty, -1 no override; free frees the list. */
int emuhttp_cap_set(char ***list, const char *key, const char *val);
int emuhttp_cap_get(char *const *list, const char *key);
void emuhttp_cap_free(char **list);
/* Each "KEY=none|plenty" of opts (NULL-ended, may be NULL) set: 0, or
 * -EINVAL with *e naming the bad one (what: the emulator). */
int emuhttp_cap_parse(char ***list, const char *const *opts, const char *what,
		      struct sr_err *e);

/* A VM: `script` written to <work_dir>/<name>/<file> and run by /bin/sh
 * in a new session with cwd <work_dir>/<name> (dir, at most 640 bytes,
 * gets it), its output appended to <dir>/<log>, and the environment
 * PATH, HOME and SPOTRUN_NODE_ROOT=<dir>/root, SPOTRUN_IMDS_URL=imds_url
 * (NULL: none), SPOTRUN_EMU_HIDE=work_dir (the bootstrap script honours
 * them).  0 with *pid and *start (sr_proc_kill_session's), or -errno. */
int emuhttp_vm_spawn(const char *work_dir, const char *name, const char *file,
		     const char *log, const char *script, const char *imds_url,
		     char dir[640], int64_t *pid, int64_t *start,
		     struct sr_err *e);
/* End a VM: its session killed, its root directory removed (its logs
 * stay, for debugging). */
void emuhttp_vm_end(int64_t pid, int64_t start, const char *dir);

#endif
