/* osbq-ctl bus-cert: a new CurveZMQ key pair for the job bus, saved as czmq's certificate
 * files (the public one to hand out, the secret one to keep), without Redis. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <czmq.h>

#include "ctl.h"

/* Longest PATH accepted: czmq builds "<path>_secret" in a 256-byte buffer when loading. */
#define CERT_PATH_MAX 240

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 || errno != ENOENT;
}

int cmd_bus_cert(struct ctl *ctl)
{
    const char *path = ctl->opt.path;
    if (strlen(path) > CERT_PATH_MAX)
        return ctl_fail("bus-cert: PATH longer than %d bytes", CERT_PATH_MAX);
    char secret_path[CERT_PATH_MAX + 8];
    (void)snprintf(secret_path, sizeof secret_path, "%s_secret", path);
    /* A key pair in use is never replaced by accident: rotation writes a new one beside it. */
    if (exists(path) || exists(secret_path))
        return ctl_fail("bus-cert: %s or %s exists already; not overwriting it", path, secret_path);
    zcert_t *cert = zcert_new();
    if (cert == NULL)
        return ctl_fail("bus-cert: cannot create a key pair");
    zcert_set_meta(cert, "created-by", "%s %s", CTL_PROG, OSBQ_VERSION);
    /* zcert_save writes both files, the secret one private (0600); chmod makes sure whatever
     * the umask. */
    int rc = zcert_save(cert, path);
    if (rc == 0 && chmod(secret_path, S_IRUSR | S_IWUSR) != 0)
        rc = -1;
    if (rc != 0) {
        zcert_destroy(&cert);
        (void)remove(secret_path);
        (void)remove(path);
        return ctl_fail("bus-cert: cannot write %s and %s: %s", path, secret_path, strerror(errno));
    }
    if (ctl->opt.json) {
        json_t *out = json_pack("{s:s, s:s, s:s}", "public_key", zcert_public_txt(cert),
                                "public_file", path, "secret_file", secret_path);
        if (out != NULL)
            (void)json_dumpf(out, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(out);
    } else {
        printf("public key  %s\npublic file %s\nsecret file %s (mode 0600)\n",
               zcert_public_txt(cert), path, secret_path);
    }
    zcert_destroy(&cert);
    return CTL_EXIT_OK;
}
