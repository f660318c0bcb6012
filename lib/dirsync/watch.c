/*
 * watch.c - the syncer yields to the workload while it writes into the
 * directory (issue 30: a checkpoint upload must not stall training).
 * Measured on 2 vCPUs (docs/benchmarks.md "sync-stall"): a 1 GiB
 * torch.save took 1.5-2x as long while the syncer hashed and uploaded the
 * previous checkpoint beside it; lower CPU and I/O priorities did not
 * help.  So the syncer holds its uploads back while the script writes,
 * and a round is uploaded in the gaps between saves.
 *
 * DESIGN.  inotify watches the directory and every directory below it
 * (opened with O_NOFOLLOW, watched through /proc/self/fd: no name is
 * resolved twice).  A thread reads the events; a write event - a file
 * modified, closed after writing, created, or moved in - stamps the time.
 *
 *   OPEN --a write event--> WRITING (a new stretch starts unless the last
 *                           event is less than quiet_ns old)
 *   WRITING: dirsync_watch_gate() blocks (the caller's upload part or
 *            hash block waits), polling every 20 ms
 *     --no write event for quiet_ns, and no file written and not yet
 *       closed--> OPEN
 *     --no write event for DIRSYNC_OPEN_QUIET_NS, files still open--> OPEN
 *     --the stretch has lasted max_ns--> the gate opens until the next
 *            quiet gap: a script that writes all the time (a log, an
 *            event file) still gets its uploads, at worst one gate wait
 *            of max_ns per part
 *   held (dirsync_watch_hold: the final round, a round the workload
 *   asked for) --> the gate never blocks
 *
 * The gate holds back the next part or hash block; the parts already on
 * the wire (8 x 16 MiB) would still go on beside the save, and the
 * store's work receiving them with it (s3rver on the same 2 vCPUs: ~1
 * CPU-s, the slow saves in docs/benchmarks.md "sync-stall").  So the
 * bodies on the wire pause too: dirsync_watch_pace() is the same wait,
 * called before every 64 KiB of a part's body (objstore_set_pace), each
 * call at most DIRSYNC_PACE_MAX_NS so that a request is never idle long
 * enough for a store to end it (S3: ~20 s); a longer save gets a 64 KiB
 * trickle per part every DIRSYNC_PACE_MAX_NS.
 *
 * Files written and not yet closed: inotify reports a write when the
 * write() returns, so one large write() of torch.save (64 MiB and more,
 * over 250 ms on a loaded machine) is a silence of quiet_ns in the middle
 * of a save.  So the reader keeps the files it saw created or modified
 * until their IN_CLOSE_WRITE (or deletion, or move away): while one is
 * open the gate needs DIRSYNC_OPEN_QUIET_NS of silence, not quiet_ns.  A
 * file kept open for good (a log) costs that longer wait, no more.  At
 * most OPEN_MAX files are kept (by directory watch and name hash: a
 * collision only changes how long a gate waits); past that, or after an
 * event-queue overflow, the set is cleared.
 *
 * A directory created (or moved in) while watched gets its watches when
 * its event is read; an event-queue overflow counts as a write and
 * re-walks the tree.  Names starting with ".spotrun-" are ignored (the
 * engine's own).  Watches are capped at DIRSYNC_WATCH_MAX directories;
 * writes below the cap's excess are not seen (the gate just does not
 * block for them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirsync.h"
#include "common/text.h"
#include "common/timeutil.h"

#define DIRSYNC_WATCH_MAX 4096
#define GATE_POLL_NS (20 * 1000000L)
#define WRITE_MASK (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)
#define GONE_MASK (IN_DELETE | IN_MOVED_FROM)
#define OPEN_MAX 64

struct open_file {
	int wd;
	uint64_t h;                /* FNV-1a of the name */
};

struct dirsync_watch {
	int dirfd;                 /* the directory (borrowed) */
	int ifd;                   /* inotify (owned), -1 */
	int stop[2];               /* the thread's wake-up pipe (owned) */
	pthread_t th;
	int started;
	int nwatch;
	int64_t quiet_ns, max_ns;
	_Atomic int64_t last_ns;   /* monotonic, the last write event; 0 */
	_Atomic int64_t stretch_ns;/* when the current writing began */
	atomic_int hold;
	_Atomic int64_t yielded_ns;/* the gates' total wait */
	struct open_file open[OPEN_MAX]; /* written, not closed (reader's) */
	int nopen;
	atomic_int open_files;     /* nopen, for the gates */
};

int64_t dirsync__open_quiet_ns = DIRSYNC_OPEN_QUIET_NS;

static void add_tree(struct dirsync_watch *w, int fd, int depth)
{
	char path[64];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (w->nwatch >= DIRSYNC_WATCH_MAX ||
	    inotify_add_watch(w->ifd, path,
			      WRITE_MASK | GONE_MASK | IN_ONLYDIR) < 0) {
		close(fd);
		return;
	}
	w->nwatch++; /* re-adding a watched directory counts again: a bound */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		int cfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strncmp(de->d_name, DIRSYNC_LOCAL_PREFIX,
			     strlen(DIRSYNC_LOCAL_PREFIX)) ||
		    depth >= DIRSYNC_MAX_DEPTH)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(sb.st_mode))
			continue;
		cfd = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0)
			add_tree(w, cfd, depth + 1);
	}
	closedir(d);
}

static void walk(struct dirsync_watch *w)
{
	int fd = openat(w->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	w->nwatch = 0;
	if (fd >= 0)
		add_tree(w, fd, 0);
}

static void wrote(struct dirsync_watch *w)
{
	int64_t now = sr_time_mono_ns(), last = atomic_load(&w->last_ns);

	if (!last || now - last >= w->quiet_ns)
		atomic_store(&w->stretch_ns, now);
	atomic_store(&w->last_ns, now);
}

/* The set of files written and not closed: an event on the file named
 * ev->name in the directory of ev->wd. */
static void track(struct dirsync_watch *w, const struct inotify_event *ev)
{
	uint64_t h;
	int i;

	if (!ev->len || (ev->mask & IN_ISDIR))
		return;
	h = sr_text_fnv1a(ev->name, SR_FNV1A_BASIS);
	for (i = 0; i < w->nopen; i++)
		if (w->open[i].wd == ev->wd && w->open[i].h == h)
			break;
	if (ev->mask & (IN_CLOSE_WRITE | GONE_MASK)) {
		if (i < w->nopen)
			w->open[i] = w->open[--w->nopen];
	} else if ((ev->mask & (IN_CREATE | IN_MODIFY)) && i == w->nopen) {
		if (w->nopen == OPEN_MAX)
			w->nopen = 0; /* a bound: forget them all */
		w->open[w->nopen++] = (struct open_file){ ev->wd, h };
	}
	atomic_store(&w->open_files, w->nopen);
}

static void *reader(void *arg)
{
	struct dirsync_watch *w = arg;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = { { w->ifd, POLLIN, 0 },
				       { w->stop[0], POLLIN, 0 } };
		ssize_t n;
		int rewalk = 0, any = 0;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		n = read(w->ifd, buf, sizeof buf);
		if (n <= 0) {
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			break;
		}
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const void *)q;

			q += sizeof *ev + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				any = rewalk = 1;
				w->nopen = 0;
				atomic_store(&w->open_files, 0);
				continue;
			}
			if (ev->len && !strncmp(ev->name, DIRSYNC_LOCAL_PREFIX,
						strlen(DIRSYNC_LOCAL_PREFIX)))
				continue;
			track(w, ev);
			if (ev->mask & WRITE_MASK)
				any = 1;
			if ((ev->mask & IN_ISDIR) &&
			    (ev->mask & (IN_CREATE | IN_MOVED_TO)))
				rewalk = 1;
		}
		if (rewalk)
			walk(w); /* first: once a write is seen, so are the
				    directories created before it */
		if (any)
			wrote(w);
	}
	return NULL;
}

int dirsync_watch_start(int dirfd, int64_t quiet_ns, int64_t max_ns,
			struct dirsync_watch **out, struct sr_err *e)
{
	struct dirsync_watch *w = calloc(1, sizeof *w);
	int rc;

	*out = NULL;
	if (!w)
		return sr_err_set(e, -ENOMEM, "watch: out of memory");
	w->dirfd = dirfd;
	w->quiet_ns = quiet_ns;
	w->max_ns = max_ns;
	w->stop[0] = w->stop[1] = -1;
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0 || pipe2(w->stop, O_CLOEXEC) < 0) {
		rc = sr_err_set(e, -errno, "watch: inotify: %s", strerror(errno));
		goto fail;
	}
	walk(w);
	if (w->nwatch == 0) {
		rc = sr_err_set(e, -ENOENT, "watch: the directory cannot be "
				"watched (is /proc mounted?)");
		goto fail;
	}
	rc = -pthread_create(&w->th, NULL, reader, w);
	if (rc < 0) {
		sr_err_set(e, rc, "watch: thread: %s", strerror(-rc));
		goto fail;
	}
	w->started = 1;
	*out = w;
	return 0;
fail:
	dirsync_watch_stop(w);
	return rc;
}

void dirsync_watch_stop(struct dirsync_watch *w)
{
	if (!w)
		return;
	if (w->started) {
		ssize_t n = write(w->stop[1], "x", 1);

		(void)n;
		pthread_join(w->th, NULL);
	}
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->stop[0] >= 0)
		close(w->stop[0]);
	if (w->stop[1] >= 0)
		close(w->stop[1]);
	free(w);
}

void dirsync_watch_hold(struct dirsync_watch *w, int open)
{
	if (w)
		atomic_store(&w->hold, open);
}

int64_t dirsync_watch_yielded_ns(const struct dirsync_watch *w)
{
	return w ? atomic_load(&w->yielded_ns) : 0;
}

int64_t dirsync_watch_last_ns(const struct dirsync_watch *w)
{
	return w ? atomic_load(&w->last_ns) : 0;
}

int dirsync_watch_open_files(const struct dirsync_watch *w)
{
	return w ? atomic_load(&w->open_files) : 0;
}

/* Whether inotify holds events nobody has read. */
static int unread(struct dirsync_watch *w)
{
	struct pollfd p = { w->ifd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Block while the workload writes (the state diagram above); cap_ns > 0
 * bounds this one wait. */
static void wait_quiet(struct dirsync_watch *w, int64_t cap_ns)
{
	int64_t t0 = 0, now = 0;

	if (!w)
		return;
	for (;;) {
		int64_t last = atomic_load(&w->last_ns), quiet;

		now = sr_time_mono_ns();
		if (unread(w)) {
			/* events the reader has not taken yet (it may wait
			 * for a CPU: we run at nice +10): a write, now */
			wrote(w);
			last = now;
		}
		quiet = atomic_load(&w->open_files) &&
				dirsync__open_quiet_ns > w->quiet_ns
			? dirsync__open_quiet_ns : w->quiet_ns;
		if (atomic_load(&w->hold) || !last || now - last >= quiet ||
		    now - atomic_load(&w->stretch_ns) >= w->max_ns ||
		    (t0 && cap_ns > 0 && now - t0 >= cap_ns))
			break;
		if (!t0)
			t0 = now;
		nanosleep(&(struct timespec){ 0, GATE_POLL_NS }, NULL);
	}
	if (t0)
		atomic_fetch_add(&w->yielded_ns, now - t0);
}

void dirsync_watch_gate(void *ud)
{
	wait_quiet(ud, 0);
}

int64_t dirsync__pace_max_ns = DIRSYNC_PACE_MAX_NS;

void dirsync_watch_pace(void *ud)
{
	wait_quiet(ud, dirsync__pace_max_ns);
}
