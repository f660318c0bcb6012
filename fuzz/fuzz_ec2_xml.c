/*
 * fuzz_ec2_xml - libFuzzer target for the EC2 Query API answers the AWS
 * driver parses (lib/aws/ec2_xml.c): instances (RunInstances,
 * DescribeInstances), errors, spot prices and instance-type offerings.
 * The bytes come from the network.  Invariants: a parse either fails with
 * nothing returned or returns a list whose strings are NUL-terminated
 * within their fields, whose blobs are JSON, whose counts agree with the
 * array; an error parse leaves NUL-terminated code and message.  The same
 * bytes also go through the EC2 emulator's form-body parser (requests
 * come from any local client): every pair it returns is two strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aws/ec2.h"
#include "aws/ec2emu_int.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *x = (const char *)data;
	struct cloud_instance *v = NULL;
	struct ec2_spot_price *p = NULL;
	struct cloud_error err;
	char **z = NULL, next[256], code[64], msg[128];
	size_t n = 7;

	if (ec2_xml_instances(x, size, "r", &v, &n, next, sizeof(next), &err) == 0) {
		if ((n == 0) != (v == NULL))
			abort();
		for (size_t i = 0; i < n; i++) {
			json_t *b;

			fuzz_check_str(v[i].id, sizeof(v[i].id));
			fuzz_check_str(v[i].zone, sizeof(v[i].zone));
			fuzz_check_str(v[i].cluster, sizeof(v[i].cluster));
			fuzz_check_str(v[i].reason, sizeof(v[i].reason));
			if (v[i].id[0] == '\0' || v[i].blob == NULL ||
			    v[i].state > CLOUD_INST_GONE)
				abort();
			b = json_loads(v[i].blob, 0, NULL);
			if (b == NULL)
				abort();
			json_decref(b);
		}
		fuzz_check_str(next, sizeof(next));
		cloud_instances_free(v, n);
	} else if (v != NULL || n != 0) {
		abort();
	}
	if (ec2_xml_error(x, size, code, sizeof(code), msg, sizeof(msg)) == 0 &&
	    code[0] == '\0')
		abort();
	fuzz_check_str(code, sizeof(code));
	fuzz_check_str(msg, sizeof(msg));
	n = 7;
	if (ec2_xml_spot_prices(x, size, &p, &n, NULL, 0, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			fuzz_check_str(p[i].zone, sizeof(p[i].zone));
		free(p);
	} else if (p != NULL || n != 0) {
		abort();
	}
	n = 7;
	if (ec2_xml_offerings(x, size, &z, &n, next, sizeof(next), &err) == 0) {
		for (size_t i = 0; i < n; i++)
			if (z[i] == NULL || z[i][0] == '\0')
				abort();
		ec2_strv_free(z, n);
	} else if (z != NULL || n != 0) {
		abort();
	}
	{
		struct emu_params form;

		if (ec2emu__params_parse(x, size, &form) == 0) {
			for (size_t i = 0; i < 2 * form.n; i++)
				if (form.kv[i] == NULL || strlen(form.kv[i]) > size)
					abort();
			if (form.n > 0 &&
			    ec2emu__param(&form, form.kv[0]) != form.kv[1])
				abort();
			ec2emu__params_free(&form);
		}
	}
	return 0;
}
