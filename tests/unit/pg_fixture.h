/*
 * pg_fixture.h - a real PostgreSQL 15 server for a test: initdb into a
 * temporary directory, pg_ctl start listening only on a Unix socket in
 * that directory, stop and remove it at the end.  The server runs as the
 * current user, or as `postgres` when the tests run as root (initdb
 * refuses root).  No mock: when the server cannot start, pgfix_start()
 * says why (with the server's log) and the test fails.
 */
#ifndef SR_TEST_PG_FIXTURE_H
#define SR_TEST_PG_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PGFIX_BIN
#define PGFIX_BIN "/usr/lib/postgresql/15/bin"
#endif

struct pgfix {
	char dir[64];       /* socket dir and data dir's parent */
	char data[96];
	char log[96];
	uid_t uid;          /* the server's user */
	gid_t gid;
	bool running;
};

/* Run argv as the server's user, output appended to `log`; 0 = exit 0. */
static int pgfix_run(const struct pgfix *f, char *const argv[], const char *log)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (geteuid() == 0 && (setgid(f->gid) || setuid(f->uid)))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void pgfix_show_log(const char *path)
{
	char line[512];
	FILE *fp = fopen(path, "r");

	if (!fp)
		return;
	while (fgets(line, sizeof line, fp))
		fprintf(stderr, "  | %s", line);
	fclose(fp);
}

/* Start a server; 0 or -1 with the reason on stderr. */
static int pgfix_start(struct pgfix *f)
{
	char bin[160], opts[256], ilog[128];
	struct passwd *pw;

	memset(f, 0, sizeof *f);
	snprintf(bin, sizeof bin, "%s/initdb", PGFIX_BIN);
	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "pg_fixture: PostgreSQL 15 is not installed (%s: %s);"
			" scripts/install-deps installs it (package postgresql)\n",
			bin, strerror(errno));
		return -1;
	}
	f->uid = geteuid();
	f->gid = getegid();
	if (f->uid == 0) {
		pw = getpwnam("postgres");
		if (!pw) {
			fprintf(stderr, "pg_fixture: running as root and there is no "
				"'postgres' user to run the server as (initdb refuses "
				"root)\n");
			return -1;
		}
		f->uid = pw->pw_uid;
		f->gid = pw->pw_gid;
	}
	snprintf(f->dir, sizeof f->dir, "/tmp/sr-pg-XXXXXX");
	if (!mkdtemp(f->dir)) {
		fprintf(stderr, "pg_fixture: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	if (chown(f->dir, f->uid, f->gid) != 0) {
		fprintf(stderr, "pg_fixture: chown %s: %s\n", f->dir, strerror(errno));
		return -1;
	}
	snprintf(f->data, sizeof f->data, "%s/data", f->dir);
	snprintf(f->log, sizeof f->log, "%s/server.log", f->dir);
	snprintf(ilog, sizeof ilog, "%s/initdb.log", f->dir);
	{
		char *argv[] = { bin, "-D", f->data, "-U", "spotrun", "-A", "trust",
				 "-E", "UTF8", "--no-sync", "--no-instructions", NULL };

		if (pgfix_run(f, argv, ilog) != 0) {
			fprintf(stderr, "pg_fixture: initdb into %s failed:\n", f->data);
			pgfix_show_log(ilog);
			return -1;
		}
	}
	snprintf(bin, sizeof bin, "%s/pg_ctl", PGFIX_BIN);
	snprintf(opts, sizeof opts, "-k %s -c listen_addresses='' -F "
		 "-c max_connections=40 -c shared_buffers=16MB", f->dir);
	{
		char *argv[] = { bin, "-D", f->data, "-l", f->log, "-w", "-t", "60",
				 "-o", opts, "start", NULL };

		if (pgfix_run(f, argv, ilog) != 0) {
			fprintf(stderr, "pg_fixture: the PostgreSQL server in %s did "
				"not start:\n", f->data);
			pgfix_show_log(ilog);
			pgfix_show_log(f->log);
			return -1;
		}
	}
	f->running = true;
	return 0;
}

/* A libpq URI for database `db` on this server. */
static void pgfix_url(const struct pgfix *f, const char *db, char *buf,
		      size_t n)
{
	snprintf(buf, n, "postgresql:///%s?host=%s&user=spotrun", db, f->dir);
}

static void pgfix_stop(struct pgfix *f)
{
	char bin[160], cmd[128], ilog[128];

	if (f->running) {
		snprintf(bin, sizeof bin, "%s/pg_ctl", PGFIX_BIN);
		snprintf(ilog, sizeof ilog, "%s/initdb.log", f->dir);
		char *argv[] = { bin, "-D", f->data, "-m", "immediate", "-w",
				 "stop", NULL };

		pgfix_run(f, argv, ilog);
		f->running = false;
	}
	if (f->dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "pg_fixture: could not remove %s\n", f->dir);
		f->dir[0] = 0;
	}
}

#endif
