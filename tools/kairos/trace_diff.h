/* trace_diff.h - `kairos trace-diff A B` (trace_diff.c): where two committed traces
 * (kairos run --trace) first differ. */
#ifndef KR_TOOLS_TRACE_DIFF_H
#define KR_TOOLS_TRACE_DIFF_H

int kr__trace_diff_main(int argc, char **argv);

#endif
