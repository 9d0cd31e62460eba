/* Declarations only: calls the shared implementation that static_a.c's private copy links beside. */
#include "mlstack.h"
int static_b(void);
int static_b(void) { return mlstack_dtype_name(MLSTACK_DTYPE_I32)[0] == 'I' ? 0 : 1; }
