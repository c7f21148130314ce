/* Checks a predicate over strings against lists of strings it must accept and refuse. */
#ifndef OSBQ_TESTS_STRING_CASES_H
#define OSBQ_TESTS_STRING_CASES_H

#include <stdbool.h>
#include <stddef.h>

/* Fails the test, naming the first string and what it should be (accepted_as, e.g. "valid",
 * or refused_as), unless predicate accepts each of the n accepted and refuses each of the m
 * refused. */
void string_cases_check(bool (*predicate)(const char *), const char *const *accepted, size_t n,
                        const char *accepted_as, const char *const *refused, size_t m,
                        const char *refused_as);

#endif
