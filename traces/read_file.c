/* Whole-file reading with transparent gunzip: traces are shipped as .json.gz,
 * and a user may gzip any trace (even an Nsight export). The gzip magic, not
 * the file name, decides. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "internal.h"

/* Refuse inputs that would not fit the ns/int arithmetic or memory sanely. */
#define TL_MAX_FILE_BYTES ((size_t)8 << 30)

static int read_plain(FILE *f, const char *path, char **out, size_t *len, tl_err *err)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = tl_xmalloc(cap + 1);
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                free(buf);
                return tl_errf(err, TL_EIO, "%s: read error: %s", path, strerror(errno));
            }
            break;
        }
        if (n == cap) {
            if (cap >= TL_MAX_FILE_BYTES) {
                free(buf);
                return tl_errf(err, TL_ERANGE, "%s: file larger than %zu bytes", path,
                               TL_MAX_FILE_BYTES);
            }
            cap *= 2;
            buf = tl_xrealloc(buf, cap + 1);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int gunzip(const char *path, const unsigned char *in, size_t in_len, char **out,
                  size_t *len, tl_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* +16: gzip header */
        return tl_errf(err, TL_ENOMEM, "%s: cannot start gunzip", path);
    size_t cap = in_len * 4 + 1024, n = 0;
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
            if (cap >= TL_MAX_FILE_BYTES) {
                inflateEnd(&z);
                free(buf);
                return tl_errf(err, TL_ERANGE, "%s: uncompressed size over %zu bytes", path,
                               TL_MAX_FILE_BYTES);
            }
            cap *= 2;
            buf = tl_xrealloc(buf, cap + 1);
        }
        size_t room = cap - n;
        z.next_out = (unsigned char *)buf + n;
        z.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
        uInt before = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        n += before - z.avail_out;
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members (gzip a b > c) are legal: go on. */
            if (z.avail_in == 0 && left == 0)
                break;
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
    *out = NULL;
    *len = 0;
    if (!path)
        return tl_errf(err, TL_EINVAL, "tl_read_file: no path");
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_errf(err, TL_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *raw = NULL;
    size_t n = 0;
    int r = read_plain(f, path, &raw, &n, err);
    fclose(f);
    if (r < 0)
        return r;
    if (n >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b) {
        r = gunzip(path, (unsigned char *)raw, n, out, len, err);
        free(raw);
        return r;
    }
    *out = raw;
    *len = n;
    return 0;
}
