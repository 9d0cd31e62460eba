/* The library's implementation for the mlstack CLI, kept apart from the command files so that
   editing a command does not recompile the engine. Compiled as it is, it is the whole
   implementation in one translation unit; the Makefile compiles it once per part instead
   (-DMLSTACK_IMPLEMENTATION_PART=1..2, see PARTS in mlstack.h's >>platform), two objects that build in
   parallel. */
#if !defined(MLSTACK_IMPLEMENTATION_PART)
#define MLSTACK_IMPLEMENTATION
#endif
#include "mlstack.h"
