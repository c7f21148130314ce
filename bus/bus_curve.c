/* The job bus's CurveZMQ keys and the gateway's ZAP handler (czmq's zcert and zauth). */
#include "bus_curve.h"

#include <sodium.h>
#include <string.h>

/* Loads the certificate at path; with need_secret, insists on a secret key that belongs to the
 * public key (a mismatched pair would only show as handshakes failing later). */
static zcert_t *load_cert(const char *path, bool need_secret, struct osbq_error *err)
{
    /* czmq 4.2's zcert_load leaks when the file is not ZPL at all: parse it once first. */
    zchunk_t *chunk = zchunk_slurp(path, 0);
    zconfig_t *parsed = chunk != NULL ? zconfig_chunk_load(chunk) : NULL;
    bool readable = parsed != NULL;
    zconfig_destroy(&parsed);
    zchunk_destroy(&chunk);
    /* zcert_load reads path_secret first when it exists, then path itself. */
    zcert_t *cert = readable ? zcert_load(path) : NULL;
    if (cert == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s holds no CurveZMQ certificate (create one with osbq-ctl bus-cert)",
                       path);
        return NULL;
    }
    if (!need_secret)
        return cert;
    static const unsigned char zero[32] = {0};
    const byte *secret = zcert_secret_key(cert);
    if (sodium_memcmp(secret, zero, sizeof zero) == 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s holds no secret key (give the _secret file osbq-ctl bus-cert wrote)",
                       path);
        zcert_destroy(&cert);
        return NULL;
    }
    unsigned char derived[crypto_scalarmult_BYTES];
    if (crypto_scalarmult_base(derived, secret) != 0 ||
        memcmp(derived, zcert_public_key(cert), sizeof derived) != 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: the secret key does not match the public key",
                       path);
        zcert_destroy(&cert);
        return NULL;
    }
    return cert;
}

int osbq_bus_curve_load(struct osbq_bus_curve *curve, const struct osbq_config *cfg,
                        enum osbq_role role, const char **variable, struct osbq_error *err)
{
    memset(curve, 0, sizeof *curve);
    if (cfg->bus_server_cert == NULL)
        return 0;
    if (sodium_init() < 0) {
        *variable = "OSBQ_BUS_CURVE_SERVER_CERT";
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "libsodium cannot start");
        return -1;
    }
    if (role & OSBQ_ROLE_GATEWAY) {
        *variable = "OSBQ_BUS_CURVE_SERVER_CERT";
        curve->own = load_cert(cfg->bus_server_cert, true, err);
        return curve->own ? 0 : -1;
    }
    /* A worker needs only the gateways' public key: the secret file serves as well. */
    *variable = "OSBQ_BUS_CURVE_SERVER_CERT";
    zcert_t *server = load_cert(cfg->bus_server_cert, false, err);
    if (server == NULL)
        return -1;
    (void)snprintf(curve->server_public, sizeof curve->server_public, "%s",
                   zcert_public_txt(server));
    zcert_destroy(&server);
    *variable = "OSBQ_BUS_CURVE_CLIENT_CERT";
    curve->own = load_cert(cfg->bus_client_cert, true, err);
    if (curve->own == NULL) {
        osbq_bus_curve_clear(curve);
        return -1;
    }
    return 0;
}

bool osbq_bus_curve_on(const struct osbq_bus_curve *curve)
{
    return curve != NULL && curve->own != NULL;
}

void osbq_bus_curve_clear(struct osbq_bus_curve *curve)
{
    zcert_destroy(&curve->own);
    memset(curve, 0, sizeof *curve);
}

/* czmq's certificate store asserts (aborts the process) when two certificates in the directory
 * hold the same public key: refuse such a directory with a clear line instead. Reads it as the
 * store does (every regular file, subdirectories too, but *_secret). */
static int check_clients_dir(const char *clients_dir, struct osbq_error *err)
{
    zdir_t *dir = zdir_new(clients_dir, NULL);
    if (dir == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s cannot be read as a directory",
                              clients_dir);
    zfile_t **files = zdir_flatten(dir);
    zhashx_t *seen = zhashx_new();
    int rc = files != NULL && seen != NULL ? 0 : -1;
    if (rc < 0)
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; rc == 0 && files[i] != NULL; i++) {
        const char *name = zfile_filename(files[i], NULL);
        size_t len = strlen(name);
        if (!zfile_is_regular(files[i]) || (len >= 7 && strcmp(name + len - 7, "_secret") == 0))
            continue;
        zcert_t *cert = zcert_load(name);
        if (cert == NULL)
            continue;
        const char *other = zhashx_lookup(seen, zcert_public_txt(cert));
        if (other != NULL)
            rc = osbq_error_set(err, OSBQ_ERR_INVALID,
                                "%s and %s hold the same public key; keep one (czmq stops the "
                                "process on such a directory)",
                                other, name);
        else
            zhashx_insert(seen, zcert_public_txt(cert), (void *)name);
        zcert_destroy(&cert);
    }
    zhashx_destroy(&seen);
    zdir_flatten_free(&files);
    zdir_destroy(&dir);
    return rc;
}

zactor_t *osbq_bus_auth_start(const char *clients_dir, bool verbose, struct osbq_error *err)
{
    if (check_clients_dir(clients_dir, err) < 0)
        return NULL;
    zactor_t *auth = zactor_new(zauth, NULL);
    if (auth == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the bus authenticator (zauth)");
        return NULL;
    }
    /* Every zauth command answers with a signal once it is in force. */
    if ((verbose && (zstr_send(auth, "VERBOSE") < 0 || zsock_wait(auth) < 0)) ||
        zstr_sendx(auth, "CURVE", clients_dir, NULL) < 0 || zsock_wait(auth) < 0) {
        zactor_destroy(&auth);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot configure the bus authenticator (zauth)");
        return NULL;
    }
    return auth;
}
