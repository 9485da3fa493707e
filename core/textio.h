/*
 * core/textio.h - text input and output shared by every reader and writer of the project: the
 * number-row readers (systems/pointsets.c, and through it the CLI's), the RBF model reader
 * (cli/rbf_model.c), the VTK mesh reader and writer (rbf/vtk_io.c) and every file the CLI writes.
 *
 * - text_reader: lines of any length. A NUL byte is an error that names its line (text files
 *   hold none; without the check /dev/zero made a line reader spin forever).
 * - text_parse_double / text_parse_long: one number, which must end at white space, the end of
 *   the string or '#'. NaN, Inf, overflow and a nonzero number that underflows to zero are
 *   errors; a subnormal result is kept (the writers' %.17g of a subnormal reads back exactly).
 * - text_out: an output file written to a temporary file beside its target and renamed over
 *   it once complete and checked, so that a failed write (a full disk) leaves the old file as
 *   it was. Targets that are not regular files (a symbolic link such as /dev/stdout, a device,
 *   a pipe) are written directly.
 * - The path "-" (TEXT_STDIO) is the standard input for text_open and the standard output for
 *   text_out_open, the usual convention of command-line tools: the same as naming /dev/stdin or
 *   /dev/stdout, also where those do not exist. The stream is read or written, never closed.
 *
 * Header-only (static inline): the library (rbf/vtk_io.c), the test-system library
 * (systems/pointsets.c) and the CLI each compile it, without a link dependency between them.
 * It needs POSIX (lstat, fsync, fileno): a C file that includes it defines
 * _POSIX_C_SOURCE 200809L before its first #include. Nothing here prints or exits; failures
 * are return values, with errno where the system says why.
 */
#ifndef FMM_CORE_TEXTIO_H
#define FMM_CORE_TEXTIO_H

#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#error "core/textio.h needs _POSIX_C_SOURCE 200809L, defined before the first #include"
#endif

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* a, grown to room for need elements of elem bytes (its capacity *cap, in elements, doubled
 * as needed): the new pointer, or NULL when out of memory (a is then unchanged). */
static inline void *text_grow(void *a, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return a;
    size_t c = *cap ? *cap : 1024;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return NULL;
        c *= 2;
    }
    void *b = realloc(a, c * elem);
    if (b) *cap = c;
    return b;
}

/* ---- reading lines ------------------------------------------------------------------ */

enum text_status {
    TEXT_LINE = 1,      /* a line was read */
    TEXT_EOF = 0,       /* no more lines */
    TEXT_ERR_OPEN = -1, /* the file cannot be opened (errno in err), or it is a directory */
    TEXT_ERR_READ = -2, /* a read failed (errno in err) */
    TEXT_ERR_NUL = -3,  /* a NUL byte in line lineno */
    TEXT_ERR_NOMEM = -4 /* out of memory */
};

#define TEXT_CHUNK 65536 /* bytes per fread */
#define TEXT_STDIO "-"   /* the path that names the standard input or output */

static inline int text_is_stdio(const char *path) {
    return !strcmp(path, TEXT_STDIO);
}

typedef struct text_reader {
    FILE *f;
    char *line;   /* the current line, NUL-terminated, without its '\n' */
    size_t len;   /* its length */
    size_t cap;   /* bytes allocated for it */
    long lineno;  /* number of the current line (from 1); after TEXT_ERR_NUL/READ the failing one */
    int newline;  /* the current line ended with '\n' (0 only for the last line of a file) */
    int err;      /* errno of a failed open or read */
    int borrowed; /* f is stdin ("-"): not closed */
    char *chunk;  /* read buffer, TEXT_CHUNK bytes, chunk[pos..end) not yet consumed */
    size_t pos, end;
} text_reader;

static inline int text_is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Opens path ("-": the standard input) for reading: 0, or TEXT_ERR_OPEN (r->err says why; a
 * directory is EISDIR) or TEXT_ERR_NOMEM. After 0, call text_close once done. */
static inline int text_open(text_reader *r, const char *path) {
    memset(r, 0, sizeof *r);
    struct stat st;
    if (text_is_stdio(path)) {
        r->f = stdin;
        r->borrowed = 1;
    } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        r->err = EISDIR;
        return TEXT_ERR_OPEN;
    } else if (!(r->f = fopen(path, "rb"))) {
        r->err = errno;
        return TEXT_ERR_OPEN;
    }
    r->chunk = (char *)malloc(TEXT_CHUNK);
    if (!r->chunk) {
        if (!r->borrowed) fclose(r->f);
        r->f = NULL;
        return TEXT_ERR_NOMEM;
    }
    return 0;
}

static inline void text_close(text_reader *r) {
    if (r->f && !r->borrowed) fclose(r->f);
    free(r->line);
    free(r->chunk);
    memset(r, 0, sizeof *r);
}

/* Room for len + need + 1 bytes in r->line. */
static inline int text_reserve(text_reader *r, size_t need) {
    if (r->cap - r->len > need) return 0;
    size_t c = r->cap ? r->cap : 256;
    while (c - r->len <= need) {
        if (c > SIZE_MAX / 2) return TEXT_ERR_NOMEM;
        c *= 2;
    }
    char *b = (char *)realloc(r->line, c);
    if (!b) return TEXT_ERR_NOMEM;
    r->line = b, r->cap = c;
    return 0;
}

/* The next line into r->line (r->lineno counts it): TEXT_LINE, TEXT_EOF or an error. A last
 * line without '\n' is a line (r->newline = 0); a NUL byte anywhere in a line is
 * TEXT_ERR_NUL. */
static inline int text_next(text_reader *r) {
    r->len = 0;
    if (text_reserve(r, 0)) return TEXT_ERR_NOMEM;
    r->line[0] = '\0';
    for (;;) {
        if (r->pos == r->end) {
            r->pos = r->end = 0;
            size_t got = fread(r->chunk, 1, TEXT_CHUNK, r->f);
            if (got == 0) {
                if (ferror(r->f)) {
                    r->err = errno;
                    ++r->lineno;
                    return TEXT_ERR_READ;
                }
                if (r->len == 0) return TEXT_EOF;
                ++r->lineno;
                r->newline = 0;
                return TEXT_LINE;
            }
            r->end = got;
        }
        const char *s = r->chunk + r->pos;
        const size_t avail = r->end - r->pos;
        const char *nl = (const char *)memchr(s, '\n', avail);
        const size_t take = nl ? (size_t)(nl - s) : avail;
        if (memchr(s, '\0', take)) {
            ++r->lineno;
            return TEXT_ERR_NUL;
        }
        if (text_reserve(r, take)) return TEXT_ERR_NOMEM;
        memcpy(r->line + r->len, s, take);
        r->len += take;
        r->line[r->len] = '\0';
        r->pos += take + (nl != NULL);
        if (nl) {
            ++r->lineno;
            r->newline = 1;
            return TEXT_LINE;
        }
    }
}

/* "PATH: cannot open: REASON", "PATH:LINE: NUL byte ..." and so on, for a status of
 * text_open or text_next, into msg (len bytes; nothing when msg is NULL or len is 0). */
static inline void text_describe(const text_reader *r, int status, const char *path, char *msg,
                                 size_t len) {
    if (!msg || !len) return;
    switch (status) {
    case TEXT_ERR_OPEN:
        snprintf(msg, len, "%s: cannot open: %s", path, strerror(r->err));
        break;
    case TEXT_ERR_READ:
        snprintf(msg, len, "%s:%ld: read error: %s", path, r->lineno, strerror(r->err));
        break;
    case TEXT_ERR_NUL:
        snprintf(msg, len, "%s:%ld: NUL byte (binary data, not a text file)", path, r->lineno);
        break;
    case TEXT_ERR_NOMEM:
        snprintf(msg, len, "%s:%ld: out of memory", path, r->lineno);
        break;
    default:
        snprintf(msg, len, "%s:%ld: cannot read", path, r->lineno);
        break;
    }
}

/* ---- numbers ------------------------------------------------------------------------ */

enum text_num {
    TEXT_NUM_OK = 0,
    TEXT_NUM_SYNTAX,    /* not a number, or one followed by other text */
    TEXT_NUM_NONFINITE, /* nan or inf */
    TEXT_NUM_OVERFLOW,  /* beyond the range of the type */
    TEXT_NUM_UNDERFLOW  /* a nonzero number that would become 0 */
};

/* What a text_num error means, for messages: "... 'TOKEN' is not a number" and so on. */
static inline const char *text_num_what(int rc) {
    switch (rc) {
    case TEXT_NUM_SYNTAX:
        return "is not a number";
    case TEXT_NUM_NONFINITE:
        return "is not finite (NaN or Inf)";
    case TEXT_NUM_OVERFLOW:
        return "is out of range (too large)";
    case TEXT_NUM_UNDERFLOW:
        return "is out of range (nonzero, but below the smallest double)";
    default:
        return "is a number";
    }
}

/* Length of the token at s (up to white space, the end or '#'), for messages. */
static inline int text_token_len(const char *s) {
    int n = 0;
    while (s[n] && s[n] != '#' && !text_is_space(s[n]) && n < 40) ++n;
    return n;
}

static inline int text_number_ends(const char *e) {
    return !*e || *e == '#' || text_is_space(*e);
}

/* The number at s (white space before it is skipped): TEXT_NUM_OK with *v, and *end (may be
 * NULL) just past it, or an enum text_num error. strtod's syntax in the C locale. */
static inline int text_parse_double(const char *s, const char **end, double *v) {
    while (text_is_space(*s)) ++s;
    char *e;
    errno = 0;
    const double x = strtod(s, &e);
    const int range = errno == ERANGE;
    if (e == s || !text_number_ends(e)) return TEXT_NUM_SYNTAX;
    if (isnan(x) || (isinf(x) && !range)) return TEXT_NUM_NONFINITE;
    if (isinf(x)) return TEXT_NUM_OVERFLOW;
    if (range && x == 0) return TEXT_NUM_UNDERFLOW; /* strtod reports a nonzero input so */
    if (end) *end = e;
    *v = x;
    return TEXT_NUM_OK;
}

/* The decimal integer at s, as text_parse_double (TEXT_NUM_OVERFLOW beyond a long). */
static inline int text_parse_long(const char *s, const char **end, long *v) {
    while (text_is_space(*s)) ++s;
    char *e;
    errno = 0;
    const long x = strtol(s, &e, 10);
    if (e == s || !text_number_ends(e)) return TEXT_NUM_SYNTAX;
    if (errno == ERANGE) return TEXT_NUM_OVERFLOW;
    if (end) *end = e;
    *v = x;
    return TEXT_NUM_OK;
}

/* ---- writing files ------------------------------------------------------------------ */

typedef struct text_out {
    FILE *f;
    const char *path; /* the target */
    char *tmp;        /* the temporary file beside it; NULL when writing the target directly */
    int err;          /* errno of the first failed write, 0 if none */
    int borrowed;     /* f is stdout ("-"): flushed, not closed */
} text_out;

/* Opens path for writing: a new temporary file in path's directory (with the permissions of an
 * existing regular file at path), or path itself when it is a symbolic link, a device (such as
 * /dev/stdout or /dev/null) or a pipe: those are written directly, neither replaced nor made
 * atomic; "-" is the standard output. 0, or -1 with errno (EISDIR for a directory). */
static inline int text_out_open(text_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->path = path;
    if (text_is_stdio(path)) {
        o->f = stdout;
        o->borrowed = 1;
        return 0;
    }
    struct stat st;
    const int exists = lstat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        o->f = fopen(path, "w");
        return o->f ? 0 : -1;
    }
    const char *slash = strrchr(path, '/');
    const size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    o->tmp = (char *)malloc(dir + 40);
    if (!o->tmp) {
        errno = ENOMEM;
        return -1;
    }
    /* a name of our own: "wx" fails if it exists, then the next candidate is tried */
    unsigned long k =
        (unsigned long)time(NULL) ^ (unsigned long)getpid() << 16 ^ (unsigned long)(uintptr_t)o;
    for (int attempt = 0; attempt < 100 && !o->f; ++attempt, k = k * 6364136223846793005UL + 1) {
        memcpy(o->tmp, path, dir);
        snprintf(o->tmp + dir, 40, ".fmm-%08lx.tmp", k & 0xffffffffUL);
        o->f = fopen(o->tmp, "wx");
        if (!o->f && errno != EEXIST) break;
    }
    if (!o->f) {
        const int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        errno = e;
        return -1;
    }
    if (exists) fchmod(fileno(o->f), st.st_mode & 07777); /* best effort: the old file's mode */
    return 0;
}

/* fprintf to the file; the first failure is kept for text_out_commit. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void
text_out_printf(text_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int w = vfprintf(o->f, fmt, ap);
    va_end(ap);
    if (w < 0 && !o->err) o->err = errno ? errno : EIO;
}

/* n lines "x y z q" (%.17g, which reads back as the same doubles): the particle file of
 * 'fmm coulomb' and 'fmm generate' from interleaved xyz (3n) and q (n). */
static inline void text_out_xyzq(text_out *o, long n, const double *xyz, const double *q) {
    for (long i = 0; i < n; i++)
        text_out_printf(o, "%.17g %.17g %.17g %.17g\n", xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2],
                        q[i]);
}

/* Completes the file: flushes and closes it (the standard output: flushes it; every failure
 * checked) and renames the temporary file over the target. 0, or -1 with errno saying why; then
 * the temporary file is removed and the target is as it was before text_out_open (unless it is
 * written directly). */
static inline int text_out_commit(text_out *o) {
    int err = o->err;
    if (fflush(o->f) && !err) err = errno ? errno : EIO;
    if (ferror(o->f) && !err) err = EIO;
    /* on the disk before it replaces the old file (and a delayed write error shows here) */
    if (o->tmp && !err && fsync(fileno(o->f))) err = errno;
    if (!o->borrowed && fclose(o->f) && !err) err = errno ? errno : EIO;
    o->f = NULL;
    if (o->tmp) {
        if (!err && rename(o->tmp, o->path)) err = errno;
        if (err) remove(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    errno = err;
    return err ? -1 : 0;
}

/* Gives up a file opened by text_out_open: the temporary file is removed, the target kept. */
static inline void text_out_abandon(text_out *o) {
    const int e = errno;
    if (o->f && !o->borrowed) fclose(o->f);
    if (o->tmp) remove(o->tmp);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    errno = e;
}

#endif /* FMM_CORE_TEXTIO_H */
