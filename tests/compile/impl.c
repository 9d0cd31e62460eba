/* The implementation as C (C99 and C11), then the header again, as a user header that includes
   ours would (the include guard must make that harmless). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "mlstack.h"
