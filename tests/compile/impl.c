/* The implementation as C (C99 and C11). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
