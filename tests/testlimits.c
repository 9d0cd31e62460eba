/* The implementation with tests/testlimits.h's limits and allocator hook: compiled once per
   flavour (with MLSTACK__EXPORT_INTERNALS) into $(B)/FLAVOUR/limits.o, see the Makefile. */
#include "testlimits.h"
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

int tl_fail_reallocs;
void *tl_realloc(void *p, size_t n) {
    if (tl_fail_reallocs > 0) {
        tl_fail_reallocs--;
        return NULL;
    }
    return realloc(p, n);
}
