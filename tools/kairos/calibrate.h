/* calibrate.h - `kairos calibrate` (calibrate.c): measure what extra ticks cost on this
 * machine and save the recommended --tick-us. */
#ifndef KR_TOOLS_CALIBRATE_H
#define KR_TOOLS_CALIBRATE_H

int kr__calibrate_main(int argc, char **argv);

#endif
