/* X-Broker-API-Originating-Identity decoded for the audit trail. */
#include "originating_identity.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *originating_identity_decode(const char *header)
{
    if (header == NULL || header[0] == '\0')
        return NULL;
    const char *space = strchr(header, ' ');
    unsigned char raw[ORIGINATING_IDENTITY_MAX];
    size_t raw_len = 0;
    json_t *value = NULL;
    if (space != NULL && space > header &&
        sodium_base642bin(raw, sizeof raw - 1, space + 1, strlen(space + 1), " \t", &raw_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) == 0)
        value = json_loadb((const char *)raw, raw_len, JSON_REJECT_DUPLICATES, NULL);
    char *out = NULL;
    if (json_is_object(value)) {
        char *text = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS);
        size_t len = text != NULL ? (size_t)(space - header) + 1 + strlen(text) + 1 : 0;
        if (len > ORIGINATING_IDENTITY_MAX)
            len = ORIGINATING_IDENTITY_MAX;
        if (text != NULL && (out = malloc(len)) != NULL)
            (void)snprintf(out, len, "%.*s %s", (int)(space - header), header, text);
        free(text);
    } else {
        out = strndup(header, ORIGINATING_IDENTITY_MAX - 1);
    }
    json_decref(value);
    return out;
}
