/* Temporary files for the tests (temp_file.h). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include "temp_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

void temp_file_write(const void *content, size_t len, char *path, size_t size)
{
    static const char pattern[] = "/tmp/osbq-test-XXXXXX";
    assert_true(size >= sizeof pattern);
    (void)snprintf(path, size, "%s", pattern);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}
