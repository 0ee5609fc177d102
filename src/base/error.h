/* error.h - how Kairos reports bad input and model misuse: one clear message saying what
 * was wrong, where (model, LP, virtual time, event type) and what to do. A failure is a
 * status returned up to the command, which prints it and exits (struct kr__error): set-up,
 * a model error during the run on any engine (the engines unwind and stop: kr__guarded,
 * core.h), --stats. What no thread can be unwound from safely ends the process from here,
 * after printing the committed output (kr__die): an event that never returns, a crash in
 * the C library or engine code, a heap the model corrupted, memory exhausted inside the
 * engine, a failed invariant (docs/design.md, section 7). Usage errors exit 2, model,
 * run-time and resource errors 1, internal errors 3. */
#ifndef KR_BASE_ERROR_H
#define KR_BASE_ERROR_H

#include <stddef.h>
#include <stdbool.h>

#define KR_EXIT_MODEL 1
#define KR_EXIT_USAGE 2

/* What a library call that can fail returns: the kind of failure, which the command (and
 * only the command) maps to an exit status (tools/kairos/main.c). */
enum kr__status {
    KR_OK = 0,
    KR_ERR_MODEL,       /* the model misbehaved (exit 1) */
    KR_ERR_USAGE,       /* the command line or the model's declarations are wrong (exit 2) */
    KR_ERR_RESOURCE,    /* memory, threads, address space, a file that cannot be written
                         * (exit 1) */
    KR_ERR_INTERNAL,    /* an engine invariant failed: a Kairos bug (exit 3) */
};

/* A failure's kind and message. Whoever calls a function that takes one owns it (usually on
 * its stack) and reads `msg` only when the status is not KR_OK; the message says what was
 * wrong, where and what to do, without the "kairos: error: " prefix. */
struct kr__error {
    int status;
    char msg[1536];
};

/* Fill e and return its status, so that a failing function can `return kr__fail(...)`. */
int kr__fail(struct kr__error *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

_Noreturn void kr__fatal_oom(const char *what, size_t bytes);
/* A misuse by model code: the message gets the current LP context prefixed. In a speculative
 * event the engine defers it (reported only if that event commits); otherwise it is fatal. */
_Noreturn void kr__model_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An engine invariant does not hold: a Kairos bug, never the model's fault. Exit 3. */
_Noreturn void kr__internal_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define KR_EXIT_INTERNAL 3

/* An event on the committed path that does not return (--event-timeout; %g: seconds). */
#define KR_TIMEOUT_FMT "the event has run for more than %g s (--event-timeout) without " \
    "returning: an endless loop? If it is only slow, raise --event-timeout (0: no limit)"
/* ... one blocked in a system call (%g: seconds, %ld: the call's number). */
#define KR_BLOCKED_FMT "the event has waited for more than %g s (--event-timeout) in a " \
    "system call (number %ld on x86-64): a read no one answers, a lock taken twice, a " \
    "sleep? An event must not wait for anything outside the simulation; if it only waits " \
    "long, raise --event-timeout (0: no limit)"

/* Write out buffered committed output; if it cannot be written (full disk, closed stdout),
 * exit 1 with a message saying the output is incomplete. */
void kr__stdout_flush(void);
/* While path (NULL: none) is being written, a run that dies of an error unlinks it (a
 * snapshot's temporary file: nothing half-written is left). */
void kr__unlink_on_death(const char *path);
/* The reason the first write of committed output that failed gave (0: none failed), which
 * the flush that finds the stream's error reports (kr__emit_direct sets it). */
extern int kr__out_errno;

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
/* The run ends where committed output is printed now (an error in a commit hook): nothing
 * more goes out - no salvage (its printer is the caller), and kr__emit_direct drops what
 * comes (kr__out_closed). */
void kr__output_close(void);
extern bool kr__out_closed;

#endif
