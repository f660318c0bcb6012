/*
 * ec2emu_fixture.h - shared by the tests that drive the EC2 client
 * against the EC2 emulator: start it in a temporary directory and point
 * the AWS variables (fake keys, region, endpoint, HOME) at it.
 */
#ifndef TESTS_EC2EMU_FIXTURE_H
#define TESTS_EC2EMU_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "aws/ec2emu.h"

/* mkdtemp(dir) (a "...XXXXXX" template), start the emulator with eo
 * there (eo->work_dir set to it; with log != NULL, its request log is
 * DIR/requests.log, written into log) and set the environment; 0 or -1. */
static inline int emu_fixture_start(char *dir, struct ec2emu_opts *eo,
				    char *log, size_t nlog, struct ec2emu **out)
{
	struct sr_err e = { 0 };

	if (mkdtemp(dir) == NULL)
		return -1;
	eo->work_dir = dir;
	if (log != NULL) {
		snprintf(log, nlog, "%s/requests.log", dir);
		eo->request_log = log;
	}
	if (ec2emu_start(eo, out, &e) < 0) {
		fprintf(stderr, "ec2emu_start: %s\n", e.msg);
		return -1;
	}
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_SESSION_TOKEN");
	setenv("HOME", dir, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIAEMU", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "emusecret", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	setenv("AWS_ENDPOINT_URL_EC2", ec2emu_url(*out), 1);
	setenv("SPOTRUN_LOG_LEVEL", "off", 1);
	return 0;
}

#endif
