/* test_ult.c - event stacks and the context switch (src/ult).
 *  1. synchronous: a ULT gives the CPU back mid-way (as at a model call) and is resumed;
 *     one that finishes is reused for the next "event"; an abandoned one starts afresh.
 *  2. asynchronous: a ULT runs a loop holding known values in every general register it may
 *     use and in all 16 SSE registers (and the AVX upper halves where present), checking
 *     them on every turn, while extra ticks preempt it at arbitrary instructions; between
 *     its turns another ULT overwrites every one of those registers. Nothing may change.
 *  3. AddressSanitizer builds: an event that recursed deep and was unwound into its entry
 *     by a handler on the signal stack (as a crash is) leaves no frame poisoned below the
 *     entry once it says so (kr__ult_unwound): a later signal frame there read as an
 *     overflow. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <signal.h>
#include "check.h"
#include "base/sanitize.h"
#include "ult/ult.h"
#if defined(KR_ASAN)
#include <sanitizer/asan_interface.h>
#endif

enum { KIND_STEPS = 1, KIND_REGS, KIND_CLOBBER, KIND_AVX, KIND_UNWIND };

static int steps_done, regs_bad = -1, avx_bad = -1;

/* 20M turns of: compare 11 general registers and 16 xmm registers with what was loaded. */
static int hold_registers(long turns)
{
    int bad;
    __asm__ volatile(
        "movq $0x1001, %%rbx\n movq $0x1002, %%rsi\n movq $0x1003, %%rdi\n"
        "movq $0x1004, %%r8\n movq $0x1005, %%r9\n movq $0x1006, %%r10\n"
        "movq $0x1007, %%r11\n movq $0x1008, %%r12\n movq $0x1009, %%r13\n"
        "movq $0x100a, %%r14\n movq $0x100b, %%r15\n movq $0x100c, %%rdx\n"
#define LOADX(n) "movq $0x20" #n ", %%rax\n movq %%rax, %%xmm" #n "\n"
        LOADX(0) LOADX(1) LOADX(2) LOADX(3) LOADX(4) LOADX(5) LOADX(6) LOADX(7)
        LOADX(8) LOADX(9) LOADX(10) LOADX(11) LOADX(12) LOADX(13) LOADX(14) LOADX(15)
        "1:\n"
        "cmpq $0x1001, %%rbx\n jne 9f\n cmpq $0x1002, %%rsi\n jne 9f\n"
        "cmpq $0x1003, %%rdi\n jne 9f\n cmpq $0x1004, %%r8\n jne 9f\n"
        "cmpq $0x1005, %%r9\n jne 9f\n cmpq $0x1006, %%r10\n jne 9f\n"
        "cmpq $0x1007, %%r11\n jne 9f\n cmpq $0x1008, %%r12\n jne 9f\n"
        "cmpq $0x1009, %%r13\n jne 9f\n cmpq $0x100a, %%r14\n jne 9f\n"
        "cmpq $0x100b, %%r15\n jne 9f\n cmpq $0x100c, %%rdx\n jne 9f\n"
#define CHECKX(n) "movq %%xmm" #n ", %%rax\n cmpq $0x20" #n ", %%rax\n jne 9f\n"
        CHECKX(0) CHECKX(1) CHECKX(2) CHECKX(3) CHECKX(4) CHECKX(5) CHECKX(6) CHECKX(7)
        CHECKX(8) CHECKX(9) CHECKX(10) CHECKX(11) CHECKX(12) CHECKX(13) CHECKX(14) CHECKX(15)
        "decq %%rcx\n jnz 1b\n"
        "xorl %%eax, %%eax\n jmp 8f\n"
        "9: movl $1, %%eax\n"
        "8:\n"
        : "=a"(bad), "+c"(turns)
        :
        : "rbx", "rsi", "rdi", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
    return bad;
}

/* The upper half of ymm0..3 (AVX) held across preemptions. */
__attribute__((target("avx"))) static int hold_avx(long turns)
{
    int bad;
    __asm__ volatile(
        "movq $0x3003, %%rax\n movq %%rax, %%xmm7\n"
        "vinsertf128 $1, %%xmm7, %%ymm0, %%ymm0\n vinsertf128 $1, %%xmm7, %%ymm1, %%ymm1\n"
        "vinsertf128 $1, %%xmm7, %%ymm2, %%ymm2\n vinsertf128 $1, %%xmm7, %%ymm3, %%ymm3\n"
        "1:\n"
#define CHECKY(n) "vextractf128 $1, %%ymm" #n ", %%xmm6\n movq %%xmm6, %%rax\n" \
    "cmpq $0x3003, %%rax\n jne 9f\n"
        CHECKY(0) CHECKY(1) CHECKY(2) CHECKY(3)
        "decq %%rcx\n jnz 1b\n"
        "xorl %%eax, %%eax\n jmp 8f\n"
        "9: movl $1, %%eax\n"
        "8: vzeroupper\n"
        : "=a"(bad), "+c"(turns)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm6", "xmm7", "cc", "memory");
    return bad;
}

__attribute__((target("avx"))) static void clobber_avx(void)
{
    __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n vmovdqa %%ymm0, %%ymm1\n"
                     "vmovdqa %%ymm0, %%ymm2\n vmovdqa %%ymm0, %%ymm3\n vzeroupper\n"
                     ::: "xmm0", "xmm1", "xmm2", "xmm3");
}

static void clobber(void)
{
    __asm__ volatile(
        "movq $-1, %%rbx\n movq $-1, %%rsi\n movq $-1, %%rdi\n movq $-1, %%rdx\n"
        "movq $-1, %%r8\n movq $-1, %%r9\n movq $-1, %%r10\n movq $-1, %%r11\n"
        "movq $-1, %%r12\n movq $-1, %%r13\n movq $-1, %%r14\n movq $-1, %%r15\n"
        "pcmpeqd %%xmm0, %%xmm0\n pcmpeqd %%xmm1, %%xmm1\n pcmpeqd %%xmm2, %%xmm2\n"
        "pcmpeqd %%xmm3, %%xmm3\n pcmpeqd %%xmm4, %%xmm4\n pcmpeqd %%xmm5, %%xmm5\n"
        "pcmpeqd %%xmm6, %%xmm6\n pcmpeqd %%xmm7, %%xmm7\n pcmpeqd %%xmm8, %%xmm8\n"
        "pcmpeqd %%xmm9, %%xmm9\n pcmpeqd %%xmm10, %%xmm10\n pcmpeqd %%xmm11, %%xmm11\n"
        "pcmpeqd %%xmm12, %%xmm12\n pcmpeqd %%xmm13, %%xmm13\n pcmpeqd %%xmm14, %%xmm14\n"
        "pcmpeqd %%xmm15, %%xmm15\n"
        ::: "rbx", "rsi", "rdi", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
        "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");
}

/* 3: frames with arrays (redzones under ASan) down to the depth, where a signal whose
 * handler runs on the signal stack jumps back to the entry. */
static sigjmp_buf unwind_to;
static int poisoned_after = -1;

#if !defined(KR_TSAN) /* (part 3 does not run there) */
static void on_usr1(int sig)
{
    (void)sig;
    siglongjmp(unwind_to, 1);
}
#endif

__attribute__((noinline)) static int dive(int depth)
{
    volatile char pad[512];
    pad[depth % 512] = (char)depth;
    if (depth == 0) raise(SIGUSR1);
    return depth ? dive(depth - 1) + pad[depth % 512] : 0;
}

static void unwind_case(void)
{
    if (sigsetjmp(unwind_to, 1) == 0) {
        dive(40); /* (some 20 KiB of a 64-KiB stack) */
        return;
    }
    kr__ult_unwound(kr__ult_self.cur);
#if defined(KR_ASAN)
    char here;
    poisoned_after = __asan_region_is_poisoned(kr__ult_self.cur->lo,
                                               (size_t)(&here - 256 - kr__ult_self.cur->lo)) != NULL;
#else
    poisoned_after = 0;
#endif
}

static void entry(void *arg)
{
    (void)arg;
    for (;;) {
        int kind = (int)(intptr_t)kr__ult_self.cur->ev;
        if (kind == KIND_UNWIND) {
            unwind_case();
        } else if (kind == KIND_STEPS) {
            steps_done = 1;
            kr__ult_yield(KR_ULT_SUSPENDED, KR_BY_RETURN); /* as check-and-switch does */
            steps_done = 2;
        } else if (kind == KIND_REGS || kind == KIND_AVX) {
            kr__ult_self.app = 1; /* application mode: ticks preempt */
            atomic_signal_fence(memory_order_seq_cst);
            int bad = kind == KIND_REGS ? hold_registers(20 * 1000 * 1000) : hold_avx(40 * 1000 * 1000);
            atomic_signal_fence(memory_order_seq_cst);
            kr__ult_self.app = 0;
            if (kind == KIND_REGS) regs_bad = bad;
            else avx_bad = bad;
        } else {
            clobber();
            if (__builtin_cpu_supports("avx")) clobber_avx();
        }
        kr__ult_yield(KR_ULT_DONE, 0);
    }
}

/* Run kind on a ULT to its end; other ULTs clobber registers whenever it is preempted. */
static unsigned run_preempted(struct kr__ult_pool *p, int kind)
{
    struct kr__ult *a = kr__ult_get(p);
    a->ev = (void *)(intptr_t)kind;
    unsigned preempted = 0;
    kr__tick_arm(200 * 1000);
    for (kr__ult_run(a); a->status == KR_ULT_SUSPENDED; kr__ult_run(a)) {
        preempted++;
        struct kr__ult *b = kr__ult_get(p);
        b->ev = (void *)(intptr_t)KIND_CLOBBER;
        kr__ult_run(b);
        CHECK(b->status == KR_ULT_DONE);
        kr__ult_put(p, b);
    }
    kr__tick_arm(0);
    kr__ult_put(p, a);
    return preempted;
}

int main(void)
{
    struct kr__ult_pool p;
    kr__ult_pool_init(&p, 64 * 1024, 8, entry, NULL);

    /* 1. synchronous */
    struct kr__ult *u = kr__ult_get(&p);
    u->ev = (void *)(intptr_t)KIND_STEPS;
    kr__ult_run(u);
    CHECK(u->status == KR_ULT_SUSPENDED && steps_done == 1);
    kr__ult_run(u);
    CHECK(u->status == KR_ULT_DONE && steps_done == 2);
    kr__ult_run(u); /* the same stack runs the next event */
    CHECK(u->status == KR_ULT_SUSPENDED && steps_done == 1);
    kr__ult_put(&p, u); /* abandoned mid-way: reset */
    struct kr__ult *v = kr__ult_get(&p);
    CHECK(v == u && v->fresh);
    v->ev = (void *)(intptr_t)KIND_STEPS;
    steps_done = 0;
    kr__ult_run(v);
    CHECK(v->status == KR_ULT_SUSPENDED && steps_done == 1);
    kr__ult_run(v);
    CHECK(steps_done == 2);
    kr__ult_put(&p, v);
    CHECK(p.live == 0);

    /* 3. unwound from a handler on the signal stack (not under ThreadSanitizer, which
     * cannot reliably follow a siglongjmp out of a handler: bad_input.py leaves the
     * parallel engines' crashes out there too) */
#if !defined(KR_TSAN)
    static char alt[64 * 1024];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
    struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
    sigemptyset(&sa.sa_mask);
    CHECK(sigaltstack(&ss, NULL) == 0 && sigaction(SIGUSR1, &sa, NULL) == 0);
    struct kr__ult *w = kr__ult_get(&p);
    w->ev = (void *)(intptr_t)KIND_UNWIND;
    kr__ult_run(w);
    CHECK(w->status == KR_ULT_DONE && poisoned_after == 0);
    kr__ult_put(&p, w);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
#endif

    /* 2. asynchronous, by ticks at any instruction (not under ThreadSanitizer, which defers
     * signals to its own interception points: the engine refuses time-sharing there) */
#if defined(__SANITIZE_THREAD__)
    puts("ticks: skipped in a ThreadSanitizer build");
    kr__ult_pool_destroy(&p);
    return check_done("ult");
#endif
    static _Atomic uint64_t bh_min;
    double zero = 0.0;
    uint64_t zero_bits;
    memcpy(&zero_bits, &zero, sizeof zero_bits);
    atomic_store(&bh_min, zero_bits);
    kr__ult_self.bh_min = &bh_min;
    kr__ult_self.now = 1.0; /* "earlier work has arrived": every tick preempts */
    kr__ult_self.can_suspend = 1;
    kr__tick_install(NULL);
    CHECK(kr__tick_thread_init() == 0);
    unsigned n = run_preempted(&p, KIND_REGS);
    printf("general and SSE registers: %u preemptions by tick, %s\n", n,
           regs_bad ? "CORRUPTED" : "intact");
    CHECK(regs_bad == 0);
    CHECK(n >= 3);
    if (__builtin_cpu_supports("avx")) {
        n = run_preempted(&p, KIND_AVX);
        printf("AVX upper halves: %u preemptions by tick, %s\n", n, avx_bad ? "CORRUPTED" : "intact");
        CHECK(avx_bad == 0);
        CHECK(n >= 3);
    }
    CHECK(kr__ult_self.by_tick >= 6);
    kr__tick_thread_fini();
    kr__ult_pool_destroy(&p);
    return check_done("ult");
}
