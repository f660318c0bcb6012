/*
 * ctl.c - daemon lifecycle: state directory, database, tokens, cloud
 * clock, per-thread connections, threads.
 *
 * State directory layout (mode 0700):
 *   spotrun.db (+ -wal, -shm)  everything the daemon knows
 *   api.token                  admin bearer token, 0600
 *   imds.key                   HMAC key of IMDS session tokens, 0600
 *                              (node tokens are random: nodeboot.h)
 *   secrets.key                AES-256-GCM key of job secrets, 0600
 *   api.url, spotrund.pid      written by spotrund's main for the CLI
 *   nodes/<id>/                a local node's disk: bootstrap (the
 *                              one-time secret, read and removed by the
 *                              agent), agent.log
 *   localcloud/<key>.json      the local cloud's record of each launch
 *   jobs/<id>/ckpt/            a job's checkpoint "bucket"
 *
 * Cloud clock: sim_s = sim0 + (now - real0) * scale.  (real0, sim0) and
 * the scale are stored in settings; when a restart brings another scale,
 * the clock is re-anchored at the current cloud time so it never jumps.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/teamtok.h"
#include "ctl/nodeboot.h"
#include "ctl/recon.h"
#include "ctl/routes.h"
#include "store/store.h"
#include "market/catalog.h"
#include "providers/registry.h"

void ctl_config_defaults(struct ctl_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->listen_host = "127.0.0.1";
	cfg->listen_port = 7077;
	cfg->provider = NULL; /* the config file's, else the registry's first */
	cfg->time_scale = 3600;
	cfg->notice_ms = 5000;
	cfg->stop_grace_ms = 5000;
	cfg->provision_ms = 1000;
	cfg->heartbeat_ms = 1000;
	cfg->heartbeat_timeout_ms = 10000;
	cfg->boot_timeout_ms = 30000;
	cfg->bill_interval_ms = 1000;
	cfg->tick_ms = 100;
	cfg->trace_start_h = 48; /* leaves two days of market history */
	cfg->http_threads = 4;
	cfg->lease_ms = 5000;
	cfg->restart_guess_ms = 3000;
	cfg->policy = "spotrun";
	cfg->imds_poll_ms = 500;
}

double ctl__sim_at(const struct ctl *c, int64_t real_ns)
{
	return c->sim0_s + (double)(real_ns - c->real0_ns) / 1e9 * c->cfg.time_scale;
}

int64_t ctl__now(const struct ctl *c)
{
	return c->clock.real_ns ? c->clock.real_ns(c->clock.ud) : sr_time_real_ns();
}

int64_t ctl__mono(const struct ctl *c)
{
	return c->clock.mono_ns ? c->clock.mono_ns(c->clock.ud) : sr_time_mono_ns();
}

double ctl__sim_now(const struct ctl *c)
{
	return ctl__sim_at(c, ctl__now(c));
}

double ctl_time_scale(const struct ctl *c) { return c->cfg.time_scale; }
const char *ctl_state_dir(const struct ctl *c) { return c->state_dir; }
const char *ctl_db_path(const struct ctl *c) { return c->db_path; }
int ctl_port(const struct ctl *c) { return c->port; }
const char *ctl_url(const struct ctl *c) { return c->url; }
const char *ctl_admin_token(const struct ctl *c) { return c->admin_token; }

void ctl__wake(struct ctl *c)
{
	pthread_mutex_lock(&c->wake_mu);
	c->wake = true;
	pthread_cond_signal(&c->wake_cv);
	pthread_mutex_unlock(&c->wake_mu);
}

struct store *ctl__store(struct ctl *c)
{
	struct store *s = pthread_getspecific(c->db_key);
	struct sr_err e = { 0 };

	if (s)
		return s;
	if (store_open(c->db_path, atomic_load(&c->store_wait) ? STORE_WAIT : 0,
		       &s, &e)) {
		sr_error("ctl", "cannot open the store", "err=\"%s\"",
			 sr_err_str(&e, -EIO));
		return NULL;
	}
	/* a transaction idle for two leases is a leader's that lost its
	 * lease a lease ago (no renewal while it holds the writers' lock):
	 * frozen, it must not keep a standby from taking over (lease.c);
	 * one that is merely slow (load, a sanitizer) has a lease to spare */
	store_set_idle_tx_limit(s, (int)(2 * c->cfg.lease_ms));
	pthread_mutex_lock(&c->conns_mu);
	if (c->nconns == c->capconns) {
		size_t nc = c->capconns ? 2 * c->capconns : 16;
		struct store **v = realloc(c->conns, nc * sizeof *v);

		if (!v) {
			pthread_mutex_unlock(&c->conns_mu);
			store_close(s);
			return NULL;
		}
		c->conns = v;
		c->capconns = nc;
	}
	c->conns[c->nconns++] = s;
	pthread_mutex_unlock(&c->conns_mu);
	pthread_setspecific(c->db_key, s);
	return s;
}

/* The cloud clock's anchor from the settings; a new one (first start,
 * or a new time scale re-anchored at now) stays in memory, unsaved, until
 * this daemon leads (ctl__clock_save): a standby writes nothing. */
static int load_clock(struct ctl *c, struct store *db, struct sr_err *e)
{
	char a[64], b[64], s[64];
	int64_t now = ctl__now(c);

	if (store_setting_get(db, "clock_real0_ns", a, sizeof a, e) == 0 &&
	    store_setting_get(db, "clock_sim0_s", b, sizeof b, e) == 0 &&
	    store_setting_get(db, "clock_scale", s, sizeof s, e) == 0) {
		double old = strtod(s, NULL);

		c->real0_ns = strtoll(a, NULL, 10);
		c->sim0_s = strtod(b, NULL);
		if (old == c->cfg.time_scale)
			return 0;
		/* re-anchor under the new scale */
		c->sim0_s += (double)(now - c->real0_ns) / 1e9 * old;
		c->real0_ns = now;
	} else {
		c->real0_ns = now;
		c->sim0_s = c->cfg.trace_start_h * 3600.0;
	}
	sr_err_clear(e);
	atomic_store(&c->clock_unsaved, true);
	return 0;
}

int ctl__clock_save(struct ctl *c, struct store *db, struct sr_err *e)
{
	char a[64], b[64], s[64];
	int rc;

	if (!atomic_load(&c->clock_unsaved) || !ctl__is_leader(c))
		return 0;
	snprintf(a, sizeof a, "%" PRId64, c->real0_ns);
	snprintf(b, sizeof b, "%.6f", c->sim0_s);
	snprintf(s, sizeof s, "%.17g", c->cfg.time_scale);
	rc = store_begin(db, e); /* fenced: the lease is checked inside */
	if (!rc)
		rc = store_setting_set(db, "clock_real0_ns", a, e);
	if (!rc)
		rc = store_setting_set(db, "clock_sim0_s", b, e);
	if (!rc)
		rc = store_setting_set(db, "clock_scale", s, e);
	rc = store_end(db, rc, e);
	if (!rc)
		atomic_store(&c->clock_unsaved, false);
	return rc;
}

/* A 32-byte key kept hex in <state-dir>/<name> (0600, created once). */
static int load_key(struct ctl *c, const char *name,
		    unsigned char key[CTL_DIGEST_LEN], struct sr_err *e)
{
	char path[2400], hexkey[CTL_TOKEN_HEX + 1];
	int rc;

	snprintf(path, sizeof path, "%s/%s", c->state_dir, name);
	rc = ctl_token_load_or_create(path, hexkey, e);
	if (rc)
		return rc;
	for (int i = 0; i < CTL_DIGEST_LEN; i++) {
		unsigned v;

		sscanf(hexkey + 2 * i, "%2x", &v);
		key[i] = (unsigned char)v;
	}
	explicit_bzero(hexkey, sizeof hexkey);
	return 0;
}

/* The state dir holds the admin token and every job's env: refuse one
 * that other users may write (they could swap the token or database),
 * tighten one they may read (issue 10: a pre-existing 0755 dir left
 * spotrun.db and its WAL readable), and make the database files 0600
 * before SQLite opens them (its WAL and SHM copy the database's mode). */
static int secure_state_dir(struct ctl *c, struct sr_err *e)
{
	static const char *const files[] = { CTL_DB_FILE, CTL_DB_FILE "-wal",
					     CTL_DB_FILE "-shm", NULL };
	char path[2400];
	struct stat sb;
	int fd;

	if (stat(c->state_dir, &sb) != 0)
		return sr_err_set(e, -errno, "%s: %s", c->state_dir, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return sr_err_set(e, -ENOTDIR, "%s: not a directory", c->state_dir);
	if (sb.st_uid != geteuid())
		return sr_err_set(e, -EACCES, "state dir %s belongs to uid %u, not "
				  "to this user (uid %u)", c->state_dir,
				  (unsigned)sb.st_uid, (unsigned)geteuid());
	if (sb.st_mode & 022)
		return sr_err_set(e, -EACCES, "state dir %s: mode %03o lets other "
				  "users write it (they could replace the token "
				  "or the database); chmod 700 it", c->state_dir,
				  (unsigned)(sb.st_mode & 0777));
	if (sb.st_mode & 055) {
		if (chmod(c->state_dir, 0700) != 0)
			return sr_err_set(e, -errno, "state dir %s: mode %03o lets "
					  "other users read it and chmod 700 "
					  "failed: %s", c->state_dir,
					  (unsigned)(sb.st_mode & 0777),
					  strerror(errno));
		sr_warn("ctl", "state dir was readable by other users: "
			"tightened to 0700", "dir=%s was=%03o", c->state_dir,
			(unsigned)(sb.st_mode & 0777));
	}
	if (store_backend_of(c->db_path) != STORE_SQLITE)
		return 0; /* the state is in PostgreSQL: no database file */
	for (size_t i = 0; files[i]; i++) {
		snprintf(path, sizeof path, "%s/%s", c->state_dir, files[i]);
		if (stat(path, &sb) == 0 && (sb.st_mode & 077)) {
			if (chmod(path, 0600) != 0)
				return sr_err_set(e, -errno, "%s: chmod 600: %s",
						  path, strerror(errno));
			sr_warn("ctl", "database file was readable by other "
				"users: tightened to 0600", "file=%s was=%03o",
				path, (unsigned)(sb.st_mode & 0777));
		}
	}
	snprintf(path, sizeof path, "%s/%s", c->state_dir, CTL_DB_FILE);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	close(fd);
	return 0;
}

static void find_agent(struct ctl *c)
{
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (c->cfg.agent_path) {
		snprintf(c->agent_path, sizeof c->agent_path, "%s", c->cfg.agent_path);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(c->agent_path, sizeof c->agent_path, "spotrun-agent");
		return;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(c->agent_path, sizeof c->agent_path, "%s/spotrun-agent", exe);
}

static int64_t host_real(void *ud)
{
	return ctl__now(ud);
}

static double host_sim(void *ud)
{
	return ctl__sim_now(ud);
}

static int64_t host_epoch(void *ud)
{
	return ctl__lease_epoch(ud);
}

static bool host_fence(void *ud, int64_t epoch)
{
	return ctl__lease_fence_ok(ud, epoch);
}

/* What the providers borrow from the daemon (cloud/provider.h). */
static void host_init(struct ctl *c)
{
	c->host = (struct cloud_host){
		.state_dir = c->state_dir, .data_dir = c->data_dir,
		.agent_path = c->agent_path,
		.agent_given = c->cfg.agent_path && c->cfg.agent_path[0],
		.cluster = c->cluster, .real_ns = host_real, .sim_s = host_sim,
		.ud = c, .notice_ms = c->cfg.notice_ms,
		.provision_ms = c->cfg.provision_ms,
		.lease_epoch = host_epoch, .fence_ok = host_fence,
	};
}

int ctl_start(const struct ctl_config *cfg, struct ctl **out, struct sr_err *e)
{
	return ctl__start_with(cfg, NULL, NULL, out, e);
}

int ctl__start_with(const struct ctl_config *cfg, struct ctl_cloud *cloud,
		    const struct ctl_clock *clock, struct ctl **out,
		    struct sr_err *e)
{
	struct ctl *c = calloc(1, sizeof *c);
	struct store *db;
	struct sr_err ae = { 0 };
	char path[2400], names[512];
	int rc;

	*out = NULL;
	if (!c) {
		if (cloud)
			cloud_provider_close(&cloud->p);
		return sr_err_set(e, -ENOMEM, "out of memory");
	}
	c->cfg = *cfg;
	c->lease.id_fd = -1;
	if (cloud && ctl__clouds_add(c, cloud, e)) { /* owned from here */
		free(c);
		return -ENOMEM;
	}
	if (clock)
		c->clock = *clock;
	pthread_mutex_init(&c->wake_mu, NULL);
	{
		/* The reconciler's period is a timeout inside this process:
		 * on the monotonic clock, so a wall-clock step cannot stall
		 * or rush it. */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wake_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&c->conns_mu, NULL);
	pthread_key_create(&c->db_key, NULL);
	rc = ctl__lease_init(c, e);
	if (rc)
		goto fail;
	if (!cfg->state_dir || cfg->time_scale <= 0 || cfg->http_threads < 1) {
		rc = sr_err_set(e, -EINVAL, "config: state_dir, time_scale > 0 and "
				"http_threads >= 1 are required");
		goto fail;
	}
	snprintf(c->state_dir, sizeof c->state_dir, "%s", cfg->state_dir);
	c->cfg.state_dir = c->state_dir;
	if (cfg->store && *cfg->store)
		snprintf(c->db_path, sizeof c->db_path, "%s", cfg->store);
	else
		snprintf(c->db_path, sizeof c->db_path, "%s/" CTL_DB_FILE,
			 c->state_dir);
	c->cfg.store = c->db_path;
	rc = sr_fs_mkdir_p(c->state_dir, 0700);
	if (rc) {
		sr_err_set(e, rc, "%s: %s", c->state_dir, sr_strerror(rc));
		goto fail;
	}
	rc = secure_state_dir(c, e);
	if (!rc)
		ctl__lease_id_claim(c);
	if (!rc)
		rc = ctl__http_prepare(c, e);
	if (rc)
		goto fail;
	snprintf(path, sizeof path, "%s/api.token", c->state_dir);
	rc = ctl_token_load_or_create(path, c->admin_token, e);
	if (rc)
		goto fail;
	ctl_token_digest(c->admin_token, c->admin_digest);
	sr_log_secret(c->admin_token);
	rc = ctl__team_tokens_load(c, e);
	if (rc)
		goto fail;
	rc = load_key(c, "imds.key", c->imds_key, e);
	if (!rc)
		rc = load_key(c, "secrets.key", c->secrets_key, e);
	if (rc)
		goto fail;
	db = ctl__store(c);
	if (!db) {
		rc = sr_err_set(e, -EIO, "%s: cannot open", c->db_path);
		goto fail;
	}
	rc = store_migrate(db, e);
	if (!rc)
		rc = load_clock(c, db, e);
	if (rc)
		goto fail;
	/* the planner's statistics (store.h): without them PostgreSQL may
	 * plan the reconciler's per-job queries as scans */
	if (store_analyze(db, &ae))
		sr_warn("ctl", "cannot refresh the store's statistics",
			"err=\"%s\"", sr_err_str(&ae, -EIO));
	atomic_store(&c->store_wait, true);
	/* lead at once when the lease is free (always on SQLite), so a
	 * single daemon takes writes from its first request */
	ctl__lease_tick(c, db);
	store_set_fence(db, ctl__lease_fence, c);
	if (ctl__clock_save(c, db, &ae))
		sr_warn("ctl", "cannot save the clock's anchor (the leader "
			"retries)", "err=\"%s\"", sr_err_str(&ae, -EIO));
	store_set_fence(db, NULL, NULL);
	if (cfg->data_dir)
		snprintf(c->data_dir, sizeof c->data_dir, "%s", cfg->data_dir);
	else if (catalog_find_data_dir(c->data_dir, sizeof c->data_dir))
		snprintf(c->data_dir, sizeof c->data_dir, "data");
	find_agent(c);
	rc = ctl__cluster_load(c, e);
	host_init(c);
	prov_infra_install(c->cfg.registry); /* job files name its clouds */
	if (!rc && !cloud)
		rc = ctl__clouds_open(c, e);
	if (rc)
		goto fail;
	ctl__routes_jobs();
	ctl__routes_nodes();
	ctl__routes_boot();
	ctl__routes_files();
	ctl__routes_cloud();
	for (size_t i = 0; i < c->nclouds; i++) {
		if (c->clouds[i].caps & CLOUD_CAP_HOSTED_META)
			ctl__routes_imds();
	}
	rc = ctl__http_start(c, e);
	if (rc)
		goto fail;
	if (!cfg->manual_reconcile) {
		rc = pthread_create(&c->reconciler, NULL, ctl__reconcile_main, c);
		if (rc) {
			rc = sr_err_set(e, -rc, "reconciler thread: %s", strerror(rc));
			goto fail;
		}
		c->reconciler_started = true;
	}
	ctl__clouds_names(c, names, sizeof names);
	sr_info("ctl", "spotrund started", "url=%s state=%s store=%s scale=%g "
		"providers=%s", c->url, c->state_dir, store_backend_name(db),
		c->cfg.time_scale, names);
	*out = c;
	return 0;
fail:
	ctl_stop(c);
	return rc;
}

void ctl_stop(struct ctl *c)
{
	if (!c)
		return;
	atomic_store(&c->stopping, true);
	ctl__wake(c);
	if (c->reconciler_started)
		pthread_join(c->reconciler, NULL);
	if (ctl__is_leader(c))
		ctl__lease_release(c, ctl__store(c));
	ctl__http_stop(c);
	ctl__pol_clear(c);
	ctl__silence_free(c);
	ctl__clouds_free(c);
	for (size_t i = 0; i < c->nconns; i++)
		store_close(c->conns[i]);
	free(c->conns);
	pthread_key_delete(c->db_key);
	pthread_mutex_destroy(&c->wake_mu);
	pthread_cond_destroy(&c->wake_cv);
	pthread_mutex_destroy(&c->conns_mu);
	if (c->lease.mu_init)
		pthread_mutex_destroy(&c->lease.mu);
	explicit_bzero(c->admin_token, sizeof c->admin_token);
	ctl__team_tokens_free(c);
	ctl__lease_id_release(c); /* last: nothing of this process writes */
	free(c);
}
