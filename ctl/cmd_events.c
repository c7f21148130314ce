/* events: the audit trail (docs/events.md), oldest first, filtered by time, tenant and
 * instance; --follow waits for new ones. A line each: the time, the event and its fields as
 * name=value, or with --json one JSON object a line (for a log pipeline). */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "store_events.h"

/* Events read per call, and how long --follow waits in one call (below OSBQ_REDIS_TIMEOUT_MS's
 * smallest value, so the wait is never taken for a dead connection). */
#define EVENTS_STEP     500
#define FOLLOW_BLOCK_MS 1000

/* Set by SIGINT or SIGTERM: --follow ends after the wait in progress. */
static volatile sig_atomic_t follow_stopped;

static void stop_following(int signo)
{
    (void)signo;
    follow_stopped = 1;
}

/* Whether event e passes --tenant and --instance. */
static bool event_matches(const struct ctl *ctl, const struct osbq_event *e)
{
    const char *tenant = osbq_fields_get(&e->fields, "tenant");
    const char *instance = osbq_fields_get(&e->fields, "instance");
    return (ctl->opt.tenant == NULL || (tenant != NULL && strcmp(tenant, ctl->opt.tenant) == 0)) &&
           (ctl->opt.instance == NULL ||
            (instance != NULL && strcmp(instance, ctl->opt.instance) == 0));
}

/* Prints e: a JSON object on one line, or the time, the event and name=value pairs (values
 * with a space or a quote written as JSON strings). false when stdout failed. */
static bool event_print(const struct ctl *ctl, const struct osbq_event *e)
{
    char when[FORMAT_TEXT_MAX];
    (void)format_time(e->ms, true, when, sizeof when);
    if (ctl->opt.json) {
        json_t *o = json_pack("{s:s, s:s}", "id", e->id, "time", when);
        for (size_t i = 0; o != NULL && i < e->fields.count; i++)
            if (json_object_set_new(o, e->fields.names[i],
                                    format_json_string(e->fields.values[i])) < 0) {
                json_decref(o);
                o = NULL;
            }
        char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        bool ok = text != NULL && printf("%s\n", text) >= 0;
        free(text);
        return ok;
    }
    const char *kind = osbq_fields_get(&e->fields, "event");
    bool ok = printf("%s %s", when, kind != NULL ? kind : "?") >= 0;
    for (size_t i = 0; ok && i < e->fields.count; i++) {
        const char *name = e->fields.names[i], *value = e->fields.values[i];
        if (strcmp(name, "event") == 0)
            continue;
        if (strpbrk(value, " \"\t\n") == NULL) {
            ok = printf(" %s=%s", name, value) >= 0;
            continue;
        }
        json_t *s = format_json_string(value);
        char *quoted = s != NULL ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        ok = quoted != NULL && printf(" %s=%s", name, quoted) >= 0;
        free(quoted);
        json_decref(s);
    }
    return ok && putchar('\n') != EOF;
}

int cmd_events(struct ctl *ctl)
{
    int64_t now_ms = osbq_store_now_ms(), since_ms = 0, until_ms = 0;
    const char *bad = NULL;
    if (ctl->opt.since != NULL && format_parse_time(ctl->opt.since, now_ms, &since_ms) < 0)
        bad = "--since";
    if (ctl->opt.until != NULL && format_parse_time(ctl->opt.until, now_ms, &until_ms) < 0)
        bad = "--until";
    if (bad != NULL) {
        ctl_say("%s: \"%s\" is not a time (2026-12-01T10:00:00Z, epoch ms, or an age such as "
                "24h)",
                bad, strcmp(bad, "--since") == 0 ? ctl->opt.since : ctl->opt.until);
        return CTL_EXIT_USAGE;
    }
    /* Stream ids are "<ms>-<seq>": the entries after "<since - 1>-<max>" are those from since. */
    char after[48] = "0";
    if (since_ms > 0)
        (void)snprintf(after, sizeof after, "%lld-18446744073709551615", (long long)since_ms - 1);
    if (ctl->opt.follow) {
        struct sigaction sa = {.sa_handler = stop_following};
        (void)sigaction(SIGINT, &sa, NULL);
        (void)sigaction(SIGTERM, &sa, NULL);
    }
    (void)setvbuf(stdout, NULL, _IOLBF, 0);
    struct osbq_error err = {0};
    bool caught_up = false;
    while (!follow_stopped) {
        struct osbq_event *events = NULL;
        size_t n = 0;
        int block = caught_up && ctl->opt.follow ? FOLLOW_BLOCK_MS : 0;
        if (osbq_store_events_read(ctl->store, after, until_ms, EVENTS_STEP, block, &events, &n,
                                   &err) < 0) {
            if (follow_stopped)
                break;
            return ctl_fail_store("reading the events", &err);
        }
        bool ok = true;
        for (size_t i = 0; ok && i < n; i++) {
            if (event_matches(ctl, &events[i]))
                ok = event_print(ctl, &events[i]);
            (void)snprintf(after, sizeof after, "%s", events[i].id);
        }
        osbq_events_free(events, n);
        if (!ok)
            return ctl_fail("cannot write the events");
        if (n < EVENTS_STEP) {
            if (!ctl->opt.follow)
                break;
            caught_up = true;
        }
    }
    return CTL_EXIT_OK;
}
