/* The files a platforms file (OSBQ_PLATFORMS) names, and the file itself: read whole and
 * bounded, wiped when freed (they hold passwords and tokens), their paths relative to the
 * platforms file's directory. */
#ifndef OSBQ_GATEWAY_PLATFORM_FILES_H
#define OSBQ_GATEWAY_PLATFORM_FILES_H

#include <stddef.h>

#include "error.h"

/* Largest file read: a password, a list of tokens, the platforms file. */
#define PLATFORM_FILE_MAX 65536

/* Reads a whole file of at most PLATFORM_FILE_MAX bytes; NUL-terminated, *len bytes, the caller
 * frees it with platform_file_wipe_free. NULL with err naming the path. */
char *platform_file_read(const char *path, size_t *len, struct osbq_error *err);

/* Zeroes len bytes of text and frees it; accepts NULL. */
void platform_file_wipe_free(char *text, size_t len);

/* Writes into buf (size bytes) path as it is when absolute (or base_dir is NULL), else
 * base_dir/path. 0, or -1 when it does not fit. */
int platform_file_path(const char *base_dir, const char *path, char *buf, size_t size);

#endif
