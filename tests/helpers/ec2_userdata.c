/*
 * ec2_userdata - prints the EC2 user-data script ec2_bootstrap_script()
 * makes, for tests/py/test_ec2_userdata.py, which runs it in a sandbox
 * standing in for a fresh instance booted by cloud-init.
 *
 *   ec2_userdata AGENT API_URL NODE_ID SECRET [PRIVATE_PATH...]
 *
 * Exit 0 with the script on stdout; 2 on a usage error; 1 when the
 * script is refused (the reason on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/ec2.h"
#include "common/err.h"

int main(int argc, char **argv)
{
	struct sr_err e = { 0 };
	char *s = NULL;
	char *end = NULL;
	long long node;
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: ec2_userdata AGENT API_URL NODE_ID "
			"SECRET [PRIVATE_PATH...]\n");
		return 2;
	}
	node = strtoll(argv[3], &end, 10);
	if (end == argv[3] || *end != '\0') {
		fprintf(stderr, "ec2_userdata: NODE_ID: expected a number\n");
		return 2;
	}
	rc = ec2_bootstrap_script(argv[1], argv[2], node, argv[4],
				  (const char *const *)(argv + 5), &s, &e);
	if (rc < 0) {
		fprintf(stderr, "ec2_userdata: %s\n", sr_err_str(&e, rc));
		return 1;
	}
	fputs(s, stdout);
	free(s);
	return 0;
}
