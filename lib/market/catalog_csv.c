/*
 * catalog_csv.c - helpers the catalog loaders share: file reading,
 * strict numbers, base names.  The RFC 4180 reader is lib/common/csv.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_csv.h"

const char *catalog__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int catalog__parse_num(const char *s, double *out)
{
	char *end = NULL;
	double v;

	if (!*s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int catalog__read_file(const char *path, char **buf, size_t *len,
		       struct sr_err *e)
{
	int rc = 0, fd = -1;
	char *b = NULL;
	struct stat st;
	size_t got = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, b + got, (size_t)st.st_size - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	if (fd >= 0)
		close(fd);
	return rc;
}
