/* Unit tests for common/metrics.c: the exact text exposition of each metric type, escaping,
 * number formatting, what osbq_metrics_add refuses, render hooks, and writers racing a render. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_destroy.h"
#include "metrics.h"

#define WRITERS       4
#define WRITER_ROUNDS 100000

/* Renders m and checks the whole text and its reported length. */
static void assert_render(struct osbq_metrics *m, const char *expected)
{
    size_t len = 0;
    char *text = osbq_metrics_render(m, &len);
    assert_non_null(text);
    assert_string_equal(text, expected);
    assert_int_equal(len, strlen(expected));
    free(text);
}

/* The rendered value of a one-series gauge family named g with no labels. */
static void assert_gauge_text(struct osbq_metrics *m, struct osbq_series *s, double v,
                              const char *expected_value)
{
    char expected[256];
    osbq_series_set(s, v);
    (void)snprintf(expected, sizeof expected, "# HELP g Gauge.\n# TYPE g gauge\ng %s\n",
                   expected_value);
    assert_render(m, expected);
}

static void test_empty_registry_renders_nothing(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    assert_non_null(m);
    assert_render(m, "");
    assert_destroy_twice(osbq_metrics_destroy, m);
    osbq_metrics_destroy(NULL);
}

static void test_counter_without_labels(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f =
        osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "osbq_jobs_total", "Jobs run.", NULL, 0, NULL, 0);
    assert_non_null(f);
    assert_render(m, "# HELP osbq_jobs_total Jobs run.\n# TYPE osbq_jobs_total counter\n");

    struct osbq_series *s = osbq_metric_series(f, NULL);
    assert_non_null(s);
    assert_ptr_equal(osbq_metric_series(f, NULL), s);
    osbq_series_add(s, 1);
    osbq_series_add(s, 2);
    osbq_series_add(s, -5);  /* ignored: counters only go up */
    osbq_series_add(s, NAN); /* ignored */
    osbq_series_set(s, 100); /* ignored: not a gauge */
    osbq_series_observe(s, 1);
    assert_true(osbq_series_value(s) == 3);
    assert_render(m, "# HELP osbq_jobs_total Jobs run.\n"
                     "# TYPE osbq_jobs_total counter\n"
                     "osbq_jobs_total 3\n");
    osbq_series_add(s, 0.5);
    assert_render(m, "# HELP osbq_jobs_total Jobs run.\n"
                     "# TYPE osbq_jobs_total counter\n"
                     "osbq_jobs_total 3.5\n");
    osbq_metrics_destroy(&m);
}

static void test_counter_with_labels(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f =
        osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "http_requests_total", "HTTP requests.",
                         OSBQ_LABELS("method", "code"), 2, NULL, 0);
    assert_non_null(f);
    struct osbq_series *get = osbq_metric_series(f, OSBQ_LABELS("GET", "200"));
    struct osbq_series *put = osbq_metric_series(f, OSBQ_LABELS("PUT", "201"));
    assert_non_null(get);
    assert_non_null(put);
    assert_ptr_not_equal(get, put);
    /* Same values, different split: a distinct series. */
    struct osbq_series *odd = osbq_metric_series(f, OSBQ_LABELS("GET2", "00"));
    assert_ptr_not_equal(odd, get);
    assert_ptr_equal(osbq_metric_series(f, OSBQ_LABELS("GET", "200")), get);
    osbq_series_add(get, 1);
    osbq_series_add(get, 1);
    osbq_series_add(put, 7);
    assert_render(m, "# HELP http_requests_total HTTP requests.\n"
                     "# TYPE http_requests_total counter\n"
                     "http_requests_total{method=\"GET\",code=\"200\"} 2\n"
                     "http_requests_total{method=\"PUT\",code=\"201\"} 7\n"
                     "http_requests_total{method=\"GET2\",code=\"00\"} 0\n");
    osbq_metrics_destroy(&m);
}

static void test_gauge_set_and_add_negative(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f = osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "queue_depth", "Queued jobs.",
                                             OSBQ_LABELS("queue"), 1, NULL, 0);
    assert_non_null(f);
    struct osbq_series *a = osbq_metric_series(f, OSBQ_LABELS("a"));
    struct osbq_series *b = osbq_metric_series(f, OSBQ_LABELS("b"));
    osbq_series_set(a, 5);
    osbq_series_add(a, -7.5);
    osbq_series_add(b, -3);
    osbq_series_observe(b, 100); /* ignored: not a histogram */
    assert_true(osbq_series_value(a) == -2.5);
    assert_render(m, "# HELP queue_depth Queued jobs.\n"
                     "# TYPE queue_depth gauge\n"
                     "queue_depth{queue=\"a\"} -2.5\n"
                     "queue_depth{queue=\"b\"} -3\n");
    osbq_metrics_destroy(&m);
}

static void test_histogram_custom_buckets(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    const double bounds[] = {0.25, 1, 2.5};
    struct osbq_metric *f =
        osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "job_seconds", "Job durations.",
                         OSBQ_LABELS("op"), 1, bounds, sizeof bounds / sizeof bounds[0]);
    struct osbq_metric *plain =
        osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "wait_seconds", "Waits.", NULL, 0, bounds, 1);
    assert_non_null(f);
    assert_non_null(plain);
    struct osbq_series *s = osbq_metric_series(f, OSBQ_LABELS("provision"));
    osbq_series_observe(s, 0.25);  /* on the first bound: counted in le="0.25" */
    osbq_series_observe(s, 0.125); /* below the first bound */
    osbq_series_observe(s, 1);     /* on a bound */
    osbq_series_observe(s, 3);     /* above the last bound: +Inf only */
    osbq_series_observe(s, 100);
    osbq_series_add(s, 5); /* ignored */
    osbq_series_set(s, 5); /* ignored */
    assert_true(osbq_series_value(s) == 5);
    osbq_series_observe(osbq_metric_series(plain, NULL), 0.5);
    assert_render(m, "# HELP job_seconds Job durations.\n"
                     "# TYPE job_seconds histogram\n"
                     "job_seconds_bucket{op=\"provision\",le=\"0.25\"} 2\n"
                     "job_seconds_bucket{op=\"provision\",le=\"1\"} 3\n"
                     "job_seconds_bucket{op=\"provision\",le=\"2.5\"} 3\n"
                     "job_seconds_bucket{op=\"provision\",le=\"+Inf\"} 5\n"
                     "job_seconds_sum{op=\"provision\"} 104.375\n"
                     "job_seconds_count{op=\"provision\"} 5\n"
                     "# HELP wait_seconds Waits.\n"
                     "# TYPE wait_seconds histogram\n"
                     "wait_seconds_bucket{le=\"0.25\"} 0\n"
                     "wait_seconds_bucket{le=\"+Inf\"} 1\n"
                     "wait_seconds_sum 0.5\n"
                     "wait_seconds_count 1\n");
    osbq_metrics_destroy(&m);
}

static void test_latency_bucket_bounds_format(void **state)
{
    (void)state;
    assert_int_equal(osbq_metrics_latency_buckets_count, 16);
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f =
        osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "lat", "Latency.", NULL, 0,
                         osbq_metrics_latency_buckets, osbq_metrics_latency_buckets_count);
    assert_non_null(f);
    osbq_series_observe(osbq_metric_series(f, NULL), 0.003);
    char *text = osbq_metrics_render(m, NULL);
    assert_non_null(text);
    const char *lines[] = {
        "lat_bucket{le=\"0.0005\"} 0\n",
        "lat_bucket{le=\"0.001\"} 0\n",
        "lat_bucket{le=\"0.0025\"} 0\n",
        "lat_bucket{le=\"0.005\"} 1\n",
        "lat_bucket{le=\"0.01\"} 1\n",
        "lat_bucket{le=\"0.025\"} 1\n",
        "lat_bucket{le=\"0.05\"} 1\n",
        "lat_bucket{le=\"0.1\"} 1\n",
        "lat_bucket{le=\"0.25\"} 1\n",
        "lat_bucket{le=\"0.5\"} 1\n",
        "lat_bucket{le=\"1\"} 1\n",
        "lat_bucket{le=\"2.5\"} 1\n",
        "lat_bucket{le=\"5\"} 1\n",
        "lat_bucket{le=\"10\"} 1\n",
        "lat_bucket{le=\"30\"} 1\n",
        "lat_bucket{le=\"60\"} 1\n",
        "lat_bucket{le=\"+Inf\"} 1\n",
        "lat_sum 0.003\n",
        "lat_count 1\n",
    };
    const char *at = text;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *found = strstr(at, lines[i]);
        if (found == NULL)
            fail_msg("missing or out of order: %s", lines[i]);
        at = found + strlen(lines[i]);
    }
    free(text);
    osbq_metrics_destroy(&m);
}

static void test_number_formatting(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f = osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "g", "Gauge.", NULL, 0, NULL, 0);
    struct osbq_series *s = osbq_metric_series(f, NULL);
    assert_gauge_text(m, s, 0, "0");
    assert_gauge_text(m, s, -0.0, "0");
    assert_gauge_text(m, s, 42, "42");
    assert_gauge_text(m, s, -17, "-17");
    assert_gauge_text(m, s, 0.1, "0.1");
    assert_gauge_text(m, s, 1.0 / 3, "0.3333333333333333");
    assert_gauge_text(m, s, 0.1 + 0.2, "0.30000000000000004");
    assert_gauge_text(m, s, 1e-7, "1e-07");
    assert_gauge_text(m, s, 9007199254740991.0, "9007199254740991");
    assert_gauge_text(m, s, 9007199254740992.0, "9007199254740992");
    assert_gauge_text(m, s, 1e300, "1e+300");
    assert_gauge_text(m, s, NAN, "NaN");
    assert_gauge_text(m, s, INFINITY, "+Inf");
    assert_gauge_text(m, s, -INFINITY, "-Inf");
    osbq_metrics_destroy(&m);
}

static void test_label_values_escaped(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f = osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "e_total", "E.",
                                             OSBQ_LABELS("path", "empty"), 2, NULL, 0);
    osbq_series_add(osbq_metric_series(f, OSBQ_LABELS("a\\b\"c\nd{}=,é", "")), 1);
    assert_render(m, "# HELP e_total E.\n"
                     "# TYPE e_total counter\n"
                     "e_total{path=\"a\\\\b\\\"c\\nd{}=,é\",empty=\"\"} 1\n");
    osbq_metrics_destroy(&m);
}

static void test_help_escaped(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    assert_non_null(osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "h", "One\nback\\slash \"quoted\"", NULL,
                                     0, NULL, 0));
    assert_non_null(osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "h2", "", NULL, 0, NULL, 0));
    assert_render(m, "# HELP h One\\nback\\\\slash \"quoted\"\n"
                     "# TYPE h gauge\n"
                     "# HELP h2 \n"
                     "# TYPE h2 gauge\n");
    osbq_metrics_destroy(&m);
}

static void test_invalid_names_and_duplicates_refused(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    const enum osbq_metric_type c = OSBQ_METRIC_COUNTER;
    const char *bad_names[] = {"", "1abc", "a-b", "a b", "a.b", "é", "a\n"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        assert_null(osbq_metrics_add(m, c, bad_names[i], "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, c, NULL, "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, c, "no_help", NULL, NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(NULL, c, "no_registry", "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, (enum osbq_metric_type)42, "bad_type", "x", NULL, 0, NULL, 0));

    const char *bad_labels[] = {"", "le", "1a", "a:b", "a-b"};
    for (size_t i = 0; i < sizeof bad_labels / sizeof bad_labels[0]; i++)
        assert_null(osbq_metrics_add(m, c, "l", "x", &bad_labels[i], 1, NULL, 0));
    assert_null(osbq_metrics_add(m, c, "l", "x", OSBQ_LABELS("a", "a"), 2, NULL, 0));
    assert_null(osbq_metrics_add(m, c, "l", "x", NULL, 1, NULL, 0));

    /* Buckets: only histograms take them, increasing and finite. */
    const double one[] = {1};
    assert_null(osbq_metrics_add(m, c, "b", "x", NULL, 0, one, 1));
    assert_null(osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "b", "x", NULL, 0, NULL, 1));
    const double *bad_buckets[] = {(const double[]){1, 1}, (const double[]){2, 1},
                                   (const double[]){1, INFINITY}, (const double[]){NAN, 1},
                                   (const double[]){-INFINITY, 1}};
    for (size_t i = 0; i < sizeof bad_buckets / sizeof bad_buckets[0]; i++)
        assert_null(
            osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "b", "x", NULL, 0, bad_buckets[i], 2));

    /* Still all free, so these succeed once and only once. */
    assert_non_null(osbq_metrics_add(m, c, "ns:sub_name_1", "x", NULL, 0, NULL, 0));
    assert_non_null(osbq_metrics_add(m, c, "_x", "x", OSBQ_LABELS("_L1"), 1, NULL, 0));
    assert_non_null(osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "b", "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, c, "ns:sub_name_1", "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "_x", "y", NULL, 0, NULL, 0));

    /* A histogram's series names are taken too, both ways round. */
    assert_non_null(osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "lat", "x", NULL, 0, one, 1));
    assert_null(osbq_metrics_add(m, c, "lat_count", "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "lat_bucket", "x", NULL, 0, NULL, 0));
    assert_non_null(osbq_metrics_add(m, c, "lat_counts", "x", NULL, 0, NULL, 0));
    assert_non_null(osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "q_sum", "x", NULL, 0, NULL, 0));
    assert_null(osbq_metrics_add(m, OSBQ_METRIC_HISTOGRAM, "q", "x", NULL, 0, one, 1));
    osbq_metrics_destroy(&m);
}

static void test_too_many_labels_refused(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    assert_null(osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "five", "x",
                                 OSBQ_LABELS("a", "b", "c", "d", "e"), 5, NULL, 0));
    struct osbq_metric *f = osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "four", "x",
                                             OSBQ_LABELS("a", "b", "c", "d"), 4, NULL, 0);
    assert_non_null(f);
    osbq_series_add(osbq_metric_series(f, OSBQ_LABELS("1", "2", "3", "4")), 1);
    assert_render(m, "# HELP four x\n# TYPE four counter\n"
                     "four{a=\"1\",b=\"2\",c=\"3\",d=\"4\"} 1\n");
    osbq_metrics_destroy(&m);
}

static void test_null_series_is_a_no_op(void **state)
{
    (void)state;
    osbq_series_add(NULL, 1);
    osbq_series_set(NULL, 1);
    osbq_series_observe(NULL, 1);
    assert_true(osbq_series_value(NULL) == 0);
    assert_null(osbq_metric_series(NULL, NULL));
    osbq_metric_clear(NULL);

    struct osbq_metrics *m = osbq_metrics_new();
    struct osbq_metric *f =
        osbq_metrics_add(m, OSBQ_METRIC_COUNTER, "c_total", "x", OSBQ_LABELS("a"), 1, NULL, 0);
    assert_null(osbq_metric_series(f, NULL));
    assert_null(osbq_metric_series(f, OSBQ_LABELS(NULL)));
    assert_render(m, "# HELP c_total x\n# TYPE c_total counter\n");
    osbq_metrics_destroy(&m);
}

/* What the hook publishes: one gauge per connected worker, as the gateway does. */
struct workers {
    struct osbq_metric *family;
    const char *names[3];
    size_t count;
    int calls;
};

static void workers_hook(void *ctx)
{
    struct workers *w = ctx;
    w->calls++;
    osbq_metric_clear(w->family);
    for (size_t i = 0; i < w->count; i++)
        osbq_series_set(osbq_metric_series(w->family, OSBQ_LABELS(w->names[i])), 1);
}

static void order_hook(void *ctx)
{
    struct workers *w = ctx;
    /* Runs after workers_hook, so it sees this render's call already counted. */
    osbq_series_set(osbq_metric_series(w->family, OSBQ_LABELS("calls")), w->calls);
}

static void test_render_hook_sets_gauges_and_clear_drops_series(void **state)
{
    (void)state;
    struct osbq_metrics *m = osbq_metrics_new();
    struct workers w = {
        .family = osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "workers", "Connected workers.",
                                   OSBQ_LABELS("id"), 1, NULL, 0),
        .names = {"w1", "w2"},
        .count = 2,
    };
    assert_non_null(w.family);
    assert_int_equal(osbq_metrics_on_render(m, workers_hook, &w), 0);
    assert_int_equal(osbq_metrics_on_render(m, order_hook, &w), 0);
    assert_render(m, "# HELP workers Connected workers.\n"
                     "# TYPE workers gauge\n"
                     "workers{id=\"w1\"} 1\n"
                     "workers{id=\"w2\"} 1\n"
                     "workers{id=\"calls\"} 1\n");
    w.names[0] = "w3";
    w.count = 1;
    assert_render(m, "# HELP workers Connected workers.\n"
                     "# TYPE workers gauge\n"
                     "workers{id=\"w3\"} 1\n"
                     "workers{id=\"calls\"} 2\n");
    w.count = 0;
    osbq_metric_clear(w.family);
    assert_int_equal(w.calls, 2);
    assert_render(m, "# HELP workers Connected workers.\n"
                     "# TYPE workers gauge\n"
                     "workers{id=\"calls\"} 3\n");
    osbq_metrics_destroy(&m);
}

struct race {
    struct osbq_metric *counter;
    struct osbq_series *histogram;
    struct osbq_metrics *m;
    atomic_bool done;
    int renders;
};

static void *writer_thread(void *arg)
{
    struct race *r = arg;
    static const double values[] = {0.25, 0.5, 2, 8};
    for (size_t i = 0; i < WRITER_ROUNDS; i++) {
        /* A lookup per increment, as an HTTP handler does. */
        osbq_series_add(osbq_metric_series(r->counter, OSBQ_LABELS("GET")), 1);
        osbq_series_observe(r->histogram, values[i % 4]);
    }
    return NULL;
}

/* Reads the value after prefix in text; -1 when absent. */
static double value_after(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    return p != NULL ? strtod(p + strlen(prefix), NULL) : -1;
}

static void *render_thread(void *arg)
{
    struct race *r = arg;
    /* value_after gives -1 while the counter series does not exist yet. */
    double last_counter = -1;
    double last_count = -1;
    do {
        char *text = osbq_metrics_render(r->m, NULL);
        if (text == NULL)
            return "render failed";
        double counter = value_after(text, "race_total{method=\"GET\"} ");
        double count = value_after(text, "race_seconds_count ");
        double inf = value_after(text, "race_seconds_bucket{le=\"+Inf\"} ");
        double low = value_after(text, "race_seconds_bucket{le=\"0.5\"} ");
        free(text);
        if (counter < last_counter || count < last_count || count != inf || low > inf)
            return "render went backwards or disagreed with itself";
        last_counter = counter;
        last_count = count;
        r->renders++;
    } while (!atomic_load(&r->done));
    return NULL;
}

static void test_writers_race_a_render(void **state)
{
    (void)state;
    const double bounds[] = {0.5, 4};
    struct race r = {.m = osbq_metrics_new()};
    atomic_init(&r.done, false);
    r.counter = osbq_metrics_add(r.m, OSBQ_METRIC_COUNTER, "race_total", "x", OSBQ_LABELS("method"),
                                 1, NULL, 0);
    struct osbq_metric *h =
        osbq_metrics_add(r.m, OSBQ_METRIC_HISTOGRAM, "race_seconds", "x", NULL, 0, bounds, 2);
    r.histogram = osbq_metric_series(h, NULL);
    assert_non_null(r.histogram);

    pthread_t renderer;
    pthread_t writers[WRITERS];
    assert_int_equal(pthread_create(&renderer, NULL, render_thread, &r), 0);
    for (size_t i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&writers[i], NULL, writer_thread, &r), 0);
    for (size_t i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_join(writers[i], NULL), 0);
    atomic_store(&r.done, true);
    void *failure = NULL;
    assert_int_equal(pthread_join(renderer, &failure), 0);
    if (failure != NULL)
        fail_msg("%s", (const char *)failure);
    assert_true(r.renders > 0);

    const double total = WRITERS * WRITER_ROUNDS;
    assert_true(osbq_series_value(osbq_metric_series(r.counter, OSBQ_LABELS("GET"))) == total);
    assert_true(osbq_series_value(r.histogram) == total);
    char *text = osbq_metrics_render(r.m, NULL);
    assert_non_null(text);
    assert_true(value_after(text, "race_total{method=\"GET\"} ") == total);
    assert_true(value_after(text, "race_seconds_bucket{le=\"0.5\"} ") == total / 2);
    assert_true(value_after(text, "race_seconds_bucket{le=\"4\"} ") == total * 3 / 4);
    assert_true(value_after(text, "race_seconds_bucket{le=\"+Inf\"} ") == total);
    assert_true(value_after(text, "race_seconds_count ") == total);
    /* Every value is a multiple of 1/4 well below 2^53, so the sum is exact in any order. */
    assert_true(value_after(text, "race_seconds_sum ") == total / 4 * (0.25 + 0.5 + 2 + 8));
    free(text);
    osbq_metrics_destroy(&r.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_registry_renders_nothing),
        cmocka_unit_test(test_counter_without_labels),
        cmocka_unit_test(test_counter_with_labels),
        cmocka_unit_test(test_gauge_set_and_add_negative),
        cmocka_unit_test(test_histogram_custom_buckets),
        cmocka_unit_test(test_latency_bucket_bounds_format),
        cmocka_unit_test(test_number_formatting),
        cmocka_unit_test(test_label_values_escaped),
        cmocka_unit_test(test_help_escaped),
        cmocka_unit_test(test_invalid_names_and_duplicates_refused),
        cmocka_unit_test(test_too_many_labels_refused),
        cmocka_unit_test(test_null_series_is_a_no_op),
        cmocka_unit_test(test_render_hook_sets_gauges_and_clear_drops_series),
        cmocka_unit_test(test_writers_race_a_render),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
