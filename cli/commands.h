#ifndef FMM_CLI_COMMANDS_H
#define FMM_CLI_COMMANDS_H

/* Each takes argv[0] = the command name and returns the process exit status. */
int cli_coulomb(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_fgt(int argc, char **argv);
int cli_rbf(int argc, char **argv);
int cli_bldtt(int argc, char **argv);

enum cli_kind {
    CLI_FLAG,    /* no value; *i = 1 */
    CLI_STRING,  /* *s = the value */
    CLI_INT,     /* *i, an integer that fits an int */
    CLI_LONG,    /* *l */
    CLI_DOUBLE,  /* *d, finite */
    CLI_DOUBLE3, /* d[0..2]: three numbers, or one that stands for all three (taken as three
                    when the two arguments after the first do not start with '-') */
    CLI_BOX,     /* d[0..8]: 1, 3 or 9 numbers (a cube's edge; three edges; the rows a, b, c of a
                    cell), each argument after the first taken while it is a number (negative
                    ones too); the count goes to *given */
    CLI_CHOICE,  /* *i = the index of the value in choices */
    CLI_ARG      /* a positional argument (one not starting with '-'), *s; name only labels it */
};

/* One entry of a command's option table; the table ends with {0}. The destination is a typed
 * pointer so that the compiler checks it against the variable: write {"--in", CLI_STRING,
 * .s = &in}. Destinations keep their value when the option is not given. */
typedef struct {
    const char *name; /* "--in" */
    enum cli_kind kind;
    union {
        int *i;
        long *l;
        double *d;
        const char **s;
    };
    double min, max; /* INT, LONG, DOUBLE, DOUBLE3 (each number): allowed range, checked when
                        min < max (max INFINITY: no upper bound); messages name the option and
                        the range */
    int open;        /* CLI_OPEN_MIN, CLI_OPEN_MAX: that bound is excluded (DOUBLE, DOUBLE3) */
    const char *const *choices; /* CHOICE: the names, NULL-terminated */
    int *given;                 /* optional: set to 1 when the option is given */
} cli_option;

enum { CLI_OPEN_MIN = 1, CLI_OPEN_MAX = 2 };

/* choices of --device, in the order of enum fmm_device */
extern const char *const cli_devices[];

/* Parses argv[1..argc-1] ("fmm CMD ..." has argv[0] = CMD) against opts. --help or -h prints
 * help to stdout and returns -1 (exit status 0); an unknown option, a missing or malformed
 * value or a value out of range prints one line "fmm CMD: ..." to stderr and returns 2;
 * otherwise returns 0. */
int cli_parse_options(const char *cmd, const char *help, const cli_option *opts, int argc,
                      char **argv);

/* Reads a text file of rows of numbers with pts_read_rows (systems/pointsets.h, which gives the
 * format: '#' comments, blank lines skipped, NaN, Inf, out-of-range numbers and NUL bytes are
 * errors). Every row holds the same count c of numbers, min_cols <= c <= max_cols (max_cols 0:
 * no upper limit); *cols (may be NULL) receives c. *rows receives n rows of c numbers, or with
 * last != NULL n rows of c - 1 numbers and *last the n values of the last column. layout names
 * the columns in messages ("x y z q"). Returns 0, or prints one line "fmm CMD: ..." to stderr
 * (file, line, what is wrong) and returns 1. No other side effect. */
int cli_read_rows(const char *cmd, const char *path, const char *layout, int min_cols, int max_cols,
                  int *cols, long *n, double **rows, double **last);
/* The same, and *lines (malloc'ed) the line number of each row; box and nbox (may be NULL) the
 * numbers of the first '# box' comment line, as pts_read_rows gives them. */
int cli_read_rows_lines(const char *cmd, const char *path, const char *layout, int min_cols,
                        int max_cols, int *cols, long *n, double **rows, double **last,
                        long **lines, double *box, int *nbox);

/* Prints "fmm CMD: OPTION must be RANGE, got 'S'" (S NULL: x with %g) and returns 1 when x is
 * outside o's range; else returns 0. */
int cli_out_of_range(const char *cmd, const cli_option *o, double x, const char *s);

/* Writes n lines "a[i]" or, with v != NULL, "a[i] v[3i] v[3i+1] v[3i+2]" (%.17g) to path
 * through a temporary file renamed over it when complete (core/textio.h): a failure leaves an
 * existing file at path as it was. 0, or prints "fmm CMD: cannot write 'PATH': REASON" and
 * returns 1. */
int cli_write_values(const char *cmd, const char *path, long n, const double *a, const double *v);
/* Relative L2 error of m values of `dim` numbers each against a reference: val[dim * idx[k] + d]
 * (idx NULL: k) against ref[dim * k + d], i.e. |val - ref| / |ref| (the absolute |val - ref| where
 * ref is all zero). Both are divided by their largest magnitude first, so that no square
 * overflows or underflows at any scale of the inputs. */
double cli_rel_l2_error(long m, int dim, const long *idx, const double *val, const double *ref);

/* Prints "fmm CMD: cannot write 'PATH': " and strerror(errno); returns 1. */
int cli_write_failed(const char *cmd, const char *path);

/* After FMM_ERR_COINCIDENT: finds two of the n points xyz (3 per point; period > 0: compared
 * after wrapping into [0, period)) at the same position and prints "fmm CMD: PATH:A and PATH:B:
 * two WHAT at the same position (x y z)", with A and B from lines (the line of each point).
 * Returns 1, or 0 (nothing printed) when there is no such pair or no memory. */
int cli_report_coincident(const char *cmd, const char *path, const char *what, long n,
                          const double *xyz, const long *lines, double period);

#endif
