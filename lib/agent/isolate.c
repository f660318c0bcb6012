/*
 * isolate.c - the workload's view of the filesystem (isolate.h).
 *
 * iso__enter runs in the child between fork and exec of a multi-threaded
 * agent, so it uses only system calls and hand-written string helpers: no
 * malloc, no stdio.  Order (each step fails the start with its name):
 *
 *   1. unshare: USER+NS (ISO_USERNS) or NS (ISO_ROOT)
 *   2. ISO_USERNS: setgroups "deny", uid_map "U U 1", gid_map "G G 1"
 *   3. mount --make-rprivate /   (nothing leaks back to the host)
 *   4. open an O_PATH fd on every kept dir under a hidden dir
 *   5. tmpfs over every hidden dir
 *   6. bind every kept dir of 4 back at its own path (through its fd)
 *   7. tmpfs again over every hidden dir inside a dir bound back in 6
 *   8. /dev/null bound over every hidden file that is still visible
 *   9. ISO_ROOT: unshare USER+NS again, uid/gid 0 mapped to themselves:
 *      the mounts above become locked and host capabilities are gone
 *  10. verify: every hidden dir that existed reads as a tmpfs (statfs),
 *      every hidden file as /dev/null (stat: char device 1:3); what was
 *      checked goes back to the parent, which reports it (issue 24: the
 *      isolation event says what is hidden, not what was meant to be)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

#include "agent/isolate.h"

enum iso_mode iso_mode_for_self(void)
{
	return geteuid() == 0 ? ISO_ROOT : ISO_USERNS;
}

const char *iso_mode_name(enum iso_mode m)
{
	switch (m) {
	case ISO_USERNS: return "userns";
	case ISO_ROOT: return "root-partial";
	default: return "none";
	}
}

static void copy(char *dst, size_t n, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < n; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

static int fail(struct iso_fail *f, const char *step, const char *path)
{
	f->err = errno ? errno : EINVAL;
	copy(f->step, sizeof f->step, step);
	copy(f->path, sizeof f->path, path ? path : "");
	return -1;
}

/* decimal of v at p; returns the end */
static char *utoa(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static int write_file(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, buf, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* "ID ID 1\n" into /proc/self/<file> */
static int map_self(const char *file, unsigned long inner, unsigned long outer)
{
	char buf[64], *p = buf;

	p = utoa(p, inner);
	*p++ = ' ';
	p = utoa(p, outer);
	memcpy(p, " 1\n", 3);
	p += 3;
	return write_file(file, buf, (size_t)(p - buf));
}

static int enter_userns(int flags, unsigned long uid, unsigned long gid,
			unsigned long in_uid, unsigned long in_gid,
			struct iso_fail *f)
{
	/* a non-dumpable process (the agent is one) has its /proc/self
	 * files owned by root and cannot write its own maps; the child is
	 * about to exec the workload, which is dumpable again anyway */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | flags) < 0)
		return fail(f, "unshare", NULL);
	if (write_file("/proc/self/setgroups", "deny", 4) < 0)
		return fail(f, "setgroups", "/proc/self/setgroups");
	if (map_self("/proc/self/uid_map", in_uid, uid) < 0)
		return fail(f, "uid_map", "/proc/self/uid_map");
	if (map_self("/proc/self/gid_map", in_gid, gid) < 0)
		return fail(f, "gid_map", "/proc/self/gid_map");
	return 0;
}

/* path is dir or below it */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return 1;
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

static int under_any(const char *path, const char *const *dirs)
{
	for (int i = 0; i < ISO_MAX_PATHS && dirs[i]; i++) {
		if (under(path, dirs[i]))
			return 1;
	}
	return 0;
}

/* path lies strictly inside a kept dir that step 6 bound back */
static int under_bound(const char *path, const char *const *keep,
		       const int *fd)
{
	for (int i = 0; i < ISO_MAX_PATHS && keep[i]; i++) {
		if (fd[i] >= 0 && under(path, keep[i]) && strcmp(path, keep[i]))
			return 1;
	}
	return 0;
}

/* mkdir -p inside the tmpfs (components that exist are fine) */
static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		if (i < n)
			buf[i] = '/';
	}
	return 0;
}

static int cover(const char *dir, struct iso_fail *f)
{
	struct stat sb;

	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return 0; /* nothing there to hide */
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k") < 0)
		return fail(f, "mount tmpfs", dir);
	return 0;
}

/* Step 10: what is hidden now, checked; present: bit i = hide_dirs[i]
 * existed (a dir) before step 5, bit 16 + i = hide_files[i] existed. */
static int verify(const struct workload_iso *iso, unsigned present,
		  struct iso_fail *f)
{
	struct statfs fs;
	struct stat sb;

	f->dirs_hidden = f->files_hidden = 0;
	for (int i = 0; i < 16 && i < ISO_MAX_PATHS && iso->hide_dirs[i]; i++) {
		if (!(present & (1u << i)))
			continue;
		if (statfs(iso->hide_dirs[i], &fs) < 0 ||
		    (unsigned long)fs.f_type != TMPFS_MAGIC) {
			errno = EEXIST;
			return fail(f, "verify", iso->hide_dirs[i]);
		}
		f->dirs_hidden |= 1u << i;
	}
	for (int i = 0; i < 16 && i < ISO_MAX_PATHS && iso->hide_files[i]; i++) {
		if (!(present & (1u << (16 + i))))
			continue;
		/* under a hidden dir the file is gone; else it is /dev/null */
		if (stat(iso->hide_files[i], &sb) == 0 &&
		    !(S_ISCHR(sb.st_mode) && sb.st_rdev == makedev(1, 3))) {
			errno = EEXIST;
			return fail(f, "verify", iso->hide_files[i]);
		}
		f->files_hidden |= 1u << i;
	}
	return 0;
}

/* Which hidden paths exist before anything is mounted (verify's "present"). */
static unsigned present_now(const struct workload_iso *iso)
{
	struct stat sb;
	unsigned m = 0;

	for (int i = 0; i < 16 && i < ISO_MAX_PATHS && iso->hide_dirs[i]; i++) {
		if (lstat(iso->hide_dirs[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			m |= 1u << i;
	}
	for (int i = 0; i < 16 && i < ISO_MAX_PATHS && iso->hide_files[i]; i++) {
		if (lstat(iso->hide_files[i], &sb) == 0 && !S_ISDIR(sb.st_mode))
			m |= 1u << (16 + i);
	}
	return m;
}

int iso__enter(const struct workload_iso *iso, uid_t uid, gid_t gid,
	       struct iso_fail *f)
{
	int keep_fd[ISO_MAX_PATHS];
	unsigned present = present_now(iso);
	char src[48];
	int rc = -1, i;

	for (i = 0; i < ISO_MAX_PATHS; i++)
		keep_fd[i] = -1;
	errno = 0;
	if (iso->mode == ISO_USERNS) {
		if (enter_userns(CLONE_NEWNS, uid, gid, uid, gid, f) < 0)
			return -1;
	} else if (unshare(CLONE_NEWNS) < 0) {
		return fail(f, "unshare", NULL);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(f, "mount rprivate", "/");
	for (i = 0; i < ISO_MAX_PATHS && iso->keep_dirs[i]; i++) {
		if (!under_any(iso->keep_dirs[i], iso->hide_dirs))
			continue;
		keep_fd[i] = open(iso->keep_dirs[i], O_PATH | O_DIRECTORY |
				  O_CLOEXEC);
		if (keep_fd[i] < 0 && errno != ENOENT) {
			fail(f, "open", iso->keep_dirs[i]);
			goto out;
		}
	}
	for (i = 0; i < ISO_MAX_PATHS && iso->hide_dirs[i]; i++) {
		if (cover(iso->hide_dirs[i], f) < 0)
			goto out;
	}
	for (i = 0; i < ISO_MAX_PATHS && iso->keep_dirs[i]; i++) {
		char *p;

		if (keep_fd[i] < 0)
			continue;
		if (mkdir_p(iso->keep_dirs[i]) < 0) {
			fail(f, "mkdir", iso->keep_dirs[i]);
			goto out;
		}
		p = src;
		memcpy(p, "/proc/self/fd/", 14);
		p = utoa(p + 14, (unsigned long)keep_fd[i]);
		*p = '\0';
		if (mount(src, iso->keep_dirs[i], NULL, MS_BIND | MS_REC, NULL) < 0) {
			fail(f, "mount bind", iso->keep_dirs[i]);
			goto out;
		}
	}
	for (i = 0; i < ISO_MAX_PATHS && iso->hide_dirs[i]; i++) {
		if (!under_bound(iso->hide_dirs[i], iso->keep_dirs, keep_fd))
			continue;
		if (cover(iso->hide_dirs[i], f) < 0)
			goto out;
	}
	for (i = 0; i < ISO_MAX_PATHS && iso->hide_files[i]; i++) {
		struct stat sb;

		if (lstat(iso->hide_files[i], &sb) < 0 || S_ISDIR(sb.st_mode))
			continue; /* hidden with its dir, or not there */
		if (mount("/dev/null", iso->hide_files[i], NULL, MS_BIND, NULL) < 0) {
			fail(f, "mount /dev/null", iso->hide_files[i]);
			goto out;
		}
	}
	errno = 0;
	if (iso->mode == ISO_ROOT &&
	    enter_userns(CLONE_NEWNS, 0, 0, 0, 0, f) < 0)
		goto out;
	if (verify(iso, present, f) < 0)
		goto out;
	rc = 0;
out:
	for (i = 0; i < ISO_MAX_PATHS; i++) {
		if (keep_fd[i] >= 0)
			close(keep_fd[i]);
	}
	return rc;
}
