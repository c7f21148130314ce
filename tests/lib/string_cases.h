/* Strings in the tables of table-driven tests: a predicate's lists of strings it must accept and
 * refuse, and rows of a string given and the string wanted back. */
#ifndef OSBQ_TESTS_STRING_CASES_H
#define OSBQ_TESTS_STRING_CASES_H

#include <stdbool.h>
#include <stddef.h>

/* A row of a table-driven test: what the code under test is given and the string it must give
 * back (a value, an error or a part of one); the table's comment says which. One type for all
 * such tables, so that each does not declare its own pair. */
struct string_case {
    const char *given;
    const char *want;
};

/* Fails the test, naming the first string and what it should be (accepted_as, e.g. "valid",
 * or refused_as), unless predicate accepts each of the n accepted and refuses each of the m
 * refused. */
void string_cases_check(bool (*predicate)(const char *), const char *const *accepted, size_t n,
                        const char *accepted_as, const char *const *refused, size_t m,
                        const char *refused_as);

#endif
