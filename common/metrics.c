/* Prometheus metrics: families and series found under the registry's lock, values updated with
 * atomics so the request path never waits on a render. */
#include "metrics.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

const double osbq_metrics_latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                               0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
const size_t osbq_metrics_latency_buckets_count =
    sizeof osbq_metrics_latency_buckets / sizeof osbq_metrics_latency_buckets[0];

struct render_hook {
    osbq_metrics_hook fn;
    void *ctx;
};

struct osbq_metrics {
    pthread_mutex_t lock;        /* guards the family list and every family's series list */
    pthread_mutex_t render_lock; /* one render at a time, so two renders never run the hooks
                                  * together (a hook may clear and refill a family); guards
                                  * hooks */
    struct osbq_metric *first, *last;
    struct render_hook *hooks;
    size_t hook_count, hook_cap;
};

/* Everything but the series list is immutable once osbq_metrics_add returns, so updates read
 * type and bounds without the lock. */
struct osbq_metric {
    struct osbq_metrics *registry;
    struct osbq_metric *next;
    enum osbq_metric_type type;
    char *name;
    char *help;
    size_t nlabels;
    char *label_names[OSBQ_METRIC_MAX_LABELS];
    size_t nbuckets;
    double *bounds;
    struct osbq_series *first, *last; /* guarded by registry->lock */
};

/* One allocation: the struct, then the bucket counts, then the label values. */
struct osbq_series {
    const struct osbq_metric *family;
    struct osbq_series *next;
    uint64_t hash; /* of the label values, to skip most string compares on lookup */
    const char *values[OSBQ_METRIC_MAX_LABELS];
    /* The bits of a double: counter or gauge value, or a histogram's sum. C11 has no atomic
     * floating-point add, and a uint64 is lock-free wherever we run. */
    _Atomic uint64_t value;
    /* Histogram: observations per bucket (not cumulative); the last one is +Inf. */
    _Atomic uint64_t counts[];
};

static uint64_t double_bits(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static double bits_double(uint64_t bits)
{
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void atomic_add_double(_Atomic uint64_t *target, double v)
{
    uint64_t old = atomic_load_explicit(target, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(target, &old, double_bits(bits_double(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static bool valid_name(const char *name, bool colons)
{
    const char *p = name;
    if (p == NULL || *p == '\0')
        return false;
    for (; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (colons && c == ':') || (p != name && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* True when name is base followed by one of the histogram's series suffixes. */
static bool is_histogram_series_name(const char *name, const char *base)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0)
        return false;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcmp(name + n, suffixes[i]) == 0)
            return true;
    return false;
}

/* A histogram also owns name_bucket, name_sum and name_count: another family by one of those
 * names would render series a scraper cannot tell apart. The suffixes are not suffixes of one
 * another, so two histograms can only clash by the same name. */
static bool names_clash(const struct osbq_metric *f, enum osbq_metric_type type, const char *name)
{
    if (strcmp(f->name, name) == 0)
        return true;
    if (f->type == OSBQ_METRIC_HISTOGRAM && is_histogram_series_name(name, f->name))
        return true;
    return type == OSBQ_METRIC_HISTOGRAM && is_histogram_series_name(f->name, name);
}

static bool valid_buckets(enum osbq_metric_type type, const double *buckets, size_t nbuckets)
{
    if (type != OSBQ_METRIC_HISTOGRAM)
        return buckets == NULL && nbuckets == 0;
    if (nbuckets > 0 && buckets == NULL)
        return false;
    for (size_t i = 0; i < nbuckets; i++) {
        if (!isfinite(buckets[i]))
            return false;
        if (i > 0 && !(buckets[i - 1] < buckets[i]))
            return false;
    }
    return true;
}

static bool valid_label_names(const char *const *label_names, size_t nlabels)
{
    if (nlabels > OSBQ_METRIC_MAX_LABELS || (nlabels > 0 && label_names == NULL))
        return false;
    for (size_t i = 0; i < nlabels; i++) {
        if (!valid_name(label_names[i], false) || strcmp(label_names[i], "le") == 0)
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(label_names[i], label_names[j]) == 0)
                return false;
    }
    return true;
}

static void metric_free_series(struct osbq_metric *f)
{
    struct osbq_series *s = f->first;
    while (s != NULL) {
        struct osbq_series *next = s->next;
        free(s);
        s = next;
    }
    f->first = f->last = NULL;
}

static void metric_free(struct osbq_metric *f)
{
    if (f == NULL)
        return;
    metric_free_series(f);
    free(f->name);
    free(f->help);
    for (size_t i = 0; i < f->nlabels; i++)
        free(f->label_names[i]);
    free(f->bounds);
    free(f);
}

struct osbq_metrics *osbq_metrics_new(void)
{
    struct osbq_metrics *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    if (pthread_mutex_init(&m->render_lock, NULL) != 0) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

void osbq_metrics_destroy(struct osbq_metrics **mp)
{
    OSBQ_OWNED_OR_RETURN(struct osbq_metrics, m, mp);
    struct osbq_metric *f = m->first;
    while (f != NULL) {
        struct osbq_metric *next = f->next;
        metric_free(f);
        f = next;
    }
    free(m->hooks);
    pthread_mutex_destroy(&m->render_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}

/* Builds the family outside the lock; the caller checks for clashes and links it in. */
static struct osbq_metric *metric_new(enum osbq_metric_type type, const char *name,
                                      const char *help, const char *const *label_names,
                                      size_t nlabels, const double *buckets, size_t nbuckets)
{
    struct osbq_metric *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help);
    if (f->name == NULL || f->help == NULL)
        goto fail;
    for (size_t i = 0; i < nlabels; i++) {
        f->label_names[i] = strdup(label_names[i]);
        if (f->label_names[i] == NULL)
            goto fail;
        f->nlabels = i + 1;
    }
    if (nbuckets > 0) {
        f->bounds = malloc(nbuckets * sizeof f->bounds[0]);
        if (f->bounds == NULL)
            goto fail;
        memcpy(f->bounds, buckets, nbuckets * sizeof f->bounds[0]);
        f->nbuckets = nbuckets;
    }
    return f;
fail:
    metric_free(f);
    return NULL;
}

struct osbq_metric *osbq_metrics_add(struct osbq_metrics *m, enum osbq_metric_type type,
                                     const char *name, const char *help,
                                     const char *const *label_names, size_t nlabels,
                                     const double *buckets, size_t nbuckets)
{
    if (m == NULL || help == NULL || !valid_name(name, true))
        return NULL;
    if (type != OSBQ_METRIC_COUNTER && type != OSBQ_METRIC_GAUGE && type != OSBQ_METRIC_HISTOGRAM)
        return NULL;
    if (!valid_label_names(label_names, nlabels) || !valid_buckets(type, buckets, nbuckets))
        return NULL;
    struct osbq_metric *f = metric_new(type, name, help, label_names, nlabels, buckets, nbuckets);
    if (f == NULL)
        return NULL;
    f->registry = m;
    pthread_mutex_lock(&m->lock);
    for (const struct osbq_metric *g = m->first; g != NULL; g = g->next) {
        if (names_clash(g, type, name)) {
            pthread_mutex_unlock(&m->lock);
            metric_free(f);
            return NULL;
        }
    }
    if (m->last != NULL)
        m->last->next = f;
    else
        m->first = f;
    m->last = f;
    pthread_mutex_unlock(&m->lock);
    return f;
}

struct osbq_series *osbq_metrics_add_unlabelled(struct osbq_metrics *m, enum osbq_metric_type type,
                                                const char *name, const char *help)
{
    struct osbq_metric *f = osbq_metrics_add(m, type, name, help, NULL, 0, NULL, 0);
    return f != NULL ? osbq_metric_series(f, NULL) : NULL;
}

int osbq_metrics_add_rows(struct osbq_metrics *m, const struct osbq_metric_row *rows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const struct osbq_metric_row *r = &rows[i];
        struct osbq_metric *f =
            osbq_metrics_add(m, r->type, r->name, r->help, r->labels, r->nlabels,
                             r->latency ? osbq_metrics_latency_buckets : NULL,
                             r->latency ? osbq_metrics_latency_buckets_count : 0);
        if (f == NULL)
            return -1;
        if (r->family != NULL)
            *r->family = f;
        if (r->series != NULL && r->nlabels == 0 &&
            (*r->series = osbq_metric_series(f, NULL)) == NULL)
            return -1;
        for (size_t v = 0; r->series != NULL && v < r->nvalues; v++)
            if ((r->series[v] = osbq_metric_series(f, &r->values[v])) == NULL)
                return -1;
    }
    return 0;
}

/* FNV-1a over the values, each followed by a NUL (values cannot hold one), so ("ab", "c") and
 * ("a", "bc") differ. */
static uint64_t hash_values(const char *const *values, size_t n)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)values[i];
        do {
            h ^= *p;
            h *= 1099511628211u;
        } while (*p++ != '\0');
    }
    return h;
}

static bool series_matches(const struct osbq_series *s, uint64_t hash, const char *const *values,
                           size_t n)
{
    if (s->hash != hash)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s->values[i], values[i]) != 0)
            return false;
    return true;
}

static struct osbq_series *series_new(const struct osbq_metric *f, uint64_t hash,
                                      const char *const *values)
{
    size_t ncounts = f->type == OSBQ_METRIC_HISTOGRAM ? f->nbuckets + 1 : 0;
    size_t head = sizeof(struct osbq_series) + ncounts * sizeof(_Atomic uint64_t);
    size_t lens[OSBQ_METRIC_MAX_LABELS];
    size_t size = head;
    for (size_t i = 0; i < f->nlabels; i++) {
        lens[i] = strlen(values[i]) + 1;
        size += lens[i];
    }
    struct osbq_series *s = malloc(size);
    if (s == NULL)
        return NULL;
    s->family = f;
    s->next = NULL;
    s->hash = hash;
    char *text = (char *)s + head;
    for (size_t i = 0; i < f->nlabels; i++) {
        memcpy(text, values[i], lens[i]);
        s->values[i] = text;
        text += lens[i];
    }
    atomic_init(&s->value, double_bits(0.0));
    for (size_t i = 0; i < ncounts; i++)
        atomic_init(&s->counts[i], 0);
    return s;
}

struct osbq_series *osbq_metric_series(struct osbq_metric *f, const char *const *label_values)
{
    if (f == NULL || (f->nlabels > 0 && label_values == NULL))
        return NULL;
    for (size_t i = 0; i < f->nlabels; i++)
        if (label_values[i] == NULL)
            return NULL;
    uint64_t hash = hash_values(label_values, f->nlabels);
    struct osbq_metrics *m = f->registry;
    pthread_mutex_lock(&m->lock);
    struct osbq_series *s = f->first;
    while (s != NULL && !series_matches(s, hash, label_values, f->nlabels))
        s = s->next;
    if (s == NULL) {
        /* Allocating under the lock keeps two callers from creating the same series; it
         * happens once per label combination. */
        s = series_new(f, hash, label_values);
        if (s != NULL) {
            if (f->last != NULL)
                f->last->next = s;
            else
                f->first = s;
            f->last = s;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return s;
}

void osbq_series_add(struct osbq_series *s, double v)
{
    if (s == NULL)
        return;
    switch (s->family->type) {
    case OSBQ_METRIC_COUNTER:
        /* Also drops NaN, which would stick forever. */
        if (!(v >= 0))
            return;
        atomic_add_double(&s->value, v);
        return;
    case OSBQ_METRIC_GAUGE:
        atomic_add_double(&s->value, v);
        return;
    case OSBQ_METRIC_HISTOGRAM:
        return;
    }
}

void osbq_series_set(struct osbq_series *s, double v)
{
    if (s == NULL || s->family->type != OSBQ_METRIC_GAUGE)
        return;
    atomic_store_explicit(&s->value, double_bits(v), memory_order_relaxed);
}

void osbq_series_observe(struct osbq_series *s, double v)
{
    if (s == NULL || s->family->type != OSBQ_METRIC_HISTOGRAM)
        return;
    const struct osbq_metric *f = s->family;
    /* Bounds are inclusive (le); NaN and values above the last bound land in +Inf. */
    size_t i = 0;
    while (i < f->nbuckets && !(v <= f->bounds[i]))
        i++;
    atomic_fetch_add_explicit(&s->counts[i], 1, memory_order_relaxed);
    atomic_add_double(&s->value, v);
}

/* The histogram's count is the sum of its buckets rather than a counter of its own, so a render
 * never shows a _count that disagrees with the +Inf bucket. */
static uint64_t histogram_count(const struct osbq_series *s)
{
    uint64_t total = 0;
    for (size_t i = 0; i <= s->family->nbuckets; i++)
        total += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
    return total;
}

double osbq_series_value(const struct osbq_series *s)
{
    if (s == NULL)
        return 0;
    if (s->family->type == OSBQ_METRIC_HISTOGRAM)
        return (double)histogram_count(s);
    return bits_double(atomic_load_explicit(&s->value, memory_order_relaxed));
}

void osbq_metric_clear(struct osbq_metric *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->registry->lock);
    metric_free_series(f);
    pthread_mutex_unlock(&f->registry->lock);
}

int osbq_metrics_on_render(struct osbq_metrics *m, osbq_metrics_hook hook, void *ctx)
{
    if (m == NULL || hook == NULL)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&m->render_lock);
    if (m->hook_count == m->hook_cap) {
        size_t cap = m->hook_cap ? 2 * m->hook_cap : 4;
        struct render_hook *hooks = realloc(m->hooks, cap * sizeof hooks[0]);
        if (hooks == NULL) {
            rc = -1;
            goto out;
        }
        m->hooks = hooks;
        m->hook_cap = cap;
    }
    m->hooks[m->hook_count++] = (struct render_hook){hook, ctx};
out:
    pthread_mutex_unlock(&m->render_lock);
    return rc;
}

/* The rendered text; after a failed allocation every append is a no-op and failed stays set. */
struct text {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
};

static void text_append(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (n >= SIZE_MAX / 2 - t->len) {
        t->failed = true;
        return;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *data = realloc(t->data, cap);
        if (data == NULL) {
            t->failed = true;
            return;
        }
        t->data = data;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
    text_append(t, s, strlen(s));
}

/* Appends s with backslash and newline escaped, and double quote too when quotes is set (label
 * values; HELP text leaves quotes alone). */
static void text_escaped(struct text *t, const char *s, bool quotes)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = NULL;
        if (*s == '\\')
            esc = "\\\\";
        else if (*s == '\n')
            esc = "\\n";
        else if (*s == '"' && quotes)
            esc = "\\\"";
        if (esc == NULL)
            continue;
        text_append(t, run, (size_t)(s - run));
        text_str(t, esc);
        run = s + 1;
    }
    text_append(t, run, (size_t)(s - run));
}

/* Formats v the way Prometheus clients do: integers bare, other values in the fewest digits
 * that read back as the same double, and NaN, +Inf, -Inf by name. */
static void format_number(char *buf, size_t size, double v)
{
    /* 2^53: above it not every integer is a double, and %g keeps the output short. */
    const double exact = 9007199254740992.0;
    if (isnan(v)) {
        (void)snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        (void)snprintf(buf, size, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v > -exact && v < exact && v == (double)(int64_t)v) {
        (void)snprintf(buf, size, "%" PRId64, (int64_t)v);
        return;
    }
    for (int precision = 15; precision < 17; precision++) {
        (void)snprintf(buf, size, "%.*g", precision, v);
        if (strtod(buf, NULL) == v)
            return;
    }
    (void)snprintf(buf, size, "%.17g", v);
}

static void text_number(struct text *t, double v)
{
    char buf[40];
    format_number(buf, sizeof buf, v);
    text_str(t, buf);
}

/* Appends {name="value",...} with le last when given; nothing when there are no labels. */
static void text_labels(struct text *t, const struct osbq_series *s, const char *le)
{
    const struct osbq_metric *f = s->family;
    if (f->nlabels == 0 && le == NULL)
        return;
    text_str(t, "{");
    for (size_t i = 0; i < f->nlabels; i++) {
        if (i > 0)
            text_str(t, ",");
        text_str(t, f->label_names[i]);
        text_str(t, "=\"");
        text_escaped(t, s->values[i], true);
        text_str(t, "\"");
    }
    if (le != NULL) {
        text_str(t, f->nlabels > 0 ? ",le=\"" : "le=\"");
        text_str(t, le);
        text_str(t, "\"");
    }
    text_str(t, "}");
}

static void text_sample(struct text *t, const struct osbq_series *s, const char *suffix,
                        const char *le, double v)
{
    text_str(t, s->family->name);
    text_str(t, suffix);
    text_labels(t, s, le);
    text_str(t, " ");
    text_number(t, v);
    text_str(t, "\n");
}

static void render_histogram(struct text *t, const struct osbq_series *s)
{
    const struct osbq_metric *f = s->family;
    char le[40];
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= f->nbuckets; i++) {
        cumulative += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
        format_number(le, sizeof le, i < f->nbuckets ? f->bounds[i] : INFINITY);
        text_sample(t, s, "_bucket", le, (double)cumulative);
    }
    text_sample(t, s, "_sum", NULL,
                bits_double(atomic_load_explicit(&s->value, memory_order_relaxed)));
    text_sample(t, s, "_count", NULL, (double)cumulative);
}

static void render_family(struct text *t, const struct osbq_metric *f)
{
    static const char *const type_names[] = {
        [OSBQ_METRIC_COUNTER] = "counter",
        [OSBQ_METRIC_GAUGE] = "gauge",
        [OSBQ_METRIC_HISTOGRAM] = "histogram",
    };
    text_str(t, "# HELP ");
    text_str(t, f->name);
    text_str(t, " ");
    text_escaped(t, f->help, false);
    text_str(t, "\n# TYPE ");
    text_str(t, f->name);
    text_str(t, " ");
    text_str(t, type_names[f->type]);
    text_str(t, "\n");
    for (const struct osbq_series *s = f->first; s != NULL; s = s->next) {
        if (f->type == OSBQ_METRIC_HISTOGRAM)
            render_histogram(t, s);
        else
            text_sample(t, s, "", NULL, osbq_series_value(s));
    }
}

char *osbq_metrics_render(struct osbq_metrics *m, size_t *len)
{
    if (m == NULL)
        return NULL;
    struct text t = {0};
    pthread_mutex_lock(&m->render_lock);
    for (size_t i = 0; i < m->hook_count; i++)
        m->hooks[i].fn(m->hooks[i].ctx);
    pthread_mutex_lock(&m->lock);
    for (const struct osbq_metric *f = m->first; f != NULL; f = f->next)
        render_family(&t, f);
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_unlock(&m->render_lock);
    /* An empty registry still yields "", not NULL. */
    text_append(&t, "", 0);
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    if (len != NULL)
        *len = t.len;
    return t.data;
}
