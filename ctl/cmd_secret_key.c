/* osbq-ctl secret-key: a new key for OSBQ_SECRET_KEY_FILE, from libsodium's CSPRNG. Needs no
 * configuration and no Redis: it only prints. */
#include <sodium.h>
#include <stdio.h>

#include "ctl.h"
#include "secrets.h"

int cmd_secret_key(struct ctl *ctl)
{
    if (sodium_init() < 0)
        return ctl_fail("libsodium cannot start");
    unsigned char key[OSBQ_SECRETS_KEY_BYTES];
    char hex[OSBQ_SECRETS_KEY_BYTES * 2 + 1];
    char id[OSBQ_SECRETS_ID_SIZE];
    randombytes_buf(key, sizeof key);
    sodium_bin2hex(hex, sizeof hex, key, sizeof key);
    osbq_secrets_key_id(key, id);
    int rc = CTL_EXIT_OK;
    if (ctl->opt.json) {
        if (printf("{\"key\":\"%s\",\"key_id\":\"%s\"}\n", hex, id) < 0)
            rc = ctl_fail("cannot write the key");
    } else if (printf("%s\n", hex) < 0) {
        rc = ctl_fail("cannot write the key");
    }
    /* stdout's buffer still holds it until main flushes; our copies go now. */
    sodium_memzero(key, sizeof key);
    sodium_memzero(hex, sizeof hex);
    return rc;
}
