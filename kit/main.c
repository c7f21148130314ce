/* osbq-exec-kit: runs an exec backend's program through the contract exactly as a worker does,
 * without Redis or a gateway, for the people who write those programs (docs/backends.md,
 * "Developing a program: the kit"). Checks the command line, loads the catalog as a worker does,
 * and runs each chosen plan (kit_plan.c) through the worker's own exec backend (kit_run.c). */
#include <jansson.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "exec_watch.h"
#include "kit_options.h"
#include "kit_plan.h"
#include "kit_run.h"
#include "log.h"

/* Exit statuses (--help). */
#define EXIT_OK          0
#define EXIT_FAILED      1 /* an operation failed or was refused, or --check found a violation */
#define EXIT_USAGE       2 /* bad command line, catalog or plan */
#define EXIT_INTERRUPTED 130

/* SIGINT and SIGTERM received: the one state a signal handler writes, read through struct
 * kit's interrupts by the steps. */
static volatile sig_atomic_t interrupts;

static void on_interrupt(int sig)
{
    (void)sig;
    if (interrupts < 2)
        interrupts++;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [OPTIONS] [OPERATION...]\n"
            "Runs an exec plan's program through the exec contract exactly as an osbq worker "
            "does,\nwithout Redis or a gateway, and prints each step: the job on its stdin, "
            "its stdout\nand stderr, how it ended, and the worker's verdict. Operations: "
            "provision, update,\nbind, unbind, deprovision, fetch (what GET answers from the "
            "recorded results); none\nnamed: provision (and its polls), fetch, update, fetch, "
            "bind, fetch, unbind, deprovision,\nthen after a failure the unbind and deprovision "
            "a platform sends.\n\n"
            "Options (--name=value works too):\n"
            "  --catalog FILE         the catalog (default $OSBQ_CATALOG)\n"
            "  --plan PLAN            a plan's id, name or service/plan name (repeatable; "
            "default:\n"
            "                         every exec plan of the catalog)\n"
            "  --params JSON          provision's parameters (and update's)\n"
            "  --update-params JSON   update's parameters\n"
            "  --bind-params JSON     bind's parameters\n"
            "  --context JSON         every operation's context\n"
            "  --bind-resource JSON   bind's bind_resource\n"
            "                         (each JSON value may be @FILE: the file holding it)\n"
            "  --update-plan PLAN     update's target plan (default: the same plan)\n"
            "  --instance ID          the instance id (default: kit-<random>)\n"
            "  --binding ID           the binding id (default: kit-<random>)\n"
            "  --env NAME=VALUE       set in the program's environment over the plan's env\n"
            "                         (repeatable)\n"
            "  --check                also run the contract's error paths: every step twice "
            "(the\n"
            "                         second must converge), an unbind of a binding never "
            "bound,\n"
            "                         a deprovision of an instance whose provision never "
            "finished\n"
            "                         and of one never provisioned\n"
            "  --quiet                print no stdin, stdout and stderr lines\n"
            "  -h, --help             print this help\n"
            "  --version              print the version\n\n"
            "Programs run from the current directory with this process' environment "
            "without\nOSBQ_* variables, plus the plan's env, as a worker runs them. Output "
            "holds what the\nprogram prints, credentials included.\n\n"
            "Exit status: 0 every operation succeeded (and --check found no violation); 1 an\n"
            "operation failed or was refused, or --check found a violation; 2 bad command "
            "line,\ncatalog or plan; 130 interrupted. Reference: docs/backends.md, "
            "\"Developing a\nprogram: the kit\".\n",
            KIT_PROG);
}

static int usage_error(const char *text)
{
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", KIT_PROG, text, KIT_PROG);
    return EXIT_USAGE;
}

/* The catalog at path, with o's --env set in every exec plan's env, loaded as a worker loads
 * one (osbq_catalog_load_*). NULL after a message. */
static struct osbq_catalog *load_catalog(const char *path, const struct kit_options *o)
{
    struct osbq_catalog *catalog = NULL;
    struct osbq_error err = {0};
    if (o->env_count == 0) {
        if (osbq_catalog_load_file(path, &catalog, &err) < 0)
            fprintf(stderr, "%s: catalog %s: %s\n", KIT_PROG, path, err.text);
        return catalog;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        fprintf(stderr, "%s: catalog %s: %s (line %d column %d)\n", KIT_PROG, path, jerr.text,
                jerr.line, jerr.column);
        return NULL;
    }
    size_t i, j;
    json_t *service, *plan;
    json_array_foreach (json_object_get(root, "services"), i, service) {
        json_array_foreach (json_object_get(service, "plans"), j, plan) {
            json_t *osbq = json_object_get(plan, "osbq");
            const char *backend = json_string_value(json_object_get(osbq, "backend"));
            if (backend == NULL || strcmp(backend, "exec") != 0)
                continue;
            json_t *env = json_object_get(osbq, "env");
            if (env == NULL && json_object_set_new(osbq, "env", env = json_object()) < 0)
                env = NULL;
            for (size_t k = 0; k < o->env_count && json_is_object(env); k++) {
                const char *eq = strchr(o->env[k], '=');
                char name[256];
                (void)snprintf(name, sizeof name, "%.*s", (int)(eq - o->env[k]), o->env[k]);
                (void)json_object_set_new(env, name, json_string(eq + 1));
            }
        }
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (text == NULL || osbq_catalog_load_text(text, strlen(text), &catalog, &err) < 0)
        fprintf(stderr, "%s: catalog %s with --env: %s\n", KIT_PROG, path,
                text == NULL ? "out of memory" : err.text);
    free(text);
    return catalog;
}

/* The plan named (id, name, or service/plan); NULL after a message. */
static const struct osbq_plan *find_plan(const struct osbq_catalog *catalog, const char *name)
{
    const struct osbq_plan *found = osbq_catalog_plan(catalog, name);
    unsigned matches = found != NULL ? 1 : 0;
    const char *slash = strchr(name, '/');
    for (size_t i = 0; found == NULL && i < osbq_catalog_service_count(catalog); i++) {
        const struct osbq_service *s = osbq_catalog_service_at(catalog, i);
        for (size_t j = 0; j < s->plan_count; j++) {
            const struct osbq_plan *p = &s->plans[j];
            bool match = slash != NULL
                             ? strncmp(name, s->name, (size_t)(slash - name)) == 0 &&
                                   s->name[slash - name] == '\0' && strcmp(slash + 1, p->name) == 0
                             : strcmp(name, p->name) == 0;
            if (match && matches++ == 0)
                found = p;
        }
    }
    if (matches > 1 && osbq_catalog_plan(catalog, name) == NULL) {
        fprintf(stderr,
                "%s: --plan %s: several services have a plan of that name; name it "
                "service/plan or by its id\n",
                KIT_PROG, name);
        return NULL;
    }
    if (found == NULL) {
        fprintf(stderr, "%s: --plan %s: no such plan in the catalog\n", KIT_PROG, name);
        return NULL;
    }
    if (strcmp(found->backend, "exec") != 0) {
        fprintf(stderr, "%s: --plan %s: its backend is %s; the kit runs exec plans\n", KIT_PROG,
                name, found->backend);
        return NULL;
    }
    return found;
}

/* The option's JSON object as compact text in *out (NULL when arg is NULL). -1 after a
 * message. */
static int json_text(const char *what, const char *arg, char **out)
{
    *out = NULL;
    if (arg == NULL)
        return 0;
    json_t *value = NULL;
    char err[512];
    if (kit_json_arg(what, arg, &value, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", KIT_PROG, err);
        return -1;
    }
    *out = json_dumps(value, JSON_COMPACT);
    json_decref(value);
    return *out != NULL ? 0 : -1;
}

/* Runs every chosen plan; returns the exit status. */
static int run_plans(const struct kit_options *o, const struct osbq_plan *const *plans,
                     size_t plan_count, const struct osbq_plan *update_plan,
                     const struct kit_inputs *in)
{
    struct osbq_error err = {0};
    /* The watch's thread must not take the signals: they interrupt this thread's waits. */
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    (void)pthread_sigmask(SIG_BLOCK, &stops, &old);
    struct exec_watch *watch = exec_watch_new(1, &err);
    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (watch == NULL) {
        fprintf(stderr, "%s: cannot start the exec watch: %s\n", KIT_PROG, err.text);
        return EXIT_FAILED;
    }
    struct kit kit = {.watch = watch, .out = stdout, .quiet = o->quiet, .interrupts = &interrupts};
    unsigned failed = 0, succeeded = 0;
    for (size_t i = 0; i < plan_count && interrupts == 0; i++) {
        struct kit_tally t = kit_plan_run(&kit, o, in, plans[i], update_plan);
        failed += t.failed;
        succeeded += t.succeeded;
    }
    exec_watch_destroy(&watch);
    printf("%s: %u operations succeeded, %u failed", KIT_PROG, succeeded, failed);
    if (o->check)
        printf("; %u contract violations", kit.violations);
    printf("\n");
    if (interrupts > 0)
        return EXIT_INTERRUPTED;
    return failed > 0 || kit.violations > 0 ? EXIT_FAILED : EXIT_OK;
}

/* The plans to run (--plan, else every exec plan of the catalog) into plans (*count) and the
 * --update-plan (*update_plan, NULL when none); false after saying why on stderr. */
static bool choose_plans(const struct osbq_catalog *catalog, const char *path,
                         const struct kit_options *o, const struct osbq_plan **plans, size_t *count,
                         const struct osbq_plan **update_plan)
{
    *count = 0;
    *update_plan = NULL;
    for (size_t i = 0; i < o->plan_count; i++)
        if ((plans[(*count)++] = find_plan(catalog, o->plans[i])) == NULL)
            return false;
    for (size_t i = 0; o->plan_count == 0 && i < osbq_catalog_service_count(catalog); i++) {
        const struct osbq_service *s = osbq_catalog_service_at(catalog, i);
        for (size_t j = 0; j < s->plan_count && *count < KIT_PLANS_MAX; j++)
            if (strcmp(s->plans[j].backend, "exec") == 0)
                plans[(*count)++] = &s->plans[j];
    }
    if (*count == 0) {
        fprintf(stderr, "%s: catalog %s: no plan uses the exec backend\n", KIT_PROG, path);
        return false;
    }
    if (o->update_plan != NULL && (*update_plan = find_plan(catalog, o->update_plan)) == NULL)
        return false;
    for (size_t i = 0; *update_plan != NULL && i < *count; i++) {
        if (plans[i]->service != (*update_plan)->service) {
            fprintf(stderr, "%s: --update-plan %s is not a plan of %s's service\n", KIT_PROG,
                    o->update_plan, plans[i]->name);
            return false;
        }
    }
    return true;
}

/* Loads the catalog and runs the chosen plans with the options' inputs. The exit status. */
static int run(const struct kit_options *o, const char *path)
{
    int status = EXIT_USAGE;
    char *texts[5] = {NULL};
    const struct osbq_plan *plans[KIT_PLANS_MAX];
    size_t plan_count = 0;
    const struct osbq_plan *update_plan = NULL;
    struct osbq_catalog *catalog = load_catalog(path, o);
    if (catalog != NULL && choose_plans(catalog, path, o, plans, &plan_count, &update_plan) &&
        json_text("--params", o->parameters, &texts[0]) == 0 &&
        json_text("--update-params",
                  o->update_parameters != NULL ? o->update_parameters : o->parameters,
                  &texts[1]) == 0 &&
        json_text("--bind-params", o->bind_parameters, &texts[2]) == 0 &&
        json_text("--context", o->context, &texts[3]) == 0 &&
        json_text("--bind-resource", o->bind_resource, &texts[4]) == 0) {
        struct kit_inputs in = {texts[0], texts[1], texts[2], texts[3], texts[4]};
        status = run_plans(o, plans, plan_count, update_plan, &in);
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        free(texts[i]);
    osbq_catalog_destroy(&catalog);
    return status;
}

int main(int argc, char **argv)
{
    struct kit_options o;
    char err[512];
    if (kit_options_parse(argc, argv, &o, err, sizeof err) < 0)
        return usage_error(err);
    if (o.help) {
        usage(stdout);
        return EXIT_OK;
    }
    if (o.version) {
        printf("%s %s\n", KIT_PROG, OSBQ_VERSION);
        return EXIT_OK;
    }
    const char *path = o.catalog != NULL ? o.catalog : getenv("OSBQ_CATALOG");
    if (path == NULL || path[0] == '\0')
        return usage_error("name the catalog with --catalog FILE (or OSBQ_CATALOG)");
    if (sodium_init() < 0) {
        fprintf(stderr, "%s: libsodium cannot start\n", KIT_PROG);
        return EXIT_FAILED;
    }
    /* As a worker: a program that leaves its stdin unread gives the writer EPIPE. Its warnings
     * (a program that cannot start) go to stderr as its log lines. */
    signal(SIGPIPE, SIG_IGN);
    osbq_log_init(KIT_PROG, OSBQ_LOG_WARN);
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
    return run(&o, path);
}
