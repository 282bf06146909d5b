/* A validating JSON skimmer: checks syntax and finds value boundaries without
 * building anything. jansson builds a hash table per object, which costs over
 * a second on the 35 MB A100 trace; most of its events (cpu_op, flow arrows)
 * are of no use to us, so we skim them and let jansson parse only the rest. */
#include <jansson.h>
#include <string.h>

#include "internal.h"

#define TL_JSON_MAX_DEPTH 512

void tl_jscan_ws(tl_jscan *s)
{
    while (s->pos < s->len) {
        char c = s->buf[s->pos];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
            s->pos++;
        else
            break;
    }
}

static int fail(tl_jscan *s, const char *why)
{
    s->err = why;
    return -1;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int tl_jscan_string(tl_jscan *s, const char **p, size_t *n)
{
    if (s->pos >= s->len || s->buf[s->pos] != '"')
        return fail(s, "expected a string");
    size_t i = ++s->pos;
    const char *b = s->buf;
    for (;;) {
        /* Fast path: plain bytes. */
        const char *q = b + i;
        const char *end = b + s->len;
        while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
            q++;
        i = (size_t)(q - b);
        if (i >= s->len)
            return fail(s, "unterminated string");
        char c = b[i];
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20)
            return fail(s, "control character in a string");
        /* backslash */
        if (i + 1 >= s->len)
            return fail(s, "unterminated string");
        char e = b[i + 1];
        if (e == 'u') {
            if (i + 5 >= s->len || !is_hex(b[i + 2]) || !is_hex(b[i + 3]) || !is_hex(b[i + 4]) ||
                !is_hex(b[i + 5]))
                return fail(s, "invalid \\u escape");
            i += 6;
        } else if (strchr("\"\\/bfnrt", e) && e) {
            i += 2;
        } else {
            return fail(s, "invalid escape in a string");
        }
    }
    if (p)
        *p = b + s->pos;
    if (n)
        *n = i - s->pos;
    s->pos = i + 1;
    return 0;
}

static int scan_number(tl_jscan *s)
{
    const char *b = s->buf;
    size_t i = s->pos;
    if (i < s->len && b[i] == '-')
        i++;
    if (i >= s->len)
        return fail(s, "invalid number");
    if (b[i] == '0') {
        i++;
    } else if (b[i] >= '1' && b[i] <= '9') {
        while (i < s->len && b[i] >= '0' && b[i] <= '9')
            i++;
    } else {
        return fail(s, "invalid number");
    }
    if (i < s->len && b[i] == '.') {
        i++;
        if (i >= s->len || b[i] < '0' || b[i] > '9')
            return fail(s, "invalid number");
        while (i < s->len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    if (i < s->len && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < s->len && (b[i] == '+' || b[i] == '-'))
            i++;
        if (i >= s->len || b[i] < '0' || b[i] > '9')
            return fail(s, "invalid number");
        while (i < s->len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    s->pos = i;
    return 0;
}

static int scan_literal(tl_jscan *s, const char *lit)
{
    size_t n = strlen(lit);
    if (s->len - s->pos < n || memcmp(s->buf + s->pos, lit, n) != 0)
        return fail(s, "invalid literal");
    s->pos += n;
    return 0;
}

size_t tl_json_nonfinite_len(const char *p, size_t n)
{
    static const char *const lits[] = {"-Infinity", "Infinity", "-inf", "inf", "-nan",
                                       "nan", "-NaN", "NaN"};
    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        size_t k = strlen(lits[i]);
        if (n >= k && memcmp(p, lits[i], k) == 0) {
            char c = n > k ? p[k] : ' ';
            if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' ||
                c == '\r')
                return k;
        }
    }
    return 0;
}

int tl_jscan_value(tl_jscan *s, int depth)
{
    if (depth > TL_JSON_MAX_DEPTH)
        return fail(s, "nesting too deep");
    tl_jscan_ws(s);
    if (s->pos >= s->len)
        return fail(s, "unexpected end of input");
    char c = s->buf[s->pos];
    switch (c) {
    case '"':
        return tl_jscan_string(s, NULL, NULL);
    case '{':
        s->pos++;
        tl_jscan_ws(s);
        if (s->pos < s->len && s->buf[s->pos] == '}') {
            s->pos++;
            return 0;
        }
        for (;;) {
            tl_jscan_ws(s);
            if (tl_jscan_string(s, NULL, NULL) < 0)
                return fail(s, "expected a key string");
            tl_jscan_ws(s);
            if (s->pos >= s->len || s->buf[s->pos] != ':')
                return fail(s, "expected ':'");
            s->pos++;
            if (tl_jscan_value(s, depth + 1) < 0)
                return -1;
            tl_jscan_ws(s);
            if (s->pos >= s->len)
                return fail(s, "unexpected end of input in an object");
            if (s->buf[s->pos] == ',') {
                s->pos++;
                continue;
            }
            if (s->buf[s->pos] == '}') {
                s->pos++;
                return 0;
            }
            return fail(s, "expected ',' or '}'");
        }
    case '[':
        s->pos++;
        tl_jscan_ws(s);
        if (s->pos < s->len && s->buf[s->pos] == ']') {
            s->pos++;
            return 0;
        }
        for (;;) {
            if (tl_jscan_value(s, depth + 1) < 0)
                return -1;
            tl_jscan_ws(s);
            if (s->pos >= s->len)
                return fail(s, "unexpected end of input in an array");
            if (s->buf[s->pos] == ',') {
                s->pos++;
                continue;
            }
            if (s->buf[s->pos] == ']') {
                s->pos++;
                return 0;
            }
            return fail(s, "expected ',' or ']'");
        }
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    default:
        break;
    }
    if (s->lenient) {
        size_t k = tl_json_nonfinite_len(s->buf + s->pos, s->len - s->pos);
        if (k) {
            s->pos += k;
            s->saw_nonfinite = true;
            return 0;
        }
    }
    if (c == 'n')
        return scan_literal(s, "null");
    if (c == '-' || (c >= '0' && c <= '9'))
        return scan_number(s);
    return fail(s, "unexpected character");
}

void tl_jscan_linecol(const char *buf, size_t off, int *line, int *col)
{
    int l = 1;
    size_t last = 0;
    for (size_t i = 0; i < off; i++)
        if (buf[i] == '\n') {
            l++;
            last = i + 1;
        }
    *line = l;
    *col = (int)(off - last) + 1;
}

int tl_json_syntax_error(const char *path, const char *buf, size_t len, const tl_jscan *s,
                         tl_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    if (!j)
        return tl_errf(err, TL_EFORMAT, "%s: malformed JSON at line %d, column %d: %s", path,
                       je.line, je.column, je.text);
    json_decref(j);
    int line, col;
    tl_jscan_linecol(buf, s->pos < len ? s->pos : len, &line, &col);
    return tl_errf(err, TL_EFORMAT, "%s: malformed JSON at line %d, column %d: %s", path, line,
                   col, s->err ? s->err : "syntax error");
}
