/* random.h - the calling LP's stream of pseudo-random numbers (api.c), which every
 * distribution of the model API draws from (random.c). */
#ifndef KR_RUN_RANDOM_H
#define KR_RUN_RANDOM_H

#include <stdint.h>

/* The LP's next 64 random bits (SplitMix64 on its state, rolled back with it); fn names
 * the model call for the error when there is no LP. */
uint64_t kr__random_u64(const char *fn);

#endif
