/* Unit tests for the receiving half of the bus protocol (bus/bus.c): each kind of message a
 * gateway or a worker reads, decoded from messages made in memory (osbq_bus_decode), malformed
 * and unknown ones included, hand-overs too, then the same messages sent and received over a
 * real ZeroMQ pair (inproc). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "test_main.h"

/* A message of count string frames, as a ROUTER or a DEALER hands it over. */
static zmsg_t *message_of(const char *const *frames, size_t count)
{
    zmsg_t *msg = zmsg_new();
    assert_non_null(msg);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(zmsg_addstr(msg, frames[i]), 0);
    return msg;
}

/* Decodes frames (the identity first at a gateway) for side. */
static void decode(const char *const *frames, size_t count, enum osbq_bus_side side,
                   struct osbq_bus_msg *out)
{
    zmsg_t *msg = message_of(frames, count);
    osbq_bus_decode(&msg, side, out);
    assert_null(msg);
}

/* A gateway reading a READY of frames (after the identity): MALFORMED, with its command kept
 * for the log line and nothing else filled. */
static void expect_malformed_ready(const char *const *frames, size_t count)
{
    const char *with_identity[9] = {"worker-socket"};
    assert_true(count < 9);
    for (size_t i = 0; i < count; i++)
        with_identity[i + 1] = frames[i];
    struct osbq_bus_msg m;
    decode(with_identity, count + 1, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    char command[17];
    osbq_bus_msg_command(&m, command, sizeof command);
    assert_string_equal(command, OSBQ_BUS_READY);
    assert_null(m.ready.worker_id);
    assert_null(m.ready.ended);
    assert_int_equal(m.ready.handover_lease_ms, 0);
    assert_null(m.job);
    osbq_bus_msg_clear(&m);
}

/* Every frame a READY can carry: the identity is the sender's, the counts are numbers, the
 * ended ids come as sent. */
static void test_ready_with_every_frame(void **state)
{
    (void)state;
    const char *frames[] = {"worker-socket", OSBQ_BUS_READY,  "w-1",      "12",
                            "1234567890123", "1795000000123", "op-1 op-2"};
    struct osbq_bus_msg m;
    decode(frames, 7, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_non_null(m.identity);
    assert_true(zframe_streq(m.identity, "worker-socket"));
    assert_int_equal(m.frames, 6);
    assert_string_equal(m.ready.worker_id, "w-1");
    assert_int_equal(m.ready.free_slots, 12);
    assert_true(m.ready.counts_received);
    assert_true(m.ready.received == 1234567890123ULL);
    assert_true(m.ready.due_ms == 1795000000123LL);
    assert_string_equal(m.ready.ended, "op-1 op-2");
    assert_null(m.job);
    osbq_bus_msg_clear(&m);
    assert_null(m.identity);
    assert_null(m.ready.worker_id);
    osbq_bus_msg_clear(&m); /* twice is harmless */
}

/* An older worker's READY (no received count, no due time, no ended jobs) is read as it is; a
 * due frame that is no due time is ignored, as one that is absent. */
static void test_ready_of_an_older_worker(void **state)
{
    (void)state;
    const char *frames[] = {"worker-socket", OSBQ_BUS_READY, "w-2", "3"};
    struct osbq_bus_msg m;
    decode(frames, 4, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_string_equal(m.ready.worker_id, "w-2");
    assert_int_equal(m.ready.free_slots, 3);
    assert_false(m.ready.counts_received);
    assert_true(m.ready.received == 0);
    assert_true(m.ready.due_ms == 0);
    assert_null(m.ready.ended);
    assert_int_equal(m.ready.handover_lease_ms, 0);
    osbq_bus_msg_clear(&m);

    const char *bad_due[] = {"worker-socket", OSBQ_BUS_READY, "w-3", "0", "7", "soon"};
    decode(bad_due, 6, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_int_equal(m.ready.free_slots, 0);
    assert_true(m.ready.received == 7);
    assert_true(m.ready.due_ms == 0);
    osbq_bus_msg_clear(&m);
}

/* READYs whose frames do not read are MALFORMED: no worker id, no free slots, counts that are
 * not decimal numbers, more free slots than any worker has. */
static void test_ready_malformed(void **state)
{
    (void)state;
    const char *no_id[] = {OSBQ_BUS_READY};
    expect_malformed_ready(no_id, 1);
    const char *no_slots[] = {OSBQ_BUS_READY, "w-1"};
    expect_malformed_ready(no_slots, 2);
    const char *slots_not_a_number[] = {OSBQ_BUS_READY, "w-1", "12x", "4"};
    expect_malformed_ready(slots_not_a_number, 4);
    const char *slots_too_many[] = {OSBQ_BUS_READY, "w-1", "1000001", "4"};
    expect_malformed_ready(slots_too_many, 4);
    const char *slots_negative[] = {OSBQ_BUS_READY, "w-1", "-1", "4"};
    expect_malformed_ready(slots_negative, 4);
    const char *received_not_a_number[] = {OSBQ_BUS_READY, "w-1", "4", "5x"};
    expect_malformed_ready(received_not_a_number, 4);
    const char *received_negative[] = {OSBQ_BUS_READY, "w-1", "4", "-5"};
    expect_malformed_ready(received_negative, 4);

    /* The bounds themselves read. */
    const char *most[] = {"worker-socket", OSBQ_BUS_READY, "w-1", "1000000", "0"};
    struct osbq_bus_msg m;
    decode(most, 5, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_int_equal(m.ready.free_slots, 1000000);
    assert_true(m.ready.counts_received);
    osbq_bus_msg_clear(&m);
}

/* Decodes, at a gateway, frames with last (last_len bytes, NUL bytes included) added after them. */
static void decode_with_last(const char *const *frames, size_t count, const char *last,
                             size_t last_len, struct osbq_bus_msg *out)
{
    zmsg_t *msg = message_of(frames, count);
    assert_int_equal(zmsg_addmem(msg, last, last_len), 0);
    osbq_bus_decode(&msg, OSBQ_BUS_AT_GATEWAY, out);
}

/* A READY's counts are decimal numbers and nothing else (fuzz_bus found READYs that strtoul read
 * all the same): no sign, no space, no NUL byte, at least one digit, small enough to fit; the
 * largest count that fits reads. A due frame with a NUL byte is no due time. */
static void test_ready_counts_only_digits(void **state)
{
    (void)state;
    /* Free slots, then the received count (strtoul read the wrapping one as 1, " -5" as 2^64-5). */
    static const char *const counts[][2] = {
        {"", "4"},    {"+5", "4"},
        {" 5", "4"},  {"-18446744073709551615", "4"},
        {"4", " -5"}, {"4", "18446744073709551616"},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const char *frames[] = {OSBQ_BUS_READY, "w-1", counts[i][0], counts[i][1]};
        expect_malformed_ready(frames, 4);
    }

    struct osbq_bus_msg m;
    const char *before_slots[] = {"worker-socket", OSBQ_BUS_READY, "w-1"};
    decode_with_last(before_slots, 3, "5\0", 2, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    osbq_bus_msg_clear(&m);
    const char *before_received[] = {"worker-socket", OSBQ_BUS_READY, "w-1", "4"};
    decode_with_last(before_received, 4, "4467440737095\0\0x", 16, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_null(m.ready.worker_id);
    osbq_bus_msg_clear(&m);

    const char *before_due[] = {"worker-socket", OSBQ_BUS_READY, "w-1", "4",
                                "18446744073709551615"};
    decode_with_last(before_due, 5, "1795000000123\0x", 15, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_true(m.ready.received == UINT64_MAX);
    assert_true(m.ready.due_ms == 0);
    osbq_bus_msg_clear(&m);
}

/* m is the READY of worker w-9 with 4 free slots after 9 JOBs, a due frame of "0", an empty
 * ended frame, and a hand-over lease of 15000 ms. */
static void expect_ready_with_lease(const struct osbq_bus_msg *m)
{
    assert_int_equal(m->kind, OSBQ_BUS_MSG_READY);
    assert_int_equal(m->frames, 7);
    assert_string_equal(m->ready.worker_id, "w-9");
    assert_int_equal(m->ready.free_slots, 4);
    assert_true(m->ready.received == 9);
    assert_true(m->ready.due_ms == 0);
    assert_string_equal(m->ready.ended, "");
    assert_int_equal(m->ready.handover_lease_ms, 15000);
}

/* A worker that takes handed jobs says its hand-over lease in a seventh frame, after a due
 * frame of "0" and an empty ended frame when it has neither; the bounds read. */
static void test_ready_with_hand_over_lease(void **state)
{
    (void)state;
    const char *frames[] = {"worker-socket", OSBQ_BUS_READY, "w-9", "4", "9", "0", "", "15000"};
    struct osbq_bus_msg m;
    decode(frames, 8, OSBQ_BUS_AT_GATEWAY, &m);
    expect_ready_with_lease(&m);
    osbq_bus_msg_clear(&m);
    assert_int_equal(m.ready.handover_lease_ms, 0);

    const char *longest[] = {"worker-socket", OSBQ_BUS_READY, "w-1",    "2", "9",
                             "1795000000123", "op-1 op-2",    "3600000"};
    decode(longest, 8, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_true(m.ready.due_ms == 1795000000123LL);
    assert_string_equal(m.ready.ended, "op-1 op-2");
    assert_int_equal(m.ready.handover_lease_ms, OSBQ_BUS_HANDOVER_LEASE_MAX_MS);
    osbq_bus_msg_clear(&m);

    const char *shortest[] = {"worker-socket", OSBQ_BUS_READY, "w-1", "2", "9", "0", "", "1"};
    decode(shortest, 8, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_int_equal(m.ready.handover_lease_ms, 1);
    osbq_bus_msg_clear(&m);
}

/* A hand-over lease frame that is not 1..3600000 in decimal digits only makes the READY
 * MALFORMED, as bad counts do: a gateway must not hand a job under a lease it cannot read. */
static void test_ready_hand_over_lease_malformed(void **state)
{
    (void)state;
    static const char *const leases[] = {
        "", "0", "000", "3600001", "99999999999999999999999", "15s", "-1", "+5", " 5", "5 ",
    };
    for (size_t i = 0; i < sizeof leases / sizeof leases[0]; i++) {
        const char *frames[] = {OSBQ_BUS_READY, "w-1", "2", "9", "0", "", leases[i]};
        expect_malformed_ready(frames, 7);
    }

    struct osbq_bus_msg m;
    const char *before_lease[] = {"worker-socket", OSBQ_BUS_READY, "w-1", "2", "9", "0", ""};
    decode_with_last(before_lease, 7, "15000\0", 6, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_null(m.ready.worker_id);
    osbq_bus_msg_clear(&m);
}

/* A REJECT hands its job back as sent; one without a job still says the worker is full. */
static void test_reject(void **state)
{
    (void)state;
    const char *frames[] = {"worker-socket", OSBQ_BUS_REJECT, "the encoded job"};
    struct osbq_bus_msg m;
    decode(frames, 3, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_REJECT);
    assert_true(zframe_streq(m.identity, "worker-socket"));
    assert_non_null(m.job);
    assert_true(zframe_streq(m.job, "the encoded job"));
    osbq_bus_msg_clear(&m);
    assert_null(m.job);

    const char *no_job[] = {"worker-socket", OSBQ_BUS_REJECT};
    decode(no_job, 2, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_REJECT);
    assert_null(m.job);
    osbq_bus_msg_clear(&m);
}

/* A worker reads a JOB of exactly one frame after its command as a plain job; two or more than
 * three are MALFORMED. */
static void test_job(void **state)
{
    (void)state;
    const char *frames[] = {OSBQ_BUS_JOB, "the encoded job"};
    struct osbq_bus_msg m;
    decode(frames, 2, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_null(m.identity);
    assert_int_equal(m.frames, 2);
    assert_true(zframe_streq(m.job, "the encoded job"));
    assert_false(m.handed.present);
    assert_null(m.handed.tenant);
    osbq_bus_msg_clear(&m);

    const char *no_job[] = {OSBQ_BUS_JOB};
    decode(no_job, 1, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_int_equal(m.frames, 1);
    assert_null(m.job);
    osbq_bus_msg_clear(&m);

    const char *two_jobs[] = {OSBQ_BUS_JOB, "one", "two"};
    decode(two_jobs, 3, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_int_equal(m.frames, 3);
    assert_null(m.job);
    osbq_bus_msg_clear(&m);

    const char *four_frames[] = {OSBQ_BUS_JOB, "the encoded job", "1795000000123", "tenant-a",
                                 "more"};
    decode(four_frames, 5, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_int_equal(m.frames, 5);
    assert_null(m.job);
    assert_false(m.handed.present);
    osbq_bus_msg_clear(&m);
}

/* Decodes, at a worker, a JOB handed until `until` to tenant (tenant_len bytes, NUL bytes
 * included). */
static void decode_handed(const char *until, const char *tenant, size_t tenant_len,
                          struct osbq_bus_msg *out)
{
    const char *frames[] = {OSBQ_BUS_JOB, "the encoded job", until};
    zmsg_t *msg = message_of(frames, 3);
    assert_int_equal(zmsg_addmem(msg, tenant, tenant_len), 0);
    osbq_bus_decode(&msg, OSBQ_BUS_AT_WORKER, out);
}

/* A JOB with three frames after its command is a handed one: its lease end and its tenant as
 * sent, an empty tenant read as "", the largest lease end that fits read. */
static void test_job_handed(void **state)
{
    (void)state;
    struct osbq_bus_msg m;
    decode_handed("1795000000123", "tenant-a", 8, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_int_equal(m.frames, 4);
    assert_true(zframe_streq(m.job, "the encoded job"));
    assert_true(m.handed.present);
    assert_true(m.handed.until_ms == 1795000000123LL);
    assert_string_equal(m.handed.tenant, "tenant-a");
    osbq_bus_msg_clear(&m);
    assert_false(m.handed.present);
    assert_null(m.handed.tenant);

    decode_handed("1795000000123", "", 0, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_true(m.handed.present);
    assert_string_equal(m.handed.tenant, "");
    osbq_bus_msg_clear(&m);

    decode_handed("9223372036854775807", "t", 1, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_true(m.handed.until_ms == INT64_MAX);
    osbq_bus_msg_clear(&m);
}

/* A handed JOB whose lease end is no positive decimal number that fits, or whose tenant holds a
 * NUL byte (its text would not be the frame), is MALFORMED with nothing filled. */
static void test_job_handed_malformed(void **state)
{
    (void)state;
    static const char *const untils[] = {
        "", "0", "-5", "+5", " 5", "12x", "9223372036854775808", "99999999999999999999999",
    };
    struct osbq_bus_msg m;
    for (size_t i = 0; i < sizeof untils / sizeof untils[0]; i++) {
        decode_handed(untils[i], "tenant-a", 8, &m);
        assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
        assert_null(m.job);
        assert_false(m.handed.present);
        assert_null(m.handed.tenant);
        osbq_bus_msg_clear(&m);
    }

    decode_handed("1795000000123", "tenant\0-a", 9, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
    assert_null(m.job);
    assert_null(m.handed.tenant);
    osbq_bus_msg_clear(&m);
}

/* HALT: a gateway's word that a delete halted an operation; its one frame is the operation
 * id, read as sent, at a worker only; anything else of it is MALFORMED. */
static void test_halt(void **state)
{
    (void)state;
    struct osbq_bus_msg m;
    const char *const ok[] = {OSBQ_BUS_HALT, "0f3c9a1b2d4e5f60718293a4b5c6d7e8"};
    decode(ok, 2, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_HALT);
    assert_string_equal(m.operation_id, "0f3c9a1b2d4e5f60718293a4b5c6d7e8");
    assert_null(m.job);
    osbq_bus_msg_clear(&m);

    char long_id[OSBQ_BUS_OPERATION_ID_MAX + 2];
    memset(long_id, 'a', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    const char *const empty[] = {OSBQ_BUS_HALT, ""};
    const char *const too_long[] = {OSBQ_BUS_HALT, long_id};
    const char *const lone[] = {OSBQ_BUS_HALT};
    const char *const extra[] = {OSBQ_BUS_HALT, "op", "more"};
    const struct {
        const char *const *frames;
        size_t count;
    } malformed[] = {{empty, 2}, {too_long, 2}, {lone, 1}, {extra, 3}};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        decode(malformed[i].frames, malformed[i].count, OSBQ_BUS_AT_WORKER, &m);
        assert_int_equal(m.kind, OSBQ_BUS_MSG_MALFORMED);
        assert_null(m.operation_id);
        osbq_bus_msg_clear(&m);
    }
    /* A worker's HALT is no command a gateway takes. */
    const char *const at_gateway[] = {"worker-socket", OSBQ_BUS_HALT, "op"};
    decode(at_gateway, 3, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_UNKNOWN);
    osbq_bus_msg_clear(&m);
}

/* Each side takes the other side's commands only; anything else is UNKNOWN, its command kept
 * for the log line, quoted without control or non-ASCII bytes. A message with no command at
 * all is UNKNOWN with none. */
static void test_unknown(void **state)
{
    (void)state;
    struct osbq_bus_msg m;
    char command[17];
    const char *job_at_gateway[] = {"worker-socket", OSBQ_BUS_JOB, "a job"};
    decode(job_at_gateway, 3, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_UNKNOWN);
    assert_null(m.job);
    osbq_bus_msg_command(&m, command, sizeof command);
    assert_string_equal(command, OSBQ_BUS_JOB);
    osbq_bus_msg_clear(&m);

    const char *ready_at_worker[] = {OSBQ_BUS_READY, "w-1", "3"};
    decode(ready_at_worker, 3, OSBQ_BUS_AT_WORKER, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_UNKNOWN);
    assert_null(m.ready.worker_id);
    assert_int_equal(m.frames, 3);
    osbq_bus_msg_clear(&m);

    const char *hostile[] = {"worker-socket", "HELLO\x1b[2J\xc3\xa9 and a long tail"};
    decode(hostile, 2, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_UNKNOWN);
    osbq_bus_msg_command(&m, command, sizeof command);
    assert_string_equal(command, "HELLO?[2J?? and ");
    osbq_bus_msg_clear(&m);

    const char *identity_only[] = {"worker-socket"};
    decode(identity_only, 1, OSBQ_BUS_AT_GATEWAY, &m);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_UNKNOWN);
    assert_null(m.command);
    osbq_bus_msg_command(&m, command, sizeof command);
    assert_string_equal(command, "");
    osbq_bus_msg_clear(&m);
}

/* A gateway's ROUTER bound to endpoint (inproc) and a worker's DEALER connected to it, each
 * waiting up to a second for a message. */
static void open_pair(const char *endpoint, zsock_t **gateway, zsock_t **worker)
{
    osbq_bus_init();
    char connect[64];
    (void)snprintf(connect, sizeof connect, ">%s", endpoint);
    *gateway = zsock_new_router(endpoint);
    *worker = zsock_new_dealer(connect);
    assert_non_null(*gateway);
    assert_non_null(*worker);
    zsock_set_rcvtimeo(*gateway, 1000);
    zsock_set_rcvtimeo(*worker, 1000);
}

/* Both halves over a real pair: what osbq_bus_send_* writes, osbq_bus_recv reads back as the
 * same message; with nothing waiting it says so without blocking. */
static void test_send_and_receive(void **state)
{
    (void)state;
    zsock_t *gateway, *worker;
    open_pair("inproc://bus-recv-test", &gateway, &worker);

    const struct osbq_bus_ready ready = {
        .free_slots = 4, .received = 9, .due_ms = 1795000000123LL, .ended = "op-1"};
    assert_int_equal(osbq_bus_send_ready(worker, "w-9", &ready), 0);
    struct osbq_bus_msg m;
    assert_int_equal(osbq_bus_recv(gateway, OSBQ_BUS_AT_GATEWAY, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_string_equal(m.ready.worker_id, "w-9");
    assert_int_equal(m.ready.free_slots, 4);
    assert_true(m.ready.received == 9);
    assert_true(m.ready.due_ms == 1795000000123LL);
    assert_string_equal(m.ready.ended, "op-1");
    zframe_t *identity = zframe_dup(m.identity);
    osbq_bus_msg_clear(&m);

    static char job[] = "job bytes";
    assert_int_equal(osbq_bus_send_job(gateway, identity, job, sizeof job, NULL, NULL), 0);
    assert_int_equal(osbq_bus_recv(worker, OSBQ_BUS_AT_WORKER, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_int_equal(zframe_size(m.job), sizeof job);
    assert_memory_equal(zframe_data(m.job), job, sizeof job);
    osbq_bus_msg_clear(&m);

    assert_int_equal(osbq_bus_send_reject(worker, job, sizeof job), 0);
    assert_int_equal(osbq_bus_recv(gateway, OSBQ_BUS_AT_GATEWAY, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_REJECT);
    assert_true(zframe_eq(m.identity, identity));
    assert_memory_equal(zframe_data(m.job), job, sizeof job);
    osbq_bus_msg_clear(&m);

    zsock_set_rcvtimeo(gateway, 0);
    assert_int_equal(osbq_bus_recv(gateway, OSBQ_BUS_AT_GATEWAY, &m), -1);
    zframe_destroy(&identity);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
}

/* Counts the releases of a job sent without a copy. */
static void count_release(void *data, void *owner)
{
    (void)data;
    (*(int *)owner)++;
}

/* The hand-over over a real pair: a READY saying its lease reads back with it, and a handed JOB
 * reads back with its lease end and tenant (an empty one, or none given, as ""), its job frame
 * sent without a copy and released once the worker let go of it. */
static void test_send_and_receive_handed(void **state)
{
    (void)state;
    zsock_t *gateway, *worker;
    open_pair("inproc://bus-recv-handed-test", &gateway, &worker);

    const struct osbq_bus_ready ready = {
        .free_slots = 4, .received = 9, .handover_lease_ms = 15000};
    assert_int_equal(osbq_bus_send_ready(worker, "w-9", &ready), 0);
    struct osbq_bus_msg m;
    assert_int_equal(osbq_bus_recv(gateway, OSBQ_BUS_AT_GATEWAY, &m), 0);
    expect_ready_with_lease(&m);
    zframe_t *identity = zframe_dup(m.identity);
    osbq_bus_msg_clear(&m);

    static char job[] = "job bytes";
    const char *tenants[] = {"tenant-a", "", NULL};
    for (size_t i = 0; i < sizeof tenants / sizeof tenants[0]; i++) {
        int released = 0;
        assert_int_equal(osbq_bus_send_handed_job(gateway, identity, job, sizeof job, count_release,
                                                  &released, 1795000000123LL, tenants[i]),
                         0);
        assert_int_equal(osbq_bus_recv(worker, OSBQ_BUS_AT_WORKER, &m), 0);
        assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
        assert_int_equal(m.frames, 4);
        assert_ptr_equal(zframe_data(m.job), job);
        assert_int_equal(zframe_size(m.job), sizeof job);
        assert_true(m.handed.present);
        assert_true(m.handed.until_ms == 1795000000123LL);
        assert_string_equal(m.handed.tenant, tenants[i] != NULL ? tenants[i] : "");
        osbq_bus_msg_clear(&m);
        assert_int_equal(released, 1);
    }

    /* A HALT to the same worker, as the dispatcher sends it. */
    assert_int_equal(osbq_bus_send_halt(gateway, identity, "op-halted"), 0);
    assert_int_equal(osbq_bus_recv(worker, OSBQ_BUS_AT_WORKER, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_HALT);
    assert_string_equal(m.operation_id, "op-halted");
    osbq_bus_msg_clear(&m);

    zframe_destroy(&identity);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_ready_with_every_frame),
               cmocka_unit_test(test_ready_of_an_older_worker),
               cmocka_unit_test(test_ready_malformed),
               cmocka_unit_test(test_ready_counts_only_digits),
               cmocka_unit_test(test_ready_with_hand_over_lease),
               cmocka_unit_test(test_ready_hand_over_lease_malformed),
               cmocka_unit_test(test_reject), cmocka_unit_test(test_job),
               cmocka_unit_test(test_job_handed), cmocka_unit_test(test_job_handed_malformed),
               cmocka_unit_test(test_halt), cmocka_unit_test(test_unknown),
               cmocka_unit_test(test_send_and_receive),
               cmocka_unit_test(test_send_and_receive_handed))
