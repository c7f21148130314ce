/* A program's stream printed line by line. */
#include "kit_lines.h"

#include <string.h>

void kit_lines_init(struct kit_lines *l, FILE *out, const char *prefix)
{
    l->out = out;
    l->prefix = prefix;
    l->len = 0;
    l->cut = 0;
    l->lines = 0;
}

/* Prints the current line and starts the next one. */
static void flush_line(struct kit_lines *l)
{
    size_t len = l->len;
    if (len > 0 && l->line[len - 1] == '\r' && l->cut == 0)
        len--;
    if (l->cut > 0) {
        /* Cut inside a UTF-8 character: leave its first bytes out too. */
        size_t start = len;
        while (start > 0 && ((unsigned char)l->line[start - 1] & 0xC0) == 0x80)
            start--;
        if (start > 0 && (unsigned char)l->line[start - 1] >= 0xC0) {
            unsigned char lead = (unsigned char)l->line[start - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - (start - 1) < need) {
                l->cut += len - (start - 1);
                len = start - 1;
            }
        }
    }
    if (l->out != NULL) {
        fputs(l->prefix, l->out);
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)l->line[i];
            fputc(c < 0x20 && c != '\t' ? '?' : c == 0x7F ? '?' : (int)c, l->out);
        }
        if (l->cut > 0)
            fprintf(l->out, " [... %zu more bytes]", l->cut);
        fputc('\n', l->out);
        fflush(l->out);
    }
    l->lines++;
    l->len = 0;
    l->cut = 0;
}

void kit_lines_feed(struct kit_lines *l, const char *data, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t part = nl != NULL ? (size_t)(nl - data) : n;
        size_t room = sizeof l->line - l->len;
        size_t take = part < room ? part : room;
        memcpy(l->line + l->len, data, take);
        l->len += take;
        l->cut += part - take;
        if (nl == NULL)
            return;
        flush_line(l);
        data += part + 1;
        n -= part + 1;
    }
}

void kit_lines_end(struct kit_lines *l)
{
    if (l->len > 0 || l->cut > 0)
        flush_line(l);
}
