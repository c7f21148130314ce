/* Files the cmocka tests write for the code under test to read. */
#ifndef OSBQ_TESTS_TEMP_FILE_H
#define OSBQ_TESTS_TEMP_FILE_H

#include <stddef.h>

/* Writes len bytes of content to a new file /tmp/osbq-test-XXXXXX (mkstemp's: mode 0600) and
 * puts its path into path (size bytes); cmocka fails the test when it cannot. The caller
 * removes the file. */
void temp_file_write(const void *content, size_t len, char *path, size_t size);

#endif
