/*
 * signame.c - stop signals by name (signame.h).
 */
#include <signal.h>
#include <stddef.h>
#include <strings.h>

#include "common/signame.h"

static const struct {
	const char *name;
	int sig;
} stop_signals[] = {
	{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },
	{ "QUIT", SIGQUIT }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
};

#define NSTOP (sizeof stop_signals / sizeof stop_signals[0])

int sr_stop_signal_parse(const char *name)
{
	if (!name)
		return -1;
	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	for (size_t i = 0; i < NSTOP; i++) {
		if (!strcasecmp(name, stop_signals[i].name))
			return stop_signals[i].sig;
	}
	return -1;
}

const char *sr_stop_signal_name(int sig)
{
	for (size_t i = 0; i < NSTOP; i++) {
		if (stop_signals[i].sig == sig)
			return stop_signals[i].name;
	}
	return NULL;
}
