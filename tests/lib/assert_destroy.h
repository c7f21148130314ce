/* The promise of the modules' destroy functions, checked in one place: destroy(&p) leaves p
 * NULL, and a second call on that NULL does nothing (callers may destroy on every path). A macro,
 * since each destroy function takes its own type. */
#ifndef OSBQ_TESTS_ASSERT_DESTROY_H
#define OSBQ_TESTS_ASSERT_DESTROY_H

/* Destroys object with destroy(&object), asserts that object is NULL, and destroys it again. */
#define assert_destroy_twice(destroy, object)                                                      \
    do {                                                                                           \
        destroy(&(object));                                                                        \
        assert_null(object);                                                                       \
        destroy(&(object));                                                                        \
    } while (0)

#endif
