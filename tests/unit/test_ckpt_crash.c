/*
 * test_ckpt_crash.c - kill -9 a writer at random moments, then restore.
 *
 * Each trial forks a child that saves in a loop (fill the tensors with a
 * pattern derived from the step, save, wait for the commit, report the
 * step on a pipe).  The parent SIGKILLs it after a random delay, then
 * restores.  The restored checkpoint must be at least the newest step the
 * child reported as committed, every tensor must carry exactly that step's
 * pattern (so nothing torn or mixed), checksums verified on the way, and no
 * committed checkpoint may ever be found invalid.  The next trial's child
 * continues from the restored step, so the engine's startup cleanup of a
 * dead writer's leftovers is exercised too.
 *
 * The same again with the checkpoint striped over three directories
 * (stripes.c): whole steps only, and once an engine has opened them no
 * stripe is left that no committed step links to.
 *
 * Trials: 200 by default (60 striped), $SPOTRUN_CRASH_TRIALS to change
 * (long mode: 2000), 60 (50) under SPOTRUN_CHECK_MODE=asan.  The kill
 * delays come from $SPOTRUN_SEED (printed; a new seed each run without it).
 */
#include "ckpt_test.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "common/log.h"

#define NT 24

static size_t g_nbytes[NT];

static void sizes_init(void)
{
	/* mixed sizes: 64 B .. 512 KiB, about 2.3 MiB in all */
	for (int i = 0; i < NT; i++)
		g_nbytes[i] = (size_t)8 << (3 + (i * 7) % 14);
}

static void pattern(uint64_t *p, size_t nbytes, int64_t step, int t)
{
	for (size_t w = 0; w < nbytes / 8; w++)
		p[w] = ((uint64_t)step << 32) ^ ((uint64_t)t << 24) ^ w;
}

static void name_of(int i, char *buf, size_t n)
{
	snprintf(buf, n, "layer%02d.%s", i, i % 3 ? "weight" : "exp_avg");
}

static _Noreturn void child(const char *dir, const char **dirs, int ndirs,
			    int64_t start, int wfd)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	uint64_t *buf[NT];

	sr_log_set_level(SR_LOG_ERROR);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.dirs = ndirs > 1 ? dirs : NULL;
	o.ndirs = ndirs > 1 ? (uint32_t)ndirs : 0;
	o.keep = 2;
	o.copy_threads = 1;
	o.shard_bytes = 600 << 10; /* several shards */
	if (spotckpt_open(&o, &e))
		_exit(3);
	for (int i = 0; i < NT; i++) {
		int64_t shape[1] = { (int64_t)g_nbytes[i] / 8 };
		char name[32];

		buf[i] = malloc(g_nbytes[i]);
		name_of(i, name, sizeof name);
		if (!buf[i] || spotckpt_register(e, name, buf[i], SPOTCKPT_I64, 1,
						 shape, SPOTCKPT_DEV_CPU))
			_exit(4);
	}
	for (int64_t step = start;; step++) {
		char meta[64];

		for (int i = 0; i < NT; i++)
			pattern(buf[i], g_nbytes[i], step, i);
		snprintf(meta, sizeof meta, "{\"step\":%lld}", (long long)step);
		if (spotckpt_save(e, step, meta, step % 2 ? SPOTCKPT_SAVE_LAZY : 0,
				  NULL))
			_exit(5);
		if (spotckpt_wait(e))
			_exit(6);
		if (write(wfd, &step, sizeof step) != sizeof step)
			_exit(7);
	}
}

struct rctx { uint64_t *buf[NT]; int found; };

static int lookup(void *ud, const struct spotckpt_tensor_info *ti,
		  struct spotckpt_dest *d)
{
	struct rctx *c = ud;
	char name[32];

	for (int i = 0; i < NT; i++) {
		name_of(i, name, sizeof name);
		if (!strcmp(ti->name, name) && ti->nbytes == g_nbytes[i]) {
			d->ptr = c->buf[i];
			d->len = g_nbytes[i];
			c->found++;
			return 0;
		}
	}
	return 1;
}

static int trials(int striped)
{
	const char *env = getenv("SPOTRUN_CRASH_TRIALS");
	const char *mode = getenv("SPOTRUN_CHECK_MODE");

	if (env && atoi(env) > 0)
		return atoi(env);
	if (mode && !strcmp(mode, "asan"))
		return striped ? 50 : 60;
	return striped ? 60 : 200;
}

/* The kill delays' seed: $SPOTRUN_SEED, else a new one each run (both
 * printed, so a failing run can be replayed). */
static unsigned test_seed(void)
{
	const char *env = getenv("SPOTRUN_SEED");
	char *end;
	unsigned long v;

	if (env && *env) {
		errno = 0;
		v = strtoul(env, &end, 10);
		if (!errno && !*end && v <= UINT_MAX)
			return (unsigned)v;
		fail_msg("SPOTRUN_SEED: '%s' is not a whole number", env);
	}
	return (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
}

/* Every stripe directory left in dirs[1..] is linked to from a committed
 * step of dirs[0]. */
static void check_no_orphan_stripes(const char **dirs, int ndirs)
{
	struct spotckpt_entry ents[16];
	struct stat linked[64];
	size_t n, nl = 0;

	assert_int_equal(spotckpt_list(dirs[0], ents, 16, &n), 0);
	for (size_t i = 0; i < n; i++) {
		char p[4200], t[4200];
		DIR *d;
		struct dirent *de;

		snprintf(p, sizeof p, "%s/step-%08lld", dirs[0],
			 (long long)ents[i].step);
		d = opendir(p);
		assert_non_null(d);
		for (de = readdir(d); de; de = readdir(d)) {
			ssize_t k = readlinkat(dirfd(d), de->d_name, t, sizeof t - 1);
			char *slash;

			if (k <= 0)
				continue;
			t[k] = '\0';
			slash = strrchr(t, '/');
			*slash = '\0';
			assert_true(nl < 64);
			assert_int_equal(stat(t, &linked[nl++]), 0);
		}
		closedir(d);
	}
	for (int k = 1; k < ndirs; k++) {
		DIR *d = opendir(dirs[k]);
		struct dirent *de;

		assert_non_null(d);
		for (de = readdir(d); de; de = readdir(d)) {
			struct stat st;
			int found = 0;

			if (strncmp(de->d_name, "stripe-", 7))
				continue;
			assert_int_equal(fstatat(dirfd(d), de->d_name, &st, 0), 0);
			for (size_t j = 0; j < nl; j++)
				found |= linked[j].st_dev == st.st_dev &&
					 linked[j].st_ino == st.st_ino;
			if (!found)
				fail_msg("%s/%s: no committed step links to it",
					 dirs[k], de->d_name);
		}
		closedir(d);
	}
}

static void kill9_trials(int ndirs)
{
	char *dir = ct_tmpdir();
	char *sdir[3] = { dir, NULL, NULL };
	const char *dirs[3];
	char logpath[4200];
	int64_t next = 1, ever = -1;
	struct rctx c;
	int n = trials(ndirs > 1), logfd, restored_newer = 0;
	long range_us = 80000; /* grows while a slow child makes no progress */
	unsigned seed = test_seed();

	for (int k = 1; k < ndirs; k++) {
		assert_true(asprintf(&sdir[k], "%s.s%d", dir, k) > 0);
		assert_int_equal(mkdir(sdir[k], 0755), 0);
	}
	for (int k = 0; k < 3; k++)
		dirs[k] = sdir[k];
	sizes_init();
	for (int i = 0; i < NT; i++)
		c.buf[i] = malloc(g_nbytes[i]);
	snprintf(logpath, sizeof logpath, "%s.log", dir);
	logfd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(logfd >= 0);
	sr_log_set_fd(logfd);
	print_message("crash test: %d trials over %d director%s, seed %u "
		      "(SPOTRUN_SEED), dir %s\n", n, ndirs, ndirs > 1 ? "ies" : "y",
		      seed, dir);
	for (int t = 0; t < n; t++) {
		int fds[2], status;
		int64_t step, last = -1, got = -1;
		pid_t pid;
		long delay_us = rand_r(&seed) % range_us;
		int rc;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			child(dir, dirs, ndirs, next, fds[1]);
		}
		close(fds[1]);
		usleep((useconds_t)delay_us);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status)); /* it never exited on its own */
		while (read(fds[0], &step, sizeof step) == sizeof step)
			last = step;
		close(fds[0]);
		if (last > ever)
			ever = last;

		c.found = 0;
		rc = spotckpt_restore_cb(dir, SPOTCKPT_NEWEST, lookup, &c, &got);
		if (ever < 0 && rc == -SPOTCKPT_ENOTFOUND) {
			/* nothing committed yet: a slow machine (valgrind)
			 * needs longer before the first commit */
			if (range_us < 4000000)
				range_us *= 2;
			continue;
		}
		if (got < next && range_us < 4000000)
			range_us *= 2; /* no new commit this trial */
		else if (got >= next && range_us > 80000)
			range_us /= 2;
		if (rc != 0)
			fail_msg("trial %d: restore failed: %s (%s)", t,
				 spotckpt_strerror(rc), spotckpt_errmsg());
		assert_int_equal(c.found, NT);
		if (got < last)
			fail_msg("trial %d: restored step %lld but step %lld was "
				 "committed", t, (long long)got, (long long)last);
		restored_newer += got > last;
		for (int i = 0; i < NT; i++) {
			uint64_t *want = malloc(g_nbytes[i]);

			pattern(want, g_nbytes[i], got, i);
			if (memcmp(want, c.buf[i], g_nbytes[i]))
				fail_msg("trial %d: tensor %d of step %lld holds "
					 "other data (torn)", t, i, (long long)got);
			free(want);
		}
		next = got + 1;
	}
	sr_log_set_fd(-1);
	/* no committed checkpoint was ever found invalid */
	{
		char buf[8192];
		ssize_t k = pread(logfd, buf, sizeof buf - 1, 0);

		buf[k > 0 ? k : 0] = '\0';
		if (strstr(buf, "skipping") || strstr(buf, "failed verification"))
			fail_msg("a committed checkpoint was invalid:\n%s", buf);
	}
	print_message("crash test: reached step %lld; %d restores found a "
		      "commit newer than the last report\n", (long long)next - 1,
		      restored_newer);
	assert_true(ever > 0);
	if (ndirs > 1) { /* an engine's open removes the dead writers' stripes */
		struct spotckpt_opts o;
		struct spotckpt *e = NULL;

		spotckpt_opts_init(&o);
		o.dir = dir;
		o.dirs = dirs;
		o.ndirs = (uint32_t)ndirs;
		assert_int_equal(spotckpt_open(&o, &e), 0);
		assert_int_equal(spotckpt_close(e), 0);
		check_no_orphan_stripes(dirs, ndirs);
	}
	close(logfd);
	unlink(logpath);
	for (int i = 0; i < NT; i++)
		free(c.buf[i]);
	for (int k = 1; k < ndirs; k++) {
		ct_rmtree(sdir[k]);
		free(sdir[k]);
	}
	ct_rmtree(dir);
	free(dir);
}

static void test_kill9_during_saves(void **st)
{
	(void)st;
	kill9_trials(1);
}

static void test_kill9_during_striped_saves(void **st)
{
	(void)st;
	kill9_trials(3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill9_during_saves),
		cmocka_unit_test(test_kill9_during_striped_saves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
