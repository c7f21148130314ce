/* The job codec: encodes a struct osbq_job as the msgpack map and decodes it back, strictly. */
#include "job.h"

#include <inttypes.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A v3 job has 17 keys. The slack lets a later version add keys and still reach the version
 * check (and its clear message) here; the cap keeps what msgpack-c allocates for the map small. */
#define MAX_ENTRIES 64

/* Longest piece of an untrusted key or kind name quoted in an error message. */
#define MAX_QUOTE 32

enum field_type {
    FT_UINT,    /* unsigned integer */
    FT_ID,      /* non-empty string, required */
    FT_KIND,    /* one of the kind names, required */
    FT_OPT_ID,  /* string or nil; the kind decides whether it is required */
    FT_OPT_STR, /* string or nil */
};

/* Index into fields[]; the order is the order the encoder writes. */
enum field_id {
    F_VERSION,
    F_OP,
    F_KIND,
    F_INSTANCE,
    F_BINDING,
    F_SERVICE,
    F_PLAN,
    F_PARAMS,
    F_CTX,
    F_BIND_RES,
    F_MI,
    F_API,
    F_ORIGIN,
    F_REQ_ID,
    F_TRACE,
    F_PREDECESSOR,
    F_ATTEMPT,
};

struct field {
    const char *key;
    enum field_type type;
};

static const struct field fields[] = {
    [F_VERSION] = {"v", FT_UINT},         [F_OP] = {"op", FT_ID},
    [F_KIND] = {"kind", FT_KIND},         [F_INSTANCE] = {"instance", FT_ID},
    [F_BINDING] = {"binding", FT_OPT_ID}, [F_SERVICE] = {"service", FT_ID},
    [F_PLAN] = {"plan", FT_ID},           [F_PARAMS] = {"params", FT_OPT_STR},
    [F_CTX] = {"ctx", FT_OPT_STR},        [F_BIND_RES] = {"bind_res", FT_OPT_STR},
    [F_MI] = {"mi", FT_OPT_STR},          [F_API] = {"api", FT_UINT},
    [F_ORIGIN] = {"origin", FT_OPT_STR},  [F_REQ_ID] = {"req_id", FT_OPT_STR},
    [F_TRACE] = {"trace", FT_OPT_STR},    [F_PREDECESSOR] = {"pred", FT_OPT_STR},
    [F_ATTEMPT] = {"attempt", FT_UINT},
};

#define FIELD_COUNT (sizeof(fields) / sizeof(fields[0]))

/* The decoder tracks seen keys in one uint32_t bit set. */
_Static_assert(FIELD_COUNT <= 32, "too many fields for the seen-key bit set");
_Static_assert(FIELD_COUNT <= MAX_ENTRIES, "MAX_ENTRIES below the field count");

static const char *const kind_names[] = {
    [OSBQ_JOB_PROVISION] = "provision",     [OSBQ_JOB_UPDATE] = "update",
    [OSBQ_JOB_DEPROVISION] = "deprovision", [OSBQ_JOB_BIND] = "bind",
    [OSBQ_JOB_UNBIND] = "unbind",
};

static int fail(char *errbuf, size_t errbuf_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes the reason for a failure into errbuf and returns -1, so callers can return it. */
static int fail(char *errbuf, size_t errbuf_len, const char *fmt, ...)
{
    va_list ap;

    if (errbuf && errbuf_len > 0) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errbuf_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Untrusted bytes end up in log lines through errbuf, so control bytes and NUL must not. */
static void quote(char dst[MAX_QUOTE + 4], const char *src, size_t src_len)
{
    size_t n = src_len < MAX_QUOTE ? src_len : MAX_QUOTE;
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n < src_len) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

static enum osbq_job_kind kind_from_bytes(const char *name, size_t len)
{
    size_t k;

    for (k = OSBQ_JOB_PROVISION; k <= OSBQ_JOB_UNBIND; k++) {
        if (strlen(kind_names[k]) == len && memcmp(kind_names[k], name, len) == 0)
            return (enum osbq_job_kind)k;
    }
    return (enum osbq_job_kind)0;
}

const char *osbq_job_kind_name(enum osbq_job_kind kind)
{
    if (kind < OSBQ_JOB_PROVISION || kind > OSBQ_JOB_UNBIND)
        return NULL;
    return kind_names[kind];
}

enum osbq_job_kind osbq_job_kind_from_name(const char *name)
{
    if (!name)
        return (enum osbq_job_kind)0;
    return kind_from_bytes(name, strlen(name));
}

void osbq_job_clear(struct osbq_job *job)
{
    if (!job)
        return;
    free(job->owned);
    memset(job, 0, sizeof(*job));
}

static int check_id(const char *value, enum field_id id, char *errbuf, size_t errbuf_len)
{
    if (!value)
        return fail(errbuf, errbuf_len, "missing field \"%s\"", fields[id].key);
    if (value[0] == '\0')
        return fail(errbuf, errbuf_len, "field \"%s\": empty", fields[id].key);
    return 0;
}

/* The rules both directions share, so that whatever the encoder writes the decoder reads. */
static int check_job(const struct osbq_job *job, char *errbuf, size_t errbuf_len)
{
    const char *kind = osbq_job_kind_name(job->kind);

    if (check_id(job->operation_id, F_OP, errbuf, errbuf_len) < 0)
        return -1;
    if (!kind)
        return fail(errbuf, errbuf_len, "field \"kind\": unknown kind %d", (int)job->kind);
    if (check_id(job->instance_id, F_INSTANCE, errbuf, errbuf_len) < 0)
        return -1;
    if ((job->kind == OSBQ_JOB_BIND || job->kind == OSBQ_JOB_UNBIND) && !job->binding_id)
        return fail(errbuf, errbuf_len, "missing field \"binding\" (required for %s)", kind);
    if (job->binding_id && check_id(job->binding_id, F_BINDING, errbuf, errbuf_len) < 0)
        return -1;
    if (check_id(job->service_id, F_SERVICE, errbuf, errbuf_len) < 0)
        return -1;
    if (check_id(job->plan_id, F_PLAN, errbuf, errbuf_len) < 0)
        return -1;
    if (job->api_version < 200 || job->api_version > 299)
        return fail(errbuf, errbuf_len, "field \"api\": %" PRIu32 " is outside 200..299",
                    job->api_version);
    if (job->attempt < 1)
        return fail(errbuf, errbuf_len, "field \"attempt\": must be at least 1");
    return 0;
}

static int pack_str(msgpack_packer *pk, const char *s)
{
    if (!s)
        return msgpack_pack_nil(pk);
    return msgpack_pack_str_with_body(pk, s, strlen(s));
}

static int pack_value(msgpack_packer *pk, const struct osbq_job *job, enum field_id id)
{
    switch (id) {
    case F_VERSION:
        return msgpack_pack_uint32(pk, OSBQ_JOB_VERSION);
    case F_OP:
        return pack_str(pk, job->operation_id);
    case F_KIND:
        return pack_str(pk, osbq_job_kind_name(job->kind));
    case F_INSTANCE:
        return pack_str(pk, job->instance_id);
    case F_BINDING:
        return pack_str(pk, job->binding_id);
    case F_SERVICE:
        return pack_str(pk, job->service_id);
    case F_PLAN:
        return pack_str(pk, job->plan_id);
    case F_PARAMS:
        return pack_str(pk, job->parameters);
    case F_CTX:
        return pack_str(pk, job->context);
    case F_BIND_RES:
        return pack_str(pk, job->bind_resource);
    case F_MI:
        return pack_str(pk, job->maintenance_info);
    case F_API:
        return msgpack_pack_uint32(pk, job->api_version);
    case F_ORIGIN:
        return pack_str(pk, job->originating_identity);
    case F_REQ_ID:
        return pack_str(pk, job->request_identity);
    case F_TRACE:
        return pack_str(pk, job->trace);
    case F_PREDECESSOR:
        return pack_str(pk, job->predecessor_binding_id);
    case F_ATTEMPT:
        return msgpack_pack_uint32(pk, job->attempt);
    }
    return -1;
}

int osbq_job_encode(const struct osbq_job *job, char **out, size_t *out_len, char *errbuf,
                    size_t errbuf_len)
{
    msgpack_sbuffer sbuf;
    msgpack_packer pk;
    size_t i;

    if (!job || !out || !out_len)
        return fail(errbuf, errbuf_len, "job encode: NULL argument");
    if (check_job(job, errbuf, errbuf_len) < 0)
        return -1;

    msgpack_sbuffer_init(&sbuf);
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    if (msgpack_pack_map(&pk, FIELD_COUNT) < 0)
        goto out_nomem;
    for (i = 0; i < FIELD_COUNT; i++) {
        if (pack_str(&pk, fields[i].key) < 0 || pack_value(&pk, job, (enum field_id)i) < 0)
            goto out_nomem;
    }
    /* The decoder would refuse it, so refuse it here where the caller can still report it. */
    if (sbuf.size > OSBQ_JOB_MAX_BYTES) {
        fail(errbuf, errbuf_len, "encoded job is %zu bytes, over the limit of %u", sbuf.size,
             OSBQ_JOB_MAX_BYTES);
        goto out_destroy;
    }
    *out_len = sbuf.size;
    *out = msgpack_sbuffer_release(&sbuf);
    return 0;

out_nomem:
    fail(errbuf, errbuf_len, "job encode: out of memory");
out_destroy:
    msgpack_sbuffer_destroy(&sbuf);
    return -1;
}

enum skim_result { SKIM_OK, SKIM_TRUNCATED, SKIM_MALFORMED };

static size_t read_be(const unsigned char *p, size_t width)
{
    size_t v = 0;
    size_t i;

    for (i = 0; i < width; i++)
        v = v << 8 | p[i];
    return v;
}

/* How a msgpack header byte announces the size of its value. */
struct value_shape {
    unsigned char width; /* bytes of a big-endian length after the header byte (0: none) */
    unsigned char extra; /* fixed bytes after that length */
    unsigned char per;   /* what the length counts: 0 payload bytes, 1 elements, 2 map pairs */
    unsigned char count; /* the length, when the header byte holds it (fix formats) */
};

/* The shapes of the header bytes 0xc0 to 0xdf, by b - 0xc0 (msgpack's format table); 0xc1 is
 * never used and has none (shape_of). */
static const struct value_shape c0_shapes[32] = {
    [0x00] = {0, 0, 0, 0},  /* nil */
    [0x02] = {0, 0, 0, 0},  /* false */
    [0x03] = {0, 0, 0, 0},  /* true */
    [0x04] = {1, 0, 0, 0},  /* bin 8 */
    [0x05] = {2, 0, 0, 0},  /* bin 16 */
    [0x06] = {4, 0, 0, 0},  /* bin 32 */
    [0x07] = {1, 1, 0, 0},  /* ext 8: length, then a type byte */
    [0x08] = {2, 1, 0, 0},  /* ext 16 */
    [0x09] = {4, 1, 0, 0},  /* ext 32 */
    [0x0a] = {0, 4, 0, 0},  /* float 32 */
    [0x0b] = {0, 8, 0, 0},  /* float 64 */
    [0x0c] = {0, 1, 0, 0},  /* uint 8 */
    [0x0d] = {0, 2, 0, 0},  /* uint 16 */
    [0x0e] = {0, 4, 0, 0},  /* uint 32 */
    [0x0f] = {0, 8, 0, 0},  /* uint 64 */
    [0x10] = {0, 1, 0, 0},  /* int 8 */
    [0x11] = {0, 2, 0, 0},  /* int 16 */
    [0x12] = {0, 4, 0, 0},  /* int 32 */
    [0x13] = {0, 8, 0, 0},  /* int 64 */
    [0x14] = {0, 2, 0, 0},  /* fixext 1: type byte, then data */
    [0x15] = {0, 3, 0, 0},  /* fixext 2 */
    [0x16] = {0, 5, 0, 0},  /* fixext 4 */
    [0x17] = {0, 9, 0, 0},  /* fixext 8 */
    [0x18] = {0, 17, 0, 0}, /* fixext 16 */
    [0x19] = {1, 0, 0, 0},  /* str 8 */
    [0x1a] = {2, 0, 0, 0},  /* str 16 */
    [0x1b] = {4, 0, 0, 0},  /* str 32 */
    [0x1c] = {2, 0, 1, 0},  /* array 16 */
    [0x1d] = {4, 0, 1, 0},  /* array 32 */
    [0x1e] = {2, 0, 2, 0},  /* map 16 */
    [0x1f] = {4, 0, 2, 0},  /* map 32 */
};

/* The shape of the value whose header byte is b; false for 0xc1, which msgpack never uses. */
static bool shape_of(unsigned b, struct value_shape *out)
{
    static const struct value_shape scalar = {0, 0, 0, 0};
    if (b <= 0x7f || b >= 0xe0) /* positive and negative fixint */
        *out = scalar;
    else if (b <= 0x8f) /* fixmap */
        *out = (struct value_shape){0, 0, 2, (unsigned char)(b & 0x0f)};
    else if (b <= 0x9f) /* fixarray */
        *out = (struct value_shape){0, 0, 1, (unsigned char)(b & 0x0f)};
    else if (b <= 0xbf) /* fixstr */
        *out = (struct value_shape){0, 0, 0, (unsigned char)(b & 0x1f)};
    else if (b == 0xc1)
        return false;
    else
        *out = c0_shapes[b - 0xc0];
    return true;
}

/* Walks one msgpack value without building it and sets *end past it. msgpack-c allocates a
 * container's elements as soon as it reads the header, so a 5-byte map32 header would ask for
 * 256 GiB; here a container may announce no more elements than bytes remain (each element
 * takes at least one), which bounds msgpack-c's allocation by the input length. No stack:
 * `pending` counts values still owed, and containers only add to it. */
static enum skim_result skim(const unsigned char *p, size_t len, size_t *end)
{
    size_t pos = 0;
    size_t pending = 1;

    while (pending > 0) {
        struct value_shape shape;
        size_t n, avail;

        if (pos >= len)
            return SKIM_TRUNCATED;
        pending--;
        if (!shape_of(p[pos++], &shape))
            return SKIM_MALFORMED;
        if (shape.width > len - pos)
            return SKIM_TRUNCATED;
        n = shape.width > 0 ? read_be(p + pos, shape.width) : shape.count;
        pos += shape.width;
        avail = len - pos;
        if (shape.per == 0) {
            if (shape.extra > avail || n > avail - shape.extra)
                return SKIM_TRUNCATED;
            pos += shape.extra + n;
        } else {
            if (pending > avail || n > (avail - pending) / shape.per)
                return SKIM_TRUNCATED;
            pending += n * shape.per;
        }
    }
    *end = pos;
    return SKIM_OK;
}

/* Reads the top-level map header; -1 when the job is not a map, -2 when cut short. */
static int map_header(const unsigned char *p, size_t len, size_t *entries)
{
    if (p[0] >= 0x80 && p[0] <= 0x8f) {
        *entries = p[0] & 0x0fu;
        return 0;
    }
    if (p[0] != 0xde && p[0] != 0xdf)
        return -1;
    if (len < (p[0] == 0xde ? 3u : 5u))
        return -2;
    *entries = read_be(p + 1, p[0] == 0xde ? 2 : 4);
    return 0;
}

static int find_field(const msgpack_object_str *key)
{
    size_t i;

    for (i = 0; i < FIELD_COUNT; i++) {
        if (strlen(fields[i].key) == key->size && memcmp(fields[i].key, key->ptr, key->size) == 0)
            return (int)i;
    }
    return -1;
}

static const char **str_slot(struct osbq_job *job, enum field_id id)
{
    switch (id) {
    case F_OP:
        return &job->operation_id;
    case F_INSTANCE:
        return &job->instance_id;
    case F_BINDING:
        return &job->binding_id;
    case F_SERVICE:
        return &job->service_id;
    case F_PLAN:
        return &job->plan_id;
    case F_PARAMS:
        return &job->parameters;
    case F_CTX:
        return &job->context;
    case F_BIND_RES:
        return &job->bind_resource;
    case F_MI:
        return &job->maintenance_info;
    case F_ORIGIN:
        return &job->originating_identity;
    case F_REQ_ID:
        return &job->request_identity;
    case F_TRACE:
        return &job->trace;
    case F_PREDECESSOR:
        return &job->predecessor_binding_id;
    case F_VERSION:
    case F_KIND:
    case F_API:
    case F_ATTEMPT:
        break;
    }
    return NULL;
}

/* The one block a job's strings live in, filled front to back. */
struct block {
    char *next; /* where the next string goes */
};

static const char *block_add(struct block *b, const char *s, size_t len)
{
    char *at = b->next;
    if (len > 0)
        memcpy(at, s, len);
    at[len] = '\0';
    b->next += len + 1;
    return at;
}

int osbq_job_copy(const struct osbq_job *src, struct osbq_job *dst)
{
    size_t total = 0;
    *dst = *src;
    dst->owned = NULL;
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        const char **slot = str_slot(dst, (enum field_id)i);
        if (slot && *slot)
            total += strlen(*slot) + 1;
    }
    dst->owned = malloc(total > 0 ? total : 1);
    if (!dst->owned) {
        memset(dst, 0, sizeof(*dst));
        return -1;
    }
    struct block b = {dst->owned};
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        const char **slot = str_slot(dst, (enum field_id)i);
        if (slot && *slot)
            *slot = block_add(&b, *slot, strlen(*slot));
    }
    return 0;
}

static int read_uint(const msgpack_object *val, enum field_id id, struct osbq_job *job,
                     char *errbuf, size_t errbuf_len)
{
    uint64_t u;

    if (val->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return fail(errbuf, errbuf_len, "field \"%s\": expected unsigned integer", fields[id].key);
    u = val->via.u64;
    if (id == F_VERSION && u != OSBQ_JOB_VERSION)
        return fail(errbuf, errbuf_len,
                    "unsupported job format version %" PRIu64 " (this build reads %d)", u,
                    OSBQ_JOB_VERSION);
    if (u > UINT32_MAX)
        return fail(errbuf, errbuf_len, "field \"%s\": %" PRIu64 " is out of range", fields[id].key,
                    u);
    if (id == F_VERSION)
        job->version = (uint32_t)u;
    else if (id == F_API)
        job->api_version = (uint32_t)u;
    else
        job->attempt = (uint32_t)u;
    return 0;
}

static int read_field(const msgpack_object *val, enum field_id id, struct osbq_job *job,
                      struct block *strings, char *errbuf, size_t errbuf_len)
{
    const struct field *f = &fields[id];
    const msgpack_object_str *s = &val->via.str;
    char quoted[MAX_QUOTE + 4];

    if (f->type == FT_UINT)
        return read_uint(val, id, job, errbuf, errbuf_len);
    if (val->type == MSGPACK_OBJECT_NIL && (f->type == FT_OPT_ID || f->type == FT_OPT_STR))
        return 0;
    if (val->type != MSGPACK_OBJECT_STR)
        return fail(errbuf, errbuf_len, "field \"%s\": expected string%s", f->key,
                    f->type == FT_OPT_ID || f->type == FT_OPT_STR ? " or nil" : "");
    if (s->size > 0 && memchr(s->ptr, '\0', s->size))
        return fail(errbuf, errbuf_len, "field \"%s\": string contains a NUL byte", f->key);
    if (f->type == FT_KIND) {
        job->kind = kind_from_bytes(s->ptr, s->size);
        if (!job->kind) {
            quote(quoted, s->ptr, s->size);
            return fail(errbuf, errbuf_len, "field \"kind\": unknown kind \"%s\"", quoted);
        }
        return 0;
    }
    *str_slot(job, id) = block_add(strings, s->ptr, s->size);
    return 0;
}

static int read_map(const msgpack_object_map *map, struct osbq_job *job, char *errbuf,
                    size_t errbuf_len)
{
    static const enum field_id required[] = {F_OP,   F_KIND, F_INSTANCE, F_SERVICE,
                                             F_PLAN, F_API,  F_ATTEMPT};
    char quoted[MAX_QUOTE + 4];
    uint32_t seen = 0;
    uint32_t i;
    int id;

    /* The version comes first so that a reader can tell "newer format" from "garbage". */
    if (map->size == 0 || map->ptr[0].key.type != MSGPACK_OBJECT_STR ||
        find_field(&map->ptr[0].key.via.str) != F_VERSION)
        return fail(errbuf, errbuf_len, "first key of a job must be \"v\"");
    /* One block for every string: their sizes first (a rejected job frees it unread). */
    size_t total = 0;
    for (i = 0; i < map->size; i++) {
        const msgpack_object_kv *kv = &map->ptr[i];
        id = kv->key.type == MSGPACK_OBJECT_STR ? find_field(&kv->key.via.str) : -1;
        if (id >= 0 && kv->val.type == MSGPACK_OBJECT_STR && str_slot(job, (enum field_id)id))
            total += (size_t)kv->val.via.str.size + 1;
    }
    job->owned = malloc(total > 0 ? total : 1);
    if (!job->owned)
        return fail(errbuf, errbuf_len, "job decode: out of memory");
    struct block strings = {job->owned};
    for (i = 0; i < map->size; i++) {
        const msgpack_object *key = &map->ptr[i].key;

        if (key->type != MSGPACK_OBJECT_STR)
            return fail(errbuf, errbuf_len, "job key %" PRIu32 " is not a string", i);
        id = find_field(&key->via.str);
        if (id < 0) {
            quote(quoted, key->via.str.ptr, key->via.str.size);
            return fail(errbuf, errbuf_len, "unknown field \"%s\"", quoted);
        }
        if (seen & (1u << id))
            return fail(errbuf, errbuf_len, "duplicate field \"%s\"", fields[id].key);
        seen |= 1u << id;
        if (read_field(&map->ptr[i].val, (enum field_id)id, job, &strings, errbuf, errbuf_len) < 0)
            return -1;
    }
    for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!(seen & (1u << required[i])))
            return fail(errbuf, errbuf_len, "missing field \"%s\"", fields[required[i]].key);
    }
    return check_job(job, errbuf, errbuf_len);
}

int osbq_job_decode(const char *buf, size_t len, struct osbq_job *job, char *errbuf,
                    size_t errbuf_len)
{
    const unsigned char *p = (const unsigned char *)buf;
    msgpack_unpacked up;
    msgpack_unpack_return ret;
    size_t entries = 0;
    size_t end = 0;
    size_t off = 0;

    if (!job)
        return fail(errbuf, errbuf_len, "job decode: NULL job");
    memset(job, 0, sizeof(*job));
    if (len > OSBQ_JOB_MAX_BYTES)
        return fail(errbuf, errbuf_len, "job of %zu bytes is over the limit of %u", len,
                    OSBQ_JOB_MAX_BYTES);
    if (len == 0)
        return fail(errbuf, errbuf_len, "truncated job");
    if (!buf)
        return fail(errbuf, errbuf_len, "job decode: NULL buffer");
    switch (map_header(p, len, &entries)) {
    case -1:
        return fail(errbuf, errbuf_len, "job is not a msgpack map");
    case -2:
        return fail(errbuf, errbuf_len, "truncated job");
    }
    if (entries > MAX_ENTRIES)
        return fail(errbuf, errbuf_len, "job map has %zu entries, over the limit of %d", entries,
                    MAX_ENTRIES);
    switch (skim(p, len, &end)) {
    case SKIM_OK:
        break;
    case SKIM_TRUNCATED:
        return fail(errbuf, errbuf_len, "truncated job");
    case SKIM_MALFORMED:
        return fail(errbuf, errbuf_len, "malformed msgpack in job");
    }
    if (end != len)
        return fail(errbuf, errbuf_len, "trailing bytes after job");

    msgpack_unpacked_init(&up);
    ret = msgpack_unpack_next(&up, buf, len, &off);
    if (ret != MSGPACK_UNPACK_SUCCESS) {
        /* msgpack-c reports its nesting limit as out of memory too. */
        if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
            fail(errbuf, errbuf_len, "job nested too deeply, or out of memory");
        else
            fail(errbuf, errbuf_len, "malformed msgpack in job");
        goto out_destroy_unpacked;
    }
    if (up.data.type != MSGPACK_OBJECT_MAP || off != len) {
        fail(errbuf, errbuf_len, "malformed msgpack in job");
        goto out_destroy_unpacked;
    }
    if (read_map(&up.data.via.map, job, errbuf, errbuf_len) < 0)
        goto out_clear_job;
    msgpack_unpacked_destroy(&up);
    return 0;

out_clear_job:
    osbq_job_clear(job);
out_destroy_unpacked:
    msgpack_unpacked_destroy(&up);
    return -1;
}
