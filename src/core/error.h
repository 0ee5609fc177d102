/* error.h - how Kairos reports bad input and model misuse: one clear message saying what
 * was wrong, where (model, LP, virtual time, event type) and what to do, then a non-zero
 * exit. Usage errors exit 2, model and run-time errors exit 1. */
#ifndef KR_CORE_ERROR_H
#define KR_CORE_ERROR_H

#include <stddef.h>

#define KR_EXIT_MODEL 1
#define KR_EXIT_USAGE 2

_Noreturn void kr__fatal_oom(const char *what, size_t bytes);
_Noreturn void kr__usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A misuse by model code: the message gets the current LP context prefixed. In a speculative
 * event the engine defers it (reported only if that event commits); otherwise it is fatal. */
void kr__model_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An engine invariant does not hold: a Kairos bug, never the model's fault. Exit 3. */
_Noreturn void kr__internal_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define KR_EXIT_INTERNAL 3

/* An event on the committed path that does not return (--event-timeout; %g: seconds). */
#define KR_TIMEOUT_FMT "the event has run for more than %g s (--event-timeout) without " \
    "returning: an endless loop? If it is only slow, raise --event-timeout (0: no limit)"

/* Write out buffered committed output; if it cannot be written (full disk, closed stdout),
 * exit 1 with a message saying the output is incomplete. */
void kr__stdout_flush(void);

/* Print an already formatted model error and exit 1, after the committed output (the
 * engine's salvage hook, then stdout's buffer). A second thread that dies meanwhile waits
 * for the first to exit; if printing the output hangs, the message is written and the
 * process exits after a few seconds all the same. */
_Noreturn void kr__die(const char *msg);
/* End the process now with `status` (no atexit handlers, no stdio flush): the engine's
 * own _exit, since a model's _exit() is caught (interpose.c). */
_Noreturn void kr__exit_now(int status);
/* The same with another prefix ("kairos: error: ") and exit status. */
_Noreturn void kr__die_status(const char *prefix, const char *msg, int status);
/* What prints the committed output not yet printed when a run dies (engines with buffered
 * commitment: the optimistic engine); NULL: stdout's buffer only. */
void kr__set_salvage(void (*fn)(void *), void *arg);

#endif
