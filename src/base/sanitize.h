/* sanitize.h - which sanitizer a build runs under, as one test for both compilers: GCC
 * says so with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, Clang (the fuzzing build) only
 * through __has_feature. Testing GCC's macros alone left Clang's AddressSanitizer builds
 * without the event stacks' annotations: a stack unmapped with its redzones still poisoned
 * was later reported as an underflow in whatever memory the kernel mapped there next (a
 * snapshot being resumed; found by fuzz_model). */
#ifndef KR_BASE_SANITIZE_H
#define KR_BASE_SANITIZE_H

#if defined(__SANITIZE_ADDRESS__)
#define KR_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define KR_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(KR_ASAN)
#define KR_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(KR_TSAN)
#define KR_TSAN 1
#endif
#endif

#endif
