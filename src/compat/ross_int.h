/* ross_int.h - what the ROSS layer's files share (ross.c, ross_opts.c, ross_mpi.c,
 * clcg4.c). */
#ifndef KR_COMPAT_ROSS_INT_H
#define KR_COMPAT_ROSS_INT_H

#include <stdint.h>
#include "ross.h"

/* The generator's constants, once before any stream is seeded. */
void ross_rand_setup(void);
/* Stream g at the start of generator `generator` from the four-part seed. */
void ross_rand_seed(tw_rng_stream *g, const uint32_t seed[4], uint64_t generator);

/* tw_init's reading of the command line: ROSS's --name=value options (the kernel's and the
 * model's tables) are taken out of argv; what is left is Kairos's. */
void ross_opts_parse(int *argc, char ***argv);
/* The four-part seeds of the LPs' streams and of the core streams (--rng-seed1..4,
 * --core-rng-seed1..4, or ROSS's defaults). */
void ross_opts_seeds(uint32_t lp_seed[4], uint32_t core_seed[4]);
/* The command's arguments after ROSS's options were taken out (argv[0] first). */
int ross_opts_rest(char ***argv);

/* A failure outside any LP (main's calls): "kairos: error: ..." and exit 2 (a usage
 * error: the program's set-up). */
void ross_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
