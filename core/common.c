/* Error codes, error messages, exit statuses and aborting allocators. */
#include "tally/common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tl_strerror(int code)
{
    switch (code) {
    case TL_OK: return "success";
    case TL_EIO: return "input/output error";
    case TL_EFORMAT: return "malformed input";
    case TL_EMISSING: return "missing field";
    case TL_ERANGE: return "value out of range";
    case TL_EUNKNOWN: return "unknown name";
    case TL_ENOMEM: return "out of memory";
    case TL_EDB: return "database error";
    case TL_ENODEV: return "device or feature not available";
    case TL_EINVAL: return "invalid argument";
    case TL_ETYPE: return "wrong type";
    default: return "unknown error";
    }
}

int tl_errf(tl_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* Messages are one line by contract: fold stray newlines. */
        for (char *p = err->msg; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return code;
}

void tl_err_clear(tl_err *err)
{
    if (err) {
        err->code = TL_OK;
        err->msg[0] = '\0';
    }
}

int tl_exit_code(int code)
{
    switch (code) {
    case TL_OK: return EX_OK;
    case TL_EIO: return EX_NOINPUT; /* a file we were asked to read is missing/unreadable */
    case TL_EFORMAT:
    case TL_EMISSING:
    case TL_ERANGE:
    case TL_ETYPE: return EX_DATAERR;
    case TL_EUNKNOWN: return EX_USAGE; /* unknown option, GPU or policy name given by the user */
    case TL_ENOMEM: return EX_OSERR;
    case TL_EDB: return EX_CANTCREAT;
    case TL_ENODEV: return EX_UNAVAILABLE;
    case TL_EINVAL: return EX_SOFTWARE;
    default: return EX_SOFTWARE;
    }
}

/* Out of memory: say so and exit with EX_OSERR. Not abort(): a user's
 * machine running short is no crash to dump core for. _exit, not exit: the
 * handlers of a half-built state (or of a sweep's parent, in a worker) must
 * not run; the results database is safe, its transaction never commits. */
static void *oom(size_t n)
{
    fprintf(stderr, "tally: out of memory (allocating %zu bytes)\n", n);
    fflush(stderr);
    _exit(EX_OSERR);
}

void *tl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *tl_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *tl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *tl_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tl_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

bool tl_contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return false;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == needle[i])
            i++;
        if (i == n)
            return true;
    }
    return false;
}

/* The second byte's range narrows after 0xe0, 0xed, 0xf0 and 0xf4 (table 3-7
 * of Unicode). A lead byte's test alone let 0xf8 80 80, 0xe0 80 80 and
 * 0xed a0 80 through, which jansson then refused to read back. */
int tl_utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n)
        return 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

int tl_parse_decimal(const char *s, double *out)
{
    /* only these characters: no space, no 'x', no letters of inf or nan */
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || strspn(s, "0123456789.eE+-") != n)
        return TL_ETYPE;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != s + n)
        return TL_ETYPE;
    /* ERANGE is also set for an underflow (a subnormal or 0), which is kept */
    if (errno == ERANGE && isinf(v))
        return TL_ERANGE;
    *out = v;
    return 0;
}

const char *tl_parse_decimal_what(int r)
{
    return r == TL_ERANGE ? "out of range" : "not a decimal number";
}

int tl_parse_int64(const char *s, long long min, long long max, long long *out)
{
    /* digits and a leading '-' only: strtoll alone also skips leading space
     * and takes a '+' (" 5", "+5"), which no whole-number option should */
    size_t n = s ? strlen(s) : 0;
    size_t sign = n && s[0] == '-';
    if (n == sign || strspn(s + sign, "0123456789") != n - sign)
        return TL_ETYPE;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < min || v > max)
        return TL_ERANGE;
    *out = v;
    return 0;
}

const char *tl_parse_int64_what(int r)
{
    return r == TL_ERANGE ? "out of range" : "not an integer";
}

int tl_env_int64(const char *name, long long min, long long max, long long *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    int r = tl_parse_int64(s, min, max, out);
    return r < 0 ? r : 1;
}

int tl_mkdirs(const char *dir, tl_err *err)
{
    if (!dir || !*dir)
        return 0;
    /* not tl_xstrdup: the tracer's library calls this inside the traced
     * program, which must not be ended for want of a few bytes */
    char *p = strdup(dir);
    if (!p)
        return tl_errf(err, TL_ENOMEM, "%s: out of memory", dir);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                int r = tl_errf(err, TL_EIO, "%s: cannot create folder: %s", p, strerror(errno));
                free(p);
                return r;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    struct stat sb;
    int ok = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
    free(p);
    if (!ok)
        return tl_errf(err, TL_EIO, "%s: not a folder", dir);
    return 0;
}

int tl_mkdirs_for(const char *path, tl_err *err)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash || slash == path)
        return 0;
    char *dir = strdup(path); /* as in tl_mkdirs */
    if (!dir)
        return tl_errf(err, TL_ENOMEM, "%s: out of memory", path);
    dir[slash - path] = '\0';
    int rc = tl_mkdirs(dir, err);
    free(dir);
    return rc;
}
