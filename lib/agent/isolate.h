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
 * that does not exist is skipped.
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

/* Why the child could not set up the isolation (written to the parent
 * through a pipe; async-signal-safe to fill). */
struct iso_fail {
	int err;           /* errno */
	char step[24];     /* "unshare", "uid_map", "mount tmpfs", ... */
	char path[200];    /* the path it was working on, "" if none */
};

/* The mode this process can have: ISO_ROOT when euid is 0, else
 * ISO_USERNS (whether the kernel allows it is only known by trying). */
enum iso_mode iso_mode_for_self(void);
/* "userns", "root-partial" or "none". */
const char *iso_mode_name(enum iso_mode m);

/* Child side, between fork and exec: set up iso.  Only async-signal-safe
 * calls.  0 on success; -1 with *f filled on failure. */
int iso__enter(const struct workload_iso *iso, uid_t uid, gid_t gid,
	       struct iso_fail *f);

#endif
