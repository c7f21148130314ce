/* Fuzz target: the bus decoder (bus/bus.c, osbq_bus_decode), which reads the messages that
 * reach a gateway's ROUTER and a worker's DEALER: with CURVE off, any process that reaches the
 * bus port can send them. Every input is decoded twice, as a gateway reads it (the first frame
 * is the sender's ROUTER identity; READY and REJECT) and as a worker reads it (JOB, HALT). Besides
 * "no crash, no leak": the identity, the command and the frame count are the message's; the kind is
 * the one bus.h promises for these frames; a READY's fields are its frames' values (worker id,
 * free slots of at most a million, decimal counts, a hand-over lease of 1..3600000 ms) and a
 * MALFORMED one fills none; a JOB's or a REJECT's job is the frame after the command, byte for
 * byte, and a handed JOB's lease end and tenant are its next two frames' values; a HALT's
 * operation id is its one frame's (1..64 bytes, no NUL), or it is MALFORMED; the command
 * quoted for a log line is printable ASCII; clearing empties the message.
 *
 * Input: the frames one after another, each a length byte then that many bytes. A length byte
 * of 255 means 255 bytes and then another length byte for the rest of the same frame, so a
 * frame can have any size (one of exactly 255 bytes: 255, the bytes, 0); a last frame cut short
 * takes the bytes that remain. A READY as a gateway reads it, for example:
 *   printf '\x06socket\x05READY\x03w-1\x0212\x011' */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "bus.h"
#include "fuzz_target.h"

/* The most free slots and the longest hand-over lease a READY may announce (bus.h), and the
 * largest counts that fit. */
#define READY_MAX_SLOTS_TEXT    "1000000"
#define HANDOVER_LEASE_MAX_TEXT "3600000"
#define UINT64_MAX_TEXT         "18446744073709551615"
#define INT64_MAX_TEXT          "9223372036854775807"

/* The message data holds, in the framing above. */
static zmsg_t *message_of(const uint8_t *data, size_t size)
{
    zmsg_t *msg = zmsg_new();
    uint8_t *frame = malloc(size > 0 ? size : 1); /* no frame is longer than the input */
    FUZZ_CHECK(msg != NULL && frame != NULL);
    size_t at = 0;
    while (at < size) {
        size_t len = 0, chunk;
        do {
            chunk = data[at++];
            size_t take = chunk < size - at ? chunk : size - at;
            memcpy(frame + len, data + at, take);
            len += take;
            at += take;
        } while (chunk == 255 && at < size);
        FUZZ_CHECK(zmsg_addmem(msg, frame, len) == 0);
    }
    free(frame);
    return msg;
}

/* Frame i of msg (0: the first); NULL when it has fewer. */
static zframe_t *frame_at(zmsg_t *msg, size_t i)
{
    zframe_t *frame = zmsg_first(msg);
    while (frame != NULL && i-- > 0)
        frame = zmsg_next(msg);
    return frame;
}

/* Both NULL, or the same bytes. */
static bool same_frame(zframe_t *a, zframe_t *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && zframe_eq(a, b));
}

/* s is frame as a string: its bytes up to the first NUL, if any (zmsg_popstr's reading). */
static bool string_of_frame(const char *s, zframe_t *frame)
{
    size_t len = strlen(s);
    const uint8_t *data = zframe_data(frame);
    return len <= zframe_size(frame) && memcmp(s, data, len) == 0 &&
           (len == zframe_size(frame) || data[len] == '\0');
}

/* The frame as a decimal number: true when it is one or more ASCII digits and nothing else,
 * at most max (written in decimal); *digits and *len then say where its digits start after any
 * leading zeros. Compared as text, so this oracle shares nothing with the decoder's arithmetic. */
static bool decimal_frame(zframe_t *frame, const char *max, const char **digits, size_t *len)
{
    const char *data = (const char *)zframe_data(frame);
    size_t size = zframe_size(frame);
    for (size_t i = 0; i < size; i++)
        if (data[i] < '0' || data[i] > '9')
            return false;
    size_t zeros = 0;
    while (zeros < size && data[zeros] == '0')
        zeros++;
    *digits = data + zeros;
    *len = size - zeros;
    size_t max_len = strlen(max);
    return size > 0 && (*len < max_len || (*len == max_len && memcmp(*digits, max, *len) <= 0));
}

/* The frame is a decimal number (at most max) whose value is value. */
static bool frame_holds(zframe_t *frame, const char *max, uint64_t value)
{
    const char *digits;
    size_t len;
    char text[24];
    int n = snprintf(text, sizeof text, "%" PRIu64, value);
    return frame != NULL && decimal_frame(frame, max, &digits, &len) &&
           (value == 0 ? len == 0 : (size_t)n == len && memcmp(digits, text, len) == 0);
}

/* The frame is a decimal number from 1 to max. */
static bool positive_frame(zframe_t *frame, const char *max)
{
    const char *digits;
    size_t len;
    return decimal_frame(frame, max, &digits, &len) && len > 0;
}

/* The frame holds no NUL byte. */
static bool no_nul(zframe_t *frame)
{
    return zframe_size(frame) == 0 || memchr(zframe_data(frame), '\0', zframe_size(frame)) == NULL;
}

/* A READY's due time: its due frame's value when that frame is a decimal number that fits,
 * without a leading zero (so positive: osbq_bus_ready_due); 0 otherwise. */
static void check_due(int64_t due_ms, zframe_t *due)
{
    const char *digits;
    size_t len;
    bool due_time = due != NULL && decimal_frame(due, INT64_MAX_TEXT, &digits, &len) &&
                    digits == (const char *)zframe_data(due);
    FUZZ_CHECK(due_time ? due_ms > 0 && frame_holds(due, INT64_MAX_TEXT, (uint64_t)due_ms)
                        : due_ms == 0);
}

/* A READY whose command is frame `command` of sent: its fields are its frames' values, or it
 * is MALFORMED when its worker id or free slots are missing, its counts are no decimal
 * numbers in range, or its hand-over lease is not 1..3600000. */
static void check_ready(const struct osbq_bus_msg *m, zmsg_t *sent, size_t command)
{
    zframe_t *id = frame_at(sent, command + 1);
    zframe_t *slots = frame_at(sent, command + 2);
    zframe_t *received = frame_at(sent, command + 3); /* absent from an older worker */
    zframe_t *lease = frame_at(sent, command + 6);    /* absent: no handed jobs */
    const char *digits;
    size_t len;
    bool reads = id != NULL && slots != NULL &&
                 decimal_frame(slots, READY_MAX_SLOTS_TEXT, &digits, &len) &&
                 (received == NULL || decimal_frame(received, UINT64_MAX_TEXT, &digits, &len)) &&
                 (lease == NULL || positive_frame(lease, HANDOVER_LEASE_MAX_TEXT));
    if (!reads) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_MALFORMED);
        return;
    }
    const struct osbq_bus_ready_received *ready = &m->ready;
    FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_READY);
    FUZZ_CHECK(ready->worker_id != NULL && string_of_frame(ready->worker_id, id));
    FUZZ_CHECK(frame_holds(slots, READY_MAX_SLOTS_TEXT, ready->free_slots));
    FUZZ_CHECK(ready->counts_received == (received != NULL));
    FUZZ_CHECK(received != NULL ? frame_holds(received, UINT64_MAX_TEXT, ready->received)
                                : ready->received == 0);
    check_due(ready->due_ms, frame_at(sent, command + 4));
    zframe_t *ended = frame_at(sent, command + 5);
    FUZZ_CHECK(ended != NULL ? ready->ended != NULL && string_of_frame(ready->ended, ended)
                             : ready->ended == NULL);
    FUZZ_CHECK(lease != NULL ? frame_holds(lease, HANDOVER_LEASE_MAX_TEXT, ready->handover_lease_ms)
                             : ready->handover_lease_ms == 0);
    FUZZ_CHECK(m->job == NULL);
}

/* sent decoded by a gateway: the identity, then READY or REJECT; anything else is UNKNOWN. */
static void check_at_gateway(const struct osbq_bus_msg *m, zmsg_t *sent)
{
    size_t count = zmsg_size(sent);
    zframe_t *command = frame_at(sent, 1);
    FUZZ_CHECK(same_frame(m->identity, frame_at(sent, 0)));
    FUZZ_CHECK(m->frames == (count > 0 ? count - 1 : 0));
    FUZZ_CHECK(same_frame(m->command, command));
    if (command != NULL && zframe_streq(command, OSBQ_BUS_READY)) {
        check_ready(m, sent, 1);
    } else if (command != NULL && zframe_streq(command, OSBQ_BUS_REJECT)) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_REJECT);
        FUZZ_CHECK(same_frame(m->job, frame_at(sent, 2)));
    } else {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_UNKNOWN);
    }
}

/* A handed JOB (three frames after the command) as sent: JOB with its lease end and tenant when
 * the lease end is a decimal number from 1 to INT64_MAX and the tenant holds no NUL byte,
 * MALFORMED otherwise. */
static void check_handed(const struct osbq_bus_msg *m, zmsg_t *sent)
{
    zframe_t *until = frame_at(sent, 2);
    zframe_t *tenant = frame_at(sent, 3);
    if (!positive_frame(until, INT64_MAX_TEXT) || !no_nul(tenant)) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_MALFORMED);
        return;
    }
    FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_JOB && m->handed.present);
    FUZZ_CHECK(same_frame(m->job, frame_at(sent, 1)));
    FUZZ_CHECK(m->handed.until_ms > 0 &&
               frame_holds(until, INT64_MAX_TEXT, (uint64_t)m->handed.until_ms));
    FUZZ_CHECK(m->handed.tenant != NULL && strlen(m->handed.tenant) == zframe_size(tenant) &&
               string_of_frame(m->handed.tenant, tenant));
}

/* A HALT as sent: HALT with its operation id when it is the one frame after the command, 1 to
 * OSBQ_BUS_OPERATION_ID_MAX bytes without a NUL byte; MALFORMED otherwise. */
static void check_halt(const struct osbq_bus_msg *m, zmsg_t *sent)
{
    zframe_t *id = frame_at(sent, 1);
    if (zmsg_size(sent) != 2 || zframe_size(id) == 0 ||
        zframe_size(id) > OSBQ_BUS_OPERATION_ID_MAX || !no_nul(id)) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_MALFORMED && m->operation_id == NULL);
        return;
    }
    FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_HALT && m->operation_id != NULL &&
               strlen(m->operation_id) == zframe_size(id) && string_of_frame(m->operation_id, id));
}

/* sent decoded by a worker: JOB with one frame after it (plain) or three (handed), HALT with
 * one; anything else is UNKNOWN. */
static void check_at_worker(const struct osbq_bus_msg *m, zmsg_t *sent)
{
    zframe_t *command = frame_at(sent, 0);
    FUZZ_CHECK(m->identity == NULL);
    FUZZ_CHECK(m->frames == zmsg_size(sent));
    FUZZ_CHECK(same_frame(m->command, command));
    if (command != NULL && zframe_streq(command, OSBQ_BUS_HALT)) {
        check_halt(m, sent);
    } else if (command == NULL || !zframe_streq(command, OSBQ_BUS_JOB)) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_UNKNOWN);
    } else if (zmsg_size(sent) == 4) {
        check_handed(m, sent);
    } else if (zmsg_size(sent) != 2) {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_MALFORMED);
    } else {
        FUZZ_CHECK(m->kind == OSBQ_BUS_MSG_JOB && !m->handed.present);
        FUZZ_CHECK(same_frame(m->job, frame_at(sent, 1)));
    }
}

/* No READY fields filled (compared field by field: padding bytes may differ). */
static bool ready_empty(const struct osbq_bus_ready_received *r)
{
    return r->worker_id == NULL && r->free_slots == 0 && !r->counts_received && r->received == 0 &&
           r->due_ms == 0 && r->ended == NULL && r->handover_lease_ms == 0;
}

/* No hand-over filled. */
static bool handed_empty(const struct osbq_bus_handed *h)
{
    return !h->present && h->until_ms == 0 && h->tenant == NULL;
}

/* What every decoded message holds whatever its kind: a command when it has frames, a READY's
 * fields only in a READY, a job only in a JOB or a REJECT, a hand-over only in a JOB, a log
 * line's command of printable ASCII, cut at the buffer. */
static void check_any(const struct osbq_bus_msg *m)
{
    FUZZ_CHECK((m->command == NULL) == (m->frames == 0));
    if (m->kind != OSBQ_BUS_MSG_READY)
        FUZZ_CHECK(ready_empty(&m->ready));
    if (m->kind != OSBQ_BUS_MSG_JOB && m->kind != OSBQ_BUS_MSG_REJECT)
        FUZZ_CHECK(m->job == NULL);
    if (m->kind != OSBQ_BUS_MSG_JOB)
        FUZZ_CHECK(handed_empty(&m->handed));

    char quoted[17]; /* the gateway's size */
    osbq_bus_msg_command(m, quoted, sizeof quoted);
    size_t len = m->command != NULL ? zframe_size(m->command) : 0;
    FUZZ_CHECK(strlen(quoted) == (len < sizeof quoted - 1 ? len : sizeof quoted - 1));
    for (size_t i = 0; quoted[i] != '\0'; i++)
        FUZZ_CHECK(quoted[i] >= ' ' && quoted[i] <= '~' &&
                   (quoted[i] == '?' || quoted[i] == (char)zframe_data(m->command)[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum osbq_bus_side sides[] = {OSBQ_BUS_AT_GATEWAY, OSBQ_BUS_AT_WORKER};
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        zmsg_t *msg = message_of(data, size);
        zmsg_t *sent = zmsg_dup(msg); /* what was sent, to compare with: decoding takes msg */
        FUZZ_CHECK(sent != NULL);
        struct osbq_bus_msg m;
        osbq_bus_decode(&msg, sides[i], &m);
        FUZZ_CHECK(msg == NULL);
        check_any(&m);
        if (sides[i] == OSBQ_BUS_AT_GATEWAY)
            check_at_gateway(&m, sent);
        else
            check_at_worker(&m, sent);
        osbq_bus_msg_clear(&m);
        FUZZ_CHECK(m.kind == OSBQ_BUS_MSG_UNKNOWN && m.identity == NULL && m.command == NULL &&
                   m.frames == 0 && ready_empty(&m.ready) && m.job == NULL &&
                   handed_empty(&m.handed));
        osbq_bus_msg_clear(&m); /* twice is harmless */
        zmsg_destroy(&sent);
    }
    return 0;
}
