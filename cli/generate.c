/* fmm generate: write a test point set in the 'x y z q' format that 'fmm coulomb' reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "pointsets.h"

static const char *help =
    "usage: fmm generate uniform|plummer|sphere|water --n N [--seed S] --out FILE\n"
    "  uniform  uniform in the unit cube        plummer  Plummer sphere (scale radius 1)\n"
    "  sphere   uniform on the unit sphere      water    SPC/E-like water, N molecules (3N atoms, nm)\n"
    "Charges are neutral: uniform in [-1,1] shifted to sum 0, or SPC/E charges for water.\n";

int cli_generate(int argc, char **argv) {
    const char *kind = NULL, *out = NULL;
    long n = -1, seed = 1;
    const cli_option opts[] = {
        {"KIND", CLI_ARG, .s = &kind},
        {"--n", CLI_LONG, .l = &n},
        {"--seed", CLI_LONG, .l = &seed},
        {"--out", CLI_STRING, .s = &out},
        {0}};
    int r = cli_parse_options("generate", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    if (!kind || !out || n < 1) {
        fprintf(stderr, "fmm generate: need a kind, --n N >= 1 and --out FILE (try --help)\n");
        return 2;
    }
    long np = !strcmp(kind, "water") ? 3 * n : n;
    double *xyz = malloc(sizeof(double) * 3 * np), *q = malloc(sizeof(double) * np), edge = 0;
    if (!xyz || !q) {
        free(xyz), free(q);
        fprintf(stderr, "fmm generate: out of memory\n");
        return 1;
    }
    int rc;
    uint64_t s = (uint64_t)seed;
    if (!strcmp(kind, "uniform")) rc = pts_uniform(n, s, xyz, q);
    else if (!strcmp(kind, "plummer")) rc = pts_plummer(n, s, xyz, q);
    else if (!strcmp(kind, "sphere")) rc = pts_sphere_surface(n, s, xyz, q);
    else if (!strcmp(kind, "water")) rc = pts_water(n, s, xyz, q, &edge);
    else {
        fprintf(stderr, "fmm generate: unknown kind '%s' (uniform, plummer, sphere, water)\n", kind);
        free(xyz), free(q);
        return 2;
    }
    if (!rc) rc = pts_write_xyzq(out, np, xyz, q);
    free(xyz), free(q);
    if (rc) {
        fprintf(stderr, "fmm generate: could not generate or write '%s'\n", out);
        return 1;
    }
    if (edge > 0) printf("box %.17g\n", edge);
    return 0;
}
