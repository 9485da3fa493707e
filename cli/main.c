/* fmm: command-line front end; each subcommand lives in cli/<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "fmm_version.h"

static void usage(FILE *f) {
    fprintf(f, "usage: fmm <command> [options]\n"
               "commands:\n"
               "  coulomb    Coulomb potentials and fields of point charges (FMM)\n"
               "  bldtt      kernel-independent fast sums (Coulomb, Yukawa, ...; BLDTT, CPU/CUDA)\n"
               "  rbf        multiquadric RBF interpolation (FGP) and VTK mesh deformation\n"
               "  fgt        fast Gauss transform sum_i q_i exp(-|y-x_i|^2/h^2), 1-3 D (CPU/CUDA)\n"
               "  generate   write a test point set (uniform, plummer, sphere, water)\n"
               "Run 'fmm <command> --help' for the options of a command, 'fmm --version' for the\n"
               "version and the build (CUDA, -march=native, OpenMP).\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("fmm %s (%s)\n", fmm_version(), fmm_build_info());
        return 0;
    }
    if (!strcmp(argv[1], "coulomb")) return cli_coulomb(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bldtt")) return cli_bldtt(argc - 1, argv + 1);
    if (!strcmp(argv[1], "rbf")) return cli_rbf(argc - 1, argv + 1);
    if (!strcmp(argv[1], "fgt")) return cli_fgt(argc - 1, argv + 1);
    if (!strcmp(argv[1], "generate")) return cli_generate(argc - 1, argv + 1);
    fprintf(stderr, "fmm: unknown command '%s' (try 'fmm --help')\n", argv[1]);
    return 2;
}
