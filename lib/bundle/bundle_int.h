/*
 * bundle_int.h - what bundle_write.c and bundle_read.c share: the ustar
 * header's layout (POSIX.1-1988, 512 bytes) and the link check.
 *
 *   offset size field           offset size field
 *        0  100 name               257    6 magic "ustar\0"
 *      100    8 mode (octal)       263    2 version "00"
 *      108    8 uid                265   32 uname
 *      116    8 gid                297   32 gname
 *      124   12 size (octal)       329    8 devmajor
 *      136   12 mtime              337    8 devminor
 *      148    8 chksum             345  155 prefix
 *      156    1 typeflag           500   12 (pad)
 *      157  100 linkname
 */
#ifndef SR_BUNDLE_INT_H
#define SR_BUNDLE_INT_H

#define BUNDLE_OFF_NAME 0
#define BUNDLE_OFF_MODE 100
#define BUNDLE_OFF_UID 108
#define BUNDLE_OFF_GID 116
#define BUNDLE_OFF_SIZE 124
#define BUNDLE_OFF_MTIME 136
#define BUNDLE_OFF_CHKSUM 148
#define BUNDLE_OFF_TYPE 156
#define BUNDLE_OFF_LINK 157
#define BUNDLE_OFF_MAGIC 257
#define BUNDLE_OFF_VERSION 263
#define BUNDLE_OFF_PREFIX 345

/* 1 when the link at `rel` (a path relative to the tree's root; "" is the
 * root itself) with target `target` resolves, component by component
 * from rel's directory, to a path inside the root: relative, and no ".."
 * past the root. */
int bundle__link_inside(const char *rel, const char *target);

#endif
