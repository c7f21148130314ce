/* The exec backend: runs the operator's program once per operation, the job as one JSON object
 * on its stdin, and turns what it prints and how it exits into the outcome (docs/backends.md).
 * The program runs in its own process group so a timeout or a cancellation kills everything it
 * started; its output is read on the runner thread with poll(), so many programs run at once
 * and none blocks another job. */
/* pipe2 and posix_spawn_file_actions_addclosefrom_np are GNU extensions (glibc 2.34+). */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "exec_output.h"
#include "log.h"

extern char **environ;

/* The plan's timeout_ms when it sets none: ten minutes, as the issue pins. */
#define EXEC_DEFAULT_TIMEOUT_MS 600000
/* Bytes read from a pipe at once. */
#define EXEC_CHUNK 65536
/* How often the loop looks at cancellation and renews the lease (through wait) while the
 * program runs; also poll()'s longest sleep. */
#define EXEC_TICK_MS 100
/* Between SIGTERM and SIGKILL: time for the program to clean up after a timeout or cancel. */
#define EXEC_KILL_GRACE_MS 2000
/* After the program exited, how long processes it left behind may keep its pipes open before
 * the group is killed: their output is read meanwhile. */
#define EXEC_DRAIN_MS 1000
/* poll()'s sleep while only the program's exit is awaited (its pipes closed already). */
#define EXEC_EXIT_POLL_MS 5

#define EXEC_NO_MEMORY "The broker ran out of memory."

/* Why the program was stopped by the broker. */
enum stop_reason {
    STOP_NONE,      /* it ended on its own */
    STOP_TIMEOUT,   /* over timeout_ms: the operation fails */
    STOP_CANCELLED, /* the call was cancelled: no outcome */
};

/* One run of the program. On the heap (it holds ~200 KiB of buffers); zeroed before it is
 * freed, since the input holds parameters and the output credentials. */
struct exec_run {
    struct backend_call *call;
    pid_t pid;  /* the program, also its process group id; 0 before the spawn */
    int in_fd;  /* our end of its stdin, -1 once closed */
    int out_fd; /* our end of its stdout, -1 once at EOF */
    int err_fd; /* our end of its stderr, -1 once at EOF */
    char *input;
    size_t input_len, input_off; /* the job's JSON line and how much of it was written */
    int status;                  /* waitpid status once reaped */
    bool lost;                   /* waitpid failed: the status is unknown */
    enum stop_reason stop;
    int64_t timeout_ms;

    struct exec_output output; /* what it printed, parsed */
    char chunk[EXEC_CHUNK];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
    /* set_new steals each value even on failure; a NULL value (not UTF-8) fails the set. */
    if (in == NULL || kind == NULL || json_object_set_new(in, "kind", json_string(kind)) < 0 ||
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

static void close_fd(int *fd)
{
    if (*fd >= 0)
        (void)close(*fd);
    *fd = -1;
}

/* Starts the plan's command with its stdin, stdout and stderr on pipes, in a new process
 * group, with default signal handling and an empty signal mask (the worker blocks SIGTERM and
 * ignores SIGPIPE; a child inheriting that would shrug off our SIGTERM). Returns 0, or -1 with
 * a failed outcome in the call. */
static int spawn_program(struct exec_run *x)
{
    struct backend_call *call = x->call;
    const json_t *command = json_object_get(call->plan->settings, "command");
    size_t argc = json_array_size(command);
    if (argc == 0 || json_string_value(json_array_get(command, 0)) == NULL) {
        backend_call_fail(call, "The service's plan names no program to run.",
                          call->job->kind != OSBQ_JOB_PROVISION, false);
        return -1;
    }
    char **argv = calloc(argc + 1, sizeof *argv);
    char **env = build_env(json_object_get(call->plan->settings, "env"));
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int rc = -1;
    if (argv == NULL || env == NULL) {
        backend_call_fail(call, EXEC_NO_MEMORY, call->job->kind != OSBQ_JOB_PROVISION, false);
        goto out;
    }
    for (size_t i = 0; i < argc; i++)
        argv[i] = (char *)(uintptr_t)json_string_value(json_array_get(command, i));
    /* O_CLOEXEC: another runner thread spawning at the same time must not inherit our ends,
     * or our reads would never see EOF. */
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        log_warn("operation %s: cannot create the program's pipes", call->job->operation_id);
        backend_call_fail(call, "The broker could not start the service's program.",
                          call->job->kind != OSBQ_JOB_PROVISION, false);
        goto out;
    }

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int e = posix_spawn_file_actions_init(&actions);
    if (e == 0) {
        e = posix_spawnattr_init(&attr);
        if (e != 0)
            (void)posix_spawn_file_actions_destroy(&actions);
    }
    if (e == 0) {
        if ((e = posix_spawn_file_actions_adddup2(&actions, in[0], 0)) == 0 &&
            (e = posix_spawn_file_actions_adddup2(&actions, out[1], 1)) == 0 &&
            (e = posix_spawn_file_actions_adddup2(&actions, err[1], 2)) == 0 &&
            /* The worker's sockets (Redis, ZeroMQ) are none of the program's business. */
            (e = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0 &&
            (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                     POSIX_SPAWN_SETSIGDEF)) == 0 &&
            (e = posix_spawnattr_setpgroup(&attr, 0)) == 0 &&
            (e = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
            (e = posix_spawnattr_setsigdefault(&attr, &all)) == 0)
            e = posix_spawnp(&x->pid, argv[0], &actions, &attr, argv, env);
        (void)posix_spawnattr_destroy(&attr);
        (void)posix_spawn_file_actions_destroy(&actions);
    }
    if (e != 0) {
        x->pid = 0;
        errno = e;
        /* The path is the operator's configuration: logged, not shown to platform users. */
        log_warn("operation %s: cannot start the exec program %s", call->job->operation_id,
                 argv[0]);
        backend_call_fail(call, "The broker could not start the service's program.",
                          call->job->kind != OSBQ_JOB_PROVISION, false);
        goto out;
    }
    x->in_fd = in[1];
    x->out_fd = out[0];
    x->err_fd = err[0];
    in[1] = out[0] = err[0] = -1;
    /* Non-blocking: the loop polls all three and must never stall on one. */
    (void)fcntl(x->in_fd, F_SETFL, O_NONBLOCK);
    (void)fcntl(x->out_fd, F_SETFL, O_NONBLOCK);
    (void)fcntl(x->err_fd, F_SETFL, O_NONBLOCK);
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&err[i]);
    }
    free(argv);
    free_env(env);
    return rc;
}

/* ---- reading its output ---- */

/* The parser's progress callback: forwards to the call. */
static void report_progress(void *ctx, const char *description)
{
    struct backend_call *call = ctx;
    call->progress(call, description);
}

/* Reads what *fd has; closes it at EOF or on an error (a last partial stdout line counts). */
static void read_pipe(struct exec_run *x, int *fd, bool is_stdout)
{
    ssize_t n = read(*fd, x->chunk, sizeof x->chunk);
    if (n > 0) {
        if (is_stdout)
            exec_output_stdout(&x->output, x->chunk, (size_t)n);
        else
            exec_output_stderr(&x->output, x->chunk, (size_t)n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (is_stdout)
        exec_output_stdout_end(&x->output);
    close_fd(fd);
}

/* Writes what the pipe takes of the job; closes stdin once all of it is written, or when the
 * program closed its end (EPIPE: it does not want the job; the worker ignores SIGPIPE). */
static void write_input(struct exec_run *x)
{
    ssize_t n = write(x->in_fd, x->input + x->input_off, x->input_len - x->input_off);
    if (n > 0)
        x->input_off += (size_t)n;
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || x->input_off == x->input_len)
        close_fd(&x->in_fd);
}

/* True when the program has exited, leaving it unreaped (a zombie keeps its pid, and so its
 * process group id, from being reused: killing the group stays safe). */
static bool program_exited(pid_t pid)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno != EINTR; /* ECHILD: reaped by someone else; nothing to wait for */
    return info.si_pid == pid;
}

/* Runs the started program to its end: feeds stdin, reads stdout and stderr, reports
 * progress, keeps the lease alive, and stops the group on a timeout or a cancellation. On
 * return the program is reaped (x->status) and no process of its group is left. */
static void supervise(struct exec_run *x)
{
    struct backend_call *call = x->call;
    int64_t start = now_ms();
    int64_t timeout_at = start + x->timeout_ms;
    int64_t next_tick = start + EXEC_TICK_MS;
    int64_t kill_at = 0; /* when SIGKILL follows SIGTERM; 0 before SIGTERM */
    bool killed = false;
    int64_t exited_at = -1;
    for (;;) {
        int64_t now = now_ms();
        if (exited_at < 0 && program_exited(x->pid))
            exited_at = now;
        if (exited_at >= 0 &&
            ((x->out_fd < 0 && x->err_fd < 0) || now - exited_at >= EXEC_DRAIN_MS))
            break;
        if (x->stop == STOP_NONE && exited_at < 0) {
            if (now >= next_tick) {
                next_tick = now + EXEC_TICK_MS;
                /* A 1 ms wait: notices a cancellation and renews the lease when due. */
                if (!call->wait(call, 1))
                    x->stop = STOP_CANCELLED;
            }
            if (x->stop == STOP_NONE && now >= timeout_at)
                x->stop = STOP_TIMEOUT;
            if (x->stop != STOP_NONE) {
                (void)killpg(x->pid, SIGTERM);
                kill_at = now + EXEC_KILL_GRACE_MS;
            }
        }
        if (kill_at > 0 && !killed && (now >= kill_at || exiting(call))) {
            (void)killpg(x->pid, SIGKILL);
            killed = true;
        }

        struct pollfd fds[3];
        nfds_t nfds = 0;
        int *which[3];
        if (x->in_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = x->in_fd, .events = POLLOUT};
            which[nfds++] = &x->in_fd;
        }
        if (x->out_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = x->out_fd, .events = POLLIN};
            which[nfds++] = &x->out_fd;
        }
        if (x->err_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = x->err_fd, .events = POLLIN};
            which[nfds++] = &x->err_fd;
        }
        int64_t sleep_ms = EXEC_TICK_MS;
        if (x->stop == STOP_NONE && timeout_at - now < sleep_ms)
            sleep_ms = timeout_at - now;
        if (kill_at > 0 && !killed && kill_at - now < sleep_ms)
            sleep_ms = kill_at - now;
        /* Exit is not a pollable event: look often once nothing else is left to wait on. */
        if ((x->out_fd < 0 && x->err_fd < 0) || exited_at >= 0)
            sleep_ms = sleep_ms < EXEC_EXIT_POLL_MS ? sleep_ms : EXEC_EXIT_POLL_MS;
        if (sleep_ms < 0)
            sleep_ms = 0;
        int ready = poll(fds, nfds, (int)sleep_ms);
        if (ready <= 0)
            continue;
        for (nfds_t i = 0; i < nfds; i++) {
            if (fds[i].revents == 0)
                continue;
            if (which[i] == &x->in_fd)
                write_input(x);
            else
                read_pipe(x, which[i], which[i] == &x->out_fd);
        }
    }
    /* Whatever the program left behind in its group goes with it: an operation owns its
     * processes. The unreaped program keeps the group id from being reused. */
    (void)killpg(x->pid, SIGKILL);
    close_fd(&x->in_fd);
    close_fd(&x->out_fd);
    close_fd(&x->err_fd);
    pid_t reaped;
    while ((reaped = waitpid(x->pid, &x->status, 0)) < 0 && errno == EINTR) {
    }
    /* Only if something else in the process reaped it (nothing does): never a success. */
    x->lost = reaped != x->pid;
}

/* ---- the outcome ---- */

/* Fails the call; a provision that failed leaves no instance, any other kind leaves it as it
 * was unless the program's result says otherwise (instance_usable, update_repeatable). */
static void fail(struct backend_call *call, const char *description, const json_t *result)
{
    bool usable = call->job->kind != OSBQ_JOB_PROVISION;
    bool repeatable = false;
    json_t *v = json_object_get(result, "instance_usable");
    if (json_is_boolean(v))
        usable = json_is_true(v);
    v = json_object_get(result, "update_repeatable");
    if (json_is_boolean(v))
        repeatable = json_is_true(v);
    backend_call_fail(call, description, usable, repeatable);
}

/* The bind's binding from the result: the spec's binding fields it holds, type-checked.
 * Returns 0 (the binding set, or none given), or -1 with a failure recorded. */
static int set_binding(struct backend_call *call, json_t *result)
{
    static const struct {
        const char *key;
        int type;
    } fields[] = {
        {"credentials", JSON_OBJECT},      {"endpoints", JSON_ARRAY},
        {"syslog_drain_url", JSON_STRING}, {"route_service_url", JSON_STRING},
        {"volume_mounts", JSON_ARRAY},     {"metadata", JSON_OBJECT},
    };
    json_t *binding = json_object();
    if (binding == NULL) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        json_t *v = json_object_get(result, fields[i].key);
        if (v == NULL)
            continue;
        if ((int)json_typeof(v) != fields[i].type) {
            char text[BACKEND_DESCRIPTION_MAX];
            (void)snprintf(text, sizeof text, "The service's program returned a %s that is not %s.",
                           fields[i].key,
                           fields[i].type == JSON_OBJECT  ? "an object"
                           : fields[i].type == JSON_ARRAY ? "an array"
                                                          : "a string");
            json_decref(binding);
            fail(call, text, NULL);
            return -1;
        }
        if (json_object_set(binding, fields[i].key, v) < 0) {
            json_decref(binding);
            fail(call, EXEC_NO_MEMORY, NULL);
            return -1;
        }
    }
    if (json_object_size(binding) == 0) {
        json_decref(binding);
        return 0;
    }
    if (backend_call_set_binding(call, binding) < 0) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    return 0;
}

/* A provision's or update's dashboard_url and metadata from the result. 0, or -1 with a
 * failure recorded. */
static int set_instance_fields(struct backend_call *call, const json_t *result)
{
    json_t *url = json_object_get(result, "dashboard_url");
    json_t *metadata = json_object_get(result, "metadata");
    if ((url != NULL && !json_is_string(url)) || (metadata != NULL && !json_is_object(metadata))) {
        fail(call,
             url != NULL && !json_is_string(url)
                 ? "The service's program returned a dashboard_url that is not a string."
                 : "The service's program returned a metadata that is not an object.",
             NULL);
        return -1;
    }
    if (url != NULL && backend_call_set_dashboard_url(call, "%s", json_string_value(url)) < 0) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    if (metadata != NULL) {
        char *text = json_dumps(metadata, JSON_COMPACT);
        if (text == NULL) {
            fail(call, EXEC_NO_MEMORY, NULL);
            return -1;
        }
        free(call->metadata);
        call->metadata = text;
        call->result.metadata = text;
    }
    return 0;
}

/* Turns the reaped program's exit, output and x->stop into the call's outcome. */
static void report(struct exec_run *x)
{
    struct backend_call *call = x->call;
    const char *op = call->job->operation_id;
    char text[BACKEND_DESCRIPTION_MAX];
    bool result_bad;
    json_t *result = exec_output_result(&x->output, &result_bad);

    if (x->stop == STOP_TIMEOUT) {
        log_warnx("operation %s: the exec program ran past its timeout of %lld ms; killed", op,
                  (long long)x->timeout_ms);
        (void)snprintf(text, sizeof text, "The program did not finish within %lld ms.",
                       (long long)x->timeout_ms);
        fail(call, text, NULL);
    } else if (x->lost) {
        log_errorx("operation %s: the exec program's exit status is unknown (reaped elsewhere)",
                   op);
        fail(call, "The broker lost track of the service's program.", NULL);
    } else if (WIFSIGNALED(x->status)) {
        log_warnx("operation %s: the exec program was killed by signal %d", op,
                  WTERMSIG(x->status));
        (void)snprintf(text, sizeof text, "The program was killed by signal %d.",
                       WTERMSIG(x->status));
        fail(call, text, result);
    } else if (!WIFEXITED(x->status) || WEXITSTATUS(x->status) != 0) {
        int code = WIFEXITED(x->status) ? WEXITSTATUS(x->status) : -1;
        log_info("operation %s: the exec program exited with status %d", op, code);
        exec_output_stderr_description(&x->output, text, sizeof text);
        if (text[0] == '\0')
            (void)snprintf(text, sizeof text, "The program exited with status %d.", code);
        fail(call, text, result);
    } else if (x->output.result_state == EXEC_RESULT_TOO_LONG) {
        (void)snprintf(text, sizeof text,
                       "The program's result (its last stdout line starting with '{') is longer "
                       "than %d bytes.",
                       EXEC_LINE_MAX);
        fail(call, text, NULL);
    } else if (result_bad) {
        fail(call,
             "The program's result (its last stdout line starting with '{') is not a valid JSON "
             "object.",
             NULL);
    } else {
        backend_call_succeed(call, x->output.last_progress[0] != '\0' ? x->output.last_progress
                                                                      : "Succeeded.");
        if (result != NULL) {
            if (call->job->kind == OSBQ_JOB_BIND)
                (void)set_binding(call, result);
            else if (call->job->kind == OSBQ_JOB_PROVISION || call->job->kind == OSBQ_JOB_UPDATE)
                (void)set_instance_fields(call, result);
        }
    }
    /* jansson frees its copies of the credentials without zeroing them; they live only here. */
    json_decref(result);
}

/* Every kind runs the same way: the program tells them apart by the input's "kind". */
static int exec_operation(struct backend_call *call)
{
    struct exec_run *x = calloc(1, sizeof *x);
    if (x == NULL) {
        backend_call_fail(call, EXEC_NO_MEMORY, call->job->kind != OSBQ_JOB_PROVISION, false);
        return 0;
    }
    x->call = call;
    exec_output_init(&x->output, report_progress, call);
    x->in_fd = x->out_fd = x->err_fd = -1;
    json_int_t timeout = json_integer_value(json_object_get(call->plan->settings, "timeout_ms"));
    x->timeout_ms = timeout > 0 ? (int64_t)timeout : EXEC_DEFAULT_TIMEOUT_MS;
    int rc = 0;
    if (call->cancelled(call)) {
        rc = -1;
    } else if (build_input(x) < 0) {
        backend_call_fail(call, "The operation could not be passed to the service's program.",
                          call->job->kind != OSBQ_JOB_PROVISION, false);
    } else if (spawn_program(x) == 0) {
        supervise(x);
        if (x->stop == STOP_CANCELLED)
            rc = -1;
        else
            report(x);
    }
    if (x->input != NULL) {
        sodium_memzero(x->input, x->input_len);
        free(x->input);
    }
    sodium_memzero(x, sizeof *x);
    free(x);
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
