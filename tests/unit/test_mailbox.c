/* Unit tests of the mailbox (common/mailbox.c): items come out oldest first, one wake-up for a
 * batch, nothing posted once it is closed, and the owner hears of the close. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <poll.h>
#include <pthread.h>

#include "mailbox.h"
#include "test_main.h"

struct item {
    int value;
    struct osbq_mailbox_link link;
};

static int value_of(const struct osbq_mailbox_link *link)
{
    return ((const struct item *)(const void *)((const char *)link - offsetof(struct item, link)))
        ->value;
}

/* Whether the mailbox's descriptor is readable now. */
static bool readable(const struct osbq_mailbox *mb)
{
    struct pollfd pfd = {.fd = osbq_mailbox_fd(mb), .events = POLLIN};
    return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static void test_batch_oldest_first(void **state)
{
    (void)state;
    struct osbq_mailbox mb;
    struct osbq_error err = {0};
    assert_int_equal(osbq_mailbox_init(&mb, &err), 0);
    assert_false(readable(&mb));
    struct item items[3] = {{.value = 1}, {.value = 2}, {.value = 3}};
    for (int i = 0; i < 3; i++)
        assert_true(osbq_mailbox_post(&mb, &items[i].link));
    assert_true(readable(&mb));
    bool closed = true;
    struct osbq_mailbox_link *link = osbq_mailbox_take(&mb, &closed);
    assert_false(closed);
    for (int want = 1; want <= 3; want++, link = link->next) {
        assert_non_null(link);
        assert_int_equal(value_of(link), want);
    }
    assert_null(link);
    /* Taken: nothing left, and no wake-up pending. */
    assert_false(readable(&mb));
    assert_null(osbq_mailbox_take(&mb, &closed));
    osbq_mailbox_clear(&mb);
}

static void test_close(void **state)
{
    (void)state;
    struct osbq_mailbox mb;
    struct osbq_error err = {0};
    assert_int_equal(osbq_mailbox_init(&mb, &err), 0);
    struct item before = {.value = 1}, after = {.value = 2};
    assert_true(osbq_mailbox_post(&mb, &before.link));
    osbq_mailbox_close(&mb);
    assert_false(osbq_mailbox_post(&mb, &after.link));
    assert_true(readable(&mb));
    bool closed = false;
    struct osbq_mailbox_link *link = osbq_mailbox_take(&mb, &closed);
    assert_true(closed);
    assert_non_null(link);
    assert_int_equal(value_of(link), 1);
    assert_null(link->next);
    osbq_mailbox_clear(&mb);
}

struct poster {
    struct osbq_mailbox *mb;
    struct item items[1000];
};

static void *post_all(void *arg)
{
    struct poster *p = arg;
    for (int i = 0; i < 1000; i++) {
        p->items[i].value = i;
        (void)osbq_mailbox_post(p->mb, &p->items[i].link);
    }
    return NULL;
}

/* Items posted from another thread while the owner takes: none lost, none twice, in order. */
static void test_concurrent_posts(void **state)
{
    (void)state;
    static struct poster p;
    struct osbq_mailbox mb;
    struct osbq_error err = {0};
    assert_int_equal(osbq_mailbox_init(&mb, &err), 0);
    p.mb = &mb;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, post_all, &p), 0);
    int next = 0;
    while (next < 1000) {
        struct pollfd pfd = {.fd = osbq_mailbox_fd(&mb), .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        bool closed = false;
        for (struct osbq_mailbox_link *link = osbq_mailbox_take(&mb, &closed); link != NULL;
             link = link->next)
            assert_int_equal(value_of(link), next++);
    }
    pthread_join(thread, NULL);
    osbq_mailbox_clear(&mb);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_batch_oldest_first), cmocka_unit_test(test_close),
               cmocka_unit_test(test_concurrent_posts))
