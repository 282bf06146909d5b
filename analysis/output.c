/* The files tally-plot and tally-validate write: each one (its folder made
 * first) to a temporary file beside it, renamed over it only once complete, so that a failed or
 * interrupted write never leaves a truncated file nor destroys the one that
 * was there; never one of the files being read; and standard output checked
 * at exit. */
#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "an_internal.h"
#include "tally/results.h"

/* Outputs open now: the stream, the file it becomes and its temporary name
 * (NULL when written in place: a device such as /dev/stdout). */
typedef struct out_file {
    FILE *f;
    char *path, *tmp;
    struct out_file *next;
} out_file;

static out_file *open_outputs;

const char *tl_output_clobbers(const char *output, const char *const *inputs)
{
    static const char *const sidecars[] = { "", "-wal", "-shm", "-journal" };
    for (size_t i = 0; inputs && inputs[i]; i++) {
        if (!*inputs[i])
            continue;
        for (size_t k = 0; k < sizeof sidecars / sizeof sidecars[0]; k++) {
            size_t n = strlen(inputs[i]) + strlen(sidecars[k]) + 1;
            char *p = tl_xmalloc(n);
            snprintf(p, n, "%s%s", inputs[i], sidecars[k]);
            bool same = tl_results_same_file(output, p);
            if (!same) { /* also by resolved path: a file that is not there yet */
                char *a = tl_results_canonical_path(output), *b = tl_results_canonical_path(p);
                same = a && b && !strcmp(a, b);
                free(a);
                free(b);
            }
            free(p);
            if (same)
                return inputs[i];
        }
    }
    return NULL;
}

int tl_output_check(const char *path, const char *const *inputs, tl_err *err)
{
    const char *in = tl_output_clobbers(path, inputs);
    if (in)
        return tl_errf(err, TL_EUNKNOWN, "%s: the output would overwrite %s, which is read to "
                       "make it: give another file name", path, in);
    return 0;
}

/* Written in place, not renamed over: devices, pipes, /dev/ and /proc/ names
 * (/dev/stdout renamed over would replace the link, or the file the shell
 * opened for stdout while the stream still writes to the old one). */
static bool in_place(const char *path)
{
    struct stat sb;
    if (!strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6))
        return true;
    return stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode);
}

FILE *tl_out_open(const char *path, const char *const *inputs, tl_err *err)
{
    if (!path || !*path) {
        tl_errf(err, TL_EUNKNOWN, "an output file name is empty");
        return NULL;
    }
    if (tl_output_check(path, inputs, err) < 0)
        return NULL;
    /* missing folders are made, as for the results database (--db) */
    tl_err mk = {0};
    if (tl_mkdirs_for(path, &mk) < 0) {
        tl_errf(err, TL_EIO, "%s: cannot write: %s", path, mk.msg);
        return NULL;
    }
    out_file *o = tl_xcalloc(1, sizeof *o);
    o->path = tl_xstrdup(path);
    if (in_place(path)) {
        o->f = fopen(path, "w");
        if (!o->f) {
            tl_errf(err, TL_EIO, "%s: cannot write: %s", path, strerror(errno));
            free(o->path);
            free(o);
            return NULL;
        }
    } else {
        /* A link is followed: the file it names is replaced, the link kept. */
        struct stat lsb, sb;
        char *target = NULL;
        if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode))
            target = realpath(path, NULL);
        const char *t = target ? target : path;
        bool exists = stat(t, &sb) == 0;
        /* a file its owner made read-only stays so, as fopen would keep it */
        if (exists && !S_ISDIR(sb.st_mode) && access(t, W_OK) != 0) {
            tl_errf(err, TL_EIO, "%s: cannot write: %s", path, strerror(errno));
            free(target);
            free(o->path);
            free(o);
            return NULL;
        }
        if (exists && S_ISDIR(sb.st_mode)) {
            tl_errf(err, TL_EIO, "%s: cannot write: it is a folder", path);
            free(target);
            free(o->path);
            free(o);
            return NULL;
        }
        const char *slash = strrchr(t, '/');
        size_t dlen = slash ? (size_t)(slash - t) + 1 : 0;
        size_t n = strlen(t) + 16;
        o->tmp = tl_xmalloc(n);
        snprintf(o->tmp, n, "%.*s.%s.XXXXXX", (int)dlen, t, slash ? slash + 1 : t);
        if (target) {
            free(o->path);
            o->path = target; /* renamed over the link's file */
        }
        int fd = mkstemp(o->tmp);
        if (fd < 0) {
            tl_errf(err, TL_EIO, "%s: cannot write: %s", path, strerror(errno));
            free(o->tmp);
            free(o->path);
            free(o);
            return NULL;
        }
        /* The mode the file had, or the one fopen would have given it. */
        mode_t mode;
        if (exists)
            mode = sb.st_mode & 07777;
        else {
            mode_t mask = umask(0);
            umask(mask);
            mode = 0666 & ~mask;
        }
        if (fchmod(fd, mode) != 0) { /* not fatal: the file is still ours */ }
        o->f = fdopen(fd, "w");
        if (!o->f) {
            tl_errf(err, TL_EIO, "%s: cannot write: %s", path, strerror(errno));
            close(fd);
            unlink(o->tmp);
            free(o->tmp);
            free(o->path);
            free(o);
            return NULL;
        }
    }
    o->next = open_outputs;
    open_outputs = o;
    return o->f;
}

static out_file *take(FILE *f)
{
    for (out_file **p = &open_outputs; *p; p = &(*p)->next)
        if ((*p)->f == f) {
            out_file *o = *p;
            *p = o->next;
            return o;
        }
    return NULL;
}

static void free_out(out_file *o)
{
    free(o->path);
    free(o->tmp);
    free(o);
}

int tl_out_commit(FILE *f, tl_err *err)
{
    out_file *o = take(f);
    if (!o) { /* not one of ours: closed as fopen'ed */
        bool bad = ferror(f) != 0;
        bad |= fclose(f) != 0;
        return bad ? tl_errf(err, TL_EIO, "write failed: %s", strerror(errno)) : 0;
    }
    int e = 0;
    if (fflush(f) != 0)
        e = errno ? errno : EIO;
    if (!e && ferror(f))
        e = EIO;
    if (!e && o->tmp && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    if (!e && o->tmp && rename(o->tmp, o->path) != 0)
        e = errno;
    int r = 0;
    if (e) {
        r = tl_errf(err, TL_EIO, "%s: write failed: %s%s", o->path, strerror(e),
                    o->tmp ? " (any earlier file of that name is kept)" : "");
        if (o->tmp)
            unlink(o->tmp);
    }
    free_out(o);
    return r;
}

void tl_out_discard(FILE *f)
{
    if (!f)
        return;
    out_file *o = take(f);
    fclose(f);
    if (o && o->tmp)
        unlink(o->tmp);
    if (o)
        free_out(o);
}

int tl_close_stream(FILE *f)
{
    /* gnulib's close_stream: a stream that was never written and whose
     * descriptor is closed (EBADF) is fine; any other failure is not. */
    bool some_pending = __fpending(f) != 0;
    bool prev_fail = ferror(f) != 0;
    errno = 0;
    bool fclose_fail = fclose(f) != 0;
    if (prev_fail || (fclose_fail && (some_pending || errno != EBADF))) {
        if (!fclose_fail)
            errno = 0; /* an earlier write failed: its reason is gone */
        return -1;
    }
    return 0;
}

int tl_close_stdout(const char *prog)
{
    if (tl_close_stream(stdout) == 0)
        return 0;
    int e = errno;
    fprintf(stderr, "%s: write error on standard output%s%s\n", prog, e ? ": " : "",
            e ? strerror(e) : "");
    return EX_CANTCREAT;
}
