/* fmm generate: write a test point set in the 'x y z q' format that 'fmm coulomb' reads. */
#define _POSIX_C_SOURCE 200809L /* the POSIX calls of core/textio.h */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/textio.h"
#include "pointsets.h"

static const char *help =
    "usage: fmm generate uniform|plummer|sphere --n N [--seed S] --out FILE\n"
    "       fmm generate water --molecules M [--seed S] --out FILE\n"
    "  uniform  N points uniform in the unit cube\n"
    "  plummer  N points of a Plummer sphere (scale radius 1)\n"
    "  sphere   N points uniform on the unit sphere\n"
    "  water    M SPC/E-like water molecules: 3M atoms (O H H) in a periodic cubic box at the\n"
    "           density of liquid water; nm and e\n"
    "  --n N          number of points (lines of the file); uniform, plummer, sphere\n"
    "  --molecules M  number of water molecules (the file has 3M atom lines); water\n"
    "  --seed S       random seed (default 1)\n"
    "  --out FILE     the file to write ('-': standard output): one 'x y z q' line per point;\n"
    "                 water's file begins with '# box L L L', its periodic box (nm), which\n"
    "                 'fmm coulomb --periodic' reads\n"
    "Charges are neutral: uniform in [-1,1] shifted to sum 0, or SPC/E charges for water.\n";

int cli_generate(int argc, char **argv) {
    const char *kind = NULL, *out = NULL;
    long n = -1, nmol = -1, seed = 1;
    const cli_option opts[] = {{"KIND", CLI_ARG, .s = &kind},
                               {"--n", CLI_LONG, .l = &n, .min = 1, .max = INFINITY},
                               {"--molecules", CLI_LONG, .l = &nmol, .min = 1, .max = INFINITY},
                               {"--seed", CLI_LONG, .l = &seed},
                               {"--out", CLI_STRING, .s = &out},
                               {0}};
    int r = cli_parse_options("generate", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    if (!kind || !out) {
        fprintf(stderr, "fmm generate: need a kind and --out FILE (try --help)\n");
        return 2;
    }
    if (strcmp(kind, "uniform") && strcmp(kind, "plummer") && strcmp(kind, "sphere") &&
        strcmp(kind, "water")) {
        fprintf(stderr, "fmm generate: unknown kind '%s' (uniform, plummer, sphere, water)\n",
                kind);
        return 2;
    }
    const int water = !strcmp(kind, "water");
    if (water && (n > 0 || nmol < 1)) {
        fprintf(stderr, "fmm generate: water counts molecules: give --molecules M (3M atoms)%s\n",
                n > 0 ? ", not --n" : "");
        return 2;
    }
    if (!water && (nmol > 0 || n < 1)) {
        fprintf(stderr, "fmm generate: %s needs --n N (points)%s\n", kind,
                nmol > 0 ? "; --molecules is for water" : "");
        return 2;
    }
    const long items = water ? nmol : n, per = water ? 3 : 1; /* atoms per item */
    if ((unsigned long)items > SIZE_MAX / (sizeof(double) * 3 * per) || items > LONG_MAX / 3) {
        fprintf(stderr, "fmm generate: %s %ld is too large for memory\n",
                water ? "--molecules" : "--n", items);
        return 2;
    }
    long np = per * items;
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
    else
        rc = pts_water(nmol, s, xyz, q, &edge);
    if (rc) {
        fprintf(stderr, "fmm generate: cannot generate %s: %s\n", kind, pts_strerror(rc));
        free(xyz), free(q);
        return 1;
    }
    text_out o;
    if (text_out_open(&o, out)) {
        free(xyz), free(q);
        return cli_write_failed("generate", out);
    }
    if (edge > 0) text_out_printf(&o, "# box %.17g %.17g %.17g\n", edge, edge, edge);
    text_out_xyzq(&o, np, xyz, q);
    free(xyz), free(q);
    return text_out_commit(&o) ? cli_write_failed("generate", out) : 0;
}
