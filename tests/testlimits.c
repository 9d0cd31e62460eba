/* The implementation with tests/testlimits.h's limits and allocator hook: compiled once per
   flavour (with MLSTACK__EXPORT_INTERNALS) into $(B)/FLAVOUR/limits.o, see the Makefile. */
#include "testlimits.h"
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
