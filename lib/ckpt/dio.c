/*
 * dio.c - can this file take O_DIRECT, and with which alignment?
 *
 * statx(STATX_DIOALIGN) (Linux 6.1+) gives the memory and file-offset
 * alignment direct I/O needs, and 0 when the file does not support it.
 * Where the kernel does not answer, the file system's block size is used
 * and the open(O_DIRECT) itself is the test (tmpfs refused it until 6.6).
 * The staging buffer and chunk sizes are multiples of 4096, so any
 * alignment above that (or not a power of two) disables O_DIRECT.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

void ckpt__dio_probe(int fd, struct ckpt_dio *d)
{
	struct statx stx = { 0 };
	struct stat st;

	d->direct = 0;
	d->mem_align = d->off_align = 4096;
	if (fd < 0)
		return;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		if (stx.stx_dio_offset_align == 0 || stx.stx_dio_mem_align == 0)
			return;
		d->mem_align = stx.stx_dio_mem_align;
		d->off_align = stx.stx_dio_offset_align;
	} else if (fstat(fd, &st) == 0 && st.st_blksize > 0) {
		d->mem_align = d->off_align = (uint32_t)st.st_blksize;
	}
	if (d->off_align > 4096 || d->mem_align > 4096 ||
	    (d->off_align & (d->off_align - 1)) ||
	    (d->mem_align & (d->mem_align - 1)))
		return;
	d->direct = 1;
}

int ckpt__dio_open_write(int dirfd, const char *name, int want_direct,
			 int *fd_buf, int *fd_dir, struct ckpt_dio *d)
{
	*fd_dir = -1;
	d->direct = 0;
	*fd_buf = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			 0644);
	if (*fd_buf < 0)
		return -errno;
	if (!want_direct)
		return 0;
	*fd_dir = openat(dirfd, name, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (*fd_dir < 0)
		return 0; /* EINVAL: no O_DIRECT here; buffered it is */
	ckpt__dio_probe(*fd_dir, d);
	if (!d->direct) {
		close(*fd_dir);
		*fd_dir = -1;
	}
	return 0;
}
