/* Unit tests for the job codec in proto/job.c: round trips, and every way the decoder rejects. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

#define MAX_KV      80
#define ERR_LEN     256
#define FUZZ_ROUNDS 2000

/* Value shapes the hand-built maps can hold; most exist only to be the wrong type. */
enum vtype {
    T_NIL,
    T_STR,  /* str, NUL-terminated */
    T_STRN, /* str of len bytes, may hold NUL */
    T_UINT, /* u */
    T_NEG,  /* -(int64_t)u */
    T_BOOL,
    T_FLOAT,
    T_BIN,
    T_ARRAY, /* one-element array */
    T_MAP,   /* one-pair map */
    T_RAW,   /* len bytes of str copied as they are, for malformed values */
};

/* One key and its value; key NULL packs the key as the integer 7 instead of a string. */
struct kv {
    const char *key;
    enum vtype type;
    const char *str;
    size_t len;
    uint64_t u;
};

struct kvset {
    struct kv kv[MAX_KV];
    size_t n;
};

/* A valid bind job in the encoder's key order, so that leaving out "binding" is an error too. */
static const struct kv valid_kvs[] = {
    {.key = "v", .type = T_UINT, .u = OSBQ_JOB_VERSION},
    {.key = "op", .type = T_STR, .str = "op-1"},
    {.key = "kind", .type = T_STR, .str = "bind"},
    {.key = "instance", .type = T_STR, .str = "inst-1"},
    {.key = "binding", .type = T_STR, .str = "bnd-1"},
    {.key = "service", .type = T_STR, .str = "svc-1"},
    {.key = "plan", .type = T_STR, .str = "plan-1"},
    {.key = "params", .type = T_STR, .str = "{\"size\":3}"},
    {.key = "ctx", .type = T_NIL},
    {.key = "bind_res", .type = T_NIL},
    {.key = "mi", .type = T_NIL},
    {.key = "api", .type = T_UINT, .u = 217},
    {.key = "origin", .type = T_NIL},
    {.key = "req_id", .type = T_STR, .str = "req-1"},
    {.key = "trace", .type = T_STR, .str = "{\"X-B3-TraceId\":\"abc\"}"},
    {.key = "pred", .type = T_STR, .str = "bnd-0"},
    {.key = "attempt", .type = T_UINT, .u = 1},
};

#define VALID_COUNT (sizeof(valid_kvs) / sizeof(valid_kvs[0]))

static void kvset_valid(struct kvset *s)
{
    memcpy(s->kv, valid_kvs, sizeof(valid_kvs));
    s->n = VALID_COUNT;
}

static size_t kvset_find(const struct kvset *s, const char *key)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        if (s->kv[i].key && strcmp(s->kv[i].key, key) == 0)
            return i;
    }
    fail_msg("no key \"%s\" in the test map", key);
    return 0;
}

static void kvset_remove(struct kvset *s, const char *key)
{
    size_t i = kvset_find(s, key);

    memmove(&s->kv[i], &s->kv[i + 1], (s->n - i - 1) * sizeof(s->kv[0]));
    s->n--;
}

/* Replaces the value of key, keeping its position. */
static void kvset_set(struct kvset *s, const char *key, struct kv value)
{
    size_t i = kvset_find(s, key);

    value.key = s->kv[i].key;
    s->kv[i] = value;
}

static void kvset_add(struct kvset *s, struct kv kv)
{
    assert_true(s->n < MAX_KV);
    s->kv[s->n++] = kv;
}

static void pack_value(msgpack_packer *pk, msgpack_sbuffer *sbuf, const struct kv *kv)
{
    switch (kv->type) {
    case T_NIL:
        assert_int_equal(msgpack_pack_nil(pk), 0);
        break;
    case T_STR:
        assert_int_equal(msgpack_pack_str_with_body(pk, kv->str, strlen(kv->str)), 0);
        break;
    case T_STRN:
        assert_int_equal(msgpack_pack_str_with_body(pk, kv->str, kv->len), 0);
        break;
    case T_UINT:
        assert_int_equal(msgpack_pack_uint64(pk, kv->u), 0);
        break;
    case T_NEG:
        assert_int_equal(msgpack_pack_int64(pk, -(int64_t)kv->u), 0);
        break;
    case T_BOOL:
        assert_int_equal(msgpack_pack_true(pk), 0);
        break;
    case T_FLOAT:
        assert_int_equal(msgpack_pack_double(pk, 2.17), 0);
        break;
    case T_BIN:
        assert_int_equal(msgpack_pack_bin_with_body(pk, "abc", 3), 0);
        break;
    case T_ARRAY:
        assert_int_equal(msgpack_pack_array(pk, 1), 0);
        assert_int_equal(msgpack_pack_str_with_body(pk, "x", 1), 0);
        break;
    case T_MAP:
        assert_int_equal(msgpack_pack_map(pk, 1), 0);
        assert_int_equal(msgpack_pack_str_with_body(pk, "a", 1), 0);
        assert_int_equal(msgpack_pack_uint32(pk, 1), 0);
        break;
    case T_RAW:
        assert_int_equal(msgpack_sbuffer_write(sbuf, kv->str, kv->len), 0);
        break;
    }
}

/* Packs the set as one map; the caller frees the result. */
static char *pack_kvs(const struct kvset *s, size_t *len)
{
    msgpack_sbuffer sbuf;
    msgpack_packer pk;
    size_t i;

    msgpack_sbuffer_init(&sbuf);
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    assert_int_equal(msgpack_pack_map(&pk, s->n), 0);
    for (i = 0; i < s->n; i++) {
        if (s->kv[i].key)
            assert_int_equal(msgpack_pack_str_with_body(&pk, s->kv[i].key, strlen(s->kv[i].key)),
                             0);
        else
            assert_int_equal(msgpack_pack_uint32(&pk, 7), 0);
        pack_value(&pk, &sbuf, &s->kv[i]);
    }
    *len = sbuf.size;
    return msgpack_sbuffer_release(&sbuf);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("error \"%s\" does not contain \"%s\"", haystack, needle);
}

static void assert_job_zeroed(const struct osbq_job *job)
{
    static const struct osbq_job zero;

    assert_null(job->operation_id);
    assert_null(job->instance_id);
    assert_null(job->binding_id);
    assert_null(job->service_id);
    assert_null(job->plan_id);
    assert_null(job->parameters);
    assert_null(job->context);
    assert_null(job->bind_resource);
    assert_null(job->maintenance_info);
    assert_null(job->originating_identity);
    assert_null(job->request_identity);
    assert_null(job->trace);
    assert_null(job->predecessor_binding_id);
    assert_memory_equal(job, &zero, sizeof(zero));
}

/* Decodes from an exact-size heap copy, so AddressSanitizer catches any read past the end. */
static int decode_exact(const char *buf, size_t len, struct osbq_job *job, char *err,
                        size_t err_len)
{
    char *copy = malloc(len > 0 ? len : 1);
    int rc;

    assert_non_null(copy);
    if (len > 0)
        memcpy(copy, buf, len);
    rc = osbq_job_decode(copy, len, job, err, err_len);
    free(copy);
    return rc;
}

/* Expects decoding to fail with needle in the reason and to leave a (dirty) job all-NULL. */
static void expect_reject_bytes(const char *buf, size_t len, const char *needle)
{
    struct osbq_job job;
    char err[ERR_LEN] = "";

    memset(&job, 0xab, sizeof(job));
    assert_int_equal(decode_exact(buf, len, &job, err, sizeof(err)), -1);
    assert_job_zeroed(&job);
    assert_true(err[0] != '\0');
    if (needle)
        assert_contains(err, needle);
}

static void expect_reject(const struct kvset *s, const char *needle)
{
    size_t len;
    char *buf = pack_kvs(s, &len);

    expect_reject_bytes(buf, len, needle);
    free(buf);
}

static void expect_accept(const struct kvset *s, struct osbq_job *job)
{
    char err[ERR_LEN] = "";
    size_t len;
    char *buf = pack_kvs(s, &len);

    if (decode_exact(buf, len, job, err, sizeof(err)) != 0)
        fail_msg("decode failed: %s", err);
    free(buf);
}

static void assert_str_or_null(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

static void assert_job_equal(const struct osbq_job *a, const struct osbq_job *b)
{
    assert_str_or_null(a->operation_id, b->operation_id);
    assert_int_equal(a->kind, b->kind);
    assert_str_or_null(a->instance_id, b->instance_id);
    assert_str_or_null(a->binding_id, b->binding_id);
    assert_str_or_null(a->service_id, b->service_id);
    assert_str_or_null(a->plan_id, b->plan_id);
    assert_str_or_null(a->parameters, b->parameters);
    assert_str_or_null(a->context, b->context);
    assert_str_or_null(a->bind_resource, b->bind_resource);
    assert_str_or_null(a->maintenance_info, b->maintenance_info);
    assert_int_equal(a->api_version, b->api_version);
    assert_str_or_null(a->originating_identity, b->originating_identity);
    assert_str_or_null(a->request_identity, b->request_identity);
    assert_str_or_null(a->trace, b->trace);
    assert_str_or_null(a->predecessor_binding_id, b->predecessor_binding_id);
    assert_int_equal(a->attempt, b->attempt);
}

/* Big enough to take the str32 path through both codec and unpacker. */
static char big_params[70000];

static void full_job(struct osbq_job *job)
{
    memset(big_params, 'x', sizeof(big_params) - 1);
    memcpy(big_params, "{\"blob\":\"", 9);
    memcpy(big_params + sizeof(big_params) - 3, "\"}", 3);

    memset(job, 0, sizeof(*job));
    job->operation_id = "0b7a7f5e-3c1d-4a7e-9d43-8c1f0e2b9a61";
    job->kind = OSBQ_JOB_BIND;
    job->instance_id = "inst-\xc3\xa9t\xc3\xa9";
    job->binding_id = "binding-42";
    job->service_id = "svc-redis";
    job->plan_id = "plan-small";
    job->parameters = big_params;
    job->context = "{\"platform\":\"cloudfoundry\",\"space_guid\":\"s\"}";
    job->bind_resource = "{\"app_guid\":\"a\"}";
    job->maintenance_info = "{\"version\":\"2.1.0\"}";
    job->api_version = 217;
    job->originating_identity = "cloudfoundry eyJ1c2VyX2lkIjoiMTIzIn0=";
    job->request_identity = "req-\"quoted\"";
    job->trace = "{\"X-B3-TraceId\":\"463ac35c9f6413ad\"}";
    job->predecessor_binding_id = "old-binding";
    job->attempt = 3;
}

static void minimal_job(struct osbq_job *job, enum osbq_job_kind kind)
{
    memset(job, 0, sizeof(*job));
    job->operation_id = "op";
    job->kind = kind;
    job->instance_id = "i";
    if (kind == OSBQ_JOB_BIND || kind == OSBQ_JOB_UNBIND)
        job->binding_id = "b";
    job->service_id = "s";
    job->plan_id = "p";
    job->api_version = 200;
    job->attempt = 1;
}

static char *encode_ok(const struct osbq_job *job, size_t *len)
{
    char err[ERR_LEN] = "";
    char *buf = NULL;

    if (osbq_job_encode(job, &buf, len, err, sizeof(err)) != 0)
        fail_msg("encode failed: %s", err);
    assert_non_null(buf);
    return buf;
}

/* Every string of job lies in the one block it owns, of at most size bytes. */
static void assert_strings_in_block(const struct osbq_job *job, size_t size)
{
    const char *const strings[] = {
        job->operation_id,
        job->instance_id,
        job->binding_id,
        job->service_id,
        job->plan_id,
        job->parameters,
        job->context,
        job->bind_resource,
        job->maintenance_info,
        job->originating_identity,
        job->request_identity,
        job->trace,
        job->predecessor_binding_id,
    };
    size_t i;

    assert_non_null(job->owned);
    for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        if (!strings[i])
            continue;
        assert_true(strings[i] >= job->owned);
        assert_true(strings[i] + strlen(strings[i]) < job->owned + size);
    }
}

static void round_trip(const struct osbq_job *in)
{
    struct osbq_job out;
    char err[ERR_LEN] = "";
    size_t len = 0;
    char *buf = encode_ok(in, &len);

    memset(&out, 0xab, sizeof(out));
    if (decode_exact(buf, len, &out, err, sizeof(err)) != 0)
        fail_msg("decode failed: %s", err);
    assert_int_equal(out.version, OSBQ_JOB_VERSION);
    assert_job_equal(in, &out);
    assert_strings_in_block(&out, len);
    osbq_job_clear(&out);
    assert_job_zeroed(&out);
    free(buf);
}

/* A copy owns its strings in one block: equal to the source, apart from it. */
static void test_copy(void **state)
{
    struct osbq_job in, copy;
    size_t len = 0;
    char *buf;

    (void)state;
    full_job(&in);
    buf = encode_ok(&in, &len);
    assert_int_equal(osbq_job_copy(&in, &copy), 0);
    assert_job_equal(&in, &copy);
    assert_strings_in_block(&copy, len);
    assert_ptr_not_equal(copy.parameters, in.parameters);
    osbq_job_clear(&copy);
    assert_job_zeroed(&copy);
    minimal_job(&in, OSBQ_JOB_PROVISION);
    assert_int_equal(osbq_job_copy(&in, &copy), 0);
    assert_job_equal(&in, &copy);
    assert_null(copy.parameters);
    osbq_job_clear(&copy);
    free(buf);
}

static void test_kind_names(void **state)
{
    static const struct {
        enum osbq_job_kind kind;
        const char *name;
    } kinds[] = {
        {OSBQ_JOB_PROVISION, "provision"},     {OSBQ_JOB_UPDATE, "update"},
        {OSBQ_JOB_DEPROVISION, "deprovision"}, {OSBQ_JOB_BIND, "bind"},
        {OSBQ_JOB_UNBIND, "unbind"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        assert_string_equal(osbq_job_kind_name(kinds[i].kind), kinds[i].name);
        assert_int_equal(osbq_job_kind_from_name(kinds[i].name), kinds[i].kind);
    }
    assert_null(osbq_job_kind_name((enum osbq_job_kind)0));
    assert_null(osbq_job_kind_name((enum osbq_job_kind)6));
    assert_null(osbq_job_kind_name((enum osbq_job_kind) - 1));
    assert_int_equal(osbq_job_kind_from_name("Provision"), 0);
    assert_int_equal(osbq_job_kind_from_name("bin"), 0);
    assert_int_equal(osbq_job_kind_from_name("bindx"), 0);
    assert_int_equal(osbq_job_kind_from_name(""), 0);
    assert_int_equal(osbq_job_kind_from_name(NULL), 0);
}

static void test_round_trip_full(void **state)
{
    struct osbq_job job;

    (void)state;
    full_job(&job);
    round_trip(&job);
}

static void test_round_trip_minimal(void **state)
{
    struct osbq_job job;

    (void)state;
    minimal_job(&job, OSBQ_JOB_PROVISION);
    round_trip(&job);
}

static void test_round_trip_every_kind(void **state)
{
    struct osbq_job job;
    int k;

    (void)state;
    for (k = OSBQ_JOB_PROVISION; k <= OSBQ_JOB_UNBIND; k++) {
        minimal_job(&job, (enum osbq_job_kind)k);
        round_trip(&job);
    }
    /* A binding id on a non-binding kind is carried, not refused. */
    minimal_job(&job, OSBQ_JOB_DEPROVISION);
    job.binding_id = "b";
    round_trip(&job);
}

/* The version must be the first thing a reader meets, and every key is always written. */
static void test_encode_layout(void **state)
{
    static const char *const keys[] = {
        "v",        "op", "kind", "instance", "binding", "service", "plan", "params", "ctx",
        "bind_res", "mi", "api",  "origin",   "req_id",  "trace",   "pred", "attempt"};
    struct osbq_job job;
    msgpack_unpacked up;
    size_t len = 0, off = 0, i;
    char *buf;

    (void)state;
    minimal_job(&job, OSBQ_JOB_UPDATE);
    job.version = 99; /* the encoder writes its own version, not the struct's */
    buf = encode_ok(&job, &len);
    assert_true(len >= 6);
    /* 17 keys: a map16 header (0xde, then the count in two bytes), then "v". */
    assert_int_equal((unsigned char)buf[0], 0xde);
    assert_int_equal((unsigned char)buf[1], 0x00);
    assert_int_equal((unsigned char)buf[2], 17);
    assert_int_equal((unsigned char)buf[3], 0xa1);
    assert_int_equal(buf[4], 'v');
    assert_int_equal((unsigned char)buf[5], OSBQ_JOB_VERSION);

    msgpack_unpacked_init(&up);
    assert_int_equal(msgpack_unpack_next(&up, buf, len, &off), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal(off, len);
    assert_int_equal(up.data.type, MSGPACK_OBJECT_MAP);
    assert_int_equal(up.data.via.map.size, 17);
    for (i = 0; i < 17; i++) {
        const msgpack_object *key = &up.data.via.map.ptr[i].key;

        assert_int_equal(key->type, MSGPACK_OBJECT_STR);
        assert_int_equal(key->via.str.size, strlen(keys[i]));
        assert_memory_equal(key->via.str.ptr, keys[i], (size_t)key->via.str.size);
    }
    /* Absent optional fields travel as nil, not as missing keys. */
    assert_int_equal(up.data.via.map.ptr[7].val.type, MSGPACK_OBJECT_NIL);
    msgpack_unpacked_destroy(&up);
    free(buf);
}

/* One way to spoil a valid bind job, for the encoder to refuse. */
enum spoil {
    NO_OP,
    EMPTY_OP,
    NO_KIND,
    BAD_KIND,
    NO_INSTANCE,
    BIND_NO_BINDING,
    UNBIND_NO_BINDING,
    EMPTY_BINDING,
    NO_SERVICE,
    NO_PLAN,
    EMPTY_PLAN,
    API_150,
    API_300,
    ATTEMPT_0,
};

static void spoil_job(struct osbq_job *job, enum spoil how)
{
    switch (how) {
    case NO_OP:
        job->operation_id = NULL;
        break;
    case EMPTY_OP:
        job->operation_id = "";
        break;
    case NO_KIND:
        job->kind = (enum osbq_job_kind)0;
        break;
    case BAD_KIND:
        job->kind = (enum osbq_job_kind)9;
        break;
    case NO_INSTANCE:
        job->instance_id = NULL;
        break;
    case BIND_NO_BINDING:
        job->binding_id = NULL;
        break;
    case UNBIND_NO_BINDING:
        job->kind = OSBQ_JOB_UNBIND;
        job->binding_id = NULL;
        break;
    case EMPTY_BINDING:
        job->binding_id = "";
        break;
    case NO_SERVICE:
        job->service_id = NULL;
        break;
    case NO_PLAN:
        job->plan_id = NULL;
        break;
    case EMPTY_PLAN:
        job->plan_id = "";
        break;
    case API_150:
        job->api_version = 150;
        break;
    case API_300:
        job->api_version = 300;
        break;
    case ATTEMPT_0:
        job->attempt = 0;
        break;
    }
}

static void test_encode_refuses_invalid(void **state)
{
    static const struct {
        enum spoil how;
        const char *needle;
    } cases[] = {
        {NO_OP, "missing field \"op\""},
        {EMPTY_OP, "field \"op\": empty"},
        {NO_KIND, "field \"kind\""},
        {BAD_KIND, "field \"kind\""},
        {NO_INSTANCE, "missing field \"instance\""},
        {BIND_NO_BINDING, "missing field \"binding\""},
        {UNBIND_NO_BINDING, "missing field \"binding\""},
        {EMPTY_BINDING, "field \"binding\": empty"},
        {NO_SERVICE, "missing field \"service\""},
        {NO_PLAN, "missing field \"plan\""},
        {EMPTY_PLAN, "field \"plan\": empty"},
        {API_150, "field \"api\""},
        {API_300, "field \"api\""},
        {ATTEMPT_0, "field \"attempt\""},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct osbq_job job;
        char err[ERR_LEN] = "";
        char *out = (char *)&job; /* any non-NULL sentinel */
        char *const sentinel = out;
        size_t out_len = 12345;

        minimal_job(&job, OSBQ_JOB_BIND);
        spoil_job(&job, cases[i].how);
        if (osbq_job_encode(&job, &out, &out_len, err, sizeof(err)) != -1)
            fail_msg("encode accepted spoiled job %zu", i);
        assert_ptr_equal(out, sentinel);
        assert_int_equal(out_len, 12345);
        assert_contains(err, cases[i].needle);
    }
}

static void test_encode_without_errbuf(void **state)
{
    struct osbq_job job;
    char *out = NULL;
    size_t len = 0;

    (void)state;
    minimal_job(&job, OSBQ_JOB_PROVISION);
    job.plan_id = NULL;
    assert_int_equal(osbq_job_encode(&job, &out, &len, NULL, 0), -1);
    assert_null(out);
    job.plan_id = "p";
    assert_int_equal(osbq_job_encode(&job, &out, &len, NULL, 0), 0);
    free(out);
}

/* Guards the hand-built maps the rejection tests start from. */
/* How reject_each_field spoils one field of a valid job. */
enum field_spoil {
    SPOIL_REMOVE,    /* the field is left out */
    SPOIL_DUPLICATE, /* the field is there twice */
    SPOIL_NUL,       /* its string holds a NUL byte */
    SPOIL_EMPTY,     /* its string is empty */
};

/* For each of the n keys, a valid job with that one field spoiled is rejected, and the error
 * says before"<key>"after. */
static void reject_each_field(const char *const *keys, size_t n, enum field_spoil spoil,
                              const char *before, const char *after)
{
    for (size_t i = 0; i < n; i++) {
        struct kvset s;
        char needle[96];

        kvset_valid(&s);
        switch (spoil) {
        case SPOIL_REMOVE:
            kvset_remove(&s, keys[i]);
            break;
        case SPOIL_DUPLICATE:
            kvset_add(&s, s.kv[kvset_find(&s, keys[i])]);
            break;
        case SPOIL_NUL:
            kvset_set(&s, keys[i], (struct kv){.type = T_STRN, .str = "bind\0x", .len = 6});
            break;
        case SPOIL_EMPTY:
            kvset_set(&s, keys[i], (struct kv){.type = T_STR, .str = ""});
            break;
        }
        snprintf(needle, sizeof(needle), "%s\"%s\"%s", before, keys[i], after);
        expect_reject(&s, needle);
    }
}

static void test_decode_hand_built(void **state)
{
    struct kvset s;
    struct osbq_job job;

    (void)state;
    kvset_valid(&s);
    expect_accept(&s, &job);
    assert_string_equal(job.operation_id, "op-1");
    assert_int_equal(job.kind, OSBQ_JOB_BIND);
    assert_string_equal(job.binding_id, "bnd-1");
    assert_string_equal(job.parameters, "{\"size\":3}");
    assert_null(job.context);
    assert_string_equal(job.request_identity, "req-1");
    assert_string_equal(job.trace, "{\"X-B3-TraceId\":\"abc\"}");
    assert_string_equal(job.predecessor_binding_id, "bnd-0");
    assert_int_equal(job.api_version, 217);
    osbq_job_clear(&job);
}

/* Optional keys may be absent rather than nil, and the order after "v" is free. */
static void test_decode_optional_absent(void **state)
{
    static const char *const optional[] = {"params", "ctx",    "bind_res", "mi",
                                           "origin", "req_id", "trace",    "pred"};
    struct kvset s;
    struct osbq_job job;
    struct kv last;
    size_t i;

    (void)state;
    kvset_valid(&s);
    for (i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
        kvset_remove(&s, optional[i]);
    kvset_set(&s, "kind", (struct kv){.type = T_STR, .str = "provision"});
    kvset_remove(&s, "binding");
    last = s.kv[1];
    s.kv[1] = s.kv[s.n - 1];
    s.kv[s.n - 1] = last;
    expect_accept(&s, &job);
    assert_int_equal(job.kind, OSBQ_JOB_PROVISION);
    assert_null(job.binding_id);
    assert_null(job.parameters);
    assert_null(job.request_identity);
    osbq_job_clear(&job);
}

static void test_decode_unknown_version(void **state)
{
    static const uint64_t versions[] = {0, 1, 2, 4, 7, 0x10000000000ull};
    struct kvset s;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        char needle[64];

        kvset_valid(&s);
        kvset_set(&s, "v", (struct kv){.type = T_UINT, .u = versions[i]});
        snprintf(needle, sizeof(needle), "unsupported job format version %llu",
                 (unsigned long long)versions[i]);
        expect_reject(&s, needle);
        expect_reject(&s, "(this build reads 3)");
    }
    /* The version is judged before anything else in the map. */
    kvset_valid(&s);
    kvset_set(&s, "v", (struct kv){.type = T_UINT, .u = 7});
    kvset_add(&s, (struct kv){.key = "new_field", .type = T_STR, .str = "x"});
    kvset_remove(&s, "plan");
    expect_reject(&s, "version 7");
}

static void test_decode_version_not_first(void **state)
{
    struct kvset s;
    struct kv v;

    (void)state;
    kvset_valid(&s);
    v = s.kv[0];
    s.kv[0] = s.kv[1];
    s.kv[1] = v;
    expect_reject(&s, "first key of a job must be \"v\"");

    kvset_valid(&s);
    kvset_remove(&s, "v");
    expect_reject(&s, "\"v\"");

    s.n = 0;
    expect_reject(&s, "\"v\"");
}

static void test_decode_missing_required(void **state)
{
    static const char *const required[] = {"op",      "kind", "instance", "binding",
                                           "service", "plan", "api",      "attempt"};

    (void)state;
    reject_each_field(required, sizeof(required) / sizeof(required[0]), SPOIL_REMOVE,
                      "missing field ", "");
}

static void test_decode_wrong_type(void **state)
{
    static const struct {
        const char *key;
        enum vtype type;
        const char *expected;
    } cases[] = {
        {"v", T_STR, "unsigned integer"},
        {"v", T_NEG, "unsigned integer"},
        {"v", T_NIL, "unsigned integer"},
        {"op", T_UINT, "string"},
        {"op", T_NIL, "string"},
        {"op", T_BIN, "string"},
        {"op", T_ARRAY, "string"},
        {"kind", T_UINT, "string"},
        {"kind", T_NIL, "string"},
        {"instance", T_BOOL, "string"},
        {"binding", T_UINT, "string or nil"},
        {"binding", T_MAP, "string or nil"},
        {"service", T_FLOAT, "string"},
        {"plan", T_MAP, "string"},
        {"params", T_UINT, "string or nil"},
        {"params", T_MAP, "string or nil"},
        {"params", T_BOOL, "string or nil"},
        {"ctx", T_ARRAY, "string or nil"},
        {"bind_res", T_NEG, "string or nil"},
        {"mi", T_BIN, "string or nil"},
        {"api", T_STR, "unsigned integer"},
        {"api", T_NEG, "unsigned integer"},
        {"api", T_FLOAT, "unsigned integer"},
        {"api", T_NIL, "unsigned integer"},
        {"origin", T_UINT, "string or nil"},
        {"req_id", T_BOOL, "string or nil"},
        {"attempt", T_STR, "unsigned integer"},
        {"attempt", T_NEG, "unsigned integer"},
        {"attempt", T_NIL, "unsigned integer"},
        {"attempt", T_ARRAY, "unsigned integer"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kvset s;
        char needle[96];

        kvset_valid(&s);
        kvset_set(&s, cases[i].key, (struct kv){.type = cases[i].type, .str = "1", .u = 217});
        snprintf(needle, sizeof(needle), "field \"%s\": expected %s", cases[i].key,
                 cases[i].expected);
        expect_reject(&s, needle);
    }
}

static void test_decode_unknown_key(void **state)
{
    struct kvset s;

    (void)state;
    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = "priority", .type = T_UINT, .u = 1});
    expect_reject(&s, "unknown field \"priority\"");

    /* Control bytes in a hostile key do not reach the message. */
    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = "bad\nkey\x1b[31m", .type = T_NIL});
    expect_reject(&s, "unknown field \"bad?key?[31m\"");

    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = "", .type = T_NIL});
    expect_reject(&s, "unknown field \"\"");

    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = NULL, .type = T_NIL});
    expect_reject(&s, "is not a string");

    /* Keys compare by their whole length, not as prefixes. */
    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = "plan_", .type = T_NIL});
    expect_reject(&s, "unknown field \"plan_\"");
}

static void test_decode_duplicate_key(void **state)
{
    static const char *const keys[] = {"v", "op", "kind", "binding", "plan", "params", "attempt"};

    (void)state;
    reject_each_field(keys, sizeof(keys) / sizeof(keys[0]), SPOIL_DUPLICATE, "duplicate field ",
                      "");
}

static void test_decode_unknown_kind(void **state)
{
    static const char *const names[] = {"destroy", "Bind", "", "bind ", "provisionprovision"};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct kvset s;

        kvset_valid(&s);
        kvset_set(&s, "kind", (struct kv){.type = T_STR, .str = names[i]});
        expect_reject(&s, "field \"kind\": unknown kind");
    }
}

static void test_decode_attempt(void **state)
{
    struct kvset s;
    struct osbq_job job;

    (void)state;
    kvset_valid(&s);
    kvset_set(&s, "attempt", (struct kv){.type = T_UINT, .u = 0});
    expect_reject(&s, "field \"attempt\"");
    kvset_set(&s, "attempt", (struct kv){.type = T_UINT, .u = 0x100000000ull});
    expect_reject(&s, "field \"attempt\"");
    kvset_set(&s, "attempt", (struct kv){.type = T_UINT, .u = UINT32_MAX});
    expect_accept(&s, &job);
    assert_int_equal(job.attempt, UINT32_MAX);
    osbq_job_clear(&job);
}

static void test_decode_api_range(void **state)
{
    static const uint64_t bad[] = {0, 150, 199, 300, 0x100000000ull + 217};
    struct kvset s;
    struct osbq_job job;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kvset_valid(&s);
        kvset_set(&s, "api", (struct kv){.type = T_UINT, .u = bad[i]});
        expect_reject(&s, "field \"api\"");
    }
    kvset_valid(&s);
    kvset_set(&s, "api", (struct kv){.type = T_UINT, .u = 150});
    expect_reject(&s, "200..299");
    kvset_set(&s, "api", (struct kv){.type = T_UINT, .u = 299});
    expect_accept(&s, &job);
    osbq_job_clear(&job);
}

static void test_decode_binding_rules(void **state)
{
    static const char *const kinds[] = {"bind", "unbind"};
    struct kvset s;
    struct osbq_job job;
    size_t i;

    (void)state;
    for (i = 0; i < 2; i++) {
        kvset_valid(&s);
        kvset_set(&s, "kind", (struct kv){.type = T_STR, .str = kinds[i]});
        kvset_set(&s, "binding", (struct kv){.type = T_NIL});
        expect_reject(&s, "missing field \"binding\"");
        kvset_remove(&s, "binding");
        expect_reject(&s, "missing field \"binding\"");
    }
    /* Other kinds take nil, absence, or a string. */
    kvset_valid(&s);
    kvset_set(&s, "kind", (struct kv){.type = T_STR, .str = "update"});
    kvset_set(&s, "binding", (struct kv){.type = T_NIL});
    expect_accept(&s, &job);
    assert_null(job.binding_id);
    osbq_job_clear(&job);
    kvset_set(&s, "binding", (struct kv){.type = T_STR, .str = "b"});
    expect_accept(&s, &job);
    assert_string_equal(job.binding_id, "b");
    osbq_job_clear(&job);
}

static void test_decode_embedded_nul(void **state)
{
    static const char *const keys[] = {"op", "kind", "binding", "plan", "params", "origin"};

    (void)state;
    reject_each_field(keys, sizeof(keys) / sizeof(keys[0]), SPOIL_NUL, "field ",
                      ": string contains a NUL byte");
}

static void test_decode_empty_ids(void **state)
{
    static const char *const ids[] = {"op", "instance", "binding", "service", "plan"};

    (void)state;
    reject_each_field(ids, sizeof(ids) / sizeof(ids[0]), SPOIL_EMPTY, "field ", ": empty");
}

static void test_decode_not_a_map(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
    } cases[] = {
        {"\x91\x01", 2},     /* array */
        {"\xa2hi", 3},       /* str */
        {"\x01", 1},         /* int */
        {"\xc0", 1},         /* nil */
        {"\xc4\x01x", 3},    /* bin */
        {"\xdc\x00\x00", 3}, /* array 16 */
        {"\xc1", 1},         /* never-used byte */
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_reject_bytes(cases[i].bytes, cases[i].len, "not a msgpack map");
}

static void test_decode_every_truncation(void **state)
{
    struct osbq_job job;
    size_t len = 0, cut;
    char *buf;

    (void)state;
    full_job(&job);
    job.parameters = "{\"a\":[1,2,3]}"; /* keep the loop quick */
    buf = encode_ok(&job, &len);
    for (cut = 0; cut < len; cut++)
        expect_reject_bytes(buf, cut, "truncated job");
    free(buf);

    /* A long string cut short, and a map16 header cut inside its count. */
    full_job(&job);
    buf = encode_ok(&job, &len);
    expect_reject_bytes(buf, len - 1, "truncated job");
    expect_reject_bytes(buf, len / 2, "truncated job");
    free(buf);
    expect_reject_bytes("\xde\x00", 2, "truncated job");
}

static void test_decode_trailing_bytes(void **state)
{
    struct osbq_job job;
    size_t len = 0;
    char *buf, *longer;

    (void)state;
    minimal_job(&job, OSBQ_JOB_PROVISION);
    buf = encode_ok(&job, &len);
    longer = malloc(len * 2);
    assert_non_null(longer);
    memcpy(longer, buf, len);
    longer[len] = '\0';
    expect_reject_bytes(longer, len + 1, "trailing bytes after job");
    memcpy(longer + len, buf, len); /* two jobs in one frame */
    expect_reject_bytes(longer, len * 2, "trailing bytes after job");
    free(longer);
    free(buf);
}

static void test_decode_too_many_entries(void **state)
{
    struct kvset s;
    static char names[MAX_KV][8];
    size_t i;

    (void)state;
    kvset_valid(&s);
    for (i = 0; s.n < 65; i++) {
        snprintf(names[i], sizeof(names[i]), "k%zu", i);
        kvset_add(&s, (struct kv){.key = names[i], .type = T_NIL});
    }
    expect_reject(&s, "65 entries");
    /* At the limit the map is walked, and its first stray key is what fails. */
    kvset_remove(&s, "k0");
    expect_reject(&s, "unknown field \"k1\"");
    /* A map32 header claiming four billion entries is refused before anything is built. */
    expect_reject_bytes("\xdf\xff\xff\xff\xff\xa1v\x01", 8, "entries");
}

static void test_decode_too_large(void **state)
{
    size_t len = (size_t)OSBQ_JOB_MAX_BYTES + 1;
    char *buf = calloc(1, len);

    (void)state;
    assert_non_null(buf);
    buf[0] = (char)0x81;
    expect_reject_bytes(buf, len, "over the limit");
    free(buf);
}

/* A container header that promises more elements than bytes remain must not make the decoder
 * allocate for them: msgpack-c would ask for tens of gigabytes up front. */
static void test_decode_huge_declared_container(void **state)
{
    static const struct kv hostile[] = {
        {.type = T_RAW, .str = "\xdd\xff\xff\xff\xff", .len = 5},     /* array 32 */
        {.type = T_RAW, .str = "\xdf\xff\xff\xff\xff", .len = 5},     /* map 32 */
        {.type = T_RAW, .str = "\xdb\xff\xff\xff\xff", .len = 5},     /* str 32 */
        {.type = T_RAW, .str = "\xc9\xff\xff\xff\xff\x01", .len = 6}, /* ext 32 */
        {.type = T_RAW, .str = "\xdc\xff\xff", .len = 3},             /* array 16 */
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        struct kvset s;

        kvset_valid(&s);
        kvset_set(&s, "params", hostile[i]);
        expect_reject(&s, "truncated job");
    }
}

static void test_decode_deep_nesting(void **state)
{
    char raw[64];
    struct kvset s;

    (void)state;
    memset(raw, 0x91, sizeof(raw)); /* one-element arrays all the way down */
    raw[sizeof(raw) - 1] = 0x01;
    kvset_valid(&s);
    kvset_set(&s, "params", (struct kv){.type = T_RAW, .str = raw, .len = sizeof(raw)});
    expect_reject(&s, "nested too deeply");

    /* Shallow enough for msgpack-c, and then simply the wrong type. */
    kvset_set(&s, "params", (struct kv){.type = T_RAW, .str = raw + 44, .len = 20});
    expect_reject(&s, "field \"params\": expected string or nil");
}

/* xorshift64: a fixed seed keeps failures reproducible. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void decode_anything(const char *buf, size_t len)
{
    struct osbq_job job;
    char err[ERR_LEN] = "";

    memset(&job, 0xab, sizeof(job));
    if (decode_exact(buf, len, &job, err, sizeof(err)) == 0) {
        assert_non_null(job.operation_id);
        osbq_job_clear(&job);
    } else {
        assert_job_zeroed(&job);
        assert_true(err[0] != '\0');
    }
}

static void test_decode_random_garbage(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char buf[128];
    size_t round, i;

    (void)state;
    for (round = 0; round < FUZZ_ROUNDS; round++) {
        size_t len = (size_t)(next_random(&seed) % sizeof(buf));

        for (i = 0; i < len; i++)
            buf[i] = (char)next_random(&seed);
        /* Half the buffers open like a job, to get past the first checks. */
        if (len >= 4 && round % 2 == 0)
            memcpy(buf, "\x8f\xa1v\x01", 4);
        decode_anything(buf, len);
    }
}

static void test_decode_mutations(void **state)
{
    uint64_t seed = 42;
    struct osbq_job job;
    size_t len = 0, round, i;
    char *orig, *buf;

    (void)state;
    full_job(&job);
    job.parameters = "{\"a\":1}";
    orig = encode_ok(&job, &len);
    buf = malloc(len);
    assert_non_null(buf);
    for (round = 0; round < FUZZ_ROUNDS; round++) {
        size_t flips = 1 + (size_t)(next_random(&seed) % 4);

        memcpy(buf, orig, len);
        for (i = 0; i < flips; i++)
            buf[next_random(&seed) % len] = (char)next_random(&seed);
        decode_anything(buf, len);
        decode_anything(buf, (size_t)(next_random(&seed) % len));
    }
    free(buf);
    free(orig);
}

/* A failure after strings were already copied must free them and still zero the job. */
static void test_decode_failure_zeroes_job(void **state)
{
    struct kvset s;

    (void)state;
    kvset_valid(&s);
    kvset_set(&s, "attempt", (struct kv){.type = T_UINT, .u = 0});
    expect_reject(&s, "attempt"); /* last key: everything else is allocated by then */
    kvset_valid(&s);
    kvset_add(&s, (struct kv){.key = "zzz", .type = T_NIL});
    expect_reject(&s, "zzz");
    expect_reject_bytes("\x93\x01\x02\x03", 4, NULL);
}

static void test_decode_error_buffers(void **state)
{
    struct kvset s;
    struct osbq_job job;
    char small[8];
    size_t len;
    char *buf;

    (void)state;
    kvset_valid(&s);
    kvset_remove(&s, "plan");
    buf = pack_kvs(&s, &len);
    memset(small, 'z', sizeof(small));
    assert_int_equal(osbq_job_decode(buf, len, &job, small, sizeof(small)), -1);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_int_equal(osbq_job_decode(buf, len, &job, NULL, 0), -1);
    assert_job_zeroed(&job);
    assert_int_equal(osbq_job_decode(NULL, 0, &job, small, sizeof(small)), -1);
    free(buf);
}

static void test_clear_zeroed_job(void **state)
{
    struct osbq_job job;

    (void)state;
    memset(&job, 0, sizeof(job));
    osbq_job_clear(&job);
    osbq_job_clear(&job);
    osbq_job_clear(NULL);
    assert_job_zeroed(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_round_trip_full),
        cmocka_unit_test(test_round_trip_minimal),
        cmocka_unit_test(test_round_trip_every_kind),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_encode_layout),
        cmocka_unit_test(test_encode_refuses_invalid),
        cmocka_unit_test(test_encode_without_errbuf),
        cmocka_unit_test(test_decode_hand_built),
        cmocka_unit_test(test_decode_optional_absent),
        cmocka_unit_test(test_decode_unknown_version),
        cmocka_unit_test(test_decode_version_not_first),
        cmocka_unit_test(test_decode_missing_required),
        cmocka_unit_test(test_decode_wrong_type),
        cmocka_unit_test(test_decode_unknown_key),
        cmocka_unit_test(test_decode_duplicate_key),
        cmocka_unit_test(test_decode_unknown_kind),
        cmocka_unit_test(test_decode_attempt),
        cmocka_unit_test(test_decode_api_range),
        cmocka_unit_test(test_decode_binding_rules),
        cmocka_unit_test(test_decode_embedded_nul),
        cmocka_unit_test(test_decode_empty_ids),
        cmocka_unit_test(test_decode_not_a_map),
        cmocka_unit_test(test_decode_every_truncation),
        cmocka_unit_test(test_decode_trailing_bytes),
        cmocka_unit_test(test_decode_too_many_entries),
        cmocka_unit_test(test_decode_too_large),
        cmocka_unit_test(test_decode_huge_declared_container),
        cmocka_unit_test(test_decode_deep_nesting),
        cmocka_unit_test(test_decode_random_garbage),
        cmocka_unit_test(test_decode_mutations),
        cmocka_unit_test(test_decode_failure_zeroes_job),
        cmocka_unit_test(test_decode_error_buffers),
        cmocka_unit_test(test_clear_zeroed_job),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
