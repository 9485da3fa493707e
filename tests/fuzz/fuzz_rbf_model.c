/* Fuzz target: the RBF model reader cli_rbf_model_read (cli/rbf_model.c). The input is the
 * file. Checks: a failure leaves the model empty and says in one line which file is wrong; a
 * success gives what cli/rbf_model.h describes (shape > 0, at least one centre, finite numbers)
 * from a file without NUL bytes that ends with a newline; cli_rbf_model_write writes it and it
 * reads back bit for bit. */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "cli/rbf_model.h"

static int same_model(const cli_rbf_model *a, const cli_rbf_model *b) {
    return !memcmp(&a->shape, &b->shape, sizeof a->shape) &&
           !memcmp(&a->alpha, &b->alpha, sizeof a->alpha) && a->n == b->n &&
           !memcmp(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->n) &&
           !memcmp(a->lambda, b->lambda, sizeof(double) * (size_t)a->n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[32], err[256];
    int fd = fuzz_file(data, size, path);
    if (fd < 0) return 0;
    cli_rbf_model m;
    int rc = cli_rbf_model_read(path, &m, err, sizeof err);
    close(fd);
    if (rc) {
        FUZZ_CHECK(rc == 1, "status %d", rc);
        FUZZ_CHECK(!m.n && !m.xyz && !m.lambda && !m.shape && !m.alpha,
                   "a failed read left a model");
        FUZZ_CHECK(!strncmp(err, path, strlen(path)) && !strchr(err, '\n'),
                   "message '%s' does not start with the path or is not one line", err);
        return 0;
    }
    FUZZ_CHECK(!memchr(data, 0, size), "a file with a NUL byte was read");
    FUZZ_CHECK(size > 0 && data[size - 1] == '\n', "a file that ends inside a line was read");
    FUZZ_CHECK(m.shape > 0 && isfinite(m.shape) && isfinite(m.alpha), "shape %g alpha %g", m.shape,
               m.alpha);
    FUZZ_CHECK(m.n >= 1 && m.xyz && m.lambda, "%ld centres", m.n);
    for (long i = 0; i < m.n; ++i)
        FUZZ_CHECK(isfinite(m.xyz[3 * i]) && isfinite(m.xyz[3 * i + 1]) &&
                       isfinite(m.xyz[3 * i + 2]) && isfinite(m.lambda[i]),
                   "centre %ld", i);
    const char *out = fuzz_out_path();
    if (out) {
        FUZZ_CHECK(cli_rbf_model_write(out, &m) == 0, "cannot write %s", out);
        cli_rbf_model r;
        int rc2 = cli_rbf_model_read(out, &r, err, sizeof err);
        FUZZ_CHECK(rc2 == 0, "read back: %s", err);
        FUZZ_CHECK(same_model(&m, &r), "read back differs");
        cli_rbf_model_free(&r);
    }
    cli_rbf_model_free(&m);
    return 0;
}
