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
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 0;
        }
        if (a[0] != '-') {
            if (kind) {
                fprintf(stderr, "fmm generate: unexpected argument '%s'\n", a);
                return 2;
            }
            kind = a;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fmm generate: %s needs a value (or unknown option)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--n")) {
            if (cli_parse_long(a, v, &n)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_long(a, v, &seed)) return 2;
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else {
            fprintf(stderr, "fmm generate: unknown option '%s' (try --help)\n", a);
            return 2;
        }
    }
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
