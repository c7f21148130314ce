/* The sim backend: pretends to do each operation, taking the time the plan's settings say, so
 * platforms and tests can exercise every flow without real infrastructure. A duration is a due
 * time, not a sleep: the first step answers in progress at once and a later step (a poll, on any
 * worker) ends the operation once the time has come. */
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "clock.h"
#include "log.h"
#include "secrets.h"
#include "store.h"

/* Progress reports of a blocking operation: one every tenth of its duration. */
#define SIM_REPORTS 10
/* How often a hanging operation (hang_on) looks whether the process is exiting. */
#define SIM_HANG_STEP_MS 100
/* How much CPU time a step burning cpu_ms spends between two looks at its call (cancelled, and
 * the lease renewed when due), in ns. */
#define SIM_CPU_SLICE_NS 5000000L

#define SIM_FAIL_TEXT    "Simulated failure requested by the sim_fail parameter."
#define SIM_FAIL_ON_TEXT "Simulated failure requested by the plan's fail_on setting."
#define SIM_NO_MEMORY    "The broker ran out of memory."

/* Where a sim binding claims its service listens: .invalid never resolves (RFC 6761), so an
 * application that really tries to connect fails at once instead of reaching someone else. */
#define SIM_HOST      "sim.osbq.invalid"
#define SIM_PORT      6379
#define SIM_PORT_TEXT "6379"
/* What a binding's other fields start with; the binding id ends each. 6514 is syslog over TLS
 * (RFC 5425); /var/vcap/data is where Cloud Foundry keeps an application's mounts. */
#define SIM_SYSLOG_PREFIX "syslog-tls://" SIM_HOST ":6514/"
#define SIM_ROUTE_PREFIX  "https://" SIM_HOST "/route/"
#define SIM_MOUNT_PREFIX  "/var/vcap/data/"

/* Random bytes behind a binding's username (16 hex digits) and password (32 base64url
 * characters, 192 bits: beyond guessing). */
#define SIM_USER_BYTES     8
#define SIM_PASSWORD_BYTES 24

/* What sim says about one kind of operation. */
struct sim_kind {
    const char *duration_key; /* the plan setting holding its duration in ms */
    const char *doing;        /* progress text before the percentage */
    const char *done;         /* description of a success */
    bool usable_if_failed;    /* instance_usable of a failure: a failed provision leaves no
                               * instance; any other failed sim operation changed nothing */
};

static const struct sim_kind provisioning = {"provision_ms", "Provisioning", "Provisioned.", false};
static const struct sim_kind updating = {"update_ms", "Updating", "Updated.", true};
static const struct sim_kind deprovisioning = {"deprovision_ms", "Deprovisioning", "Deprovisioned.",
                                               true};
static const struct sim_kind binding_kind = {"bind_ms", "Binding", "Bound.", true};
static const struct sim_kind unbinding = {"unbind_ms", "Unbinding", "Unbound.", true};

/* The plan's duration setting in ms; 0 when absent (the catalog checked its range). */
static int64_t duration_ms(const struct backend_call *call, const char *key)
{
    json_int_t ms = json_integer_value(json_object_get(call->plan->settings, key));
    return ms > 0 ? (int64_t)ms : 0;
}

/* How often a waiting operation is polled: the parameters' sim_poll_ms, else the plan's
 * poll_ms; 0 (neither, or not a positive integer): once, when it is due. */
static int64_t poll_ms(const struct backend_call *call)
{
    json_int_t ms = json_integer_value(json_object_get(call->parameters, "sim_poll_ms"));
    if (ms <= 0)
        ms = json_integer_value(json_object_get(call->plan->settings, "poll_ms"));
    return ms > 0 ? (int64_t)ms : 0;
}

/* True when the plan setting key (fail_on, crash_on, hang_on: kinds separated by commas,
 * blanks around them allowed) names the call's kind. Other words are ignored: these settings
 * only add faults. */
static bool plan_lists_kind(const struct backend_call *call, const char *key)
{
    const char *list = json_string_value(json_object_get(call->plan->settings, key));
    const char *name = osbq_job_kind_name(call->job->kind);
    if (list == NULL || name == NULL)
        return false;
    size_t name_len = strlen(name);
    for (const char *p = list;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
            last--;
        if ((size_t)(last - p) == name_len && memcmp(p, name, name_len) == 0)
            return true;
        if (*end == '\0')
            return false;
        p = end + 1;
    }
}

static bool exiting(struct backend_call *call)
{
    return call->exiting != NULL && call->exiting(call);
}

/* hang_on: a backend that never finishes and ignores cancellation, as a stuck real one would,
 * while it keeps its lease alive (it sits in wait) until it is cancelled. Only the process's
 * exit ends it: -1, nothing recorded. */
static int hang(struct backend_call *call)
{
    log_warnx("operation %s: the plan's hang_on names %s, hanging until the worker exits "
              "(test-only setting)",
              call->job->operation_id, osbq_job_kind_name(call->job->kind));
    while (!exiting(call)) {
        /* A cancelled call's wait returns at once: sleep instead, ignoring the cancellation. */
        if (!call->wait(call, SIM_HANG_STEP_MS))
            osbq_clock_sleep_ms(SIM_HANG_STEP_MS);
    }
    return -1;
}

/* The calling thread's CPU time in ns (not the process's: runner threads burn side by side). */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* cpu_ms: work that needs a core (benchmark setting: backend-bound steps). Spins until this
 * thread has used cpu_ms of CPU time since it started, looking at the call every
 * SIM_CPU_SLICE_NS of it: a wait of 0 ms renews the lease when due and says whether the call
 * was cancelled. Returns 0 once the CPU is spent, -1 when the call is cancelled. */
static int burn_cpu(struct backend_call *call)
{
    int64_t ms = duration_ms(call, "cpu_ms");
    if (ms == 0)
        return 0;
    int64_t start = thread_cpu_ns();
    int64_t end = start + ms * 1000000;
    int64_t next_look = start + SIM_CPU_SLICE_NS;
    volatile uint64_t spin = 0;
    for (int64_t now = start; now < end; now = thread_cpu_ns()) {
        for (int i = 0; i < 1000; i++)
            spin = spin * 6364136223846793005ULL + 1442695040888963407ULL;
        if (now >= next_look) {
            if (!call->wait(call, 0))
                return -1;
            next_look = now + SIM_CPU_SLICE_NS;
        }
    }
    return 0;
}

/* blocking: the old way, for tests and for comparing with it. Spends the duration inside the
 * step, holding its runner thread, in SIM_REPORTS waits with a progress report after each.
 * Returns 0 once the time passed, -1 as soon as the call is cancelled. */
static int spend_in_step(struct backend_call *call, const struct sim_kind *kind)
{
    int64_t total = duration_ms(call, kind->duration_key);
    int64_t elapsed = 0;
    for (int report = 1; report <= SIM_REPORTS; report++) {
        /* Each wait ends at its share of the total, so the integer waits add up to it. */
        int64_t until = total * report / SIM_REPORTS;
        if (!call->wait(call, until - elapsed))
            return -1;
        elapsed = until;
        char text[64];
        (void)snprintf(text, sizeof text, "%s (%d%%)", kind->doing, report * 100 / SIM_REPORTS);
        call->progress(call, text);
    }
    return 0;
}

/* Answers in progress while the operation's end (resume's until_ms, or now + the duration on
 * its first step) is ahead: the next step due then, or after poll_ms when that is sooner, with
 * the share of the duration spent as the progress text. Returns true when it did (the step is
 * over), false when the operation ends in this step. */
static bool still_waiting(struct backend_call *call, const struct sim_kind *kind)
{
    int64_t total = duration_ms(call, kind->duration_key);
    /* Wall-clock epoch ms: a later step may run on another worker, so due times are absolute. */
    int64_t now = osbq_store_now_ms();
    int64_t until;
    if (call->resume == NULL) {
        if (total == 0)
            return false;
        until = now + total;
    } else {
        json_int_t saved = json_integer_value(json_object_get(call->resume, "until_ms"));
        until = saved > 0 ? (int64_t)saved : now;
    }
    if (now >= until)
        return false;
    int64_t left = until - now;
    int64_t after = poll_ms(call);
    if (after <= 0 || after > left)
        after = left;
    /* The plan's duration may have changed since the first step: never past 99% here. */
    int64_t spent = total > left ? (total - left) * 100 / total : 0;
    char text[64];
    (void)snprintf(text, sizeof text, "%s (%d%%)", kind->doing, (int)(spent > 99 ? 99 : spent));
    (void)backend_call_wait_for(call, text, after,
                                json_pack("{s:I}", "until_ms", (json_int_t)until));
    return true;
}

/* One step of the operation: in progress until its duration has passed, then succeeds or,
 * when the plan's fail_on or the parameters ask for it, fails. Returns 0 with the outcome in
 * call->result, or -1 when the call is cancelled. The plan's blocking spends the duration in
 * one step instead, and its cpu_ms burns that much CPU first in every step (test and benchmark
 * settings). crash_on aborts the process first thing, hang_on never returns until the process
 * exits (both test-only, on every step). */
static int simulate(struct backend_call *call, const struct sim_kind *kind)
{
    if (plan_lists_kind(call, "crash_on")) {
        /* The worker dies as if the backend crashed it: its lease runs out and the recovery
         * loop resends the job, until the operation's attempts are used up. */
        log_errorx("operation %s: the plan's crash_on names %s, aborting the worker (test-only "
                   "setting)",
                   call->job->operation_id, osbq_job_kind_name(call->job->kind));
        abort();
    }
    if (plan_lists_kind(call, "hang_on"))
        return hang(call);
    if (burn_cpu(call) < 0)
        return -1;
    if (json_is_true(json_object_get(call->plan->settings, "blocking"))) {
        if (spend_in_step(call, kind) < 0)
            return -1;
    } else if (still_waiting(call, kind)) {
        return 0;
    }
    /* A cancelled call (lease lost, the worker stopping) gives no outcome. */
    if (call->cancelled(call))
        return -1;
    /* Repeating the same request fails the same way: never repeatable. */
    if (plan_lists_kind(call, "fail_on")) {
        backend_call_fail(call, SIM_FAIL_ON_TEXT, kind->usable_if_failed, false);
        return 0;
    }
    if (json_is_true(json_object_get(call->parameters, "sim_fail"))) {
        backend_call_fail(call, SIM_FAIL_TEXT, kind->usable_if_failed, false);
        return 0;
    }
    backend_call_succeed(call, kind->done);
    return 0;
}

static int sim_provision(struct backend_call *call)
{
    if (simulate(call, &provisioning) < 0)
        return -1;
    if (!call->result.succeeded || call->result.in_progress)
        return 0;
    /* The same URL the gateway promised in its first answer (the spec requires that). */
    char *url = osbq_plan_dashboard_url(call->plan, call->job->instance_id);
    if (url != NULL && backend_call_set_dashboard_url(call, "%s", url) < 0)
        backend_call_fail(call, SIM_NO_MEMORY, false, false);
    free(url);
    return 0;
}

static int sim_update(struct backend_call *call)
{
    return simulate(call, &updating);
}

static int sim_deprovision(struct backend_call *call)
{
    return simulate(call, &deprovisioning);
}

/* ---- bindings ---- */

/* True when the service's "requires" lists permission. */
static bool service_requires(const struct backend_call *call, const char *permission)
{
    const char *const *list = call->plan->service->requires_list;
    for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
        if (strcmp(list[i], permission) == 0)
            return true;
    }
    return false;
}

/* True when the job's bind_resource carries a route (a non-empty string). */
static bool has_route(const struct backend_call *call)
{
    if (call->job->bind_resource == NULL)
        return false;
    json_t *resource = json_loads(call->job->bind_resource, 0, NULL);
    json_t *route = json_object_get(resource, "route");
    bool has = json_is_string(route) && json_string_length(route) > 0;
    json_decref(resource);
    return has;
}

/* The id percent-encoded for one URL path segment (RFC 3986 unreserved characters kept), or
 * NULL when out of memory; caller frees. Ids may hold any printable byte but '/', and "." or
 * ".." would be read as a dot-segment (a path like /var/vcap/data/.. escapes its directory),
 * so an id made only of dots has its dots encoded too. */
static char *escape_segment(const char *id)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(id);
    bool dots_only = strspn(id, ".") == len;
    char *out = malloc(3 * len + 1);
    if (out == NULL)
        return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        bool keep = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '~' ||
                    (*p == '.' && !dots_only);
        if (keep) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 0xf];
        }
    }
    *o = '\0';
    return out;
}

/* a, b and c joined, or NULL when out of memory; caller frees. */
static char *concat3(const char *a, const char *b, const char *c)
{
    size_t len = strlen(a) + strlen(b) + strlen(c) + 1;
    char *out = malloc(len);
    if (out != NULL)
        (void)snprintf(out, len, "%s%s%s", a, b, c);
    return out;
}

/* Fresh credentials for the call's binding: a random username and password and the URI
 * holding both, from libsodium's CSPRNG (the kernel's getrandom). Fresh on every call: the
 * store keeps the first result recorded for an operation and answers re-PUTs and fetches from
 * it, so a rerun after a crash never shows a second set. NULL when out of memory or an id is
 * not UTF-8. */
static json_t *sim_credentials(const struct backend_call *call)
{
    const struct osbq_job *job = call->job;
    unsigned char raw_user[SIM_USER_BYTES];
    unsigned char raw_password[SIM_PASSWORD_BYTES];
    char user_hex[2 * SIM_USER_BYTES + 1];
    char username[2 + sizeof user_hex];
    char password[sodium_base64_ENCODED_LEN(SIM_PASSWORD_BYTES,
                                            sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    randombytes_buf(raw_user, sizeof raw_user);
    randombytes_buf(raw_password, sizeof raw_password);
    (void)sodium_bin2hex(user_hex, sizeof user_hex, raw_user, sizeof raw_user);
    (void)snprintf(username, sizeof username, "b-%s", user_hex);
    (void)sodium_bin2base64(password, sizeof password, raw_password, sizeof raw_password,
                            sodium_base64_VARIANT_URLSAFE_NO_PADDING);

    json_t *credentials = NULL;
    char *uri = NULL;
    char *key_prefix = concat3(job->instance_id, ":", "");
    char *database = escape_segment(job->instance_id);
    if (key_prefix == NULL || database == NULL)
        goto out;
    /* base64url and hex need no escaping inside the URI's userinfo. */
    size_t uri_len = strlen("sim://:@" SIM_HOST ":" SIM_PORT_TEXT "/") + strlen(username) +
                     strlen(password) + strlen(database) + 1;
    uri = malloc(uri_len);
    if (uri == NULL)
        goto out;
    (void)snprintf(uri, uri_len, "sim://%s:%s@" SIM_HOST ":" SIM_PORT_TEXT "/%s", username,
                   password, database);
    credentials =
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "host", SIM_HOST, "port", SIM_PORT, "username",
                  username, "password", password, "uri", uri, "key_prefix", key_prefix);
    /* A rotation: a real backend would carry the predecessor's state (users, grants) over;
     * sim has none, so it only says where the binding came from. */
    if (credentials != NULL && job->predecessor_binding_id != NULL) {
        json_t *from = json_string(job->predecessor_binding_id);
        if (json_object_set_new(credentials, "rotated_from", from) < 0) {
            json_decref(credentials);
            credentials = NULL;
        }
    }

out:
    /* Secrets: no copy outlives this call but the JSON's own. */
    sodium_memzero(raw_user, sizeof raw_user);
    sodium_memzero(raw_password, sizeof raw_password);
    sodium_memzero(password, sizeof password);
    osbq_secrets_free_text(uri);
    free(database);
    free(key_prefix);
    return credentials;
}

/* Sets key to "<prefix><escaped binding id>" in binding. 0, or -1 when out of memory. */
static int set_binding_url(json_t *binding, const char *key, const char *prefix,
                           const char *escaped_id)
{
    char *url = concat3(prefix, escaped_id, "");
    if (url == NULL)
        return -1;
    int rc = json_object_set_new(binding, key, json_string(url));
    free(url);
    return rc;
}

/* The binding a successful sim bind gives: credentials and endpoints always, and what the
 * service's "requires" permits (a platform may reject a syslog_drain_url, route_service_url
 * or volume_mounts the catalog does not announce). NULL when out of memory, or when an id is
 * not UTF-8 (ids may hold any byte but '/' and controls, JSON strings may not). */
static json_t *sim_binding(const struct backend_call *call)
{
    const char *binding_id = call->job->binding_id;
    json_t *binding = json_object();
    json_t *credentials = sim_credentials(call);
    char *escaped = escape_segment(binding_id);
    if (binding == NULL || credentials == NULL || escaped == NULL)
        goto fail;
    /* set_new takes the reference whether or not it succeeds. */
    int rc = json_object_set_new(binding, "credentials", credentials);
    credentials = NULL;
    if (rc < 0)
        goto fail;
    if (json_object_set_new(binding, "endpoints",
                            json_pack("[{s:s, s:[s], s:s}]", "host", SIM_HOST, "ports",
                                      SIM_PORT_TEXT, "protocol", "tcp")) < 0)
        goto fail;
    if (service_requires(call, "syslog_drain") &&
        set_binding_url(binding, "syslog_drain_url", SIM_SYSLOG_PREFIX, escaped) < 0)
        goto fail;
    if (service_requires(call, "route_forwarding") && has_route(call) &&
        set_binding_url(binding, "route_service_url", SIM_ROUTE_PREFIX, escaped) < 0)
        goto fail;
    if (service_requires(call, "volume_mount")) {
        char *dir = concat3(SIM_MOUNT_PREFIX, escaped, "");
        json_t *mounts =
            dir == NULL ? NULL
                        : json_pack("[{s:s, s:s, s:s, s:s, s:{s:s, s:{}}}]", "driver", "sim",
                                    "container_dir", dir, "mode", "rw", "device_type", "shared",
                                    "device", "volume_id", binding_id, "mount_config");
        free(dir);
        if (json_object_set_new(binding, "volume_mounts", mounts) < 0)
            goto fail;
    }
    free(escaped);
    return binding;

fail:
    json_decref(credentials);
    json_decref(binding);
    free(escaped);
    return NULL;
}

static int sim_bind(struct backend_call *call)
{
    if (simulate(call, &binding_kind) < 0)
        return -1;
    if (!call->result.succeeded || call->result.in_progress)
        return 0;
    /* Idempotent, so safe on every call; the worker has done it already, tests may not. */
    if (sodium_init() < 0) {
        backend_call_fail(call, "The broker has no source of random numbers.", true, false);
        return 0;
    }
    if (backend_call_set_binding(call, sim_binding(call)) < 0)
        backend_call_fail(call, "The sim backend could not build the binding's credentials.", true,
                          false);
    return 0;
}

static int sim_unbind(struct backend_call *call)
{
    return simulate(call, &unbinding);
}

/* sim keeps no state of its own but the due time in its resume: running a step twice gives the
 * same answer (a bind's credentials differ, but only the first recorded result is ever kept),
 * which is all its idempotency takes. */
const struct backend backend_sim = {
    .name = "sim",
    .provision = sim_provision,
    .update = sim_update,
    .deprovision = sim_deprovision,
    .bind = sim_bind,
    .unbind = sim_unbind,
};
