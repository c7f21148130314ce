/* Tests of the exec programs' watch (worker/exec_watch.c) with real processes: output and exit
 * status, a large stdin written without blocking, a timeout, a stop asked by the owner (and a
 * program that ignores SIGTERM), the places bounding programs running at once, many programs
 * watched by one thread, and the destruction ending what still runs. */
#define _GNU_SOURCE
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "exec_watch.h"
#include "test_main.h"

extern char **environ;

/* What one program's callbacks saw. */
struct seen {
    char out[4096];
    size_t out_len; /* bytes of stdout, counted even past sizeof out */
    char err[256];
    size_t err_len;
    bool out_end, err_end;
    atomic_bool stop;  /* keep_running answers false once set */
    atomic_bool hurry; /* hurry answers this */
    atomic_bool ended;
    struct exec_watch_end end;
    int64_t ended_ms;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_output(void *ctx, int stream, const char *data, size_t n)
{
    struct seen *s = ctx;
    if (stream == 1) {
        if (n == 0)
            s->out_end = true;
        for (size_t i = 0; i < n && s->out_len + i < sizeof s->out - 1; i++)
            s->out[s->out_len + i] = data[i];
        s->out_len += n;
    } else {
        if (n == 0)
            s->err_end = true;
        for (size_t i = 0; i < n && s->err_len + i < sizeof s->err - 1; i++)
            s->err[s->err_len + i] = data[i];
        s->err_len += n;
    }
}

static bool on_keep_running(void *ctx)
{
    struct seen *s = ctx;
    return !atomic_load(&s->stop);
}

static bool on_hurry(void *ctx)
{
    struct seen *s = ctx;
    return atomic_load(&s->hurry);
}

static void on_ended(void *ctx, const struct exec_watch_end *end)
{
    struct seen *s = ctx;
    s->end = *end;
    s->ended_ms = now_ms();
    atomic_store(&s->ended, true);
}

static const struct exec_watch_ops ops = {
    .output = on_output, .keep_running = on_keep_running, .hurry = on_hurry, .ended = on_ended};

static void seen_init(struct seen *s)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->stop, false);
    atomic_init(&s->hurry, false);
    atomic_init(&s->ended, false);
}

/* Starts /bin/sh -c script in its own group, its stdio on non-blocking pipes, and hands it to
 * w on a place reserved here for tenant (NULL: none). */
static pid_t start_for(struct exec_watch *w, const char *tenant, const char *script,
                       const char *input, size_t input_len, int64_t timeout_ms, struct seen *s)
{
    uint64_t ticket = 0;
    assert_true(exec_watch_reserve(w, tenant, &ticket, 5000));
    int in[2], out[2], err[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    assert_int_equal(posix_spawn_file_actions_init(&actions), 0);
    assert_int_equal(posix_spawnattr_init(&attr), 0);
    assert_int_equal(posix_spawn_file_actions_adddup2(&actions, in[0], 0), 0);
    assert_int_equal(posix_spawn_file_actions_adddup2(&actions, out[1], 1), 0);
    assert_int_equal(posix_spawn_file_actions_adddup2(&actions, err[1], 2), 0);
    assert_int_equal(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP), 0);
    assert_int_equal(posix_spawnattr_setpgroup(&attr, 0), 0);
    char *argv[] = {"/bin/sh", "-c", (char *)(uintptr_t)script, NULL};
    pid_t pid = 0;
    assert_int_equal(posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ), 0);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    (void)fcntl(in[1], F_SETFL, O_NONBLOCK);
    (void)fcntl(out[0], F_SETFL, O_NONBLOCK);
    (void)fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (input == NULL) {
        close(in[1]);
        in[1] = -1;
    }
    struct exec_watch_program p = {.pid = pid,
                                   .in_fd = in[1],
                                   .out_fd = out[0],
                                   .err_fd = err[0],
                                   .input = input,
                                   .input_len = input_len,
                                   .timeout_ms = timeout_ms,
                                   .ops = &ops,
                                   .ctx = s,
                                   .tenant = tenant};
    struct osbq_error e = {0};
    assert_int_equal(exec_watch_add(w, &p, &e), 0);
    return pid;
}

static pid_t start(struct exec_watch *w, const char *script, const char *input, size_t input_len,
                   int64_t timeout_ms, struct seen *s)
{
    return start_for(w, NULL, script, input, input_len, timeout_ms, s);
}

/* Waits up to ms for s to end; true when it did. */
static bool wait_ended(struct seen *s, int64_t ms)
{
    int64_t until = now_ms() + ms;
    while (!atomic_load(&s->ended) && now_ms() < until) {
        osbq_clock_sleep_ms(5);
    }
    return atomic_load(&s->ended);
}

/* Threads of this process now. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    struct osbq_error err = {0};
    struct exec_watch *w = exec_watch_new(256, &err);
    if (w == NULL)
        return -1;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct exec_watch *w = *state;
    exec_watch_destroy(&w);
    return 0;
}

/* Output on both streams, their ends, and the exit status. */
static void test_output_and_status(void **state)
{
    struct exec_watch *w = *state;
    struct seen s;
    seen_init(&s);
    (void)start(w, "echo out; echo err >&2; exit 3", NULL, 0, 0, &s);
    assert_true(wait_ended(&s, 10000));
    assert_string_equal(s.out, "out\n");
    assert_string_equal(s.err, "err\n");
    assert_true(s.out_end);
    assert_true(s.err_end);
    assert_int_equal(s.end.stop, EXEC_WATCH_EXITED);
    assert_false(s.end.lost);
    assert_true(WIFEXITED(s.end.status));
    assert_int_equal(WEXITSTATUS(s.end.status), 3);
    assert_int_equal(exec_watch_busy(w), 0);
}

/* An input far larger than a pipe holds is written as the program reads it, and all of it
 * arrives. */
static void test_large_input(void **state)
{
    struct exec_watch *w = *state;
    size_t len = 1024 * 1024;
    char *input = malloc(len);
    assert_non_null(input);
    memset(input, 'a', len);
    struct seen s;
    seen_init(&s);
    (void)start(w, "wc -c", input, len, 0, &s);
    assert_true(wait_ended(&s, 20000));
    assert_int_equal(strtol(s.out, NULL, 10), (long)len);
    assert_int_equal(WEXITSTATUS(s.end.status), 0);
    free(input);
}

/* Past its timeout the program gets SIGTERM and ends as timed out. */
static void test_timeout(void **state)
{
    struct exec_watch *w = *state;
    struct seen s;
    seen_init(&s);
    int64_t started = now_ms();
    (void)start(w, "exec sleep 30", NULL, 0, 300, &s);
    assert_true(wait_ended(&s, 10000));
    assert_int_equal(s.end.stop, EXEC_WATCH_TIMEOUT);
    assert_true(WIFSIGNALED(s.end.status));
    assert_int_equal(WTERMSIG(s.end.status), SIGTERM);
    assert_true(s.ended_ms - started < 5000);
}

/* A stop asked by the owner: SIGTERM; a program that ignores it gets SIGKILL after the grace,
 * or at once when hurried. */
static void test_stop_and_kill(void **state)
{
    struct exec_watch *w = *state;
    struct seen s;
    seen_init(&s);
    (void)start(w, "exec sleep 30", NULL, 0, 0, &s);
    atomic_store(&s.stop, true);
    assert_true(wait_ended(&s, 10000));
    assert_int_equal(s.end.stop, EXEC_WATCH_CANCELLED);
    assert_int_equal(WTERMSIG(s.end.status), SIGTERM);

    seen_init(&s);
    /* Ready once it printed: the trap is set. */
    (void)start(w, "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL, 0, 0, &s);
    int64_t until = now_ms() + 10000;
    while (s.out_len == 0 && now_ms() < until) {
        osbq_clock_sleep_ms(5);
    }
    int64_t stopped = now_ms();
    atomic_store(&s.stop, true);
    assert_true(wait_ended(&s, 15000));
    assert_int_equal(WTERMSIG(s.end.status), SIGKILL);
    assert_true(s.ended_ms - stopped >= EXEC_WATCH_KILL_GRACE_MS - EXEC_WATCH_TICK_MS);

    seen_init(&s);
    (void)start(w, "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL, 0, 0, &s);
    until = now_ms() + 10000;
    while (s.out_len == 0 && now_ms() < until) {
        osbq_clock_sleep_ms(5);
    }
    stopped = now_ms();
    atomic_store(&s.hurry, true);
    atomic_store(&s.stop, true);
    assert_true(wait_ended(&s, 10000));
    assert_int_equal(WTERMSIG(s.end.status), SIGKILL);
    assert_true(s.ended_ms - stopped < EXEC_WATCH_KILL_GRACE_MS);
}

/* A watch of two places, both held by tenant's (NULL: none) programs that sleep until a or b
 * is told to stop, for the tests of who gets a place next. */
static struct exec_watch *full_watch(const char *tenant, struct seen *a, struct seen *b)
{
    struct osbq_error err = {0};
    struct exec_watch *w = exec_watch_new(2, &err);
    assert_non_null(w);
    seen_init(a);
    seen_init(b);
    (void)start_for(w, tenant, "exec sleep 30", NULL, 0, 0, a);
    (void)start_for(w, tenant, "exec sleep 30", NULL, 0, 0, b);
    return w;
}

/* The places: a full watch refuses a reservation until a program ends. */
static void test_places(void **state)
{
    (void)state;
    struct seen a, b;
    struct exec_watch *w = full_watch(NULL, &a, &b);
    assert_int_equal(exec_watch_busy(w), 2);
    uint64_t ticket = 0;
    assert_false(exec_watch_reserve(w, NULL, &ticket, 50));
    atomic_store(&a.stop, true);
    assert_true(exec_watch_reserve(w, NULL, &ticket, 10000));
    assert_true(atomic_load(&a.ended));
    exec_watch_unreserve(w, NULL);
    /* The destruction ends what still runs. */
    exec_watch_destroy(&w);
    assert_true(atomic_load(&b.ended));
    assert_int_equal(b.end.stop, EXEC_WATCH_CANCELLED);
    assert_int_equal(WTERMSIG(b.end.status), SIGKILL);
}

/* A step waiting for an exec place, on a thread of its own. */
struct reserver {
    pthread_t thread;
    struct exec_watch *w;
    const char *tenant;
    atomic_int *granted; /* places given so far, all reservers */
    atomic_int rank;     /* 0 while waiting; then 1 for the first place given, 2 ... */
};

static void *reserve_place(void *arg)
{
    struct reserver *r = arg;
    uint64_t ticket = 0;
    if (exec_watch_reserve(r->w, r->tenant, &ticket, 20000))
        atomic_store(&r->rank, atomic_fetch_add(r->granted, 1) + 1);
    return NULL;
}

static void wait_rank(struct reserver *r)
{
    for (int i = 0; i < 1000 && atomic_load(&r->rank) == 0; i++)
        osbq_clock_sleep_ms(10);
}

/* The places go by the fairness rule: with both places held by tenant a's programs, a's third
 * step waits first and b's later; a freed place goes to b (holding none), the next to a. */
static void test_places_fair(void **state)
{
    (void)state;
    struct seen a1, a2;
    struct exec_watch *w = full_watch("cf/a", &a1, &a2);
    atomic_int granted;
    atomic_init(&granted, 0);
    struct reserver a3 = {.w = w, .tenant = "cf/a", .granted = &granted};
    struct reserver b1 = {.w = w, .tenant = "cf/b", .granted = &granted};
    atomic_init(&a3.rank, 0);
    atomic_init(&b1.rank, 0);
    assert_int_equal(pthread_create(&a3.thread, NULL, reserve_place, &a3), 0);
    osbq_clock_sleep_ms(200); /* a3 in line first */
    assert_int_equal(pthread_create(&b1.thread, NULL, reserve_place, &b1), 0);
    osbq_clock_sleep_ms(200);
    assert_int_equal(atomic_load(&granted), 0);
    atomic_store(&a1.stop, true);
    wait_rank(&b1);
    assert_int_equal(atomic_load(&b1.rank), 1);
    assert_int_equal(atomic_load(&a3.rank), 0);
    atomic_store(&a2.stop, true);
    wait_rank(&a3);
    assert_int_equal(atomic_load(&a3.rank), 2);
    pthread_join(a3.thread, NULL);
    pthread_join(b1.thread, NULL);
    exec_watch_unreserve(w, "cf/a");
    exec_watch_unreserve(w, "cf/b");
    assert_int_equal(exec_watch_busy(w), 0);
    exec_watch_destroy(&w);
}

#define MANY 200

/* Many programs at once on one thread: the process gains no thread while they run. */
static void test_many(void **state)
{
    struct exec_watch *w = *state;
    static struct seen many[MANY];
    int threads = thread_count();
    int64_t started = now_ms();
    for (int i = 0; i < MANY; i++) {
        seen_init(&many[i]);
        (void)start(w, "sleep 1; echo done", NULL, 0, 0, &many[i]);
    }
    assert_int_equal(thread_count(), threads);
    for (int i = 0; i < MANY; i++) {
        assert_true(wait_ended(&many[i], 30000));
        assert_string_equal(many[i].out, "done\n");
        assert_int_equal(WEXITSTATUS(many[i].end.status), 0);
    }
    /* Together, not one after the other. */
    assert_true(now_ms() - started < 30000);
    assert_int_equal(exec_watch_busy(w), 0);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test_setup_teardown(test_output_and_status, setup, teardown),
               cmocka_unit_test_setup_teardown(test_large_input, setup, teardown),
               cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
               cmocka_unit_test_setup_teardown(test_stop_and_kill, setup, teardown),
               cmocka_unit_test(test_places), cmocka_unit_test(test_places_fair),
               cmocka_unit_test_setup_teardown(test_many, setup, teardown))
