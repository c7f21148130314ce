/* JSON the cmocka tests write in their source. */
#ifndef OSBQ_TESTS_JSON_TEXT_H
#define OSBQ_TESTS_JSON_TEXT_H

#include <jansson.h>

/* The JSON value of text (caller decrefs it); cmocka fails the test, saying why, when it does not
 * parse, so that a typo in a test's JSON is not taken for the code's failure. */
json_t *json_from_text(const char *text);

#endif
