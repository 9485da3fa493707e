/* Fuzz target: the CLI's option parser cli_parse_options (cli/args.c), against a table with
 * every kind of option. The input is the argument list, arguments separated by NUL bytes.
 * Checks: the parser returns -1 (help), 0 or 2; after 0 every value lies in its declared range
 * (integers, finite doubles, a valid choice index). */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "cli/commands.h"

enum { MAX_ARGS = 64 };

static const char *const colours[] = {"red", "green", "blue", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* argv[0] is the command name; the arguments are copies of the NUL-separated pieces */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 1] = {"fuzz"};
    int argc = 1;
    for (char *p = buf; argc < MAX_ARGS && p <= buf + size; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;

    int flag = 0, i_small = 3, i_any = 0, choice = 0, given = 0;
    long l = 0;
    double d = 0.5, d_pos = 1, d3[3] = {1, 1, 1};
    const char *s = NULL, *pos1 = NULL, *pos2 = NULL;
    const cli_option opts[] = {
        {"--flag", CLI_FLAG, .i = &flag},
        {"--string", CLI_STRING, .s = &s, .given = &given},
        {"--small", CLI_INT, .i = &i_small, .min = 1, .max = 20},
        {"--int", CLI_INT, .i = &i_any},
        {"--long", CLI_LONG, .l = &l, .min = 0, .max = 1e12},
        {"--double", CLI_DOUBLE, .d = &d, .min = 0, .max = 1},
        {"--positive", CLI_DOUBLE, .d = &d_pos, .min = 1e-300, .max = INFINITY},
        {"--box", CLI_DOUBLE3, .d = d3},
        {"--colour", CLI_CHOICE, .i = &choice, .choices = colours},
        {"FIRST", CLI_ARG, .s = &pos1},
        {"SECOND", CLI_ARG, .s = &pos2},
        {0},
    };
    int rc = cli_parse_options("fuzz", "usage: fuzz [options]\n", opts, argc, argv);
    FUZZ_CHECK(rc == -1 || rc == 0 || rc == 2, "returned %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(flag == 0 || flag == 1, "--flag %d", flag);
        FUZZ_CHECK(i_small >= 1 && i_small <= 20, "--small %d", i_small);
        FUZZ_CHECK(l >= 0 && l <= 1000000000000L, "--long %ld", l);
        FUZZ_CHECK(d >= 0 && d <= 1, "--double %g", d);
        FUZZ_CHECK(d_pos >= 1e-300 && isfinite(d_pos), "--positive %g", d_pos);
        FUZZ_CHECK(isfinite(d3[0]) && isfinite(d3[1]) && isfinite(d3[2]), "--box");
        FUZZ_CHECK(choice >= 0 && choice < 3, "--colour %d", choice);
        FUZZ_CHECK(!given == !s, "--string given %d", given);
        FUZZ_CHECK(!pos2 || pos1, "second positional argument without a first");
    }
    free(buf);
    return 0;
}
