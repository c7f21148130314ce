/* This tree against the records of the previous release (docs/deploy.md#upgrades): the Redis
 * keys its gateway writes for each accepted operation and its worker leaves once it finished
 * (tests/data/previous-release/<version>/, written by that release's own processes:
 * tests/integration/previous_release_fixtures.py). Checked: this decoder reads the jobs that
 * gateway encoded; this encoder writes jobs its workers read (job-reader.json: what its decoder
 * requires); this store, against a real redis-server, claims and finishes each of its records and
 * leaves what its worker left. A change that breaks one of these breaks a rolling upgrade. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "store_operations.h"
#include "store_test_helpers.h"
#include "test_main.h"

#define RELEASE_DIR OSBQ_TEST_DATA_DIR "/previous-release/" OSBQ_PREVIOUS_RELEASE "/"

/* The operations the fixtures hold, in the order the release ran them. */
static const char *const kinds[] = {"provision", "update", "bind", "unbind", "deprovision"};
#define KIND_COUNT (sizeof kinds / sizeof kinds[0])

static int setup(void **state)
{
    return store_fixture_setup(state, "osbq");
}

/* The fixture file RELEASE_DIR<name>.json; caller owns the result. */
static json_t *load(const char *name)
{
    char path[512];
    json_error_t error;
    (void)snprintf(path, sizeof path, "%s%s.json", RELEASE_DIR, name);
    json_t *root = json_load_file(path, 0, &error);
    if (root == NULL)
        fail_msg("%s: %s (line %d)", path, error.text, error.line);
    return root;
}

/* A fixture value's bytes: its text, or {"hex": ...} decoded; caller frees *out. */
static size_t bytes_of(const json_t *value, char **out)
{
    const char *hex = json_string_value(json_object_get(value, "hex"));
    if (hex == NULL) {
        size_t len = json_string_length(value);
        *out = malloc(len + 1);
        assert_non_null(*out);
        memcpy(*out, json_string_value(value), len + 1);
        return len;
    }
    size_t len = strlen(hex) / 2;
    *out = malloc(len + 1);
    assert_non_null(*out);
    for (size_t i = 0; i < len; i++) {
        unsigned byte;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        (*out)[i] = (char)byte;
    }
    (*out)[len] = '\0';
    return len;
}

/* The text of field in the hash key of snapshot, or NULL; borrowed from snapshot. */
static const char *hash_field(const json_t *snapshot, const char *key, const char *field)
{
    json_t *hash = json_object_get(json_object_get(snapshot, key), "value");
    return json_string_value(json_object_get(hash, field));
}

/* The key of the one operation the snapshot holds queued (the one just accepted); borrowed. */
static const char *queued_op(const json_t *snapshot)
{
    const char *key, *found = NULL;
    json_t *entry;
    json_object_foreach ((json_t *)snapshot, key, entry) {
        if (strncmp(key, "osbq:op:", 8) == 0) {
            const char *state = hash_field(snapshot, key, "state");
            if (state != NULL && strcmp(state, "queued") == 0) {
                assert_null(found);
                found = key;
            }
        }
    }
    assert_non_null(found);
    return found;
}

/* The job the operation record at op_key holds, decoded; the caller clears it. */
static void decode_job(const json_t *snapshot, const char *op_key, struct osbq_job *job)
{
    char *bytes, why[256];
    size_t len = bytes_of(
        json_object_get(json_object_get(json_object_get(snapshot, op_key), "value"), "job"),
        &bytes);
    if (osbq_job_decode(bytes, len, job, why, sizeof why) != 0)
        fail_msg("%s: the job its gateway encoded does not decode: %s", op_key, why);
    free(bytes);
}

static void assert_optional_equal(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* The previous release's gateway encoded these jobs: this decoder reads them as its record
 * describes them. */
static void test_its_jobs_decode(void **state)
{
    (void)state;
    for (size_t k = 0; k < KIND_COUNT; k++) {
        char name[64];
        (void)snprintf(name, sizeof name, "%s-accepted", kinds[k]);
        json_t *snapshot = load(name);
        const char *op_key = queued_op(snapshot);
        struct osbq_job job = {0};
        decode_job(snapshot, op_key, &job);
        assert_string_equal(osbq_job_kind_name(job.kind), kinds[k]);
        assert_string_equal(job.operation_id, op_key + strlen("osbq:op:"));
        assert_string_equal(job.instance_id, hash_field(snapshot, op_key, "instance"));
        assert_optional_equal(job.binding_id, hash_field(snapshot, op_key, "binding"));
        assert_string_equal(job.service_id, hash_field(snapshot, op_key, "service_id"));
        assert_string_equal(job.plan_id, hash_field(snapshot, op_key, "plan_id"));
        assert_int_equal(job.api_version, strtoul(hash_field(snapshot, op_key, "api"), NULL, 10));
        assert_true(job.attempt >= 1);
        osbq_job_clear(&job);
        json_decref(snapshot);
    }
}

/* Whether the msgpack value has the type job-reader.json names. */
static bool reads_as(const msgpack_object *value, const char *type, const json_t *reader)
{
    if (strcmp(type, "uint") == 0)
        return value->type == MSGPACK_OBJECT_POSITIVE_INTEGER && value->via.u64 <= UINT32_MAX;
    if (strcmp(type, "str") == 0)
        return value->type == MSGPACK_OBJECT_STR || value->type == MSGPACK_OBJECT_NIL;
    if (value->type != MSGPACK_OBJECT_STR || value->via.str.size == 0)
        return false;
    if (strcmp(type, "id") == 0)
        return true;
    size_t i;
    json_t *kind;
    json_array_foreach (json_object_get(reader, "kinds"), i, kind) {
        if (strlen(json_string_value(kind)) == value->via.str.size &&
            memcmp(json_string_value(kind), value->via.str.ptr, value->via.str.size) == 0)
            return true;
    }
    return false;
}

/* Writes a reason into why; returns why. */
static const char *say(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return why;
}

/* Why the previous release's decoder refuses one key and value of a job (job-reader.json), or
 * NULL when it takes them. index: the key's place in the map; given: the keys seen so far (a
 * key is added, true when its value is not nil). */
static const char *refuses_entry(const msgpack_object_kv *kv, uint32_t index, json_t *given,
                                 const json_t *reader, char *why, size_t why_len)
{
    char name[64];
    if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size >= sizeof name)
        return "a key that is not a short string";
    memcpy(name, kv->key.via.str.ptr, kv->key.via.str.size);
    name[kv->key.via.str.size] = '\0';
    const char *type = json_string_value(json_object_get(json_object_get(reader, "fields"), name));
    json_int_t version = json_integer_value(json_object_get(reader, "version"));
    if (index == 0 && strcmp(name, "v") != 0)
        return say(why, why_len, "first key \"%s\", not \"v\"", name);
    if (type == NULL)
        return say(why, why_len, "unknown field \"%s\"", name);
    if (json_object_get(given, name) != NULL)
        return say(why, why_len, "field \"%s\" twice", name);
    if (!reads_as(&kv->val, type, reader))
        return say(why, why_len, "field \"%s\" is not a %s", name, type);
    if (index == 0 && kv->val.via.u64 != (uint64_t)version)
        return say(why, why_len, "version %llu, not %lld", (unsigned long long)kv->val.via.u64,
                   (long long)version);
    json_object_set_new(given, name, json_boolean(kv->val.type != MSGPACK_OBJECT_NIL));
    return NULL;
}

/* The first reason the previous release's decoder (job-reader.json) refuses bytes, or NULL. */
static const char *refusal(const char *bytes, size_t len, const json_t *reader, bool binding_op,
                           char *why, size_t why_len)
{
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    size_t off = 0;
    const char *out = NULL;
    if (msgpack_unpack_next(&msg, bytes, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len ||
        msg.data.type != MSGPACK_OBJECT_MAP) {
        out = "not one msgpack map";
        goto out_done;
    }
    const msgpack_object_map *map = &msg.data.via.map;
    json_t *given = json_object();
    for (uint32_t i = 0; i < map->size && out == NULL; i++)
        out = refuses_entry(&map->ptr[i], i, given, reader, why, why_len);
    const char *lists[] = {"required", binding_op ? "required_for_bindings" : NULL};
    for (size_t l = 0; l < 2 && out == NULL && lists[l] != NULL; l++) {
        size_t i;
        json_t *name;
        json_array_foreach (json_object_get(reader, lists[l]), i, name) {
            if (!json_is_true(json_object_get(given, json_string_value(name)))) {
                out = say(why, why_len, "missing field \"%s\"", json_string_value(name));
                break;
            }
        }
    }
    json_decref(given);
out_done:
    msgpack_unpacked_destroy(&msg);
    return out;
}

/* This encoder writes jobs the previous release's workers read, for every kind, with every
 * optional field set and with none. */
static void test_its_workers_read_our_jobs(void **state)
{
    (void)state;
    json_t *reader = load("job-reader");
    for (size_t k = 0; k < KIND_COUNT; k++) {
        char name[64];
        (void)snprintf(name, sizeof name, "%s-accepted", kinds[k]);
        json_t *snapshot = load(name);
        struct osbq_job job = {0};
        decode_job(snapshot, queued_op(snapshot), &job);
        struct osbq_job full = job;
        full.parameters = full.context = full.bind_resource = full.maintenance_info = "{}";
        full.originating_identity = full.request_identity = "x";
        full.trace = "{\"X-B3-TraceId\":\"1\"}";
        full.predecessor_binding_id = job.kind == OSBQ_JOB_BIND ? "b0" : NULL;
        struct osbq_job bare = job;
        bare.parameters = bare.context = bare.bind_resource = bare.maintenance_info = NULL;
        bare.originating_identity = bare.request_identity = bare.trace = NULL;
        const struct osbq_job *variants[] = {&job, &full, &bare};
        for (size_t v = 0; v < 3; v++) {
            char *bytes, why[160], err[160];
            size_t len;
            assert_int_equal(osbq_job_encode(variants[v], &bytes, &len, err, sizeof err), 0);
            const char *no =
                refusal(bytes, len, reader,
                        job.kind == OSBQ_JOB_BIND || job.kind == OSBQ_JOB_UNBIND, why, sizeof why);
            if (no != NULL)
                fail_msg("a %s job this tree encodes would be refused by %s workers: %s "
                         "(docs/deploy.md#upgrades)",
                         kinds[k], OSBQ_PREVIOUS_RELEASE, no);
            free(bytes);
        }
        osbq_job_clear(&job);
        json_decref(snapshot);
    }
    json_decref(reader);
}

/* Replaces every key of the server with those of snapshot. */
static void load_into_redis(struct store_fixture *f, const json_t *snapshot)
{
    freeReplyObject(redisCommand(f->direct, "FLUSHALL"));
    const char *key;
    json_t *entry;
    json_object_foreach ((json_t *)snapshot, key, entry) {
        const char *type = json_string_value(json_object_get(entry, "type"));
        json_t *value = json_object_get(entry, "value");
        redisReply *r = NULL;
        if (strcmp(type, "hash") == 0) {
            const char *field;
            json_t *v;
            json_object_foreach (value, field, v) {
                char *bytes;
                size_t len = bytes_of(v, &bytes);
                const char *argv[] = {"HSET", key, field, bytes};
                const size_t lens[] = {4, strlen(key), strlen(field), len};
                freeReplyObject(redisCommandArgv(f->direct, 4, argv, lens));
                free(bytes);
            }
            continue;
        }
        size_t i;
        json_t *v;
        json_array_foreach (value, i, v) {
            if (strcmp(type, "set") == 0)
                r = redisCommand(f->direct, "SADD %s %s", key, json_string_value(v));
            else if (strcmp(type, "zset") == 0)
                r = redisCommand(f->direct, "ZADD %s %s %s", key,
                                 json_string_value(json_array_get(v, 1)),
                                 json_string_value(json_array_get(v, 0)));
            else
                fail_msg("%s: a %s in a fixture", key, type);
            assert_true(r != NULL && r->type == REDIS_REPLY_INTEGER);
            freeReplyObject(r);
        }
    }
}

/* The keys on the server, as the names of a JSON object; caller owns it. */
static json_t *keys_now(struct store_fixture *f)
{
    redisReply *r = redisCommand(f->direct, "KEYS *");
    assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY);
    json_t *keys = json_object();
    for (size_t i = 0; i < r->elements; i++)
        json_object_set_new(keys, r->element[i]->str, json_true());
    freeReplyObject(r);
    return keys;
}

/* Whether a field's value is the moment or a duration of this run, not the outcome. */
static bool varies(const char *key, const char *field)
{
    size_t n = strlen(field);
    return (n > 3 && strcmp(field + n - 3, "_ms") == 0) || strcmp(field, "worker") == 0 ||
           strcmp(field, "history") == 0 || strncmp(key, "osbq:stats:", 11) == 0;
}

/* The hash key on the server equals its copy in done (what the release's worker left), but
 * for the fields whose values vary from run to run, which need only be there. */
static void assert_hash_as_left(struct store_fixture *f, const json_t *done, const char *key)
{
    json_t *want = json_object_get(json_object_get(done, key), "value");
    redisReply *r = redisCommand(f->direct, "HGETALL %s", key);
    assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY);
    size_t matched = 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *field = r->element[i]->str;
        json_t *expected = json_object_get(want, field);
        if (expected == NULL)
            fail_msg("%s: field %s, which the release's worker did not leave", key, field);
        matched++;
        if (varies(key, field))
            continue;
        char *bytes;
        size_t len = bytes_of(expected, &bytes);
        if (len != r->element[i + 1]->len || memcmp(bytes, r->element[i + 1]->str, len) != 0)
            fail_msg("%s %s: %s, the release's worker left %s", key, field, r->element[i + 1]->str,
                     bytes);
        free(bytes);
    }
    freeReplyObject(r);
    if (matched != json_object_size(want)) {
        const char *field;
        json_t *v;
        json_object_foreach (want, field, v) {
            r = redisCommand(f->direct, "HEXISTS %s %s", key, field);
            if (r->integer != 1)
                fail_msg("%s: no field %s; the release's worker left it", key, field);
            freeReplyObject(r);
        }
    }
}

/* The set or sorted set key on the server has the members of want (a fixture's value), and
 * no others. */
static void assert_members_as_left(struct store_fixture *f, const char *key, const char *type,
                                   const json_t *want)
{
    bool set = strcmp(type, "set") == 0;
    redisReply *r = redisCommand(f->direct, set ? "SCARD %s" : "ZCARD %s", key);
    assert_int_equal(r->integer, json_array_size(want));
    freeReplyObject(r);
    size_t i;
    json_t *v;
    json_array_foreach (want, i, v) {
        const char *member = json_string_value(set ? v : json_array_get(v, 0));
        r = redisCommand(f->direct, set ? "SISMEMBER %s %s" : "ZSCORE %s %s", key, member);
        if (set ? r->integer != 1 : r->type != REDIS_REPLY_STRING)
            fail_msg("%s: %s is not in it; the release's worker left it", key, member);
        freeReplyObject(r);
    }
}

/* The previous release's gateway accepted each operation; this store claims and finishes it
 * as the release's worker would have, and leaves the keys as that worker left them. */
static void test_we_finish_its_records(void **state)
{
    struct store_fixture *f = *state;
    for (size_t k = 0; k < KIND_COUNT; k++) {
        char name[64];
        (void)snprintf(name, sizeof name, "%s-accepted", kinds[k]);
        json_t *accepted = load(name);
        (void)snprintf(name, sizeof name, "%s-done", kinds[k]);
        json_t *done = load(name);
        const char *op_key = queued_op(accepted);
        const char *op_id = op_key + strlen("osbq:op:");
        load_into_redis(f, accepted);

        struct osbq_error err = {0};
        if (osbq_store_claim(f->store, op_id, "w-new", 1, 10000, NULL, &err) != 1)
            fail_msg("%s: not claimed: %s", op_key, err.text);
        const char *binding_key = hash_field(accepted, op_key, "binding_key");
        struct osbq_op_result result = {
            .succeeded = true,
            .description = hash_field(done, op_key, "description"),
            .binding =
                strcmp(kinds[k], "bind") == 0 ? hash_field(done, binding_key, "result") : NULL,
        };
        if (osbq_store_finish(f->store, op_id, "w-new", &result, &err) != 1)
            fail_msg("%s: not finished: %s", op_key, err.text);

        /* The same keys as the release's worker left, the same values but for moments. */
        json_t *keys = keys_now(f);
        const char *key;
        json_t *entry;
        json_object_foreach (done, key, entry) {
            /* The averages for Retry-After are sampled now (one operation in eight): whether
             * one kind's is there varies. */
            if (strncmp(key, "osbq:stats:", 11) == 0) {
                json_object_del(keys, key);
                continue;
            }
            if (json_object_get(keys, key) == NULL)
                fail_msg("%s: %s is gone; the release's worker left it", kinds[k], key);
            json_object_del(keys, key);
            const char *type = json_string_value(json_object_get(entry, "type"));
            if (strcmp(type, "hash") == 0) {
                assert_hash_as_left(f, done, key);
            } else {
                assert_members_as_left(f, key, type, json_object_get(entry, "value"));
            }
        }
        if (json_object_size(keys) > 0)
            fail_msg("%s: %s, which the release's worker did not leave", kinds[k],
                     json_object_iter_key(json_object_iter(keys)));
        json_decref(keys);
        json_decref(done);
        json_decref(accepted);
    }
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_its_jobs_decode),
               cmocka_unit_test(test_its_workers_read_our_jobs),
               cmocka_unit_test_setup_teardown(test_we_finish_its_records, setup,
                                               store_fixture_teardown))
