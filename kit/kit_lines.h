/* A program's stream printed line by line as it arrives, each line after a prefix ("  stdout
 * "): a line longer than KIT_LINE_SHOWN bytes is cut (the rest counted), control characters
 * are shown as '?', so a program's output cannot garble the terminal. */
#ifndef OSBQ_KIT_LINES_H
#define OSBQ_KIT_LINES_H

#include <stdio.h>

/* Bytes of a line printed; the rest is counted. */
#define KIT_LINE_SHOWN 2000

struct kit_lines {
    FILE *out;                 /* where lines go; borrowed */
    const char *prefix;        /* printed before each line; borrowed */
    char line[KIT_LINE_SHOWN]; /* the current line's first bytes */
    size_t len;                /* bytes in line */
    size_t cut;                /* bytes of the current line past KIT_LINE_SHOWN */
    size_t lines;              /* lines printed so far */
};

/* Starts an empty stream. out may be NULL: nothing is printed (lines are still counted). */
void kit_lines_init(struct kit_lines *l, FILE *out, const char *prefix);

/* Feeds n bytes: prints each line they complete. */
void kit_lines_feed(struct kit_lines *l, const char *data, size_t n);

/* The stream ended: prints a last line that had no newline. */
void kit_lines_end(struct kit_lines *l);

#endif
