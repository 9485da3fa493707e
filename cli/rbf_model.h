/* The model file of `fmm rbf fit` (written) and `fmm rbf eval` (read): text with '#' comment
 * lines and blank lines allowed anywhere, the lines "shape C" (C > 0) and "alpha A" in either
 * order, then "centers N" (N >= 1), then N rows "x y z lambda" (%.17g when written). A complete
 * file ends with a newline. */
#ifndef FMM_CLI_RBF_MODEL_H
#define FMM_CLI_RBF_MODEL_H

#include <stddef.h>

typedef struct cli_rbf_model {
    double shape, alpha;
    long n;         /* centres */
    double *xyz;    /* 3n, interleaved */
    double *lambda; /* n */
} cli_rbf_model;

/* Reads the model at path into *m: 0, or 1 with *m empty (all zero) and, if err != NULL and
 * errlen > 0, one line in err naming the file and the line and what is wrong ("model.txt:5:
 * 3 numbers, expected 4 (x y z lambda)"). Numbers as text_parse_double (core/textio.h); a
 * file that ends inside a line (no final newline: cut short), a NUL byte, a second "shape",
 * more or fewer rows than "centers N" are errors. Prints nothing and keeps no state between
 * calls. Free the model with cli_rbf_model_free. */
int cli_rbf_model_read(const char *path, cli_rbf_model *m, char *err, size_t errlen);

void cli_rbf_model_free(cli_rbf_model *m);

/* Writes m to path through a temporary file renamed over it when complete (core/textio.h):
 * 0, or -1 with errno saying why (an existing file at path is then unchanged). */
int cli_rbf_model_write(const char *path, const cli_rbf_model *m);

#endif
