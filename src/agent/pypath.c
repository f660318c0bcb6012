/*
 * pypath.c - where the spotrun Python package this agent came with lives,
 * so the workload can `import spotrun` without the job setting
 * PYTHONPATH (docs/jobs.md, "Environment of every node").
 *
 * Looked up once, from the agent's own path (/proc/self/exe):
 *   build tree   <repo>/build/bin/spotrun-agent  -> <repo>/python
 *                (also build/<variant>/bin, as build/san)
 *   installed    PREFIX/bin/spotrun-agent -> PREFIX/lib/python3.X/
 *                dist-packages (where `make install` puts it)
 * A folder counts when it holds spotrun/__init__.py.
 */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

static char found[PATH_MAX];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int has_package(const char *dir)
{
	char p[PATH_MAX + 32];
	struct stat sb;

	if (snprintf(p, sizeof p, "%s/spotrun/__init__.py", dir) >= (int)sizeof p)
		return 0;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* dir/rel made absolute without "..", into out, if it holds the package. */
static int try_dir(const char *dir, const char *rel)
{
	char p[PATH_MAX + 64], real[PATH_MAX];

	if (snprintf(p, sizeof p, "%s/%s", dir, rel) >= (int)sizeof p ||
	    !realpath(p, real) || !has_package(real))
		return 0;
	snprintf(found, sizeof found, "%s", real);
	return 1;
}

/* PREFIX/lib/python3.X/dist-packages for the agent's PREFIX/bin. */
static int try_installed(const char *bindir)
{
	char lib[PATH_MAX + 16];
	struct dirent *de;
	DIR *d;
	int ok = 0;

	snprintf(lib, sizeof lib, "%s/../lib", bindir);
	d = opendir(lib);
	if (!d)
		return 0;
	while (!ok && (de = readdir(d)) != NULL) {
		char rel[NAME_MAX + 32];

		if (strncmp(de->d_name, "python3", 7) != 0)
			continue;
		snprintf(rel, sizeof rel, "%s/dist-packages", de->d_name);
		ok = try_dir(lib, rel);
	}
	closedir(d);
	return ok;
}

static void lookup(void)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;

	if (k <= 0)
		return;
	exe[k] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	if (try_dir(exe, "../../python") || try_dir(exe, "../../../python"))
		return;
	(void)try_installed(exe);
}

const char *agent_python_dir(void)
{
	pthread_once(&once, lookup);
	return found[0] ? found : NULL;
}
