/* X-Broker-API-Originating-Identity (OSB spec, "Originating Identity"): "<platform> <value>",
 * the value a base64-encoded JSON object naming the platform's user. The audit trail records it
 * decoded (docs/events.md). */
#ifndef OSBQ_GATEWAY_ORIGINATING_IDENTITY_H
#define OSBQ_GATEWAY_ORIGINATING_IDENTITY_H

/* Longest decoded identity kept: a longer one is cut (it still names its user first). */
#define ORIGINATING_IDENTITY_MAX 1024

/* The identity header as "<platform> <compact JSON>" (caller frees), the header as it came
 * when its value does not decode to a JSON object (an auditor sees what was sent), or NULL
 * when header is NULL or empty or memory ran out. */
char *originating_identity_decode(const char *header);

#endif
