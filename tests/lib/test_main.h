/* The main of a cmocka test program, written once: it runs the tests listed (cmocka_unit_test
 * entries) as one group, with the group's setup and teardown (NULL for none), and returns the
 * number that failed. A program whose main does more (initialise a library first) writes its
 * own. */
#ifndef OSBQ_TEST_MAIN_H
#define OSBQ_TEST_MAIN_H

#define OSBQ_TEST_MAIN(setup, teardown, ...)                                                       \
    int main(void)                                                                                 \
    {                                                                                              \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                           \
        return cmocka_run_group_tests(tests, setup, teardown);                                     \
    }

#endif
