#ifndef FMM_CLI_COMMANDS_H
#define FMM_CLI_COMMANDS_H

/* Each takes argv[0] = the command name and returns the process exit status. */
int cli_coulomb(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_fgt(int argc, char **argv);
int cli_rbf(int argc, char **argv);
int cli_bldtt(int argc, char **argv);

/* option-value parsing shared by the commands; print one line to stderr on failure */
int cli_parse_double(const char *opt, const char *s, double *v);
int cli_parse_long(const char *opt, const char *s, long *v);
int cli_parse_int(const char *opt, const char *s, int *v);

#endif
