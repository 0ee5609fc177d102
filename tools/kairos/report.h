/* report.h - `kairos report RUN.json ... -o report.html` (report.c): the HTML report,
 * drawn by tools/kairos_report.py. */
#ifndef KR_TOOLS_REPORT_H
#define KR_TOOLS_REPORT_H

int kr__report_main(int argc, char **argv);

#endif
