/* fmm generate: write a test point set in the 'x y z q' format that 'fmm coulomb' reads. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "pointsets.h"

static const char *help =
    "usage: fmm generate uniform|plummer|sphere|water --n N [--seed S] --out FILE\n"
    "  uniform  uniform in the unit cube        plummer  Plummer sphere (scale radius 1)\n"
    "  sphere   uniform on the unit sphere      water    SPC/E-like water, N molecules (3N atoms, "
    "nm)\n"
    "Charges are neutral: uniform in [-1,1] shifted to sum 0, or SPC/E charges for water.\n";

int cli_generate(int argc, char **argv) {
    const char *kind = NULL, *out = NULL;
    long n = -1, seed = 1;
    const cli_option opts[] = {{"KIND", CLI_ARG, .s = &kind},
                               {"--n", CLI_LONG, .l = &n, .min = 1, .max = INFINITY},
                               {"--seed", CLI_LONG, .l = &seed},
                               {"--out", CLI_STRING, .s = &out},
                               {0}};
    int r = cli_parse_options("generate", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    if (!kind || !out || n < 1) {
        fprintf(stderr, "fmm generate: need a kind, --n N and --out FILE (try --help)\n");
        return 2;
    }
    const long per = !strcmp(kind, "water") ? 3 : 1; /* atoms per item */
    if ((unsigned long)n > SIZE_MAX / (sizeof(double) * 3 * per) || n > LONG_MAX / 3) {
        fprintf(stderr, "fmm generate: --n %ld is too large for memory\n", n);
        return 2;
    }
    long np = per * n;
    double *xyz = malloc(sizeof(double) * 3 * np), *q = malloc(sizeof(double) * np), edge = 0;
    if (!xyz || !q) {
        free(xyz), free(q);
        fprintf(stderr, "fmm generate: out of memory\n");
        return 1;
    }
    int rc;
    uint64_t s = (uint64_t)seed;
    if (!strcmp(kind, "uniform"))
        rc = pts_uniform(n, s, xyz, q);
    else if (!strcmp(kind, "plummer"))
        rc = pts_plummer(n, s, xyz, q);
    else if (!strcmp(kind, "sphere"))
        rc = pts_sphere_surface(n, s, xyz, q);
    else if (!strcmp(kind, "water"))
        rc = pts_water(n, s, xyz, q, &edge);
    else {
        fprintf(stderr, "fmm generate: unknown kind '%s' (uniform, plummer, sphere, water)\n",
                kind);
        free(xyz), free(q);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "fmm generate: cannot generate %s: %s\n", kind, pts_strerror(rc));
        free(xyz), free(q);
        return 1;
    }
    rc = pts_write_xyzq(out, np, xyz, q);
    free(xyz), free(q);
    if (rc == PTS_ERR_IO) return cli_write_failed("generate", out);
    if (rc) {
        fprintf(stderr, "fmm generate: cannot write '%s': %s\n", out, pts_strerror(rc));
        return 1;
    }
    if (edge > 0) printf("box %.17g\n", edge);
    return 0;
}
