/* Unit tests: the workload's isolation (lib/agent/isolate.c).  A fake
 * state dir holds an admin token, a node token, the node's dir and a job's
 * checkpoint dir; a workload started with the agent's isolation tries to
 * read the tokens, list the state dir, reach them through /proc and undo
 * the mounts, and writes a checkpoint.  Run as root, the test checks both
 * modes: ISO_ROOT as itself, ISO_USERNS in a child that became "nobody". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/isolate.h"
#include "agent/workload.h"
#include "common/fsutil.h"

#define NOBODY 65534

/* unshare(2) refuses CLONE_NEWUSER/CLONE_NEWNS (EINVAL) in a process
 * with more than one thread; ThreadSanitizer's runtime restarts its
 * background thread in a forked child, so under TSan the namespaces are
 * unavailable by construction and these tests skip, saying so. */
static void skip_unavailable(const char *msg)
{
	if (strstr(msg, "unshare: Invalid argument"))
		printf("# unshare refused: the forked child has more than one "
		       "thread (a sanitizer runtime's): %s\n", msg);
	else
		printf("# namespaces unavailable here: %s\n", msg);
	skip();
}

static char g_base[64], g_state[300], g_node[400], g_ckpt[400], g_tok[500],
	g_admin[400];

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	char p[600];

	(void)state;
	snprintf(g_base, sizeof g_base, "/tmp/spotrun-iso-test-XXXXXX");
	if (!mkdtemp(g_base) || chmod(g_base, 0755) < 0)
		return -1;
	snprintf(g_state, sizeof g_state, "%s/state", g_base);
	snprintf(g_node, sizeof g_node, "%s/nodes/1", g_state);
	snprintf(g_ckpt, sizeof g_ckpt, "%s/jobs/1/ckpt", g_state);
	snprintf(g_tok, sizeof g_tok, "%s/node.token", g_node);
	snprintf(g_admin, sizeof g_admin, "%s/api.token", g_state);
	if (sr_fs_mkdir_p(g_node, 0700) || sr_fs_mkdir_p(g_ckpt, 0700))
		return -1;
	chmod(g_state, 0700);
	put(g_admin, "ADMIN-SECRET\n");
	put(g_tok, "NODE-SECRET\n");
	snprintf(p, sizeof p, "%s/spotrun.db", g_state);
	put(p, "DB-SECRET\n");
	snprintf(p, sizeof p, "%s/notes.txt", g_node);
	put(p, "node-dir-visible\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	/* the path is our own mkdtemp result; no user input */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_base);
	return system(cmd) == 0 ? 0 : -1;
}

/* What the workload tries.  Each line it prints is a finding; LEAK lines
 * must never appear. */
static const char probe[] =
	"S=\"$SR_STATE\"\n"
	"cat \"$S/api.token\" 2>/dev/null && echo LEAK-admin-token\n"
	"cat \"$S/spotrun.db\" 2>/dev/null && echo LEAK-db\n"
	"t=$(cat \"$S/nodes/1/node.token\" 2>/dev/null); [ -n \"$t\" ] && echo LEAK-node-token\n"
	"echo \"ls: $(ls -A \"$S\" | tr '\\n' ' ')\"\n"
	"cat /proc/$SR_AGENT/environ 2>/dev/null | grep -q SR_ISO_MARK && echo LEAK-agent-environ\n"
	"ls /proc/$SR_AGENT/root/ >/dev/null 2>&1 && echo LEAK-agent-root\n"
	"cat /proc/$SR_AGENT/root$S/api.token 2>/dev/null && echo LEAK-via-proc\n"
	"umount \"$S\" 2>/dev/null; umount -l \"$S\" 2>/dev/null\n"
	"cat \"$S/api.token\" 2>/dev/null && echo LEAK-after-umount\n"
	"unshare -Urm sh -c \"umount '$S' 2>/dev/null; cat '$S/api.token' 2>/dev/null\" "
	"2>/dev/null && echo LEAK-nested-ns\n"
	"echo saved > \"$S/jobs/1/ckpt/step-1\" && echo ckpt-written\n"
	"cat notes.txt\n"
	"ls /proc/self/fd | tr '\\n' ' '; echo\n";

/* Run probe isolated; its stdout into out.  Returns the exit status, or
 * -errno when the start failed (out then holds the error). */
static int run_probe(enum iso_mode mode, char *out, size_t n)
{
	struct workload_iso iso = { .mode = mode, .hide_dirs = { g_state },
				    .hide_files = { g_tok },
				    /* the cwd of a job launched from above the
				     * state dir contains it: it stays hidden */
				    .keep_dirs = { g_node, g_ckpt, g_base } };
	char env_state[400], env_agent[64];
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", env_state,
			 env_agent, NULL };
	struct workload w;
	struct sr_err e;
	size_t got = 0;
	int rc;

	snprintf(env_state, sizeof env_state, "SR_STATE=%s", g_state);
	snprintf(env_agent, sizeof env_agent, "SR_AGENT=%d", (int)getpid());
	sr_err_clear(&e);
	rc = workload_start(&w, probe, g_node, envp, &iso, &e);
	if (rc < 0) {
		snprintf(out, n, "%s", e.msg);
		return rc;
	}
	for (;;) {
		ssize_t r;

		if (got + 1 >= n)
			break;
		r = read(w.out_fd, out + got, n - 1 - got);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EAGAIN) {
			struct pollfd p = { w.out_fd, POLLIN, 0 };

			poll(&p, 1, 100);
		} else if (errno != EINTR) {
			break;
		}
	}
	out[got] = '\0';
	while (workload_poll_exit(&w) == 0)
		usleep(10000);
	workload_close_fds(&w);
	return w.exit_code;
}

static void check_output(const char *out)
{
	char p[600];
	struct stat sb;

	printf("# workload saw:\n%s", out);
	assert_null(strstr(out, "LEAK"));
	/* the state dir reads as a skeleton: its files are gone */
	assert_non_null(strstr(out, "ls: "));
	assert_null(strstr(out, "api.token"));
	assert_null(strstr(out, "spotrun.db"));
	assert_non_null(strstr(out, "ckpt-written"));
	assert_non_null(strstr(out, "node-dir-visible"));
	/* only stdin, stdout, stderr (and ls's own directory fd) */
	assert_non_null(strstr(out, "0 1 2 3 \n"));
	/* the checkpoint landed in the real directory */
	snprintf(p, sizeof p, "%s/step-1", g_ckpt);
	assert_int_equal(stat(p, &sb), 0);
	unlink(p);
	/* and nothing leaked out of the namespace: the host still sees the
	 * real token files */
	assert_int_equal(stat(g_admin, &sb), 0);
	assert_int_equal(stat(g_tok, &sb), 0);
	assert_true(sb.st_size > 0);
}

static void chown_tree(uid_t u)
{
	char cmd[600];

	/* our own mkdtemp path, no user input */
	snprintf(cmd, sizeof cmd, "chown -R %u:%u '%s'", (unsigned)u, (unsigned)u,
		 g_base);
	assert_int_equal(system(cmd), 0);
}

/* A non-root agent: user + mount namespaces.  When the test runs as
 * root it becomes nobody in a child first (the files are nobody's). */
static void test_iso_userns(void **state)
{
	char out[4096];
	int pfd[2], st = 0, rc;
	pid_t pid;

	(void)state;
	setenv("SR_ISO_MARK", "agent-environment", 1);
	if (geteuid() != 0) {
		rc = run_probe(ISO_USERNS, out, sizeof out);
		if (rc < 0 && strstr(out, "unshare"))
			skip_unavailable(out);
		assert_int_equal(rc, 0);
		check_output(out);
		return;
	}
	chown_tree(NOBODY);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(90);
		rc = run_probe(ISO_USERNS, out, sizeof out);
		if (write(pfd[1], out, strlen(out)) < 0)
			_exit(91);
		_exit(rc < 0 ? 92 : rc);
	}
	close(pfd[1]);
	{
		size_t got = 0;
		ssize_t r;

		while ((r = read(pfd[0], out + got, sizeof out - 1 - got)) > 0)
			got += (size_t)r;
		out[got] = '\0';
	}
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	chown_tree(0);
	printf("# as nobody: %s\n", out);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 92 && strstr(out, "unshare"))
		skip_unavailable(out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	check_output(out);
}

/* A root agent: mount namespace, then a user namespace that locks the
 * mounts.  The workload cannot unmount them, nor reach the files through
 * /proc of the agent. */
static void test_iso_root(void **state)
{
	char out[4096];
	int rc;

	(void)state;
	if (geteuid() != 0)
		skip();
	setenv("SR_ISO_MARK", "agent-environment", 1);
	rc = run_probe(ISO_ROOT, out, sizeof out);
	if (rc < 0 && strstr(out, "unshare"))
		skip_unavailable(out);
	assert_int_equal(rc, 0);
	check_output(out);
}

/* A failed isolation step names itself and the path, and is told apart
 * from a failed exec. */
static void test_iso_error_names_step(void **state)
{
	char bad[400];
	struct workload_iso iso = { .mode = iso_mode_for_self(),
				    .hide_dirs = { g_state },
				    .keep_dirs = { bad } };
	char *envp[] = { NULL };
	struct workload w;
	struct sr_err e;
	int rc;

	(void)state;
	/* a kept "dir" that is a file: the bind back cannot be made */
	snprintf(bad, sizeof bad, "%s/api.token", g_state);
	if (iso.mode == ISO_USERNS)
		chown_tree(getuid());
	sr_err_clear(&e);
	rc = workload_start(&w, "true", NULL, envp, &iso, &e);
	printf("# %s\n", e.msg);
	assert_true(rc < 0);
	if (strstr(e.msg, "unshare"))
		skip_unavailable(e.msg);
	assert_int_equal(w.pid, -1);
	assert_int_equal(w.iso_failed, 1);
	assert_non_null(strstr(e.msg, "isolation: "));
	assert_non_null(strstr(e.msg, "api.token"));
	assert_string_equal(iso_mode_name(ISO_USERNS), "userns");
	assert_string_equal(iso_mode_name(ISO_ROOT), "root-partial");
	assert_string_equal(iso_mode_name(ISO_NONE), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iso_userns),
		cmocka_unit_test(test_iso_root),
		cmocka_unit_test(test_iso_error_names_step),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
