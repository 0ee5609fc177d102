/* cmd.h - what the kairos command's parts share (main.c): the one place a failure becomes
 * a message and an exit status. */
#ifndef KR_TOOLS_CMD_H
#define KR_TOOLS_CMD_H

#include "base/error.h"

/* Print err ("kairos: error: ..." and, for usage errors, where to find help) and return the
 * documented exit status for it. */
int cmd_fail_exit(const struct kr__error *err);

#endif
