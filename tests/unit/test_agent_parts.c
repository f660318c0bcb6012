/* Unit tests: the node agent's building blocks in lib/agent -
 * log batching, the status file, checkpoint scan, /proc parsing, NVML
 * degradation and the process-group runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/ckscan.h"
#include "agent/gpustat.h"
#include "agent/logbatch.h"
#include "agent/procstat.h"
#include "agent/status.h"
#include "agent/workload.h"
#include "ckpt/internal.h"
#include "common/fsutil.h"

static char g_dir[256];

static int mk_tmpdir(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/spotrun-agent-test-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int rm_tmpdir(void **state)
{
	char cmd[400];

	(void)state;
	/* the path is our own mkdtemp result; no user input */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- logbatch ---------------------------------------------------------- */

static void test_logbatch_lines(void **state)
{
	struct logbatch *b = logbatch_create();
	json_t *ev = json_array(), *o;

	(void)state;
	assert_non_null(b);
	/* chunks that split lines anywhere; \r\n; stderr interleaved */
	assert_int_equal(logbatch_feed(b, LOGBATCH_STDOUT, 1, "step 1\nst", 9, 1), 0);
	assert_int_equal(logbatch_feed(b, LOGBATCH_STDERR, 1, "warn\r\n", 6, 2), 0);
	assert_int_equal(logbatch_feed(b, LOGBATCH_STDOUT, 1, "ep 2\npart", 9, 3), 0);
	assert_int_equal(logbatch_queued(b), 3);
	assert_int_equal(logbatch_peek_json(b, 10, ev), 3);
	o = json_array_get(ev, 0);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "log");
	assert_string_equal(json_string_value(json_object_get(o, "line")), "step 1");
	assert_string_equal(json_string_value(json_object_get(o, "stream")), "stdout");
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 1);
	o = json_array_get(ev, 1);
	assert_string_equal(json_string_value(json_object_get(o, "line")), "warn");
	assert_string_equal(json_string_value(json_object_get(o, "stream")), "stderr");
	o = json_array_get(ev, 2);
	assert_string_equal(json_string_value(json_object_get(o, "line")), "step 2");
	/* peek does not consume; ack does */
	assert_int_equal(logbatch_queued(b), 3);
	logbatch_ack(b, 2);
	assert_int_equal(logbatch_queued(b), 1);
	/* the partial "part" is queued at EOF */
	assert_int_equal(logbatch_flush_partial(b, 9), 0);
	assert_int_equal(logbatch_queued(b), 2);
	json_array_clear(ev);
	assert_int_equal(logbatch_peek_json(b, 1, ev), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0),
							      "line")), "step 2");
	json_decref(ev);
	logbatch_destroy(b);
	logbatch_destroy(NULL);
}

static void test_logbatch_limits(void **state)
{
	struct logbatch *b = logbatch_create();
	char *big = malloc(LOGBATCH_LINE_MAX * 2 + 10);
	const char bad[] = { 'a', (char)0xff, 'b', 0, 'c', (char)0xc3, (char)0xa9, '\n' };
	json_t *ev = json_array();

	(void)state;
	assert_non_null(big);
	/* an over-long line is cut into LINE_MAX pieces */
	memset(big, 'x', LOGBATCH_LINE_MAX * 2 + 10);
	big[LOGBATCH_LINE_MAX * 2 + 9] = '\n';
	assert_int_equal(logbatch_feed(b, LOGBATCH_STDOUT, 1, big,
				       LOGBATCH_LINE_MAX * 2 + 10, 1), 0);
	assert_int_equal(logbatch_queued(b), 3);
	/* invalid UTF-8 and NUL become '?', valid UTF-8 is kept */
	assert_int_equal(logbatch_feed(b, LOGBATCH_STDOUT, 1, bad, sizeof bad, 1), 0);
	assert_int_equal(logbatch_peek_json(b, 10, ev), 4);
	assert_int_equal(strlen(json_string_value(json_object_get(
				 json_array_get(ev, 0), "line"))), LOGBATCH_LINE_MAX);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 3),
							      "line")), "a?b?c\xc3\xa9");
	logbatch_ack(b, 100);
	assert_int_equal(logbatch_queued(b), 0);
	/* the queue is bounded; the oldest are dropped and counted */
	for (int i = 0; i < LOGBATCH_MAX_QUEUED + 25; i++)
		assert_int_equal(logbatch_feed(b, LOGBATCH_STDERR, 2, "l\n", 2, i), 0);
	assert_int_equal(logbatch_queued(b), LOGBATCH_MAX_QUEUED);
	assert_int_equal(logbatch_dropped(b), 25);
	json_decref(ev);
	free(big);
	logbatch_destroy(b);
}

/* ---- status file --------------------------------------------------------- */

static void write_file(const char *path, const char *s)
{
	assert_int_equal(sr_fs_write_atomic(path, s, strlen(s), 0600, NULL), 0);
}

static void test_status_file(void **state)
{
	char path[400];
	struct status_reader r;
	struct status_info si;
	struct sr_err e;

	(void)state;
	snprintf(path, sizeof path, "%s/status.json", g_dir);
	status_reader_init(&r, path);
	/* absent: nothing, no error */
	assert_int_equal(status_read(&r, &si, NULL), 0);
	assert_int_equal(si.step, -1);

	write_file(path, "{\"seq\":1,\"step\":10,\"total_steps\":100,"
			 "\"ckpt_step\":8,\"stall_ms\":[1.5,2.5],\"future\":true}");
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.step, 10);
	assert_int_equal(si.total_steps, 100);
	assert_int_equal(si.ckpt_step, 8);
	assert_int_equal(si.restored_step, -1);
	assert_int_equal(si.nstalls, 2);
	assert_true(si.stall_ms[1] == 2.5);
	/* unchanged file: values kept, stalls not repeated */
	assert_int_equal(status_read(&r, &si, NULL), 0);
	assert_int_equal(si.step, 10);
	assert_int_equal(si.nstalls, 0);
	/* the same seq rewritten (e.g. touched): stalls not repeated */
	write_file(path, "{\"seq\":1,\"step\":11,\"stall_ms\":[1.5,2.5]}   ");
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.step, 11);
	assert_int_equal(si.nstalls, 0);
	write_file(path, "{\"seq\":2,\"step\":12,\"stall_ms\":[3]}");
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.nstalls, 1);
	assert_true(si.stall_ms[0] == 3.0);

	/* malformed: error naming the file and field; last values kept */
	write_file(path, "{\"seq\":3,\"step\":\"twelve\"}");
	sr_err_clear(&e);
	assert_true(status_read(&r, &si, &e) < 0);
	assert_non_null(strstr(e.msg, "status.json"));
	assert_non_null(strstr(e.msg, "step"));
	assert_int_equal(si.step, 12);
	write_file(path, "{\"seq\":4,\"stall_ms\":[1,\"x\"]}");
	sr_err_clear(&e);
	assert_true(status_read(&r, &si, &e) < 0);
	assert_non_null(strstr(e.msg, "stall_ms[1]"));
	write_file(path, "{\"seq\":5,\"step\":-7}");
	sr_err_clear(&e);
	assert_true(status_read(&r, &si, &e) < 0);
	write_file(path, "{bad json");
	sr_err_clear(&e);
	assert_true(status_read(&r, &si, &e) < 0);
	assert_non_null(strstr(e.msg, "status.json"));
}

/* The workload writes in the status file's directory (issue 24): a link
 * it plants there (to spotrund's api.token, say) is not followed - no
 * byte of the target reaches the error the job's log shows - and a FIFO
 * does not hold the agent up (opening one would wait for a writer). */
static void test_status_file_planted(void **state)
{
	char path[400], secret[400];
	struct status_reader r;
	struct status_info si;
	struct sr_err e;

	(void)state;
	snprintf(path, sizeof path, "%s/planted.json", g_dir);
	snprintf(secret, sizeof secret, "%s/api.token", g_dir);
	write_file(secret, "deadbeef0123");
	assert_int_equal(symlink(secret, path), 0);
	status_reader_init(&r, path);
	sr_err_clear(&e);
	assert_int_equal(status_read(&r, &si, &e), -ELOOP);
	assert_non_null(strstr(e.msg, "a symbolic link, not read"));
	assert_null(strstr(e.msg, "deadbeef"));
	assert_int_equal(si.step, -1);
	/* reported once, not at every poll */
	assert_int_equal(status_read(&r, &si, NULL), 0);
	/* a link to a well-formed status file is not read either */
	unlink(path);
	write_file(secret, "{\"step\":5}");
	assert_int_equal(symlink(secret, path), 0);
	assert_true(status_read(&r, &si, NULL) < 0);
	assert_int_equal(si.step, -1);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	sr_err_clear(&e);
	assert_int_equal(status_read(&r, &si, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a regular file"));
	unlink(path);
	/* the workload's own file again: read */
	write_file(path, "{\"step\":7}");
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.step, 7);
	unlink(path);
	unlink(secret);
}

/* The library's own report ($SPOTRUN_PROGRESS_FILE, lib/ckpt/progress.c)
 * read by the agent's reader: steps, commits, the restore, and each
 * save's stall exactly once, even when reads skip writes. */
static void test_progress_report(void **state)
{
	char path[400];
	struct status_reader r;
	struct status_info si;
	int seen = 0;

	(void)state;
	snprintf(path, sizeof path, "%s/progress.json", g_dir);
	status_reader_init(&r, path);
	unsetenv("SPOTRUN_PROGRESS_FILE");
	assert_int_equal(spotckpt_progress_step(5, -1), 0); /* not under an agent */
	assert_int_equal(status_read(&r, &si, NULL), 0);
	setenv("SPOTRUN_PROGRESS_FILE", path, 1);
	assert_int_equal(spotckpt_progress_restored(0), 0); /* a fresh start */
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.restored_step, 0);
	assert_int_equal(si.ckpt_step, -1);   /* unknown, not 0 */
	assert_int_equal(si.total_steps, -1);
	assert_int_equal(si.nstalls, 0);
	/* 20 saves, read after every third: 20 stalls in all, in order */
	for (int i = 1; i <= 20; i++) {
		ckpt__progress_saved(i * 10, (double)i);
		ckpt__progress_committed(i * 10 - 10);
		if (i % 3 == 0 || i == 20) {
			assert_int_equal(status_read(&r, &si, NULL), 1);
			for (int k = 0; k < si.nstalls; k++)
				assert_true(si.stall_ms[k] == (double)(++seen));
		}
	}
	assert_int_equal(seen, 20);
	assert_int_equal(si.step, 200);
	assert_int_equal(si.ckpt_step, 190);
	/* more than the ring between two reads: the newest 16, none twice */
	for (int i = 21; i <= 40; i++)
		ckpt__progress_saved(i * 10, (double)i);
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.nstalls, 16);
	assert_true(si.stall_ms[0] == 25.0 && si.stall_ms[15] == 40.0);
	/* the loop's step and total, flushed by close at the latest */
	assert_int_equal(spotckpt_progress_step(401, 1000), 0);
	ckpt__progress_flush();
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.step, 401);
	assert_int_equal(si.total_steps, 1000);
	assert_int_equal(si.nstalls, 0);
	assert_true(spotckpt_progress_step(-1, 0) < 0);
	/* a multi-rank restore says where each part came from (peer copies),
	 * escaped as JSON; the agent's `restored` event carries it */
	assert_string_equal(si.restored_from, "");
	assert_int_equal(spotckpt_progress_restored_from(
				 80, "rank-00001=peer rank 0, \"q\""), 0);
	assert_int_equal(status_read(&r, &si, NULL), 1);
	assert_int_equal(si.restored_step, 80);
	assert_string_equal(si.restored_from, "rank-00001=peer rank 0, \"q\"");
	assert_true(spotckpt_progress_restored_from(-1, "x") < 0);
	assert_true(spotckpt_progress_restored_from(1, NULL) < 0);
	unsetenv("SPOTRUN_PROGRESS_FILE");
}

/* ---- checkpoint scan ------------------------------------------------------ */

static void mkckpt(const char *name, int with_manifest)
{
	char p[512];

	snprintf(p, sizeof p, "%s/ck/%s", g_dir, name);
	assert_int_equal(sr_fs_mkdir_p(p, 0700), 0);
	if (with_manifest) {
		snprintf(p, sizeof p, "%s/ck/%s/manifest.json", g_dir, name);
		write_file(p, "{}");
	}
}

static void test_ckscan(void **state)
{
	char d[400], p[512];

	(void)state;
	snprintf(d, sizeof d, "%s/ck", g_dir);
	assert_int_equal(ckscan_newest_step(d), -1); /* missing dir */
	assert_int_equal(ckscan_newest_step(NULL), -1);
	mkckpt("step-00000010", 1);
	mkckpt("step-00000020", 1);
	mkckpt("step-00000030.tmp", 1); /* not committed */
	mkckpt("step-00000040", 0);     /* no manifest yet */
	mkckpt("step-x50", 1);
	mkckpt("other", 1);
	assert_int_equal(ckscan_newest_step(d), 20);
	/* a shard linked from another disk (striping) is a step's own */
	mkckpt("stripe-0-ab/x", 0);
	mkckpt("step-00000025", 1);
	assert_int_equal(symlink("../stripe-0-ab/x", strcat(strcpy(p, d),
				 "/step-00000025/shard-0.safetensors")), 0);
	assert_int_equal(ckscan_newest_step(d), 25);
	/* a step dir, or its manifest, planted as a link out is not */
	mkckpt("elsewhere", 1);
	assert_int_equal(symlink("elsewhere", strcat(strcpy(p, d),
				 "/step-00000060")), 0);
	mkckpt("step-00000070", 0);
	assert_int_equal(symlink("../elsewhere/manifest.json",
				 strcat(strcpy(p, d), "/step-00000070/manifest.json")),
			 0);
	assert_int_equal(ckscan_newest_step(d), 25);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The engine's recovery point (tier3.json): one engine, or the parts of
 * a multi-rank checkpointer folded to their least. */
static void test_ckscan_tier3(void **state)
{
	struct ckscan_tier3 rp;
	char d[400], p[500];

	(void)state;
	snprintf(d, sizeof d, "%s/t3", g_dir);
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 0);
	assert_int_equal(rp.store_step, -1);
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(p, sizeof p, "%s/tier3.json", d);
	write_text(p, "{\"uri\":\"s3://b/p\",\"local_step\":9,\"store_step\":7,"
		   "\"store_time_ns\":1234,\"behind\":2,\"retries\":1,"
		   "\"last_error\":\"HTTP 503\"}");
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 1);
	assert_int_equal(rp.local_step, 9);
	assert_int_equal(rp.store_step, 7);
	assert_int_equal(rp.store_time_ns, 1234);
	assert_int_equal(rp.behind, 2);
	assert_int_equal(rp.retries, 1);
	assert_string_equal(rp.last_error, "HTTP 503");
	/* torn or foreign: ignored, not a crash */
	write_text(p, "{\"local_step\":");
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 0);
	unlink(p);
	/* two parts: the step whole in the store is the least */
	snprintf(p, sizeof p, "%s/rank-00000", d);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/rank-00000/tier3.json", d);
	write_text(p, "{\"local_step\":12,\"store_step\":10,\"store_time_ns\":5}");
	snprintf(p, sizeof p, "%s/replicated", d);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/replicated/tier3.json", d);
	write_text(p, "{\"local_step\":12,\"store_step\":8,\"store_time_ns\":4}");
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 1);
	assert_int_equal(rp.local_step, 12);
	assert_int_equal(rp.store_step, 8);
	assert_int_equal(rp.store_time_ns, 4);

	/* planted by the workload (issue 24): a part that is a link to
	 * another directory, a tier3.json that is a link or a FIFO - none
	 * is read */
	snprintf(p, sizeof p, "%s/rank-00001", d);
	assert_int_equal(symlink("/tmp/..", p), 0);
	snprintf(p, sizeof p, "%s/t3-other", g_dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/t3-other/tier3.json", g_dir);
	write_text(p, "{\"local_step\":1,\"store_step\":1,\"store_time_ns\":1}");
	snprintf(p, sizeof p, "%s/rank-00002", d);
	assert_int_equal(symlink("../t3-other", p), 0);
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.store_step, 8);
	snprintf(p, sizeof p, "%s/rank-00000/tier3.json", d);
	unlink(p);
	assert_int_equal(symlink("../../t3-other/tier3.json", p), 0);
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 1);
	assert_int_equal(rp.store_step, 8); /* replicated/ only */
	snprintf(p, sizeof p, "%s/replicated/tier3.json", d);
	unlink(p);
	assert_int_equal(mkfifo(p, 0600), 0);
	ckscan_tier3(d, &rp);  /* returns: the FIFO is not waited on */
	assert_int_equal(rp.found, 0);
	snprintf(p, sizeof p, "%s/tier3.json", d);
	assert_int_equal(symlink("../t3-other/tier3.json", p), 0);
	ckscan_tier3(d, &rp);
	assert_int_equal(rp.found, 0);
}

/* ---- /proc parsing ----------------------------------------------------- */

static void test_procstat_parse(void **state)
{
	/* comm with spaces and a ')' inside */
	const char *line = "4242 (my (weird) prog) S 1 4200 4200 0 -1 4194560 "
			   "100 0 0 0 150 50 7 3 20 0 1 0 12345 1000000 256 "
			   "18446744073709551615";
	struct procstat_sample a, b;
	uint64_t ticks, rss;
	pid_t pg;

	(void)state;
	assert_int_equal(procstat_parse_stat(line, &pg, &ticks, &rss), 0);
	assert_int_equal(pg, 4200);
	assert_int_equal(ticks, 150 + 50 + 7 + 3);
	assert_int_equal(rss, 256);
	assert_int_equal(procstat_parse_stat("garbage", &pg, &ticks, &rss), -EINVAL);
	assert_int_equal(procstat_parse_stat("1 (x) S 1 2", &pg, &ticks, &rss), -EINVAL);

	/* our own process group has at least this process */
	assert_int_equal(procstat_sample(NULL, getpgrp(), &a), 0);
	assert_true(a.nproc >= 1);
	assert_true(a.rss_bytes > 0);
	b = a;
	b.mono_ns += 1000000000;
	assert_int_equal(procstat_cpu_permille(&a, &b), 0);
	assert_int_equal(procstat_cpu_permille(&b, &a), -1);
	assert_int_equal(procstat_sample("/nonexistent-proc", 1, &a), -ENOENT);
}

/* ---- NVML -------------------------------------------------------------- */

static void test_gpustat_absent(void **state)
{
	struct gpustat *g = (struct gpustat *)1;
	struct gpustat_sample s;
	struct sr_err e;

	(void)state;
	sr_err_clear(&e);
	assert_int_equal(gpustat_open("/nonexistent/libnvidia-ml.so.1", &g, &e),
			 -SR_EUNSUPPORTED);
	assert_null(g);
	assert_non_null(strstr(e.msg, "libnvidia-ml"));
	/* a library without NVML's symbols is refused by name */
	sr_err_clear(&e);
	assert_int_equal(gpustat_open("libm.so.6", &g, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "nvmlInit_v2"));
	/* degrade: no handle -> zero GPUs, unknown utilisation */
	assert_int_equal(gpustat_sample(NULL, &s, NULL), 0);
	assert_int_equal(s.ngpus, 0);
	assert_int_equal(gpustat_mean_permille(&s), -1);
	s.ngpus = 2;
	s.util_pct[0] = 50;
	s.util_pct[1] = 100;
	assert_int_equal(gpustat_mean_permille(&s), 750);
	gpustat_close(NULL);
}

/* ---- process-group runner ------------------------------------------------ */

static void wait_exit(struct workload *w)
{
	for (int i = 0; i < 1000 && workload_poll_exit(w) == 0; i++)
		usleep(10000);
	assert_int_equal(w->exited, 1);
}

static size_t slurp(int fd, char *buf, size_t n)
{
	size_t got = 0;

	for (int i = 0; i < 500 && got < n - 1; i++) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		poll(&p, 1, 10);
		r = read(fd, buf + got, n - 1 - got);
		if (r == 0)
			break;
		if (r > 0)
			got += (size_t)r;
	}
	buf[got] = '\0';
	return got;
}

static void test_workload_env_and_exit(void **state)
{
	/* a value full of shell syntax arrives verbatim: it never went
	 * through a shell */
	char *envp[] = { "PATH=/usr/bin:/bin", "SPOTRUN_X=$(touch /tmp/pwned); `id` 'q' \"d\"",
			 NULL };
	struct workload w;
	char out[512], err[512], st[64];

	(void)state;
	assert_int_equal(workload_start(&w, "printf '%s' \"$SPOTRUN_X\"; echo oops >&2; "
					  "exit 3", g_dir, envp, NULL, NULL), 0);
	assert_true(w.pid > 0);
	assert_int_equal(getpgid(w.pid) == w.pid || errno == ESRCH, 1);
	slurp(w.out_fd, out, sizeof out);
	slurp(w.err_fd, err, sizeof err);
	wait_exit(&w);
	assert_string_equal(out, "$(touch /tmp/pwned); `id` 'q' \"d\"");
	assert_string_equal(err, "oops\n");
	assert_int_equal(w.exit_code, 3);
	assert_int_equal(w.signal, 0);
	assert_string_equal(workload_status_str(&w, st, sizeof st), "exit 3");
	workload_close_fds(&w);
}

static void test_workload_group_signal(void **state)
{
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct workload w;
	char out[64];

	(void)state;
	/* the shell waits on a child that traps TERM: one kill(-pgid)
	 * reaches both; the child exits 0 from its trap */
	assert_int_equal(workload_start(&w, "sh -c 'trap \"echo got-term; exit 0\" "
					  "TERM; echo ready; while :; do sleep 0.05; "
					  "done'; echo after", NULL, envp, NULL, NULL), 0);
	assert_int_equal(getpgid(w.pid), w.pid);
	slurp(w.out_fd, out, 7);
	assert_string_equal(out, "ready\n");
	assert_int_equal(workload_group_alive(&w), 1);
	assert_int_equal(workload_signal(&w, SIGTERM), 0);
	wait_exit(&w);
	/* the outer sh died of SIGTERM itself */
	assert_int_equal(w.signal, SIGTERM);
	assert_int_equal(w.exit_code, 128 + SIGTERM);
	for (int i = 0; i < 200 && workload_group_alive(&w); i++)
		usleep(10000);
	assert_int_equal(workload_group_alive(&w), 0);
	assert_int_equal(workload_signal(&w, SIGTERM), -ESRCH);
	workload_close_fds(&w);
}

static void test_workload_bad_cwd(void **state)
{
	char *envp[] = { NULL };
	struct workload w;
	struct sr_err e;

	(void)state;
	sr_err_clear(&e);
	/* the child reports the failed chdir through its pipe: nothing
	 * runs, nothing leaks, and the error names the directory */
	assert_int_equal(workload_start(&w, "true", "/nonexistent/dir", envp,
					NULL, &e), -ENOENT);
	assert_int_equal(w.pid, -1);
	assert_int_equal(w.out_fd, -1);
	assert_int_equal(w.iso_failed, 0);
	assert_non_null(strstr(e.msg, "/nonexistent/dir"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_logbatch_lines),
		cmocka_unit_test(test_logbatch_limits),
		cmocka_unit_test(test_status_file),
		cmocka_unit_test(test_status_file_planted),
		cmocka_unit_test(test_progress_report),
		cmocka_unit_test(test_ckscan),
		cmocka_unit_test(test_ckscan_tier3),
		cmocka_unit_test(test_procstat_parse),
		cmocka_unit_test(test_gpustat_absent),
		cmocka_unit_test(test_workload_env_and_exit),
		cmocka_unit_test(test_workload_group_signal),
		cmocka_unit_test(test_workload_bad_cwd),
	};
	return cmocka_run_group_tests(tests, mk_tmpdir, rm_tmpdir);
}
