/* Unit tests: lib/dirsync/watch.c, the syncer yielding to the workload's
 * writes.  No wall-clock assertion: each step waits for an event (the
 * watch has seen a write) or a state (the gate returns); "still blocked"
 * is checked after a short pause, which only a wrong gate can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirsync/dirsync.h"
#include "common/fsutil.h"
#include "common/timeutil.h"

#define HOUR (3600 * SR_NS_PER_SEC)
#define LIMIT_NS (120 * SR_NS_PER_SEC) /* generous: an event, never a timing */

static char root[64];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/tmp/sr-dswatch-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sr_fs_rm_tree(root);
	return 0;
}

static void write_file(const char *rel)
{
	char p[256];
	int fd;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

/* Wait until the watch has seen a write after `since`. */
static void seen_after(struct dirsync_watch *w, int64_t since)
{
	int64_t end = sr_time_mono_ns() + LIMIT_NS;

	while (dirsync_watch_last_ns(w) <= since) {
		assert_true(sr_time_mono_ns() < end);
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
}

struct gate_arg {
	struct dirsync_watch *w;
	void (*wait)(void *ud);  /* NULL: dirsync_watch_gate */
	atomic_int done;
};

static void *gate_thread(void *p)
{
	struct gate_arg *g = p;

	(g->wait ? g->wait : dirsync_watch_gate)(g->w);
	atomic_store(&g->done, 1);
	return NULL;
}

static int open_root(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

/* No write yet: the gate is open.  A write (in a directory made after the
 * watch started, too) closes it until the round is held open. */
static void test_gate_blocks_while_written(void **state)
{
	struct dirsync_watch *w = NULL;
	struct gate_arg g = { 0 };
	struct sr_err e = { 0 };
	pthread_t th;
	char sub[128];
	int fd = open_root();
	int64_t t;

	(void)state;
	assert_int_equal(dirsync_watch_start(fd, HOUR, HOUR, &w, &e), 0);
	dirsync_watch_gate(w); /* returns: nothing written */
	assert_int_equal(dirsync_watch_yielded_ns(w), 0);
	assert_int_equal(dirsync_watch_last_ns(w), 0);
	dirsync_watch_gate(NULL); /* no watch: never blocks */

	snprintf(sub, sizeof sub, "%s/ckpt", root);
	assert_int_equal(mkdir(sub, 0755), 0);
	seen_after(w, 0); /* the directory's creation */
	t = dirsync_watch_last_ns(w);
	write_file("ckpt/model.pt"); /* inside the new directory */
	seen_after(w, t);

	g.w = w;
	assert_int_equal(pthread_create(&th, NULL, gate_thread, &g), 0);
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	assert_int_equal(atomic_load(&g.done), 0); /* yields to the writes */
	dirsync_watch_hold(w, 1);                  /* a forced round */
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&g.done), 1);
	assert_true(dirsync_watch_yielded_ns(w) > 0);
	dirsync_watch_gate(w); /* held open */
	dirsync_watch_stop(w);
	close(fd);
}

/* A stretch of writing longer than max_ns opens the gate (a script that
 * writes all the time still gets its uploads); after quiet_ns with no
 * write it opens as well. */
static void test_gate_opens_after_max_or_quiet(void **state)
{
	struct dirsync_watch *w = NULL;
	struct sr_err e = { 0 };
	int fd = open_root();

	(void)state;
	assert_int_equal(dirsync_watch_start(fd, HOUR, 1, &w, &e), 0);
	write_file("log.txt");
	seen_after(w, 0);
	dirsync_watch_gate(w); /* returns: the stretch is over max_ns */
	dirsync_watch_stop(w);

	assert_int_equal(dirsync_watch_start(fd, 1000000, HOUR, &w, &e), 0);
	write_file("log.txt");
	seen_after(w, 0);
	dirsync_watch_gate(w); /* returns once 1 ms has passed quietly */
	dirsync_watch_stop(w);
	close(fd);
}

/* The pace of the bodies on the wire is the gate's wait (it blocks while
 * the workload writes, a held round releases it), but each call is
 * bounded: with a 1 ms bound it returns while the gate still blocks. */
static void test_pace_blocks_and_is_bounded(void **state)
{
	struct dirsync_watch *w = NULL;
	struct gate_arg g = { 0 };
	struct gate_arg pa = { .wait = dirsync_watch_pace };
	struct sr_err e = { 0 };
	pthread_t tg, tp;
	int fd = open_root();
	int64_t saved = dirsync__pace_max_ns;

	(void)state;
	assert_int_equal(dirsync_watch_start(fd, HOUR, HOUR, &w, &e), 0);
	dirsync_watch_pace(w); /* nothing written: returns */
	dirsync_watch_pace(NULL);
	write_file("ckpt.pt");
	seen_after(w, 0);
	pa.w = g.w = w;
	assert_int_equal(pthread_create(&tp, NULL, gate_thread, &pa), 0);
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	assert_int_equal(atomic_load(&pa.done), 0); /* yields to the writes */
	dirsync_watch_hold(w, 1);
	pthread_join(tp, NULL);
	assert_int_equal(atomic_load(&pa.done), 1);
	dirsync_watch_hold(w, 0);

	dirsync__pace_max_ns = 1000000;
	assert_int_equal(pthread_create(&tg, NULL, gate_thread, &g), 0);
	dirsync_watch_pace(w); /* returns after 1 ms: the writes go on */
	assert_int_equal(atomic_load(&g.done), 0);
	dirsync_watch_hold(w, 1);
	pthread_join(tg, NULL);
	assert_int_equal(atomic_load(&g.done), 1);
	dirsync__pace_max_ns = saved;
	dirsync_watch_stop(w);
	close(fd);
}

/* Wait until the watch counts n files written and not yet closed. */
static void open_files_are(struct dirsync_watch *w, int n)
{
	int64_t end = sr_time_mono_ns() + LIMIT_NS;

	while (dirsync_watch_open_files(w) != n) {
		assert_true(sr_time_mono_ns() < end);
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
}

/* A file written and still open holds the gate past quiet_ns (one large
 * write() of torch.save is a silence: inotify reports it when it
 * returns); its close releases it.  Deleted or renamed away, a file no
 * longer counts; a closed file never did. */
static void test_open_file_holds_the_gate(void **state)
{
	struct dirsync_watch *w = NULL;
	struct gate_arg g = { 0 };
	struct sr_err e = { 0 };
	pthread_t th;
	char p[256], q[256];
	int fd = open_root(), wfd, wfd2;
	int64_t saved = dirsync__open_quiet_ns;

	(void)state;
	dirsync__open_quiet_ns = HOUR;
	assert_int_equal(dirsync_watch_start(fd, 1000000, HOUR, &w, &e), 0);
	snprintf(p, sizeof p, "%s/model.pt", root);
	wfd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(wfd >= 0);
	assert_int_equal(write(wfd, "x", 1), 1);
	open_files_are(w, 1);

	g.w = w;
	assert_int_equal(pthread_create(&th, NULL, gate_thread, &g), 0);
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	assert_int_equal(atomic_load(&g.done), 0); /* 1 ms quiet: not enough */
	close(wfd);                                /* IN_CLOSE_WRITE */
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&g.done), 1);
	assert_int_equal(dirsync_watch_open_files(w), 0);

	write_file("done.pt"); /* created, written, closed */
	snprintf(q, sizeof q, "%s/tmp.pt", root);
	wfd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(wfd >= 0);
	snprintf(p, sizeof p, "%s/gone.pt", root);
	wfd2 = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(wfd2 >= 0);
	open_files_are(w, 2);
	assert_int_equal(unlink(p), 0);        /* IN_DELETE */
	open_files_are(w, 1);
	snprintf(p, sizeof p, "%s/../%s-moved", root, strrchr(root, '/') + 1);
	assert_int_equal(rename(q, p), 0);     /* IN_MOVED_FROM: out of sight */
	open_files_are(w, 0);
	dirsync_watch_gate(w); /* 1 ms of quiet is enough again */
	close(wfd);
	close(wfd2);
	unlink(p);
	dirsync__open_quiet_ns = saved;
	dirsync_watch_stop(w);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gate_blocks_while_written,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_opens_after_max_or_quiet,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pace_blocks_and_is_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_file_holds_the_gate,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
