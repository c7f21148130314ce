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
#include "log.h"

extern char **environ;

/* The plan's timeout_ms when it sets none: ten minutes, as the issue pins. */
#define EXEC_DEFAULT_TIMEOUT_MS 600000
/* Longest stdout line kept: a progress line or the result. Longer lines are discarded as they
 * arrive (a result that long fails the operation), so a flood costs no memory. */
#define EXEC_LINE_MAX (64 * 1024)
/* Bytes of stderr kept, the latest ones: only the tail ends up in a failure's description. */
#define EXEC_STDERR_MAX (64 * 1024)
/* Bytes of that tail a failure shows: the description buffer is BACKEND_DESCRIPTION_MAX. */
#define EXEC_STDERR_SHOWN 900
/* Longest progress text kept (before " (NN%)" is added). */
#define EXEC_PROGRESS_MAX 200
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

/* What the last stdout line starting with '{' turned out to be. */
enum result_state {
    RESULT_NONE,     /* no such line */
    RESULT_LINE,     /* in result[] */
    RESULT_TOO_LONG, /* longer than EXEC_LINE_MAX: discarded */
};

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

    char line[EXEC_LINE_MAX]; /* the stdout line being assembled */
    size_t line_len;
    bool line_overlong; /* the current line passed EXEC_LINE_MAX: discarding to its end */
    char result[EXEC_LINE_MAX];
    size_t result_len;
    enum result_state result_state;
    char err_tail[EXEC_STDERR_MAX]; /* the latest stderr bytes */
    size_t err_len;
    char last_progress[EXEC_PROGRESS_MAX]; /* the last progress text, "" when none */
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

/* ---- text shown to users ---- */

/* The length of the valid UTF-8 character at p (left bytes available), or 0 when the bytes
 * there are not one (overlong forms and surrogates included): descriptions end up in JSON,
 * which must be valid UTF-8. */
static size_t utf8_char_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    if (left < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
        return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
        return 0;
    return n;
}

/* Copies len bytes of text into out (out_size > 0) as one line of valid UTF-8: control
 * characters and blanks collapse into single spaces, invalid bytes become '?', leading and
 * trailing blanks go; cut at a character boundary when out is too small. */
static void clean_text(const char *text, size_t len, char *out, size_t out_size)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    bool space = false;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len(p + i, len - i);
        if (n == 1 && (p[i] <= 0x20 || p[i] == 0x7f)) {
            space = o > 0;
            i++;
            continue;
        }
        const char *src = n == 0 ? "?" : text + i;
        size_t src_len = n == 0 ? 1 : n;
        if (o + src_len + (space ? 1 : 0) >= out_size)
            break;
        if (space)
            out[o++] = ' ';
        space = false;
        memcpy(out + o, src, src_len);
        o += src_len;
        i += n == 0 ? 1 : n;
    }
    out[o] = '\0';
}

/* The failure description from the stderr tail: its last EXEC_STDERR_SHOWN bytes or less,
 * starting at a line when the cut fell inside one, as one line. "" when stderr was empty. */
static void stderr_description(const struct exec_run *x, char *out, size_t out_size)
{
    size_t end = x->err_len;
    while (end > 0 && (unsigned char)x->err_tail[end - 1] <= 0x20)
        end--;
    size_t start = end > EXEC_STDERR_SHOWN ? end - EXEC_STDERR_SHOWN : 0;
    if (start > 0 || x->err_len == EXEC_STDERR_MAX) {
        /* Cut: begin with a whole line when one starts in the window, else at a character. */
        const char *nl = memchr(x->err_tail + start, '\n', end - start);
        if (nl != NULL && nl + 1 < x->err_tail + end)
            start = (size_t)(nl + 1 - x->err_tail);
        while (start < end && ((unsigned char)x->err_tail[start] & 0xc0) == 0x80)
            start++;
    }
    clean_text(x->err_tail + start, end - start, out, out_size);
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

/* True when text (n bytes) starts, after blanks, with '{': a result line. */
static bool starts_object(const char *text, size_t n)
{
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t'))
        i++;
    return i < n && text[i] == '{';
}

/* "progress <percent> <text>": reports "<text> (<percent>%)" and keeps the text for the
 * success description. True when the line was one. */
static bool progress_line(struct exec_run *x, const char *line, size_t len)
{
    static const char prefix[] = "progress ";
    size_t i = sizeof prefix - 1;
    if (len < i || memcmp(line, prefix, i) != 0)
        return false;
    unsigned percent = 0;
    size_t digits = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && digits < 4) {
        percent = percent * 10 + (unsigned)(line[i] - '0');
        i++;
        digits++;
    }
    if (digits == 0 || percent > 100 || (i < len && line[i] != ' '))
        return false;
    char text[EXEC_PROGRESS_MAX];
    clean_text(line + i, len - i, text, sizeof text);
    if (text[0] != '\0')
        (void)snprintf(x->last_progress, sizeof x->last_progress, "%s", text);
    char description[EXEC_PROGRESS_MAX + 16];
    (void)snprintf(description, sizeof description, "%s (%u%%)", text[0] != '\0' ? text : "Working",
                   percent);
    x->call->progress(x->call, description);
    return true;
}

/* One complete stdout line (without its newline). */
static void stdout_line(struct exec_run *x, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (progress_line(x, line, len))
        return;
    if (!starts_object(line, len))
        return;
    sodium_memzero(x->result, x->result_len);
    memcpy(x->result, line, len);
    x->result_len = len;
    x->result_state = RESULT_LINE;
}

/* Splits stdout bytes into lines; keeps at most EXEC_LINE_MAX bytes of one. */
static void stdout_bytes(struct exec_run *x, const char *data, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t seg = nl != NULL ? (size_t)(nl - data) : n;
        if (!x->line_overlong) {
            size_t room = EXEC_LINE_MAX - x->line_len;
            size_t take = seg < room ? seg : room;
            memcpy(x->line + x->line_len, data, take);
            x->line_len += take;
            if (take < seg || (nl == NULL && x->line_len == EXEC_LINE_MAX)) {
                /* Too long to keep: discard it up to its end. A result line that long fails
                 * the operation rather than be read in part. */
                if (starts_object(x->line, x->line_len)) {
                    sodium_memzero(x->result, x->result_len);
                    x->result_len = 0;
                    x->result_state = RESULT_TOO_LONG;
                }
                sodium_memzero(x->line, x->line_len);
                x->line_len = 0;
                x->line_overlong = true;
            }
        }
        if (nl == NULL)
            return;
        if (!x->line_overlong)
            stdout_line(x, x->line, x->line_len);
        sodium_memzero(x->line, x->line_len);
        x->line_len = 0;
        x->line_overlong = false;
        data = nl + 1;
        n -= seg + 1;
    }
}

/* Keeps the latest EXEC_STDERR_MAX bytes of stderr. */
static void stderr_bytes(struct exec_run *x, const char *data, size_t n)
{
    if (n >= EXEC_STDERR_MAX) {
        memcpy(x->err_tail, data + n - EXEC_STDERR_MAX, EXEC_STDERR_MAX);
        x->err_len = EXEC_STDERR_MAX;
        return;
    }
    if (x->err_len + n > EXEC_STDERR_MAX) {
        size_t drop = x->err_len + n - EXEC_STDERR_MAX;
        memmove(x->err_tail, x->err_tail + drop, x->err_len - drop);
        x->err_len -= drop;
    }
    memcpy(x->err_tail + x->err_len, data, n);
    x->err_len += n;
}

/* Reads what *fd has; closes it at EOF or on an error (a last partial stdout line counts). */
static void read_pipe(struct exec_run *x, int *fd, bool is_stdout)
{
    ssize_t n = read(*fd, x->chunk, sizeof x->chunk);
    if (n > 0) {
        if (is_stdout)
            stdout_bytes(x, x->chunk, (size_t)n);
        else
            stderr_bytes(x, x->chunk, (size_t)n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (is_stdout && !x->line_overlong && x->line_len > 0)
        stdout_line(x, x->line, x->line_len);
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
    json_t *result = NULL;
    bool result_bad = false;
    if (x->result_state == RESULT_LINE) {
        result = json_loadb(x->result, x->result_len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(result)) {
            json_decref(result);
            result = NULL;
            result_bad = true;
        }
    }

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
        stderr_description(x, text, sizeof text);
        if (text[0] == '\0')
            (void)snprintf(text, sizeof text, "The program exited with status %d.", code);
        fail(call, text, result);
    } else if (x->result_state == RESULT_TOO_LONG) {
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
        backend_call_succeed(call, x->last_progress[0] != '\0' ? x->last_progress : "Succeeded.");
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
