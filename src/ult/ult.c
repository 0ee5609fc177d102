/* ult.c - user-level thread stacks and the context switch (x86-64 System V).
 *
 * kr__ult_swap(save, load) pushes the registers a callee must preserve (rbp, rbx, r12-r15,
 * the SSE control/status word MXCSR and the x87 control word), stores the stack pointer in
 * *save, loads `load` and pops the same set from there. Every other register is dead at a
 * call by the ABI, so this is a complete switch for a call site - and an asynchronous
 * preemption is a call site too: the tick handler calls it after the kernel saved the whole
 * interrupted CPU state in the signal frame (see ult.h). A new ULT starts from a boot frame
 * laid out exactly as kr__ult_swap leaves a stack, returning into kr__ult_boot. */
#define _GNU_SOURCE
#include "base/sanitize.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ult/ult.h"
#include "base/grow.h"
#include "base/error.h"

#if defined(KR_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(KR_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

__thread struct kr__ult_self kr__ult_self __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__)
void kr__ult_swap(void **save, void *load);
void kr__ult_boot(void);
__asm__(".pushsection .text\n"
        ".globl kr__ult_swap\n"
        ".type kr__ult_swap,@function\n"
        "kr__ult_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size kr__ult_swap, .-kr__ult_swap\n"
        ".globl kr__ult_boot\n"
        ".type kr__ult_boot,@function\n"
        "kr__ult_boot:\n"
        "    movq %r12, %rdi\n"  /* the ULT */
        "    callq *%r13\n"      /* ult_start: never returns */
        "    ud2\n"
        ".size kr__ult_boot, .-kr__ult_boot\n"
        ".popsection\n");
#else
#error "time-sharing context switch: only x86-64 is implemented (src/ult/ult.c)"
#endif

#define GUARD_BYTES KR_STACK_GUARD /* large frames (arrays on the stack) skip a small guard */

#if defined(KR_ASAN)
static __thread const void *plat_bottom;
static __thread size_t plat_size;
static __thread void *plat_fake;
#endif
#if defined(KR_TSAN)
static __thread void *plat_fiber;
#endif

struct ult_full {
    struct kr__ult u;
    struct kr__ult_pool *pool;
};

static void ult_start(struct ult_full *f) __attribute__((noreturn, used));
static void ult_start(struct ult_full *f)
{
#if defined(KR_ASAN)
    __sanitizer_finish_switch_fiber(NULL, &plat_bottom, &plat_size);
#endif
    f->u.fresh = false;
    f->u.status = KR_ULT_RUNNING;
    f->pool->entry(f->pool->arg);
    abort(); /* entry loops forever */
}

/* Lay out a boot frame at the top of the stack (see kr__ult_swap's pop order). */
static void boot_frame(struct ult_full *f)
{
    uintptr_t top = (uintptr_t)f->u.hi & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 64);
    uint32_t csr[2];
    __asm__ volatile("stmxcsr %0" : "=m"(csr[0]));
    __asm__ volatile("fnstcw %0" : "=m"(*(uint16_t *)&csr[1]));
    csr[1] &= 0xffff;
    memcpy(&sp[0], csr, 8);
    sp[1] = 0;                           /* r15 */
    sp[2] = 0;                           /* r14 */
    sp[3] = (uint64_t)(uintptr_t)ult_start; /* r13: called by kr__ult_boot */
    sp[4] = (uint64_t)(uintptr_t)f;      /* r12: its argument */
    sp[5] = 0;                           /* rbx */
    sp[6] = 0;                           /* rbp: ends frame-pointer walks */
    sp[7] = (uint64_t)(uintptr_t)kr__ult_boot;
    f->u.sp = sp;
    f->u.fresh = true;
#if defined(KR_ASAN)
    /* an abandoned event leaves poisoned frames (redzones) behind */
    __asan_unpoison_memory_region(f->u.lo, (size_t)(f->u.hi - f->u.lo));
    f->u.asan_fake = NULL;
#endif
}

void kr__ult_pool_init(struct kr__ult_pool *p, size_t stack_bytes, size_t max,
                       void (*entry)(void *), void *arg)
{
    memset(p, 0, sizeof *p);
    long pg = sysconf(_SC_PAGESIZE);
    p->stack_bytes = (stack_bytes + (size_t)pg - 1) & ~((size_t)pg - 1);
    p->max = max;
    p->entry = entry;
    p->arg = arg;
#if defined(KR_TSAN)
    plat_fiber = __tsan_get_current_fiber();
#endif
}

static _Noreturn void no_stack(const struct kr__ult_pool *p)
{
    char msg[384];
    snprintf(msg, sizeof msg, "cannot map an event stack of %zu KiB and its %zu MiB guard "
             "(%s): lower --stack-kb, raise the limit on address space (ulimit -v), or run "
             "with --preempt off (no event stacks)", p->stack_bytes >> 10,
             (size_t)GUARD_BYTES >> 20, strerror(errno));
    kr__die(msg);
}

static struct kr__ult *make(struct kr__ult_pool *p)
{
    size_t total = GUARD_BYTES + p->stack_bytes;
    char *base = mmap(NULL, total, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) no_stack(p);
    if (mprotect(base, GUARD_BYTES, PROT_NONE)) kr__fatal_oom("event stack guard", GUARD_BYTES);
    struct ult_full *f = calloc(1, sizeof *f);
    if (!f) kr__fatal_oom("event context", sizeof *f);
    f->pool = p;
    f->u.lo = base + GUARD_BYTES;
    f->u.hi = base + total;
#if defined(KR_TSAN)
    f->u.tsan_fiber = __tsan_create_fiber(0);
#endif
    boot_frame(f);
    if (p->nall == p->capall) KR_GROW(p->all, p->capall, p->nall + 1, 16, "event stacks");
    p->all[p->nall++] = &f->u;
    return &f->u;
}

struct kr__ult *kr__ult_get(struct kr__ult_pool *p)
{
    struct kr__ult *u = p->free;
    if (u) p->free = u->next;
    else u = make(p);
    if (++p->live > p->peak) p->peak = p->live;
    u->status = KR_ULT_IDLE;
    atomic_store_explicit(&u->foreign, false, memory_order_relaxed);
    return u;
}

void kr__ult_put(struct kr__ult_pool *p, struct kr__ult *u)
{
    if (u->status == KR_ULT_SUSPENDED) boot_frame((struct ult_full *)u); /* abandoned */
    u->status = KR_ULT_IDLE;
    u->ev = NULL;
    u->next = p->free;
    p->free = u;
    p->live--;
}

void kr__ult_unwound(const struct kr__ult *u)
{
#if defined(KR_ASAN)
    char here; /* (this frame and the caller's lie above it) */
    __asan_unpoison_memory_region(u->lo, (size_t)(&here - u->lo));
#else
    (void)u;
#endif
}

void kr__ult_pool_destroy(struct kr__ult_pool *p)
{
    for (size_t i = 0; i < p->nall; i++) {
        struct kr__ult *u = p->all[i];
#if defined(KR_ASAN)
        __asan_unpoison_memory_region(u->lo, (size_t)(u->hi - u->lo));
#endif
#if defined(KR_TSAN)
        __tsan_destroy_fiber(u->tsan_fiber);
#endif
        munmap(u->lo - GUARD_BYTES, GUARD_BYTES + (size_t)(u->hi - u->lo));
        free(u->scratch);
        free(u);
    }
    free(p->all);
    memset(p, 0, sizeof *p);
}

void kr__ult_run(struct kr__ult *u)
{
    struct kr__ult_self *s = &kr__ult_self;
    s->cur = u;
    u->status = KR_ULT_RUNNING;
    s->switches++;
#if defined(KR_ASAN)
    __sanitizer_start_switch_fiber(&plat_fake, u->lo, (size_t)(u->hi - u->lo));
#endif
#if defined(KR_TSAN)
    __tsan_switch_to_fiber(u->tsan_fiber, 0);
#endif
    kr__ult_swap(&s->plat_sp, u->sp);
#if defined(KR_ASAN)
    __sanitizer_finish_switch_fiber(plat_fake, NULL, NULL);
#endif
    s->cur = NULL;
}

void kr__ult_yield(int status, int reason)
{
    struct kr__ult_self *s = &kr__ult_self;
    struct kr__ult *u = s->cur;
    u->status = (uint8_t)status;
    u->reason = (uint8_t)reason;
    s->switches++;
#if defined(KR_ASAN)
    __sanitizer_start_switch_fiber(&u->asan_fake, plat_bottom, plat_size);
#endif
#if defined(KR_TSAN)
    __tsan_switch_to_fiber(plat_fiber, 0);
#endif
    kr__ult_swap(&u->sp, s->plat_sp);
#if defined(KR_ASAN)
    __sanitizer_finish_switch_fiber(u->asan_fake, &plat_bottom, &plat_size);
#endif
    u->status = KR_ULT_RUNNING;
}

void kr__ult_check_slow(void)
{
    kr__ult_self.by_return++;
    kr__ult_yield(KR_ULT_SUSPENDED, KR_BY_RETURN);
}

bool kr__ult_guard_hit(const void *addr, const void *sp)
{
    const struct kr__ult *u = kr__ult_self.cur;
    const char *a = addr, *s = sp;
    if (!u) return false;
    if (a >= u->lo - GUARD_BYTES && a < u->lo) return true;
    /* (an x86-64 signal frame with AVX-512 state is under 4 KiB) */
    return s && s >= u->lo - GUARD_BYTES && s < u->lo + 8192;
}
