/* osbq-ctl reencrypt: after a new key was put first in OSBQ_SECRET_KEY_FILE, rewrites every
 * sealed value stored (binding results; the parameters, context and bind_resource of instances,
 * bindings and update operations; operations' resume states; plaintext ones from before the
 * keys too) under it, so the old keys can go (docs/decisions/0007, 0058). Walks the instances,
 * the bindings and the operations in SCAN steps; each rewrite is a compare-and-set, so an
 * operation ending or an unbind meanwhile is never overwritten. Jobs of operations in flight
 * keep the key they were sealed with: they are counted, not rewritten. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "secrets.h"
#include "store_events.h"

/* Keys asked for per SCAN step, and most steps (a bound far above any real keyspace). */
#define SCAN_COUNT 100U
#define SCAN_STEPS 100000000UL

struct tally {
    unsigned long resealed;   /* rewritten under the first key */
    unsigned long plaintext;  /* of those, plaintext before */
    unsigned long current;    /* already under the first key */
    unsigned long changed;    /* written meanwhile by someone else: left alone */
    unsigned long unreadable; /* do not open (missing key, altered): left alone */
    unsigned long in_flight;  /* operations not ended: their jobs keep their keys */
};

/* Reseals one value of r. 0, or -1 when Redis failed (err). */
static int reseal(struct ctl *ctl, const struct osbq_secrets *secrets,
                  const struct osbq_sealed_values *r, enum osbq_sealed_field field, struct tally *t,
                  struct osbq_error *err)
{
    const char *stored = r->values[field];
    char head[64];
    (void)snprintf(head, sizeof head, "%sv1:%s:", OSBQ_SECRETS_PREFIX,
                   osbq_secrets_current_id(secrets));
    if (strncmp(stored, head, strlen(head)) == 0) {
        t->current++;
        return 0;
    }
    const struct osbq_secret_place place = {ctl->cfg->namespace_, r->instance_id, r->binding_id,
                                            osbq_sealed_field_place(field)};
    char *plain = NULL;
    struct osbq_error why = {0};
    int opened = osbq_secrets_open(secrets, &place, stored, &plain, &why);
    if (opened < 0) {
        ctl_say("%s of %s left as it is: %s", osbq_sealed_field_names[field], r->key, why.text);
        t->unreadable++;
        return 0;
    }
    char *sealed = osbq_secrets_seal(secrets, &place, plain, strlen(plain));
    osbq_secrets_free_text(plain);
    if (sealed == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    int replaced = osbq_store_sealed_replace(ctl->store, r->key, field, stored, sealed, err);
    free(sealed);
    if (replaced < 0)
        return -1;
    if (replaced == 0) {
        t->changed++;
    } else {
        t->resealed++;
        t->plaintext += opened == 0;
    }
    return 0;
}

/* Walks which, resealing every value found. CTL_EXIT_OK, or the failure's exit status. */
static int reseal_all(struct ctl *ctl, const struct osbq_secrets *secrets,
                      enum osbq_sealed_records which, struct tally *t)
{
    static const char *const doing[] = {[OSBQ_SEALED_INSTANCES] = "instances",
                                        [OSBQ_SEALED_BINDINGS] = "bindings",
                                        [OSBQ_SEALED_OPERATIONS] = "operations"};
    struct osbq_error err = {0};
    uint64_t cursor = 0;
    int rc = CTL_EXIT_OK;
    for (unsigned long step = 0; step < SCAN_STEPS && rc == CTL_EXIT_OK; step++) {
        struct osbq_sealed_values *records = NULL;
        size_t n = 0;
        if (osbq_store_scan_sealed(ctl->store, which, &cursor, SCAN_COUNT, &records, &n, &err) < 0)
            return ctl_fail_store(doing[which], &err);
        for (size_t i = 0; i < n && rc == CTL_EXIT_OK; i++) {
            t->in_flight += records[i].in_flight;
            for (size_t k = 0; k < OSBQ_SEALED_COUNT && rc == CTL_EXIT_OK; k++)
                if (records[i].values[k] != NULL &&
                    reseal(ctl, secrets, &records[i], (enum osbq_sealed_field)k, t, &err) < 0)
                    rc = ctl_fail_store("rewriting a sealed value", &err);
        }
        osbq_sealed_values_free(records, n);
        if (cursor == 0)
            break;
    }
    return rc;
}

static int report(const struct ctl *ctl, const struct osbq_secrets *secrets, const struct tally *t)
{
    const char *id = osbq_secrets_current_id(secrets);
    if (ctl->opt.json) {
        json_t *doc = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "key_id", id, "resealed",
                                (json_int_t)t->resealed, "from_plaintext", (json_int_t)t->plaintext,
                                "already_current", (json_int_t)t->current, "changed_meanwhile",
                                (json_int_t)t->changed, "unreadable", (json_int_t)t->unreadable,
                                "operations_in_flight", (json_int_t)t->in_flight);
        int rc = doc == NULL || json_dumpf(doc, stdout, JSON_COMPACT) < 0 ? -1 : 0;
        json_decref(doc);
        if (rc < 0)
            return ctl_fail("cannot write the result as JSON");
        putchar('\n');
    } else {
        printf("resealed with key %s: %lu (%lu of them were plaintext)\n"
               "already under key %s: %lu\n"
               "changed meanwhile, left alone: %lu\n"
               "cannot be opened, left alone: %lu\n"
               "operations in flight (their jobs keep the key they were sealed with until they "
               "end): %lu\n",
               id, t->resealed, t->plaintext, id, t->current, t->changed, t->unreadable,
               t->in_flight);
    }
    return t->unreadable > 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

int cmd_reencrypt(struct ctl *ctl)
{
    if (ctl->cfg->secret_key_file == NULL)
        return ctl_fail("OSBQ_SECRET_KEY_FILE is not set: reencrypt needs the broker's keys");
    struct osbq_error err = {0};
    struct osbq_secrets *secrets = osbq_secrets_load(ctl->cfg->secret_key_file, &err);
    if (secrets == NULL)
        return ctl_fail("OSBQ_SECRET_KEY_FILE (%s): %s", ctl->cfg->secret_key_file, err.text);
    struct tally t = {0};
    int rc = CTL_EXIT_OK;
    for (int which = OSBQ_SEALED_INSTANCES; which <= OSBQ_SEALED_OPERATIONS && rc == CTL_EXIT_OK;
         which++)
        rc = reseal_all(ctl, secrets, (enum osbq_sealed_records)which, &t);
    if (rc == CTL_EXIT_OK)
        rc = report(ctl, secrets, &t);
    if (t.resealed > 0 || rc == CTL_EXIT_OK) {
        /* In the audit trail: who resealed how many (a partial run too: it changed records). */
        char by[256], resealed[24];
        ctl_operator_name(by, sizeof by);
        (void)snprintf(resealed, sizeof resealed, "%lu", t.resealed);
        const char *fields[] = {"action", "reencrypt", "by", by, "resealed", resealed};
        if (osbq_store_event_add(ctl->store, "operator", fields, 3, &err) < 0)
            ctl_say("the audit trail did not take the reencrypt's event: %s", err.text);
    }
    osbq_secrets_destroy(&secrets);
    return rc;
}
