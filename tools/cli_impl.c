/* The one translation unit of the mlstack CLI that holds the library's implementation (kept
   apart from the command files so that editing a command does not recompile the engine). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
