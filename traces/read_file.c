/* Whole-file reading with transparent gunzip: traces are shipped as .json.gz,
 * and a user may gzip any trace (even an Nsight export). The gzip magic, not
 * the file name, decides. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "internal.h"

/* Inputs are read whole into memory: past max bytes (TL_TRACE_MAX_FILE_BYTES
 * for tl_read_file) a file, a gzip bomb or an endless device (/dev/zero) is
 * refused instead of taking all the memory. Buffers grow by doubling but never
 * past max + 1 bytes: one byte more than allowed tells "too large" from "exactly
 * max". */
static size_t grow(size_t cap, size_t max)
{
    return cap > max / 2 ? max + 1 : cap * 2;
}

static int too_large(const char *path, size_t max, bool gz, tl_err *err)
{
    return tl_errf(err, TL_ERANGE, "%s: larger than %zu bytes%s (the most a trace may be: %zu MiB)",
                   path, max, gz ? " uncompressed" : "", max >> 20);
}

static int read_plain(FILE *f, const char *path, size_t max, char **out, size_t *len,
                      tl_err *err)
{
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max)
        return too_large(path, max, false, err);
    size_t cap = max < (1 << 16) ? max + 1 : 1 << 16, n = 0;
    char *buf = tl_xmalloc(cap + 1);
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n > max) {
            free(buf);
            return too_large(path, max, false, err);
        }
        if (r == 0) {
            if (ferror(f)) {
                free(buf);
                return tl_errf(err, TL_EIO, "%s: read error: %s", path, strerror(errno));
            }
            break;
        }
        if (n == cap) {
            cap = grow(cap, max);
            buf = tl_xrealloc(buf, cap + 1);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Do these n bytes start with the gzip magic (RFC 1952)? */
static bool gzip_magic(const void *p, size_t n)
{
    const unsigned char *b = p;
    return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

static int gunzip(const char *path, const unsigned char *in, size_t in_len, size_t max,
                  char **out, size_t *len, tl_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* +16: gzip header */
        return tl_errf(err, TL_ENOMEM, "%s: cannot start gunzip", path);
    /* a first guess of 4x; a larger output grows the buffer */
    size_t cap = in_len < max / 4 ? in_len * 4 + 1024 : max + 1, n = 0;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = tl_xmalloc(cap + 1);
    z.next_in = (unsigned char *)in;
    int rc = Z_OK;
    size_t left = in_len;
    for (;;) {
        if (z.avail_in == 0 && left > 0) {
            uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
            z.avail_in = chunk;
            left -= chunk;
        }
        if (n == cap) {
            cap = grow(cap, max);
            buf = tl_xrealloc(buf, cap + 1);
        }
        size_t room = cap - n;
        z.next_out = (unsigned char *)buf + n;
        z.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
        uInt before = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        n += before - z.avail_out;
        if (n > max) {
            inflateEnd(&z);
            free(buf);
            return too_large(path, max, true, err);
        }
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members (gzip a b > c) are legal: go on. */
            if (z.avail_in == 0 && left == 0)
                break;
            /* Anything else after a member (padding zeros, a log line
             * appended) is no gzip header: say so, not "incorrect header
             * check" as if the data were corrupt. */
            size_t rest = z.avail_in + left;
            if (!gzip_magic(z.next_in, rest)) {
                size_t at = in_len - rest;
                inflateEnd(&z);
                free(buf);
                return tl_errf(err, TL_EFORMAT, "%s: %zu bytes of something else after the gzip "
                               "data ends at byte %zu", path, rest, at);
            }
            if (inflateReset(&z) != Z_OK)
                break;
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) {
            inflateEnd(&z);
            free(buf);
            return tl_errf(err, TL_EFORMAT, "%s: truncated gzip stream", path);
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            const char *why = z.msg ? z.msg : "corrupt data";
            int code = rc == Z_MEM_ERROR ? TL_ENOMEM : TL_EFORMAT;
            tl_errf(err, code, "%s: corrupt gzip stream (%s)", path, why);
            inflateEnd(&z);
            free(buf);
            return code;
        }
    }
    inflateEnd(&z);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int tl_read_file(const char *path, char **out, size_t *len, tl_err *err)
{
    return tl_read_file_max(path, TL_TRACE_MAX_FILE_BYTES, out, len, err);
}

int tl_read_file_max(const char *path, size_t max, char **out, size_t *len, tl_err *err)
{
    *out = NULL;
    *len = 0;
    if (!path)
        return tl_errf(err, TL_EINVAL, "tl_read_file: no path");
    if (!*path) /* fopen("") fails too, but its message would name nothing */
        return tl_errf(err, TL_EIO, "'': an empty path names no file");
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_errf(err, TL_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *raw = NULL;
    size_t n = 0;
    int r = read_plain(f, path, max, &raw, &n, err);
    fclose(f);
    if (r < 0)
        return r;
    if (gzip_magic(raw, n)) {
        r = gunzip(path, (unsigned char *)raw, n, max, out, len, err);
        free(raw);
        if (r == 0 && gzip_magic(*out, *len)) {
            free(*out);
            *out = NULL;
            *len = 0;
            return tl_errf(err, TL_EFORMAT, "%s: gzip data inside gzip data (compressed twice?): "
                           "gunzip it once", path);
        }
        return r;
    }
    *out = raw;
    *len = n;
    return 0;
}
