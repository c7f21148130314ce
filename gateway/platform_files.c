/* The files a platforms file names, and the file itself: see platform_files.h. */
#include "platform_files.h"

#include <errno.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *platform_file_read(const char *path, size_t *len, struct osbq_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(PLATFORM_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, PLATFORM_FILE_MAX + 1, f) : 0;
    bool failed = ferror(f) != 0;
    fclose(f);
    if (buf == NULL || failed || n > PLATFORM_FILE_MAX) {
        if (buf != NULL)
            sodium_memzero(buf, PLATFORM_FILE_MAX + 1);
        free(buf);
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: %s", path,
                       buf == NULL ? "out of memory"
                       : failed    ? "read error"
                                   : "larger than 64 kB");
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

void platform_file_wipe_free(char *text, size_t len)
{
    if (text != NULL)
        sodium_memzero(text, len);
    free(text);
}

int platform_file_path(const char *base_dir, const char *path, char *buf, size_t size)
{
    int n = path[0] == '/' || base_dir == NULL ? snprintf(buf, size, "%s", path)
                                               : snprintf(buf, size, "%s/%s", base_dir, path);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
