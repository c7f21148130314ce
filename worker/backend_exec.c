/* The exec backend: runs the operator's program once per step, the job as one JSON object on
 * its stdin, and turns what it prints and how it exits into the outcome (exec_result.c;
 * docs/backends.md). The program runs in its own process group so a timeout or a cancellation
 * kills everything it started. It is started on the runner thread and then handed to the worker's
 * exec watch (exec_watch.h): one event loop drives every running program, so a program that runs
 * for minutes holds no thread. */
/* pipe2 and posix_spawn_file_actions_addclosefrom_np are GNU extensions (glibc 2.34+). */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "backend.h"
#include "exec_output.h"
#include "exec_result.h"
#include "exec_watch.h"
#include "log.h"

extern char **environ;

/* The plan's timeout_ms when it sets none: ten minutes, as the issue pins. */
#define EXEC_DEFAULT_TIMEOUT_MS 600000
/* How long a step waiting for a place among the programs running at once sleeps between
 * looks at its cancellation (which also renews its lease). */
#define EXEC_PLACE_WAIT_MS 100

#define EXEC_NO_MEMORY "The broker ran out of memory."

/* One step of the program. On the heap (it holds ~200 KiB of buffers); zeroed before it is
 * freed, since the input holds parameters and the output credentials. Once the program is
 * handed to the watch, only the watch's thread touches it, but for done and rc, which a caller
 * waiting for the end (no detached steps) reads under lock. */
struct exec_run {
    struct backend_call *call;
    char *input;
    size_t input_len; /* the job's JSON line */
    int64_t timeout_ms;
    struct exec_watch_end end; /* how the program ended */

    pthread_mutex_t lock; /* guards done and rc, for a caller waiting on ended */
    pthread_cond_t ended;
    bool done;
    int rc;

    struct exec_output output; /* what it printed, parsed */
};

static bool exiting(struct backend_call *call)
{
    return call->exiting != NULL && call->exiting(call);
}

/* ---- the job on stdin ---- */

/* text parsed as JSON, or null when absent or unreadable: the program sees the same keys
 * whatever the request held. */
static json_t *json_or_null(const char *text)
{
    json_t *v = text != NULL ? json_loads(text, 0, NULL) : NULL;
    return v != NULL ? v : json_null();
}

static json_t *string_or_null(const char *text)
{
    return text != NULL ? json_string(text) : json_null();
}

/* Writes the job as one JSON line (pinned keys, docs/backends.md) into x->input. 0, or -1
 * when out of memory or an id is not UTF-8. */
static int build_input(struct exec_run *x)
{
    const struct backend_call *call = x->call;
    const struct osbq_job *job = call->job;
    const char *kind = osbq_job_kind_name(job->kind);
    json_t *params = call->parameters != NULL ? json_incref((json_t *)(uintptr_t)call->parameters)
                                              : json_or_null(job->parameters);
    json_t *in = json_object();
    int rc = -1;
    /* A poll: the step after one that answered in progress. The program learns which operation
     * it polls from "of", and gets back what it saved ({} when it saved nothing). */
    bool poll = call->step > 0 || call->resume != NULL;
    if (poll && in != NULL && kind != NULL &&
        (json_object_set_new(in, "of", json_string(kind)) < 0 ||
         json_object_set_new(in, "resume",
                             call->resume != NULL ? json_deep_copy(call->resume) : json_object()) <
             0 ||
         json_object_set_new(in, "step", json_integer(call->step)) < 0))
        goto out;
    /* set_new steals each value even on failure; a NULL value (not UTF-8) fails the set. */
    if (in == NULL || kind == NULL ||
        json_object_set_new(in, "kind", json_string(poll ? "poll" : kind)) < 0 ||
        json_object_set_new(in, "operation_id", string_or_null(job->operation_id)) < 0 ||
        json_object_set_new(in, "instance_id", string_or_null(job->instance_id)) < 0 ||
        json_object_set_new(in, "binding_id", string_or_null(job->binding_id)) < 0 ||
        json_object_set_new(in, "service_id", string_or_null(job->service_id)) < 0 ||
        json_object_set_new(in, "plan_id", string_or_null(job->plan_id)) < 0 ||
        json_object_set_new(in, "parameters", params) < 0 ||
        json_object_set_new(in, "context", json_or_null(job->context)) < 0 ||
        json_object_set_new(in, "bind_resource", json_or_null(job->bind_resource)) < 0 ||
        json_object_set_new(in, "predecessor_binding_id",
                            string_or_null(job->predecessor_binding_id)) < 0 ||
        json_object_set_new(in, "attempt", json_integer(job->attempt)) < 0) {
        params = NULL;
        goto out;
    }
    params = NULL;
    /* A delete names the creation it halted (docs/decisions/0051): what it deletes may be
     * half-made. */
    bool deleting = job->kind == OSBQ_JOB_DEPROVISION || job->kind == OSBQ_JOB_UNBIND;
    if (deleting &&
        json_object_set_new(in, "halted_operation_id", string_or_null(call->halted_operation)) < 0)
        goto out;
    /* Exact size, not json_dumps: its realloc growth would leave copies of the parameters
     * (possibly secrets) in freed memory. One more byte for the newline. */
    size_t len = json_dumpb(in, NULL, 0, JSON_COMPACT);
    if (len == 0 || (x->input = malloc(len + 1)) == NULL)
        goto out;
    if (json_dumpb(in, x->input, len, JSON_COMPACT) != len)
        goto out;
    x->input[len] = '\n';
    x->input_len = len + 1;
    rc = 0;
out:
    json_decref(params);
    json_decref(in);
    return rc;
}

/* ---- starting the program ---- */

/* The worker's environment without its own settings (OSBQ_*: broker passwords, Redis URLs,
 * secrets) and without the names the plan's env sets, followed by the plan's env. NULL when
 * out of memory; free with free_env. */
static char **build_env(const json_t *plan_env)
{
    size_t inherited = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        inherited++;
    size_t extra = json_is_object(plan_env) ? json_object_size(plan_env) : 0;
    char **env = calloc(inherited + extra + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL || strncmp(*e, "OSBQ_", 5) == 0)
            continue;
        size_t name_len = (size_t)(eq - *e);
        if (extra > 0 && json_object_getn(plan_env, *e, name_len) != NULL)
            continue;
        if ((env[n] = strdup(*e)) == NULL)
            goto fail;
        n++;
    }
    const char *name;
    json_t *value;
    json_object_foreach ((json_t *)(uintptr_t)plan_env, name, value) {
        const char *text = json_string_value(value);
        size_t size = strlen(name) + 1 + strlen(text != NULL ? text : "") + 1;
        if ((env[n] = malloc(size)) == NULL)
            goto fail;
        (void)snprintf(env[n], size, "%s=%s", name, text != NULL ? text : "");
        n++;
    }
    return env;
fail:
    for (size_t i = 0; i < n; i++)
        free(env[i]);
    free(env);
    return NULL;
}

static void free_env(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

/* Fails the step before its program gave an outcome (it could not run, or be watched): the
 * instance stays usable unless this was its provision. */
static void fail_step(struct backend_call *call, const char *description)
{
    backend_call_fail(call, description, call->job->kind != OSBQ_JOB_PROVISION, false);
}

/* Runs argv with env in a new process group, with default signal handling and an empty signal
 * mask, its stdin, stdout and stderr on the given pipe ends and no other descriptor. Returns 0
 * with *pid, or an errno value. */
static int start_process(char **argv, char **env, int stdin_fd, int stdout_fd, int stderr_fd,
                         pid_t *pid)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int e = posix_spawn_file_actions_init(&actions);
    if (e != 0)
        return e;
    if ((e = posix_spawnattr_init(&attr)) != 0) {
        (void)posix_spawn_file_actions_destroy(&actions);
        return e;
    }
    if ((e = posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0)) == 0 &&
        (e = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1)) == 0 &&
        (e = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2)) == 0 &&
        /* The worker's sockets (Redis, ZeroMQ) are none of the program's business. */
        (e = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0 &&
        (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF)) == 0 &&
        (e = posix_spawnattr_setpgroup(&attr, 0)) == 0 &&
        (e = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
        (e = posix_spawnattr_setsigdefault(&attr, &all)) == 0)
        e = posix_spawnp(pid, argv[0], &actions, &attr, argv, env);
    (void)posix_spawnattr_destroy(&attr);
    (void)posix_spawn_file_actions_destroy(&actions);
    return e;
}

/* Starts the plan's command with its stdin, stdout and stderr on pipes whose other ends go to
 * prog, non-blocking (start_process says how it runs; the worker blocks SIGTERM and ignores
 * SIGPIPE, and a child inheriting that would shrug off our SIGTERM). Returns 0, or -1 with a
 * failed outcome in the call. */
static int spawn_program(struct exec_run *x, struct exec_watch_program *prog)
{
    struct backend_call *call = x->call;
    const json_t *command = json_object_get(call->plan->settings, "command");
    size_t argc = json_array_size(command);
    if (argc == 0 || json_string_value(json_array_get(command, 0)) == NULL) {
        fail_step(call, "The service's plan names no program to run.");
        return -1;
    }
    char **argv = calloc(argc + 1, sizeof *argv);
    char **env = build_env(json_object_get(call->plan->settings, "env"));
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int rc = -1;
    if (argv == NULL || env == NULL) {
        fail_step(call, EXEC_NO_MEMORY);
        goto out;
    }
    for (size_t i = 0; i < argc; i++)
        argv[i] = (char *)(uintptr_t)json_string_value(json_array_get(command, i));
    /* O_CLOEXEC: another runner thread spawning at the same time must not inherit our ends,
     * or our reads would never see EOF. */
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        log_warn("operation %s: cannot create the program's pipes", call->job->operation_id);
        fail_step(call, "The broker could not start the service's program.");
        goto out;
    }
    int e = start_process(argv, env, in[0], out[1], err[1], &prog->pid);
    if (e != 0) {
        prog->pid = 0;
        errno = e;
        /* The path is the operator's configuration: logged, not shown to platform users. */
        log_warn("operation %s: cannot start the exec program %s", call->job->operation_id,
                 argv[0]);
        fail_step(call, "The broker could not start the service's program.");
        goto out;
    }
    prog->in_fd = in[1];
    prog->out_fd = out[0];
    prog->err_fd = err[0];
    in[1] = out[0] = err[0] = -1;
    /* Non-blocking: the watch's loop drives every program and must never stall on one. */
    (void)fcntl(prog->in_fd, F_SETFL, O_NONBLOCK);
    (void)fcntl(prog->out_fd, F_SETFL, O_NONBLOCK);
    (void)fcntl(prog->err_fd, F_SETFL, O_NONBLOCK);
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        exec_watch_close_fd(&in[i]);
        exec_watch_close_fd(&out[i]);
        exec_watch_close_fd(&err[i]);
    }
    free(argv);
    free_env(env);
    return rc;
}

/* ---- the watch's callbacks (on its thread; those that log name x's job, as a runner thread
 * does: backend_log_context_set) ---- */

/* The parser's progress callback: forwards to the call, from the watch's thread. */
static void report_progress(void *ctx, const char *description)
{
    struct backend_call *call = ctx;
    (void)backend_call_keep_alive(call, description);
}

static void on_output(void *ctx, int stream, const char *data, size_t n)
{
    struct exec_run *x = ctx;
    const struct exec_trace *trace = x->call->exec_trace;
    if (trace != NULL)
        trace->output(trace->ctx, stream, data, n);
    backend_log_context_set(x->call->job);
    if (stream == 1 && n == 0)
        exec_output_stdout_end(&x->output);
    else if (stream == 1)
        exec_output_stdout(&x->output, data, n);
    else if (n > 0)
        exec_output_stderr(&x->output, data, n);
    osbq_log_context_set(NULL);
}

/* Notices a cancellation and renews the lease when due, without waiting for Redis. */
static bool on_keep_running(void *ctx)
{
    struct exec_run *x = ctx;
    backend_log_context_set(x->call->job);
    bool keep = backend_call_keep_alive(x->call, NULL);
    osbq_log_context_set(NULL);
    return keep;
}

static bool on_hurry(void *ctx)
{
    struct exec_run *x = ctx;
    return exiting(x->call);
}

static void free_run(struct exec_run *x);

static void on_ended(void *ctx, const struct exec_watch_end *end)
{
    struct exec_run *x = ctx;
    struct backend_call *call = x->call;
    const struct exec_trace *trace = call->exec_trace;
    if (trace != NULL)
        trace->ended(trace->ctx, end);
    backend_log_context_set(x->call->job);
    x->end = *end;
    int rc = 0;
    if (end->stop == EXEC_WATCH_CANCELLED)
        rc = -1;
    else
        exec_result_report(call, end, &x->output, x->timeout_ms);
    osbq_log_context_set(NULL);
    void (*detached_end)(struct backend_call *, int) = call->detached_end;
    if (detached_end != NULL) {
        /* The call may be gone as soon as it hears of the end: x goes first. */
        free_run(x);
        detached_end(call, rc);
        return;
    }
    pthread_mutex_lock(&x->lock);
    x->rc = rc;
    x->done = true;
    pthread_cond_signal(&x->ended);
    pthread_mutex_unlock(&x->lock);
}

static const struct exec_watch_ops watch_ops = {
    .output = on_output,
    .keep_running = on_keep_running,
    .hurry = on_hurry,
    .ended = on_ended,
};

static void free_run(struct exec_run *x)
{
    if (x->input != NULL) {
        sodium_memzero(x->input, x->input_len);
        free(x->input);
    }
    pthread_cond_destroy(&x->ended);
    pthread_mutex_destroy(&x->lock);
    exec_output_wipe(&x->output);
    free(x);
}

/* Takes a place among the programs running at once, waiting its turn while the limit is
 * reached (the lease renewed meanwhile). False when the call got cancelled first. */
static bool take_place(struct backend_call *call)
{
    uint64_t ticket = 0;
    while (!exec_watch_reserve(call->exec_watch, call->tenant, &ticket, EXEC_PLACE_WAIT_MS)) {
        if (!call->wait(call, 0))
            return false;
    }
    return true;
}

/* Every kind runs the same way: the program tells them apart by the input's "kind". */
/* A new run of call's program, its timeout the plan's; NULL (the step failed) when out of
 * memory. */
static struct exec_run *run_new(struct backend_call *call)
{
    /* malloc, not calloc: the output buffers' pages are touched only as the program fills
     * them (exec_output_init). */
    struct exec_run *x = malloc(sizeof *x);
    if (x == NULL) {
        fail_step(call, EXEC_NO_MEMORY);
        return NULL;
    }
    x->call = call;
    x->input = NULL;
    x->input_len = 0;
    x->end = (struct exec_watch_end){.stop = EXEC_WATCH_EXITED};
    x->done = false;
    x->rc = 0;
    bool locked = pthread_mutex_init(&x->lock, NULL) == 0;
    if (!locked || pthread_cond_init(&x->ended, NULL) != 0) {
        if (locked)
            pthread_mutex_destroy(&x->lock);
        free(x);
        fail_step(call, EXEC_NO_MEMORY);
        return NULL;
    }
    exec_output_init(&x->output, report_progress, call);
    json_int_t timeout = json_integer_value(json_object_get(call->plan->settings, "timeout_ms"));
    x->timeout_ms = timeout > 0 ? (int64_t)timeout : EXEC_DEFAULT_TIMEOUT_MS;
    return x;
}

/* Starts x's program and hands it to the exec watch: 0 (the watch owns x until on_ended), -1
 * when cancelled first, 1 when it could not start (the step failed). */
static int run_start(struct exec_run *x)
{
    struct backend_call *call = x->call;
    struct exec_watch_program prog = {.in_fd = -1, .out_fd = -1, .err_fd = -1};
    if (call->cancelled(call))
        return -1;
    if (build_input(x) < 0) {
        fail_step(call, "The operation could not be passed to the service's program.");
        return 1;
    }
    if (call->exec_trace != NULL)
        call->exec_trace->input(call->exec_trace->ctx, x->input, x->input_len);
    if (!take_place(call))
        return -1;
    if (spawn_program(x, &prog) < 0) {
        exec_watch_unreserve(call->exec_watch, call->tenant);
        return 1;
    }
    prog.input = x->input;
    prog.input_len = x->input_len;
    prog.timeout_ms = x->timeout_ms;
    prog.ops = &watch_ops;
    prog.ctx = x;
    prog.tenant = call->tenant;
    struct osbq_error err = {0};
    if (exec_watch_add(call->exec_watch, &prog, &err) < 0) {
        log_warnx("operation %s: cannot watch the exec program (%s)", call->job->operation_id,
                  err.text);
        fail_step(call, "The broker could not start the service's program.");
        return 1;
    }
    return 0;
}

static int exec_operation(struct backend_call *call)
{
    if (call->exec_watch == NULL) {
        fail_step(call, "The broker cannot run the service's program here.");
        return 0;
    }
    struct exec_run *x = run_new(call);
    if (x == NULL)
        return 0;
    int started = run_start(x);
    if (started != 0) {
        free_run(x);
        return started < 0 ? -1 : 0;
    }
    /* From here x is the watch's until on_ended. */
    if (call->detached_end != NULL)
        return BACKEND_DETACHED;
    pthread_mutex_lock(&x->lock);
    while (!x->done)
        pthread_cond_wait(&x->ended, &x->lock);
    int rc = x->rc;
    pthread_mutex_unlock(&x->lock);
    free_run(x);
    return rc;
}

/* The program must converge when run twice for one operation id (docs/backends.md); the
 * backend itself keeps no state. */
const struct backend backend_exec = {
    .name = "exec",
    .provision = exec_operation,
    .update = exec_operation,
    .deprovision = exec_operation,
    .bind = exec_operation,
    .unbind = exec_operation,
};
