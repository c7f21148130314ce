/* Replays files through a fuzz target without libFuzzer: the normal (gcc, ASan+UBSan) build
 * runs every file of the target's corpus and regressions directories as a CTest test, so a
 * crash the fuzzer once found stays fixed. Arguments: files or directories (a missing
 * directory is skipped: a target may have no regressions yet). Fails when nothing was run. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

/* Reads the whole file at path into a new buffer; NULL on failure. */
static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                (void)fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    (void)fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Runs one file; returns 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    size_t len = 0;
    uint8_t *data = read_file(path, &len);
    if (data == NULL) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    /* A copy of exactly len bytes, as libFuzzer passes: ASan sees any read past the end. */
    uint8_t *exact = malloc(len > 0 ? len : 1);
    if (exact == NULL) {
        free(data);
        return -1;
    }
    memcpy(exact, data, len);
    free(data);
    (void)LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

/* Runs path (a file, or every regular file of a directory); adds the files run to *count. */
static int replay_path(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *dir = opendir(path);
    if (dir == NULL)
        return -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0)
            continue;
        char file[4096];
        int n = snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (n < 0 || (size_t)n >= sizeof file || stat(file, &st) < 0) {
            rc = -1;
            break;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        (*count)++;
        rc = replay_file(file);
    }
    (void)closedir(dir);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        if (replay_path(argv[i], &count) < 0) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            return 1;
        }
    }
    if (count == 0) {
        fprintf(stderr, "replay: no input files\n");
        return 1;
    }
    printf("replay: %zu inputs passed\n", count);
    return 0;
}
