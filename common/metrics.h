/* Prometheus metrics: a registry of metric families (counters, gauges, histograms) with fixed
 * label names, updated lock-free from any thread and rendered in the text exposition format
 * (version 0.0.4) for GET /metrics. Each process owns one registry, made in main and passed
 * down; nothing here is global. */
#ifndef OSBQ_METRICS_H
#define OSBQ_METRICS_H

#include <stddef.h>

struct osbq_metrics; /* the registry: families in declaration order */
struct osbq_metric;  /* one family: name, help, type, label names, its series */
struct osbq_series;  /* one labelled time series of a family */

enum osbq_metric_type {
    OSBQ_METRIC_COUNTER,   /* only goes up; rendered as is (name should end in _total) */
    OSBQ_METRIC_GAUGE,     /* goes up and down */
    OSBQ_METRIC_HISTOGRAM, /* observations counted into cumulative buckets, plus sum and count */
};

/* Most label names a family may have. */
#define OSBQ_METRIC_MAX_LABELS 4

/* Label values for osbq_metric_series, as a compound literal: OSBQ_LABELS("GET", "200"). */
#define OSBQ_LABELS(...) ((const char *const[]){__VA_ARGS__})

/* Creates an empty registry. NULL when out of memory. */
struct osbq_metrics *osbq_metrics_new(void);

/* Frees the registry, its families and series; sets *mp to NULL; accepts NULL. Every
 * osbq_metric and osbq_series pointer it handed out becomes invalid. */
void osbq_metrics_destroy(struct osbq_metrics **mp);

/* Declares a family. name must match [a-zA-Z_:][a-zA-Z0-9_:]* and be new in the registry;
 * label_names (nlabels ≤ OSBQ_METRIC_MAX_LABELS, each [a-zA-Z_][a-zA-Z0-9_]*, not "le") and
 * help are copied. Histograms take nbuckets upper bounds in increasing order (copied; +Inf is
 * implied and must not be listed); other types take NULL, 0. Returns the family, owned by the
 * registry, or NULL when an argument is invalid or memory runs out. Thread-safe. */
struct osbq_metric *osbq_metrics_add(struct osbq_metrics *m, enum osbq_metric_type type,
                                     const char *name, const char *help,
                                     const char *const *label_names, size_t nlabels,
                                     const double *buckets, size_t nbuckets);

/* Declares a counter or gauge family without labels and returns its one series (what a
 * process has one of: requests in flight, retries). NULL as osbq_metrics_add, or when out of
 * memory. */
struct osbq_series *osbq_metrics_add_unlabelled(struct osbq_metrics *m, enum osbq_metric_type type,
                                                const char *name, const char *help);

/* A family as a row of a daemon's table (osbq_metrics_add_rows). */
struct osbq_metric_row {
    enum osbq_metric_type type;
    const char *name;
    const char *help;
    const char *const *labels; /* label names (nlabels of them), or NULL */
    size_t nlabels;
    const char *const *values; /* with one label: its fixed values (nvalues), a series each */
    size_t nvalues;
    int latency;                 /* a histogram: nonzero for osbq_metrics_latency_buckets */
    struct osbq_metric **family; /* where the family goes, or NULL */
    struct osbq_series **series; /* where its series go: the one of a family without labels, or
                                  * one per value of values; NULL: none made here */
};

/* Declares each row's family, and the series it names. -1 when one cannot be (what was made
 * stays in the registry). */
int osbq_metrics_add_rows(struct osbq_metrics *m, const struct osbq_metric_row *rows, size_t count);

/* Finds or creates the series of family f with these label values (exactly f's nlabels of
 * them; NULL when it has none). Values are copied and may hold any bytes but NUL; rendering
 * escapes them. The pointer stays valid until the registry is destroyed (or the family is
 * cleared), so callers may keep it. NULL when out of memory. Thread-safe. */
struct osbq_series *osbq_metric_series(struct osbq_metric *f, const char *const *label_values);

/* Counter: adds v (≥ 0; negative values are ignored). Gauge: adds v (may be negative).
 * Lock-free; s may be NULL (no-op), so a failed lookup never crashes a caller. */
void osbq_series_add(struct osbq_series *s, double v);

/* Gauge: sets the value. No-op on other types and on NULL. Lock-free. */
void osbq_series_set(struct osbq_series *s, double v);

/* Histogram: counts v into its bucket and adds it to the sum. No-op on other types and on
 * NULL. Lock-free. */
void osbq_series_observe(struct osbq_series *s, double v);

/* The value of a counter or gauge series (tests, osbq-ctl); a histogram's count. */
double osbq_series_value(const struct osbq_series *s);

/* Drops every series of f. Only for families whose series nobody keeps between renders: the
 * ones a render hook fills from scratch (e.g. one gauge per connected worker). */
void osbq_metric_clear(struct osbq_metric *f);

/* A function called at the start of every render, before the registry is locked, to set
 * gauges that are read from elsewhere (queue lengths, connected workers) rather than tracked.
 * It may call osbq_metric_series, osbq_series_* and osbq_metric_clear. */
typedef void (*osbq_metrics_hook)(void *ctx);

/* Registers a render hook; hooks run in registration order. Returns 0, or -1 when out of
 * memory. Register them before rendering starts. */
int osbq_metrics_on_render(struct osbq_metrics *m, osbq_metrics_hook hook, void *ctx);

/* Runs the hooks, then renders every family in declaration order (# HELP, # TYPE, series in
 * creation order; histograms as _bucket{le=...} cumulative, _sum, _count; a family with no
 * series renders its HELP and TYPE only). Returns malloc'd NUL-terminated text (caller frees)
 * and its length in *len, or NULL when out of memory. Thread-safe. */
char *osbq_metrics_render(struct osbq_metrics *m, size_t *len);

/* The Content-Type of the rendered text. */
#define OSBQ_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Default latency buckets, in seconds: 0.5 ms to 60 s (HTTP requests, including synchronous
 * waits, and job durations). */
extern const double osbq_metrics_latency_buckets[];
extern const size_t osbq_metrics_latency_buckets_count;

#endif
