/* Running gnuplot: one child process per image, in the output folder, with its
 * stderr kept for the error message. The scripts choose their terminal from the
 * variable fmt, so that a user can rerun them by hand. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "an_internal.h"

/* $TALLY_GNUPLOT, else "gnuplot" on PATH; NULL when not found (malloc'ed). */
static char *find_gnuplot(void)
{
    const char *env = getenv("TALLY_GNUPLOT");
    if (env && *env) {
        if (strchr(env, '/'))
            return access(env, X_OK) == 0 ? tl_xstrdup(env) : NULL;
        /* a bare name: look it up on PATH like the default */
    }
    const char *name = env && *env ? env : "gnuplot";
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = tl_xstrdup(path);
    char *save = NULL, *found = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char *p = tl_an_path(*d ? d : ".", name);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0) {
            found = p;
            break;
        }
        free(p);
    }
    free(copy);
    return found;
}

/* Run gnuplot with args in dir; its stderr goes to errbuf. Returns the wait
 * status, or -1 if the process could not be started. */
static int run_gnuplot(const char *exe, const char *dir, const char *const *args, tl_sbuf *errbuf)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        dup2(fds[1], 2);
        close(fds[0]);
        if (dir && *dir && chdir(dir) != 0) {
            dprintf(2, "cannot enter %s: %s\n", dir, strerror(errno));
            _exit(126);
        }
        char *argv[8];
        int n = 0;
        argv[n++] = (char *)exe;
        for (int i = 0; args[i] && n < 7; i++)
            argv[n++] = (char *)args[i];
        argv[n] = NULL;
        execv(exe, argv);
        dprintf(2, "cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t k;
    while ((k = read(fds[0], buf, sizeof buf)) != 0) {
        if (k < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        /* Keep at most 64 KiB: the tail is what the message needs. */
        if (errbuf->len < 65536)
            tl_sbuf_printf(errbuf, "%.*s", (int)k, buf);
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

/* The last few non-empty lines of gnuplot's stderr, on one line. */
static void stderr_tail(const char *s, char *out, size_t cap)
{
    const char *lines[3] = {0};
    size_t lens[3] = {0};
    int n = 0;
    for (const char *p = s; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        size_t blank = 0;
        while (blank < len && (p[blank] == ' ' || p[blank] == '\t' || p[blank] == '^'))
            blank++;
        if (blank < len) {
            if (n == 3) {
                memmove(lines, lines + 1, 2 * sizeof *lines);
                memmove(lens, lens + 1, 2 * sizeof *lens);
                n = 2;
            }
            lines[n] = p;
            lens[n++] = len;
        }
        p = e ? e + 1 : NULL;
    }
    out[0] = '\0';
    size_t o = 0;
    for (int i = 0; i < n && o + 4 < cap; i++) {
        int w = snprintf(out + o, cap - o, "%s%.*s", i ? " | " : "", (int)lens[i], lines[i]);
        if (w < 0)
            break;
        o += (size_t)w;
        if (o >= cap)
            break;
    }
    if (!n)
        snprintf(out, cap, "(no message)");
}

bool tl_gnuplot_has_terminal(const char *terminal)
{
    char *exe = find_gnuplot();
    if (!exe)
        return false;
    const char *args[] = {"-e", "print GPVAL_TERMINALS", NULL};
    tl_sbuf out = {0};
    int status = run_gnuplot(exe, NULL, args, &out);
    bool found = false;
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.s) {
        size_t n = strlen(terminal);
        for (const char *p = out.s; (p = strstr(p, terminal)); p += n) {
            bool start = p == out.s || p[-1] == ' ' || p[-1] == '\n';
            bool end = p[n] == '\0' || p[n] == ' ' || p[n] == '\n';
            if (start && end) {
                found = true;
                break;
            }
        }
    }
    tl_sbuf_free(&out);
    free(exe);
    return found;
}

int tl_plot_parse_formats(const char *s, unsigned *out, tl_err *err)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"png", TL_FMT_PNG}, {"svg", TL_FMT_SVG}, {"pdf", TL_FMT_PDF}};
    if (!s || !*s)
        return tl_errf(err, TL_EUNKNOWN, "--format: empty list (use png,svg,pdf)");
    unsigned f = 0;
    /* every entry, the empty ones too ('png,,svg', 'png,'): --policy refuses
     * those, and strtok skipped them */
    for (const char *t = s;; t++) {
        size_t n = strcspn(t, ",");
        if (n == 0)
            return tl_errf(err, TL_EUNKNOWN, "--format: an empty entry in '%s' (use png,svg,pdf)", s);
        size_t i = 0;
        while (i < sizeof names / sizeof *names && (strlen(names[i].name) != n ||
                                                    strncmp(t, names[i].name, n)))
            i++;
        if (i == sizeof names / sizeof *names)
            return tl_errf(err, TL_EUNKNOWN, "--format: unknown format '%.*s' (use png, svg, pdf)",
                           (int)n, t);
        f |= names[i].bit;
        t += n;
        if (!*t)
            break;
    }
    *out = f;
    return 0;
}

int tl_gnuplot_render(const char *dir, const char *script, const char *base, unsigned formats,
                      FILE *log, tl_err *err)
{
    static const struct {
        unsigned bit;
        const char *ext;
    } fmts[] = {{TL_FMT_PNG, "png"}, {TL_FMT_SVG, "svg"}, {TL_FMT_PDF, "pdf"}};
    char *exe = find_gnuplot();
    if (!exe)
        return tl_errf(err, TL_ENODEV,
                       "gnuplot not found%s%s (install gnuplot, or set TALLY_GNUPLOT)",
                       getenv("TALLY_GNUPLOT") ? ": TALLY_GNUPLOT=" : " on PATH",
                       getenv("TALLY_GNUPLOT") ? getenv("TALLY_GNUPLOT") : "");
    int r = 0;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0] && r == 0; i++) {
        if (!(formats & fmts[i].bit))
            continue;
        char setfmt[32], image[512];
        snprintf(setfmt, sizeof setfmt, "fmt='%s'", fmts[i].ext);
        snprintf(image, sizeof image, "%s.%s", base, fmts[i].ext);
        char *image_path = tl_an_path(dir, image);
        /* An earlier image is moved aside, so that a stale one cannot pass the
         * check below, and put back if gnuplot fails. */
        char *backup = NULL;
        struct stat sb;
        if (lstat(image_path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            size_t n = strlen(dir ? dir : ".") + strlen(image) + 24;
            backup = tl_xmalloc(n);
            snprintf(backup, n, "%s/.%s.old-XXXXXX", dir ? dir : ".", image);
            int fd = mkstemp(backup);
            if (fd < 0 || (close(fd), rename(image_path, backup)) != 0) {
                r = tl_errf(err, TL_EIO, "%s: cannot move the earlier image aside: %s", image_path,
                            strerror(errno));
                if (fd >= 0)
                    unlink(backup);
                free(backup);
                free(image_path);
                break;
            }
        }
        const char *args[] = {"-e", setfmt, script, NULL};
        tl_sbuf errbuf = {0};
        int status = run_gnuplot(exe, dir, args, &errbuf);
        char tail[400];
        stderr_tail(errbuf.s, tail, sizeof tail);
        if (status < 0)
            r = tl_errf(err, TL_EIO, "%s: cannot start gnuplot: %s", exe, strerror(errno));
        else if (WIFSIGNALED(status))
            r = tl_errf(err, TL_EINVAL, "gnuplot failed on %s/%s (%s): killed by signal %d: %s",
                        dir ? dir : ".", script, fmts[i].ext, WTERMSIG(status), tail);
        else if (WEXITSTATUS(status) != 0)
            r = tl_errf(err, TL_EINVAL, "gnuplot failed on %s/%s (%s, exit %d): %s",
                        dir ? dir : ".", script, fmts[i].ext, WEXITSTATUS(status), tail);
        else if (stat(image_path, &sb) != 0 || sb.st_size == 0)
            r = tl_errf(err, TL_EINVAL, "gnuplot made no image %s from %s: %s", image_path,
                        script, tail);
        else if (log)
            fprintf(log, "wrote %s\n", image_path);
        if (backup) {
            if (r == 0)
                unlink(backup);
            else if (rename(backup, image_path) != 0) /* gnuplot's partial image is dropped */
                unlink(backup);
            free(backup);
        }
        tl_sbuf_free(&errbuf);
        free(image_path);
    }
    free(exe);
    return r;
}

void tl_an_gp_preamble(FILE *f, const char *base, int width, int height)
{
    fprintf(f,
            "# Made by tally-plot from the results database; the data is in %s.dat.\n"
            "#   gnuplot %s.gp                   -> %s.png\n"
            "#   gnuplot -e 'fmt=\"svg\"' %s.gp    -> %s.svg (also \"pdf\")\n"
            "# (gnuplot 5.4 has no 'else if': hence the nested blocks)\n"
            "if (!exists(\"fmt\")) fmt = \"png\"\n"
            "if (fmt eq \"png\") {\n"
            "    if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
            "        set terminal pngcairo size %d,%d noenhanced font \"Sans,10\"\n"
            "    } else {\n"
            "        set terminal png size %d,%d noenhanced\n"
            "    }\n"
            "} else { if (fmt eq \"svg\") {\n"
            "    set terminal svg size %d,%d noenhanced dynamic font \"Sans,11\"\n"
            "} else { if (fmt eq \"pdf\") {\n"
            "    set terminal pdfcairo size %.2fin,%.2fin noenhanced font \"Sans,9\"\n"
            "} else {\n"
            "    print \"unknown fmt \" . fmt . \" (png, svg or pdf)\"\n"
            "    exit status 2\n"
            "} } }\n"
            "set output \"%s.\" . fmt\n"
            "set encoding utf8\n\n",
            base, base, base, base, base, width, height, width, height, width, height,
            width / 100.0, height / 100.0, base);
}

int tl_an_render(tl_analysis *a, const tl_plot_opts *o, const char *base, tl_err *err)
{
    if (o->no_render)
        return 0;
    static const char *const exts[] = {"png", "svg", "pdf"};
    const char *inputs[] = {a ? a->path : NULL, NULL};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        char image[600];
        snprintf(image, sizeof image, "%s.%s", base, exts[i]);
        char *path = tl_an_path(o->out_dir, image);
        int r = tl_output_check(path, inputs, err);
        free(path);
        if (r < 0)
            return r;
    }
    unsigned formats = o->formats;
    char *exe = find_gnuplot();
    bool have = exe != NULL;
    free(exe);
    if (!have) /* the render call below says so clearly */
        formats = formats ? formats & ~(unsigned)TL_FMT_PDF : TL_FMT_PNG;
    else if (!formats) {
        formats = TL_FMT_PNG | TL_FMT_SVG;
        if (tl_gnuplot_has_terminal("pdfcairo"))
            formats |= TL_FMT_PDF;
    } else if ((formats & TL_FMT_PDF) && !tl_gnuplot_has_terminal("pdfcairo")) {
        return tl_errf(err, TL_ENODEV,
                       "--format pdf: this gnuplot has no pdfcairo terminal (use png,svg)");
    }
    char script[512];
    snprintf(script, sizeof script, "%s.gp", base);
    return tl_gnuplot_render(o->out_dir ? o->out_dir : ".", script, base, formats, o->log, err);
}
