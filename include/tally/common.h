/* Tally: shared basics for every module.
 *
 * Conventions (libuv style):
 *  - every public name starts with tl_ / TL_;
 *  - functions that can fail return 0 or a negative TL_E* code, and fill a
 *    caller-owned tl_err with a one-line message that names the file and the
 *    field at fault ("resnet.json.gz: event 1234: kernel 'foo': grid is 0");
 *  - structures are caller-owned with *_init / *_close pairs;
 *  - time is integer nanoseconds (tl_ns) everywhere inside the project.
 */
#ifndef TALLY_COMMON_H
#define TALLY_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_VERSION "0.1.0"

typedef int64_t tl_ns; /* nanoseconds; simulated or measured time */

#define TL_NS_PER_US 1000LL
#define TL_NS_PER_MS 1000000LL
#define TL_NS_PER_S 1000000000LL

/* Error codes: negative, so that "r < 0" means failure. */
enum {
    TL_OK = 0,
    TL_EIO = -1,       /* cannot open, read or write a file */
    TL_EFORMAT = -2,   /* malformed input (JSON, gzip, SQLite schema) */
    TL_EMISSING = -3,  /* a required field is absent */
    TL_ERANGE = -4,    /* a value is out of its allowed range (zero grid, ...) */
    TL_EUNKNOWN = -5,  /* unknown name (GPU, policy, parameter, option) */
    TL_ENOMEM = -6,    /* allocation failed */
    TL_EDB = -7,       /* SQLite error */
    TL_ENODEV = -8,    /* no GPU / no MPS / feature not available here */
    TL_EINVAL = -9,    /* invalid argument or state (programming error) */
    TL_ETYPE = -10,    /* a value has the wrong type */
};

const char *tl_strerror(int code);

/* Caller-owned error detail: the code and a human message. */
typedef struct tl_err {
    int code;
    char msg[512];
} tl_err;

/* Set err (if not NULL) and return code, so that "return tl_errf(...)" works. */
int tl_errf(tl_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tl_err_clear(tl_err *err);

/* Map a TL_E* code to a sysexits.h exit status (EX_DATAERR, EX_NOINPUT, ...). */
int tl_exit_code(int code);

/* Allocation that aborts the process with a message on failure (used for small
 * bookkeeping allocations where recovery is pointless). */
void *tl_xmalloc(size_t n);
void *tl_xcalloc(size_t n, size_t size);
void *tl_xrealloc(void *p, size_t n);
char *tl_xstrdup(const char *s);
/* Does hay contain needle, ignoring ASCII case? needle must be lower case;
 * an empty needle is never found. */
bool tl_contains_ci(const char *hay, const char *needle);
/* Length of the well-formed UTF-8 sequence at p: 1 for ASCII, 2-4 for a
 * sequence RFC 3629 allows (no overlong forms, no surrogates, nothing past
 * U+10FFFF), 0 if it is none. p must be NUL-terminated. */
int tl_utf8_len(const unsigned char *p);
/* Read s, the whole of it, as a decimal number: [+-]digits[.digits][e[+-]digits],
 * nothing before or after (strtod alone also takes leading space, hex, "inf" and
 * "nan"). 0 with *out set; TL_ETYPE when s is no such number; TL_ERANGE when it
 * is beyond a double (1e400). A value below the smallest double is read as strtod
 * rounds it (1e-320 to a subnormal, 1e-400 to 0), not refused. */
int tl_parse_decimal(const char *s, double *out);
/* What tl_parse_decimal's error r says of the value: "out of range" or "not a
 * decimal number" (the words every option's message uses). */
const char *tl_parse_decimal_what(int r);
/* Read s, the whole of it, as an integer in [min, max]: [-]digits, nothing
 * before or after (strtoll alone also takes leading space and '+'). 0 with
 * *out set; TL_ETYPE when s is no such number; TL_ERANGE when it is outside
 * [min, max] or beyond a long long. */
int tl_parse_int64(const char *s, long long min, long long max, long long *out);
/* What tl_parse_int64's error r says of the value: "out of range" or "not an
 * integer" (the words every integer option's message uses). */
const char *tl_parse_int64_what(int r);
/* The environment variable name read by tl_parse_int64: 0 when it is unset or
 * empty (*out untouched), 1 with *out set, or tl_parse_int64's error (< 0),
 * for the caller's message. */
int tl_env_int64(const char *name, long long min, long long max, long long *out);
/* Create a folder and its missing parents (mkdir -p). NULL or "": nothing to do.
 * TL_EIO naming the folder when one cannot be made or the name is not a folder;
 * TL_ENOMEM, never an exit (the tracer calls it inside the traced program). */
int tl_mkdirs(const char *dir, tl_err *err);
/* The same for the folder a file named path would be in (nothing for a bare name). */
int tl_mkdirs_for(const char *path, tl_err *err);

#endif
