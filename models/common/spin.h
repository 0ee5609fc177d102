/* spin.h - busy arithmetic standing in for a model's CPU work (built-in models). */
#ifndef KR_MODELS_SPIN_H
#define KR_MODELS_SPIN_H

/* Busy arithmetic for about `us` microseconds of this machine's time. Unlike a clock loop it
 * makes no system call: all of it is model code, preemptible by extra ticks, and the same
 * work (not the same time) whatever else the machine is doing. */
void models_spin_us(double us);

#endif
