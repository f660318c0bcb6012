/*
 * fuzz_awscred_parsers - libFuzzer target for what the AWS credential
 * chain reads from outside: the shared config/credentials files (libinih
 * under our reader), a credential_process command line (shlex rules),
 * and a credential document (container, IMDS, credential_process).
 * Invariants: every key the INI parse kept is found again by lookup; a
 * split line has at least one word and no word longer than the line; a
 * document either gives both keys or an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/awscred_int.h"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_err e = { 0 };
	struct sr_awsini *f = NULL;
	struct sr_awscred c = { 0 };
	char *s = malloc(size + 1), **argv = NULL;
	json_t *doc;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (sr_awscred__ini_parse("fuzz.ini", s, size, &f, &e) == 0) {
		for (size_t i = 0; i < sr_awscred__ini_count(f); i++) {
			const char *sec, *key;

			sr_awscred__ini_entry(f, i, &sec, &key);
			if (sr_awscred__ini_get(f, sec, key) == NULL)
				abort();
		}
		sr_awscred__ini_free(f);
	}
	if (sr_awscred__split(s, &argv, &e) == 0) {
		if (argv[0] == NULL)
			abort();
		for (char **w = argv; *w != NULL; w++)
			if (strlen(*w) > size)
				abort();
		sr_awscred__argv_free(argv);
	} else if (argv != NULL) {
		abort();
	}
	doc = sr_json_load_buf((const char *)data, size, "fuzz", NULL);
	if (doc != NULL) {
		if (sr_awscred__from_doc(doc, "fuzz", &c, &e) == 0 &&
		    (c.access_key_id == NULL || c.secret_access_key == NULL))
			abort();
		sr_awscred_free(&c);
		json_decref(doc);
	}
	free(s);
	return 0;
}
