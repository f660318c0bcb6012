/*
 * isolate.h - keep the workload away from the control plane's files and
 * the agent's token (docs/security.md, "A node").
 *
 * The workload runs as the agent's user.  On the local provider that is
 * spotrund's user, who owns the state dir (admin token, database, every
 * node's token).  Isolation gives the workload its own view of the
 * filesystem, set up in the forked child before exec:
 *
 *   ISO_USERNS (the agent is not root): a new user namespace mapping the
 *     agent's uid and gid to themselves, and a new mount namespace in it.
 *     Each hidden dir gets an empty tmpfs over it, each kept dir that lies
 *     under a hidden one is bind-mounted back (so the checkpoint dir and
 *     the node dir stay writable), each hidden file gets /dev/null bound
 *     over it.  After exec the workload has no capability in that
 *     namespace, so it cannot unmount any of it (and mounts copied into a
 *     namespace it creates itself are locked); the kernel also refuses it
 *     /proc/PID/{root,environ,mem,fd} of every process outside its user
 *     namespace (ptrace access needs CAP_SYS_PTRACE across namespaces), so
 *     the same files cannot be reached through the agent's or spotrund's
 *     /proc entries.
 *   ISO_ROOT (the agent is root): the same mounts in a new mount
 *     namespace, then a new user namespace (uid 0 mapped to itself) that
 *     locks them and takes every capability over the host away.  Partial:
 *     uid 0 still owns the host's root-owned files and devices (a raw disk
 *     can be read), so a hostile root workload is not contained.
 *
 * Every path must be absolute and canonical (realpath).  A hidden path
 * that does not exist is skipped.  The child checks its work before it
 * execs (step 10 in isolate.c): each hidden dir must read as a tmpfs,
 * each hidden file as /dev/null, or the start fails ("verify").
 */
#ifndef SR_AGENT_ISOLATE_H
#define SR_AGENT_ISOLATE_H

#include <stddef.h>
#include <sys/types.h>

enum iso_mode { ISO_NONE, ISO_USERNS, ISO_ROOT };

#define ISO_MAX_PATHS 16

struct workload_iso {
	enum iso_mode mode;
	const char *hide_dirs[ISO_MAX_PATHS];  /* NULL-terminated */
	const char *hide_files[ISO_MAX_PATHS]; /* NULL-terminated */
	const char *keep_dirs[ISO_MAX_PATHS];  /* NULL-terminated */
};

/* What the child set up, or why it could not (written to the parent
 * through a pipe; async-signal-safe to fill).  On success (err 0) the
 * masks say which hide_dirs[i] / hide_files[i] the child found hidden
 * when it looked, after setting everything up: a dir is an empty tmpfs,
 * a file is /dev/null (bit i; a path that did not exist is not hidden:
 * there was nothing to hide). */
struct iso_fail {
	int err;           /* errno; 0: set up, and checked */
	char step[24];     /* "unshare", "uid_map", "mount tmpfs", ... */
	char path[200];    /* the path it was working on, "" if none */
	unsigned dirs_hidden, files_hidden;
};

/* The mode this process can have: ISO_ROOT when euid is 0, else
 * ISO_USERNS (whether the kernel allows it is only known by trying). */
enum iso_mode iso_mode_for_self(void);
/* "userns", "root-partial" or "none". */
const char *iso_mode_name(enum iso_mode m);

/* Child side, between fork and exec: set up iso and check it.  Only
 * async-signal-safe calls.  0 on success (f->dirs_hidden/files_hidden
 * filled); -1 with *f filled on failure. */
int iso__enter(const struct workload_iso *iso, uid_t uid, gid_t gid,
	       struct iso_fail *f);

#endif
