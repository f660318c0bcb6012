/* Unit tests: a job's files archive (lib/bundle, issue 24) - a tree in and
 * the same tree out, read by GNU tar too; what the writer refuses (links
 * leaving the tree, the state dir, a link to a file in it, devices); what
 * the reader refuses (paths out of the archive, other entry types, links
 * out, a broken archive); unpacking never writes through a link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "common/fsutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/sr-bundle-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sr_fs_rm_tree(dir);
	return 0;
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char p[512];
	struct sr_err e = { 0 };

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(sr_fs_write_atomic(p, text, strlen(text), mode, &e), 0);
}

static void mk(const char *rel)
{
	char p[512];

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void ln(const char *target, const char *rel)
{
	char p[512];

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(symlink(target, p), 0);
}

static char *slurp(const char *rel)
{
	char p[512], *buf = NULL;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	if (sr_fs_read_file(p, 1 << 20, &buf, NULL, NULL))
		return NULL;
	return buf;
}

static void test_round_trip_and_tar(void **state)
{
	struct bundle b = { 0 };
	struct sr_err e = { 0 };
	char p[512], cmd[700], *s;
	struct stat sb;
	FILE *f;

	(void)state;
	mk("proj");
	mk("proj/data");
	put("proj/train.py", "print('hi')\n", 0644);
	put("proj/run.sh", "#!/bin/sh\n", 0755);
	put("proj/data/vocab.txt", "vocab\n", 0600);
	ln("data/vocab.txt", "proj/v.txt");           /* inside: kept */
	put("big.bin", "x", 0644);
	snprintf(p, sizeof p, "%s/proj", dir);
	assert_int_equal(bundle_add(&b, p, "workdir", &e), 0);
	snprintf(p, sizeof p, "%s/big.bin", dir);
	assert_int_equal(bundle_add(&b, p, "mnt/one.bin", &e), 0);
	assert_int_equal(bundle_finish(&b, &e), 0);
	assert_int_equal(b.len % 512, 0);
	assert_int_equal(bundle_scan(b.buf, b.len, NULL, NULL, &e), 0);
	assert_int_equal(bundle_has(b.buf, b.len, "workdir/data/vocab.txt", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "mnt/one.bin", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "mnt", &e), 0);
	/* the real tar reads it: names, the link */
	snprintf(p, sizeof p, "%s/a.tar", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.buf, 1, b.len, f), b.len);
	fclose(f);
	snprintf(cmd, sizeof cmd, "tar -tvf %s > %s/list 2>&1", p, dir);
	assert_int_equal(system(cmd), 0);
	s = slurp("list");
	assert_non_null(strstr(s, "workdir/data/vocab.txt"));
	assert_non_null(strstr(s, "workdir/v.txt -> data/vocab.txt"));
	assert_non_null(strstr(s, "-rwxr-xr-x"));
	free(s);
	/* unpacked: the same files, modes by the x bit, the link as a link */
	mk("out");
	snprintf(p, sizeof p, "%s/out", dir);
	assert_int_equal(bundle_unpack(b.buf, b.len, p, &e), 0);
	s = slurp("out/workdir/data/vocab.txt");
	assert_string_equal(s, "vocab\n");
	free(s);
	s = slurp("out/workdir/v.txt");
	assert_string_equal(s, "vocab\n");
	free(s);
	snprintf(p, sizeof p, "%s/out/workdir/run.sh", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_mode & S_IXUSR);
	snprintf(p, sizeof p, "%s/out/workdir/v.txt", dir);
	assert_int_equal(lstat(p, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	/* unpacking again over it: files are replaced, but a link that is
	 * already there is not (EEXIST) */
	snprintf(p, sizeof p, "%s/out", dir);
	assert_int_equal(bundle_unpack(b.buf, b.len, p, &e), -EEXIST);
	bundle_free(&b);
}

static void raw_header(unsigned char *h, const char *name, char type,
		       const char *link, unsigned size);

/* file_mounts ~/X (issue 30): "~/" entries go under the home given to
 * bundle_unpack_home, owner-only ones stay so (a key: 0600, its new
 * directories 0700), and a link there may not leave the home. */
static void test_home_entries(void **state)
{
	struct bundle b = { 0 };
	struct sr_err e = { 0 };
	char p[512], h[512], *s;
	struct stat sb;

	(void)state;
	put("sky-key", "KEY\n", 0644);
	put("private.txt", "p\n", 0600);
	put("data.txt", "d\n", 0644);
	snprintf(p, sizeof p, "%s/sky-key", dir);
	b.owner_only = 1;
	assert_int_equal(bundle_add(&b, p, bundle_mount_name("~/.ssh/id_rsa"), &e), 0);
	b.owner_only = 0;
	snprintf(p, sizeof p, "%s/private.txt", dir);
	assert_int_equal(bundle_add(&b, p, "mnt/private.txt", &e), 0);
	snprintf(p, sizeof p, "%s/data.txt", dir);
	assert_int_equal(bundle_add(&b, p, bundle_mount_name("/data/x"), &e), 0);
	assert_int_equal(bundle_finish(&b, &e), 0);
	assert_int_equal(bundle_has(b.buf, b.len, "~/.ssh/id_rsa", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "data/x", &e), 1);
	mk("node");
	mk("home");
	snprintf(p, sizeof p, "%s/node", dir);
	snprintf(h, sizeof h, "%s/home", dir);
	assert_int_equal(bundle_unpack_home(b.buf, b.len, p, h, &e), 0);
	s = slurp("home/.ssh/id_rsa");
	assert_string_equal(s, "KEY\n");
	free(s);
	snprintf(p, sizeof p, "%s/home/.ssh/id_rsa", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(p, sizeof p, "%s/home/.ssh", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(p, sizeof p, "%s/node/mnt/private.txt", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600); /* kept owner-only */
	snprintf(p, sizeof p, "%s/node/data/x", dir);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0644);
	snprintf(p, sizeof p, "%s/node/.ssh", dir);
	assert_int_equal(stat(p, &sb), -1); /* nothing of ~/ under the node */
	/* without a home: under dest, as before */
	mk("flat");
	snprintf(p, sizeof p, "%s/flat", dir);
	assert_int_equal(bundle_unpack(b.buf, b.len, p, &e), 0);
	s = slurp("flat/.ssh/id_rsa");
	assert_string_equal(s, "KEY\n");
	free(s);
	bundle_free(&b);
	/* a link under ~/ that climbs out of the home (inside the archive) */
	mk("w");
	mk("w/d");
	ln("../../workdir/x", "w/d/up");
	snprintf(p, sizeof p, "%s/w", dir);
	assert_int_equal(bundle_add(&b, p, "~/w", &e), -EPERM);
	bundle_free(&b);
	/* one the reader sees inside the archive, but out of the home */
	{
		unsigned char a[512 * 3] = { 0 };

		raw_header(a, "~/l", '2', "../workdir/x", 0);
		assert_int_equal(bundle_scan(a, sizeof a, NULL, NULL, &e), 0);
		snprintf(p, sizeof p, "%s/node", dir);
		assert_int_equal(bundle_unpack_home(a, sizeof a, p, h, &e), -SR_EPARSE);
		assert_non_null(strstr(e.msg, "outside the home"));
	}
}

static void test_writer_refuses(void **state)
{
	char state_dir[256], p[512], *refuse[] = { state_dir, NULL };
	struct bundle b = { .refuse = (const char *const *)refuse };
	struct sr_err e = { 0 };

	(void)state;
	mk("st");
	put("st/api.token", "ADMIN\n", 0600);
	snprintf(state_dir, sizeof state_dir, "%s/st", dir);
	/* the state dir's files, directly, through a link, or a tree
	 * holding the state dir */
	snprintf(p, sizeof p, "%s/st/api.token", dir);
	assert_int_equal(bundle_add(&b, p, "stolen", &e), -EPERM);
	assert_non_null(strstr(e.msg, "inside spotrund's state dir"));
	ln("st/api.token", "tok-link");
	snprintf(p, sizeof p, "%s/tok-link", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, p, "stolen", &e), -EPERM);
	assert_non_null(strstr(e.msg, "state dir"));
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, dir, "workdir", &e), -EPERM);
	assert_non_null(strstr(e.msg, "/st: inside spotrund's state dir"));
	/* links leaving the tree: absolute, .. past it, through a link */
	mk("t");
	put("t/ok", "ok\n", 0644);
	ln("/etc/shadow", "t/abs");
	snprintf(p, sizeof p, "%s/t", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, p, "w", &e), -EPERM);
	assert_non_null(strstr(e.msg, "a symbolic link to '/etc/shadow', which "
				      "leaves"));
	snprintf(p, sizeof p, "%s/t/abs", dir);
	unlink(p);
	ln("../st/api.token", "t/up");
	snprintf(p, sizeof p, "%s/t", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, p, "w", &e), -EPERM);
	assert_non_null(strstr(e.msg, "'../st/api.token'"));
	snprintf(p, sizeof p, "%s/t/up", dir);
	unlink(p);
	ln(".", "t/self");
	ln("self/..", "t/escape");     /* its text stays inside; it does not */
	snprintf(p, sizeof p, "%s/t", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, p, "w", &e), -EPERM);
	assert_non_null(strstr(e.msg, "'self/..'"));
	snprintf(p, sizeof p, "%s/t/escape", dir);
	unlink(p);
	/* a device */
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, "/dev/null", "n", &e), -EPERM);
	assert_non_null(strstr(e.msg, "a device"));
	/* a missing source */
	sr_err_clear(&e);
	assert_int_equal(bundle_add(&b, "/nonexistent/x", "n", &e), -ENOENT);
	/* nothing of the failed adds was kept; the good tree goes in */
	assert_int_equal(b.len, 0);
	snprintf(p, sizeof p, "%s/t", dir);
	assert_int_equal(bundle_add(&b, p, "w", &e), 0);
	assert_int_equal(bundle_finish(&b, &e), 0);
	assert_int_equal(bundle_has(b.buf, b.len, "w/self", &e), 1);
	bundle_free(&b);
}

/* The job's directory is opened once (spotrun launch): what is read is
 * what that descriptor holds, even when its path, or a directory under
 * it, is swapped for a link out after the checks (issue 24, TOCTOU). */
static void test_writer_reads_beneath_the_open_dir(void **state)
{
	char p[512], q[512];
	struct bundle b = { 0 };
	struct sr_err e = { 0 };
	int dfd;

	(void)state;
	mk("secret");
	put("secret/api.token", "ADMIN\n", 0600);
	mk("job");
	mk("job/data");
	put("job/train.py", "print(1)\n", 0644);
	put("job/data/vocab", "words\n", 0644);
	ln("data", "job/data-link");   /* a link inside: followed */
	snprintf(p, sizeof p, "%s/job", dir);
	dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	/* the job dir's path now leads to the secret */
	snprintf(q, sizeof q, "%s/job-was", dir);
	assert_int_equal(rename(p, q), 0);
	ln("secret", "job");
	/* the workdir: the directory held open, its link stored as a link */
	assert_int_equal(bundle_add_at(&b, dfd, ".", "workdir", &e), 0);
	/* data/ swapped for a link out: a mount through it is refused, not
	 * read; so is ".." out of the directory */
	snprintf(p, sizeof p, "%s/job-was/data", dir);
	snprintf(q, sizeof q, "%s/job-was/data-was", dir);
	assert_int_equal(rename(p, q), 0);
	snprintf(q, sizeof q, "%s/secret", dir);
	assert_int_equal(symlink(q, p), 0);
	sr_err_clear(&e);
	assert_int_equal(bundle_add_at(&b, dfd, "data/api.token", "m/tok", &e),
			 -EPERM);
	assert_non_null(strstr(e.msg, "leads out of the job's directory"));
	sr_err_clear(&e);
	assert_int_equal(bundle_add_at(&b, dfd, "data-link/api.token", "m/tok",
				       &e), -EPERM);
	sr_err_clear(&e);
	assert_int_equal(bundle_add_at(&b, dfd, "../secret/api.token", "m/tok",
				       &e), -EPERM);
	/* a link that stays inside is followed */
	ln("data-was/vocab", "job-was/v-link");
	assert_int_equal(bundle_add_at(&b, dfd, "v-link", "m/vocab", &e), 0);
	assert_int_equal(bundle_finish(&b, &e), 0);
	assert_int_equal(bundle_has(b.buf, b.len, "workdir/train.py", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "workdir/data/vocab", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "workdir/data-link", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "m/vocab", &e), 1);
	assert_int_equal(bundle_has(b.buf, b.len, "m/tok", &e), 0);
	assert_null(memmem(b.buf, b.len, "ADMIN", 5));
	close(dfd);
	bundle_free(&b);
}

/* One raw ustar header at h (checksummed). */
static void raw_header(unsigned char *h, const char *name, char type,
		       const char *link, unsigned size)
{
	unsigned sum = 0;

	memset(h, 0, 512);
	memcpy(h, name, strlen(name));
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011o", size);
	h[156] = (unsigned char)type;
	if (link)
		memcpy(h + 157, link, strlen(link));
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

static int scan_one(const char *name, char type, const char *link,
		    struct sr_err *e)
{
	unsigned char a[512 * 4] = { 0 };

	raw_header(a, name, type, link, 0);
	sr_err_clear(e);
	return bundle_scan(a, sizeof a, NULL, NULL, e);
}

static void test_reader_refuses(void **state)
{
	unsigned char a[512 * 6] = { 0 };
	char p[512];
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(scan_one("ok/file", '0', NULL, &e), 0);
	assert_int_equal(scan_one("../evil", '0', NULL, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "'../evil': not a relative path"));
	assert_int_equal(scan_one("/etc/cron.d/x", '0', NULL, &e), -SR_EPARSE);
	assert_int_equal(scan_one("a/../../b", '5', NULL, &e), -SR_EPARSE);
	assert_int_equal(scan_one("dev", '3', NULL, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "type '3'"));
	assert_int_equal(scan_one("hard", '1', "x", &e), -SR_EPARSE);
	assert_int_equal(scan_one("l", '2', "/etc/shadow", &e), -SR_EPARSE);
	assert_int_equal(scan_one("d/l", '2', "../../x", &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "outside the archive"));
	assert_int_equal(scan_one("d/l", '2', "../x", &e), 0);
	/* a broken checksum, a cut archive, data after the end */
	raw_header(a, "f", '0', NULL, 0);
	a[0] = 'g';
	assert_int_equal(bundle_scan(a, sizeof a, NULL, NULL, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "bad checksum"));
	raw_header(a, "f", '0', NULL, 4000);
	assert_int_equal(bundle_scan(a, 1024, NULL, NULL, &e), -SR_EPARSE);
	raw_header(a, "f", '0', NULL, 0);
	a[512 * 4] = 1;
	assert_int_equal(bundle_scan(a, sizeof a, NULL, NULL, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "data after its end"));
	/* a link, then a file through it: refused, nothing written out */
	memset(a, 0, sizeof a);
	raw_header(a, "d", '2', "sub", 0);
	raw_header(a + 512, "d/x", '0', NULL, 0);
	mk("u");
	mk("u/sub");
	snprintf(p, sizeof p, "%s/u", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_unpack(a, sizeof a, p, &e), -ENOTDIR);
	assert_non_null(strstr(e.msg, "a link in the way is never followed"));
	snprintf(p, sizeof p, "%s/u/sub/x", dir);
	assert_int_equal(access(p, F_OK), -1);
	/* a link already in dest is not written through either */
	ln("/tmp", "v");
	memset(a, 0, sizeof a);
	raw_header(a, "v", '0', NULL, 0);
	snprintf(p, sizeof p, "%s", dir);
	sr_err_clear(&e);
	assert_int_equal(bundle_unpack(a, sizeof a, p, &e), -ELOOP);
	assert_non_null(strstr(e.msg, "v: a link is in the way"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_and_tar, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_home_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_reads_beneath_the_open_dir,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_refuses, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
