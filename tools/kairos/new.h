/* new.h - `kairos new NAME [DIR]` (new.c): write a model project that builds against an
 * installed Kairos. */
#ifndef KR_TOOLS_NEW_H
#define KR_TOOLS_NEW_H

int kr__new_main(int argc, char **argv);

#endif
