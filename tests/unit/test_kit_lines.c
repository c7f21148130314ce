/* The kit's line printer (kit/kit_lines.c): lines split across feeds, a last line without a
 * newline, long lines cut on a character boundary, control characters made harmless. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_lines.h"
#include "test_main.h"

/* What the printer wrote for the chunks fed (a NULL-terminated list), then its end. */
static char *printed(const char *const *chunks)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    struct kit_lines l;
    kit_lines_init(&l, out, "> ");
    for (size_t i = 0; chunks[i] != NULL; i++)
        kit_lines_feed(&l, chunks[i], strlen(chunks[i]));
    kit_lines_end(&l);
    fclose(out);
    return text;
}

static void test_split_and_end(void **state)
{
    (void)state;
    const char *chunks[] = {"progress 10 Cre", "ating\nsecond line\r\n", "", "last", NULL};
    char *text = printed(chunks);
    assert_string_equal(text, "> progress 10 Creating\n> second line\n> last\n");
    free(text);
}

static void test_controls(void **state)
{
    (void)state;
    const char *chunks[] = {"a\033[2Jb\tc\x7f\n", NULL};
    char *text = printed(chunks);
    assert_string_equal(text, "> a?[2Jb\tc?\n");
    free(text);
}

/* A long line is cut at KIT_LINE_SHOWN bytes, before a UTF-8 character cut in two, and says how
 * much it left out. */
static void test_cut(void **state)
{
    (void)state;
    static char line[KIT_LINE_SHOWN + 100];
    memset(line, 'x', sizeof line);
    /* "é" (2 bytes) across the cut. */
    line[KIT_LINE_SHOWN - 1] = (char)0xC3;
    line[KIT_LINE_SHOWN] = (char)0xA9;
    line[sizeof line - 1] = '\0';
    const char *chunks[] = {line, "\nnext\n", NULL};
    char *text = printed(chunks);
    char expected[64];
    (void)snprintf(expected, sizeof expected, " [... %d more bytes]\n> next\n",
                   (int)(sizeof line - 1 - (KIT_LINE_SHOWN - 1)));
    assert_int_equal(strncmp(text, "> ", 2), 0);
    assert_int_equal(strspn(text + 2, "x"), KIT_LINE_SHOWN - 1);
    assert_string_equal(text + 2 + KIT_LINE_SHOWN - 1, expected);
    free(text);
}

/* Without a stream nothing is printed; lines are still counted. */
static void test_counts_only(void **state)
{
    (void)state;
    struct kit_lines l;
    kit_lines_init(&l, NULL, "> ");
    kit_lines_feed(&l, "a\nb\nc", 5);
    kit_lines_end(&l);
    assert_int_equal(l.lines, 3);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_split_and_end), cmocka_unit_test(test_controls),
               cmocka_unit_test(test_cut), cmocka_unit_test(test_counts_only))
