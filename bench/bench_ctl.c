/*
 * bench_ctl - spotrund under a fleet of heartbeating nodes.
 *
 * Seeds a fresh store with NODES on-demand nodes in JOBS active jobs (all
 * RUNNING, NODES/JOBS nodes each, with known node tokens), starts the
 * real spotrund binary on it, and has THREADS client threads send each
 * node's heartbeat once per PERIOD seconds for SECONDS seconds over
 * keep-alive connections - the load of NODES agents - while the daemon's
 * reconciler pages through the JOBS jobs.  Reports heartbeat p50/p99
 * latency, the achieved rate and the failures (any non-200), and, as the
 * peer measured in the same run and load, the latency of GET /healthz
 * (the HTTP path with no auth and no database write): heartbeat/healthz
 * is the cost of authenticating and committing a heartbeat.  Then the
 * reconciler's pass time during the load (mean and longest, from GET
 * /v1/lease), every node's heartbeat checked in the store (last_hb_ns
 * moved past the seed time), and the daemon's RSS (VmRSS, VmHWM).  The
 * last line, "RESULT ...", is for scripts (bench/store_scale.sh).
 *
 * Env: BENCH_CTL_NODES (10000), BENCH_CTL_JOBS (2000), BENCH_CTL_PERIOD_S
 * (5), BENCH_CTL_SECONDS (20), BENCH_CTL_THREADS (8), BENCH_CTL_STORE
 * (a postgresql:// URI of an empty database; default: SQLite in the state
 * dir).  Billing runs every 60 s here (ledger rows per node per interval;
 * a fleet this size would not bill every second).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/http.h"
#include "common/timeutil.h"
#include "ctl/auth.h"
#include "store/store.h"

static int nnodes = 10000, njobs = 2000, period_s = 5, seconds = 20;
static int nthreads = 8;
static const char *store_uri; /* NULL: SQLite in the state dir */
static char url[128];
static char (*tokens)[CTL_TOKEN_HEX + 1];
static int64_t *node_ids;
static unsigned char *hb_ok; /* node i had a 200 (written by its thread) */
static int64_t seed_ns;

struct lat {
	double *v;
	size_t n, cap;
};

static void lat_add(struct lat *l, double ms)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		if (!l->v)
			abort();
	}
	l->v[l->n++] = ms;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(struct lat *l, double p)
{
	if (!l->n)
		return 0;
	return l->v[(size_t)(p * (double)(l->n - 1))];
}

static int env_int(const char *k, int def)
{
	const char *s = getenv(k);

	return s && atoi(s) > 0 ? atoi(s) : def;
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return s * n;
}

struct worker {
	int idx;
	struct lat hb, hz;
	long errors;
	int64_t t_end;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	CURL *h = curl_easy_init();
	char u[256], auth[128];
	struct curl_slist *hd = NULL;
	int64_t start = sr_time_mono_ns();
	/* this thread's nodes: idx, idx+T, idx+2T, ...; each once per period */
	int mine = (nnodes - w->idx + nthreads - 1) / nthreads;
	double gap_ns = (double)period_s * 1e9 / (mine > 0 ? mine : 1);
	long k = 0;

	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	while (mine > 0) {
		int64_t due = start + (int64_t)((double)k * gap_ns), t0, t1;
		int i = w->idx + (int)(k % mine) * nthreads;
		long code = 0;
		CURLcode cr;

		if (due >= w->t_end)
			break;
		while (sr_time_mono_ns() < due)
			usleep(100);
		snprintf(u, sizeof u, "%s/v1/nodes/%" PRId64 "/heartbeat", url,
			 node_ids[i]);
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", tokens[i]);
		hd = curl_slist_append(NULL, auth);
		hd = curl_slist_append(hd, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_URL, u);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				 "{\"workload\":\"running\",\"attempt\":1,\"cpu_util\":0.9}");
		t0 = sr_time_mono_ns();
		cr = curl_easy_perform(h);
		t1 = sr_time_mono_ns();
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (cr != CURLE_OK || code != 200) {
			w->errors++;
		} else {
			lat_add(&w->hb, (double)(t1 - t0) / 1e6);
			hb_ok[i] = 1;
		}
		curl_slist_free_all(hd);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
		/* every 10th slot, the peer: GET /healthz on the same connection */
		if (k % 10 == 0) {
			snprintf(u, sizeof u, "%s/healthz", url);
			curl_easy_setopt(h, CURLOPT_URL, u);
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
			t0 = sr_time_mono_ns();
			cr = curl_easy_perform(h);
			t1 = sr_time_mono_ns();
			if (cr == CURLE_OK)
				lat_add(&w->hz, (double)(t1 - t0) / 1e6);
		}
		k++;
	}
	curl_easy_cleanup(h);
	return NULL;
}

static int seed(const char *dir)
{
	char path[512];
	struct store *db = NULL;
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t now = sr_time_real_ns();
	int per = (nnodes + njobs - 1) / njobs;
	int rc;

	seed_ns = now;

	snprintf(path, sizeof path, "%s/spotrun.db", dir);
	rc = store_open(store_uri ? store_uri : path, 0, &db, &e);
	if (!rc)
		rc = store_migrate(db, &e);
	if (!rc)
		rc = store_begin(db, &e);
	for (int i = 0; !rc && i < nnodes; i++) {
		unsigned char d[CTL_DIGEST_LEN];
		int64_t job;

		if (i % per == 0) {
			int size = nnodes - i < per ? nnodes - i : per;

			rc = store_prepare(db, "INSERT INTO jobs(name, state,"
				" spec_name, spec_yaml, spec_json, num_nodes,"
				" max_restarts, attempt, created_ns, updated_ns,"
				" state_since_ns, sim_start_s, work_s, candidates,"
				" run_started_ns) VALUES('bench','RUNNING',"
				"'bench.yaml','run: x','{}',?1,3,1,?2,?2,?2,0,3600,"
				"'{\"spot\":[],\"od\":0,\"od_price_usd\":3.06,"
				"\"restart_s\":60,\"gap_s\":600,\"crit\":0,"
				"\"use_spot\":0}',?2)", &st, &e);
			if (rc)
				break;
			store_bind_i64(st, 1, size);
			store_bind_i64(st, 2, now);
			rc = store_run(st, &e);
			store_done(st);
			if (rc < 0)
				break;
		}
		job = (i / per) + 1;
		ctl_token_new(tokens[i]);
		ctl_token_digest(tokens[i], d);
		rc = store_prepare(db, "INSERT INTO nodes(job_id, rank, state,"
			" token_hash, provider, cloud, region, zone, instance_type,"
			" accelerator, accel_count, spot, pool, price_micros,"
			" list_micros, reserved_micros, created_ns, boot_at_ns,"
			" registered_ns, last_hb_ns, billed_until_ns)"
			" VALUES(?1,?2,'READY',?3,'local','aws','us-east-1',"
			"'use1-az1','p3.2xlarge','V100',1,0,0,3060000,3060000,-1,"
			"?4,?4,?4,?4,?4) RETURNING id", &st, &e);
		if (rc)
			break;
		store_bind_i64(st, 1, job);
		store_bind_i64(st, 2, i % per);
		store_bind_blob(st, 3, d, CTL_DIGEST_LEN);
		store_bind_i64(st, 4, now);
		rc = store_step(st, &e);
		if (rc == 1)
			node_ids[i] = store_col_i64(st, "id");
		rc = rc == 1 ? store_run(st, &e) : rc == 0 ? -EIO : rc;
		store_done(st);
		rc = rc < 0 ? rc : 0;
	}
	if (db)
		rc = store_end(db, rc, &e);
	if (rc)
		fprintf(stderr, "bench_ctl: seed: %s\n", sr_err_str(&e, rc));
	store_close(db);
	return rc;
}

/* The daemon's reconciler pass counters (GET /v1/lease "reconciler"). */
struct passes {
	double n, sum_ms, max_ms;
};

static int lease_passes(const char *dir, struct passes *p)
{
	char tok[CTL_TOKEN_HEX + 8] = "", u[256], auth[160], path[600];
	const char *hdr[] = { auth, NULL };
	struct sr_http_resp r = { 0 };
	struct sr_http_opts o;
	struct sr_err e = { 0 };
	json_t *j = NULL, *rec;
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof path, "%s/api.token", dir);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(tok, sizeof tok, f))
			tok[0] = '\0';
		fclose(f);
	}
	tok[strcspn(tok, "\n")] = '\0';
	snprintf(u, sizeof u, "%s/v1/lease", url);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
	sr_http_opts_default(&o);
	if (sr_http_request("GET", u, hdr, NULL, 0, &o, &r, &e) == 0 &&
	    r.status == 200)
		j = json_loads(r.body, 0, NULL);
	rec = j ? json_object_get(j, "reconciler") : NULL;
	if (json_is_object(rec)) {
		p->n = json_number_value(json_object_get(rec, "passes"));
		p->sum_ms = json_number_value(json_object_get(rec, "sum_ms"));
		p->max_ms = json_number_value(json_object_get(rec, "max_ms"));
		rc = 0;
	}
	json_decref(j);
	sr_http_resp_free(&r);
	return rc;
}

/* Nodes whose heartbeat the store recorded (last_hb_ns past the seed). */
static long stored_heartbeats(const char *dir)
{
	char path[512];
	struct store *db = NULL;
	struct sr_err e = { 0 };
	int64_t n = -1;

	snprintf(path, sizeof path, "%s/spotrun.db", dir);
	if (store_open(store_uri ? store_uri : path, 0, &db, &e) ||
	    store_query_i64(db, "SELECT count(*) AS n FROM nodes WHERE"
			    " last_hb_ns > ?", seed_ns, &n, &e) != 1) {
		fprintf(stderr, "bench_ctl: count heartbeats: %s\n",
			sr_err_str(&e, -EIO));
		n = -1;
	}
	store_close(db);
	return (long)n;
}

static long status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key) + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

int main(void)
{
	char dir[] = "/tmp/sr-bench-ctl-XXXXXX", bin[1100], path[600];
	char *exe_dir, self[1024];
	struct worker *w;
	pthread_t *th;
	struct lat hb = { 0 }, hz = { 0 };
	struct passes p0 = { 0 }, p1 = { 0 };
	long errors = 0, sent_ok = 0, stored;
	pid_t pid;
	ssize_t n;
	int rc = 1;

	nnodes = env_int("BENCH_CTL_NODES", 10000);
	njobs = env_int("BENCH_CTL_JOBS", 2000);
	store_uri = getenv("BENCH_CTL_STORE");
	if (store_uri && !*store_uri)
		store_uri = NULL;
	period_s = env_int("BENCH_CTL_PERIOD_S", 5);
	seconds = env_int("BENCH_CTL_SECONDS", 20);
	nthreads = env_int("BENCH_CTL_THREADS", 8);
	tokens = calloc((size_t)nnodes, sizeof *tokens);
	node_ids = calloc((size_t)nnodes, sizeof *node_ids);
	hb_ok = calloc((size_t)nnodes, 1);
	w = calloc((size_t)nthreads, sizeof *w);
	th = calloc((size_t)nthreads, sizeof *th);
	if (!tokens || !node_ids || !hb_ok || !w || !th || !mkdtemp(dir))
		return 1;
	umask(077); /* the seeded database as spotrund would create it */
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	exe_dir = strrchr(self, '/');
	*exe_dir = '\0';
	snprintf(bin, sizeof bin, "%s/../bin/spotrund", self);
	if (seed(dir))
		return 1;
	pid = fork();
	if (pid == 0) {
		setenv("SPOTRUN_LOG_LEVEL", "warn", 1);
		if (store_uri)
			setenv("SPOTRUN_STORE", store_uri, 1);
		else
			unsetenv("SPOTRUN_STORE");
		execl(bin, bin, "--state-dir", dir, "--listen", "127.0.0.1:0",
		      "--agent", "/bin/true", "--heartbeat-timeout", "60s",
		      "--bill-interval-ms", "60000", "--http-threads", "4", (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof path, "%s/api.url", dir);
	for (int i = 0; i < 300 && !url[0]; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			if (!fgets(url, sizeof url, f))
				url[0] = '\0';
			url[strcspn(url, "\n")] = '\0';
			fclose(f);
		}
		usleep(50000);
	}
	if (!url[0]) {
		fprintf(stderr, "bench_ctl: spotrund did not start (%s)\n", bin);
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	lease_passes(dir, &p0);
	for (int i = 0; i < nthreads; i++) {
		w[i].idx = i;
		w[i].t_end = sr_time_mono_ns() + (int64_t)seconds * SR_NS_PER_SEC;
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		for (size_t k = 0; k < w[i].hb.n; k++)
			lat_add(&hb, w[i].hb.v[k]);
		for (size_t k = 0; k < w[i].hz.n; k++)
			lat_add(&hz, w[i].hz.v[k]);
		errors += w[i].errors;
	}
	lease_passes(dir, &p1);
	for (int i = 0; i < nnodes; i++)
		sent_ok += hb_ok[i];
	stored = stored_heartbeats(dir);
	qsort(hb.v, hb.n, sizeof *hb.v, cmpd);
	qsort(hz.v, hz.n, sizeof *hz.v, cmpd);
	printf("spotrund on %s: %d nodes in %d active jobs heartbeating every "
	       "%d s for %d s (%d client threads, sharing the cores with the "
	       "daemon)\n", store_uri ? "postgresql" : "sqlite", nnodes, njobs,
	       period_s, seconds, nthreads);
	printf("  heartbeats: %zu ok, %ld failed, %.0f/s (target %.0f/s)\n", hb.n,
	       errors, (double)hb.n / seconds, (double)nnodes / period_s);
	printf("  heartbeat latency ms: p50 %.3f  p99 %.3f  max %.3f\n",
	       pct(&hb, 0.5), pct(&hb, 0.99), hb.n ? hb.v[hb.n - 1] : 0.0);
	printf("  healthz   latency ms: p50 %.3f  p99 %.3f  (peer: no auth, no write)\n",
	       pct(&hz, 0.5), pct(&hz, 0.99));
	printf("  ratio heartbeat/healthz: p50 %.2f  p99 %.2f\n",
	       pct(&hb, 0.5) / (pct(&hz, 0.5) > 0 ? pct(&hz, 0.5) : 1),
	       pct(&hb, 0.99) / (pct(&hz, 0.99) > 0 ? pct(&hz, 0.99) : 1));
	printf("  reconciler passes during the load: %.0f, mean %.1f ms; longest "
	       "pass since start %.1f ms\n", p1.n - p0.n,
	       p1.n > p0.n ? (p1.sum_ms - p0.sum_ms) / (p1.n - p0.n) : 0.0,
	       p1.max_ms);
	printf("  nodes with a heartbeat answered 200: %ld; recorded in the "
	       "store: %ld\n", sent_ok, stored);
	printf("  daemon RSS: %ld KiB now, %ld KiB peak\n", status_kb(pid, "VmRSS:"),
	       status_kb(pid, "VmHWM:"));
	printf("RESULT backend=%s nodes=%d jobs=%d ok=%zu failed=%ld "
	       "hb_p50_ms=%.3f hb_p99_ms=%.3f pass_mean_ms=%.1f pass_max_ms=%.1f "
	       "nodes_ok=%ld nodes_stored=%ld\n",
	       store_uri ? "postgresql" : "sqlite", nnodes, njobs, hb.n, errors,
	       pct(&hb, 0.5), pct(&hb, 0.99),
	       p1.n > p0.n ? (p1.sum_ms - p0.sum_ms) / (p1.n - p0.n) : 0.0,
	       p1.max_ms, sent_ok, stored);
	/* fails on more than 1 % failed heartbeats, or a 200 not stored */
	rc = errors * 100 > (long)hb.n || stored < sent_ok ? 1 : 0;
out:
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		rc = 1;
	free(hb.v);
	free(hz.v);
	for (int i = 0; i < nthreads; i++) {
		free(w[i].hb.v);
		free(w[i].hz.v);
	}
	free(w);
	free(th);
	free(tokens);
	free(node_ids);
	free(hb_ok);
	return rc;
}
